#include "npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>

namespace rudnn::tools {

namespace {

RuntimeError bad(const std::string& path, const std::string& expected, const std::string& actual) {
  return RuntimeError(ErrorKind::IoFailure, path, expected, actual);
}

template <class T>
double load_as(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<double>(v);
}

}  // namespace

Result<HostData, RuntimeError> read_npy(const std::string& path, DType dtype) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad(path, "a readable .npy file", "cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return bad(path, "the .npy magic", "other bytes");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else {
    if (bytes.size() < 12) return bad(path, "a .npy header", "a truncated file");
    std::uint32_t n;
    std::memcpy(&n, bytes.data() + 8, 4);
    header_len = n;
    offset = 12;
  }
  if (bytes.size() < offset + header_len) return bad(path, "a .npy header", "a truncated file");
  const std::string header = bytes.substr(offset, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([<>|=])([a-zA-Z])(\\d+)'")))
    return bad(path, "a descr field", header);
  const char order = m[1].str()[0];
  const char kind = m[2].str()[0];
  const int width = std::stoi(m[3].str());
  if (order == '>' && width > 1) return bad(path, "little-endian data", "big-endian");
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True"))) return bad(path, "C order", "Fortran order");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) return bad(path, "a shape field", header);
  Shape shape;
  const std::string dims = m[1].str();
  const std::regex number("\\d+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it)
    shape.push_back(std::stoll(it->str()));
  const std::size_t n = static_cast<std::size_t>(element_count(shape));
  const char* data = bytes.data() + offset + header_len;
  if (bytes.size() - offset - header_len < n * static_cast<std::size_t>(width))
    return bad(path, fmt::format("{} bytes of data", n * width), "a truncated file");
  std::vector<double> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    const char* p = data + i * static_cast<std::size_t>(width);
    switch (kind) {
      case 'f':
        if (width == 2) {
          std::uint16_t h;
          std::memcpy(&h, p, 2);
          values[i] = half_bits_to_float(h);
        } else if (width == 4) values[i] = load_as<float>(p);
        else if (width == 8) values[i] = load_as<double>(p);
        else return bad(path, "f2/f4/f8", fmt::format("f{}", width));
        break;
      case 'i':
        if (width == 1) values[i] = load_as<std::int8_t>(p);
        else if (width == 2) values[i] = load_as<std::int16_t>(p);
        else if (width == 4) values[i] = load_as<std::int32_t>(p);
        else if (width == 8) values[i] = load_as<std::int64_t>(p);
        else return bad(path, "i1/i2/i4/i8", fmt::format("i{}", width));
        break;
      case 'u':
      case 'b':
        if (width == 1) values[i] = load_as<std::uint8_t>(p);
        else if (width == 2) values[i] = load_as<std::uint16_t>(p);
        else if (width == 4) values[i] = load_as<std::uint32_t>(p);
        else if (width == 8) values[i] = load_as<std::uint64_t>(p);
        else return bad(path, "u1/u2/u4/u8", fmt::format("u{}", width));
        break;
      default: return bad(path, "a float, integer or bool array", std::string(1, kind));
    }
  }
  return HostData::from_f64(shape, dtype, values);
}

Status<RuntimeError> write_npy(const std::string& path, const HostData& data) {
  std::string descr;
  std::string payload;
  const auto values = data.to_f64();
  switch (data.dtype) {
    case DType::I32: descr = "<i4"; break;
    case DType::I64: descr = "<i8"; break;
    case DType::U32: descr = "<u4"; break;
    case DType::U8: descr = "|u1"; break;
    default: descr = "<f4"; break;
  }
  for (double v : values) {
    if (descr == "<f4") {
      float f = static_cast<float>(v);
      payload.append(reinterpret_cast<const char*>(&f), 4);
    } else if (descr == "<i4") {
      auto x = static_cast<std::int32_t>(v);
      payload.append(reinterpret_cast<const char*>(&x), 4);
    } else if (descr == "<u4") {
      auto x = static_cast<std::uint32_t>(v);
      payload.append(reinterpret_cast<const char*>(&x), 4);
    } else if (descr == "|u1") {
      payload.push_back(static_cast<char>(static_cast<std::uint8_t>(v)));
    } else {
      auto x = static_cast<std::int64_t>(v);
      payload.append(reinterpret_cast<const char*>(&x), 8);
    }
  }
  std::string shape;
  for (std::size_t i = 0; i < data.shape.size(); ++i) shape += fmt::format("{}{}", i ? ", " : "", data.shape[i]);
  if (data.shape.size() == 1) shape += ",";  // a one-element Python tuple: "(5,)"
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  // Pad so the data starts at a multiple of 64 bytes, ending the header with '\n'.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  out.append(reinterpret_cast<const char*>(&len), 2);
  out += header + payload;
  // Written to a temporary and renamed, so a failed run never leaves a partial output file.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return RuntimeError(ErrorKind::IoFailure, path, "a writable path", "cannot open");
    f << out;
    if (!f) return RuntimeError(ErrorKind::IoFailure, path, "a complete write", "write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return RuntimeError(ErrorKind::IoFailure, path, "a writable path", ec.message());
  return {};
}

}  // namespace rudnn::tools
