#include "npy.h"

#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "host_data.h"

namespace rudnn::tools {

namespace {

// The start of `text` for an error message: the actual value, cut where it stops being useful.
std::string excerpt(std::string_view text) {
  constexpr std::size_t kMax = 48;
  std::string out;
  for (char c : text.substr(0, kMax)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > kMax) out += "...";
  return out.empty() ? "the end of the header" : out;
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// The header NumPy writes is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// This reads exactly that grammar (string keys and descr in either quote, True/False, a tuple of
// decimal integers, whitespace and the trailing commas Python allows) and nothing else: no other
// keys, no duplicates, no expressions, so "(-2, 64)", "('2', 4096)", "(3, 64,,)" and
// "'fortran_order': 1" are errors instead of being read as something else.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  // False with expected()/actual() set when the header is not such a dict.
  bool parse(Header& h) {
    static constexpr std::array<std::string_view, 3> kKeys = {"descr", "fortran_order", "shape"};
    bool seen[3] = {false, false, false};
    if (!eat('{')) return fail("a .npy header dict '{...}'");
    while (!eat('}')) {
      const std::size_t key_at = pos();
      std::string key;
      if (!string_literal(key)) return fail("a .npy header key 'descr', 'fortran_order' or 'shape'");
      std::size_t k = 0;
      while (k < kKeys.size() && kKeys[k] != key) ++k;
      if (k == kKeys.size() || seen[k]) {
        i_ = key_at;
        return fail(k == kKeys.size() ? "only the keys 'descr', 'fortran_order' and 'shape'" : "each key once");
      }
      seen[k] = true;
      if (!eat(':')) return fail(fmt::format("':' after '{}'", key));
      if (k == 0 && !string_literal(h.descr)) return fail("'descr' as a quoted type string such as '<f4'");
      if (k == 1) {
        if (word("True"))
          h.fortran_order = true;
        else if (word("False"))
          h.fortran_order = false;
        else
          return fail("'fortran_order' as True or False");
      }
      if (k == 2 && !shape(h.shape)) return false;
      if (!eat(',')) {
        if (!eat('}')) return fail("',' or '}' after a header value");
        break;
      }
    }
    for (std::size_t k = 0; k < kKeys.size(); ++k)
      if (!seen[k]) return fail(fmt::format("a '{}' key in the .npy header", kKeys[k]));
    if (pos() != s_.size()) return fail("only whitespace after the header dict");
    return true;
  }

  const std::string& expected() const { return expected_; }
  const std::string& actual() const { return actual_; }

 private:
  // The position of the next token (after whitespace).
  std::size_t pos() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    return i_;
  }
  bool eat(char c) {
    if (pos() >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool word(std::string_view w) {
    if (s_.substr(pos(), w.size()) != w) return false;
    const std::size_t end = i_ + w.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) return false;
    i_ = end;
    return true;
  }
  // '...' or "..." without escapes (NumPy's keys and type strings never need one).
  bool string_literal(std::string& out) {
    if (pos() >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return false;
    const std::size_t end = s_.find(s_[i_], i_ + 1);
    if (end == std::string_view::npos) return false;
    const std::string_view body = s_.substr(i_ + 1, end - i_ - 1);
    if (body.find('\\') != std::string_view::npos) return false;
    out = std::string(body);
    i_ = end + 1;
    return true;
  }
  // A Python tuple of non-negative decimal integers that fit in int64: (), (5,), (2, 3), (2, 3,).
  bool shape(Shape& out) {
    const std::size_t start = pos();
    auto reject = [&](const char* expected) {
      expected_ = expected;
      const std::size_t close = s_.find(')', start);
      actual_ = excerpt(s_.substr(start, close == std::string_view::npos ? close : close + 1 - start));
      return false;
    };
    const char* tuple = "'shape' as a tuple of non-negative integers such as (2, 3) or (5,)";
    if (!eat('(')) return reject(tuple);
    if (eat(')')) return true;
    while (true) {
      const std::size_t at = pos();
      std::size_t digits = 0;
      std::int64_t v = 0;
      for (; at + digits < s_.size() && s_[at + digits] >= '0' && s_[at + digits] <= '9'; ++digits) {
        const int d = s_[at + digits] - '0';
        if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10) return reject("'shape' extents that fit in int64");
        v = v * 10 + d;
      }
      // Python has no leading zeros in decimal literals ("007" is a syntax error).
      if (digits == 0 || (digits > 1 && s_[at] == '0')) return reject(tuple);
      i_ = at + digits;
      out.push_back(v);
      if (eat(')')) return out.size() > 1 || reject(tuple);  // "(5)" is the integer 5, not a tuple
      if (!eat(',')) return reject(tuple);
      if (eat(')')) return true;
    }
  }
  bool fail(std::string expected) {
    expected_ = std::move(expected);
    actual_ = excerpt(s_.substr(std::min(pos(), s_.size())));
    return false;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::string expected_, actual_;
};

// The item types read_npy knows, as NumPy spells them without the byte order.
struct ItemType {
  char kind;  // f, i, u, b
  int width;  // bytes
};
constexpr std::array<ItemType, 12> kItemTypes = {{{'f', 2},
                                                  {'f', 4},
                                                  {'f', 8},
                                                  {'i', 1},
                                                  {'i', 2},
                                                  {'i', 4},
                                                  {'i', 8},
                                                  {'u', 1},
                                                  {'u', 2},
                                                  {'u', 4},
                                                  {'u', 8},
                                                  {'b', 1}}};

// "<f4" → f4. '<', '=' (native: the hosts rudnn runs on are little-endian) and no order are
// little-endian; '|' (not applicable) and '>' only make sense for one-byte items.
std::optional<ItemType> item_type(std::string_view descr) {
  char order = '=';
  if (!descr.empty() && std::string_view("<>|=").find(descr[0]) != std::string_view::npos) {
    order = descr[0];
    descr.remove_prefix(1);
  }
  for (const auto& t : kItemTypes)
    if (descr.size() == 2 && descr[0] == t.kind && descr[1] == '0' + t.width)
      return (order == '<' || order == '=' || t.width == 1) ? std::optional(t) : std::nullopt;
  return std::nullopt;
}

template <class T>
T load_as(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Element `index` of `out` from the item at `p`, through the tools' one checked store (integers
// stay integers, so an i8 of 2^63 - 1 is exact, and a value the dtype cannot hold is an error).
Status<RuntimeError> store_item(HostData& out, std::size_t index, ItemType t, const char* p, const std::string& arg) {
  switch (t.kind) {
    case 'f': {
      const double v = t.width == 2   ? half_bits_to_float(load_as<std::uint16_t>(p))
                       : t.width == 4 ? load_as<float>(p)
                                      : load_as<double>(p);
      return store(out, index, v, arg);
    }
    case 'i': {
      const std::int64_t v = t.width == 1   ? load_as<std::int8_t>(p)
                             : t.width == 2 ? load_as<std::int16_t>(p)
                             : t.width == 4 ? load_as<std::int32_t>(p)
                                            : load_as<std::int64_t>(p);
      return store(out, index, v, arg);
    }
    case 'u': {
      const std::uint64_t v = t.width == 1   ? load_as<std::uint8_t>(p)
                              : t.width == 2 ? load_as<std::uint16_t>(p)
                              : t.width == 4 ? load_as<std::uint32_t>(p)
                                             : load_as<std::uint64_t>(p);
      return store(out, index, v, arg);
    }
    default: return store(out, index, std::uint64_t{*p != 0}, arg);  // b1: NumPy's bool is any nonzero byte
  }
}

std::string shape_text(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

Result<HostData, RuntimeError> read_stream(std::istream& in, std::uint64_t size, DType dtype, const std::string& arg) {
  auto io = [&](std::string expected, std::string actual) {
    return RuntimeError(ErrorKind::IoFailure, arg, std::move(expected), std::move(actual));
  };
  auto invalid = [&](std::string expected, std::string actual) {
    return RuntimeError(ErrorKind::InvalidValue, arg, std::move(expected), std::move(actual));
  };
  // Nothing is read past `size`, and nothing is allocated before the header says how much data
  // follows and the file is known to hold it.
  auto read = [&](char* dst, std::uint64_t n) {
    in.read(dst, static_cast<std::streamsize>(n));
    return static_cast<std::uint64_t>(in.gcount()) == n;
  };

  // Magic, version, header length (2 bytes in 1.0, 4 in 2.0 and 3.0; little-endian).
  char prefix[12];
  if (size < 10 || !read(prefix, 10)) return io("a .npy file (at least 10 bytes)", fmt::format("{} bytes", size));
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0) return invalid("the .npy magic \\x93NUMPY", excerpt({prefix, 6}));
  const int major = static_cast<unsigned char>(prefix[6]), minor = static_cast<unsigned char>(prefix[7]);
  if (major < 1 || major > 3 || minor != 0)
    return invalid(".npy format version 1.0, 2.0 or 3.0", fmt::format("{}.{}", major, minor));
  std::uint64_t prefix_len = 10, header_len = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(prefix[8]) | (static_cast<unsigned char>(prefix[9]) << 8);
  } else {
    prefix_len = 12;
    if (size < 12 || !read(prefix + 10, 2)) return io("a .npy header", "a truncated file");
    for (int b = 3; b >= 0; --b) header_len = (header_len << 8) | static_cast<unsigned char>(prefix[8 + b]);
  }
  if (header_len > kMaxNpyHeaderBytes)
    return invalid(fmt::format("a .npy header of at most {} bytes", kMaxNpyHeaderBytes), fmt::format("{}", header_len));
  if (size - prefix_len < header_len)
    return io(fmt::format("a {}-byte .npy header", header_len),
              fmt::format("{} bytes after the prefix (a truncated file)", size - prefix_len));
  std::string text(header_len, '\0');
  if (!read(text.data(), header_len)) return io("a .npy header", "a truncated file");

  Header header;
  HeaderParser parser(text);
  if (!parser.parse(header)) return invalid(parser.expected(), parser.actual());
  const auto item = item_type(header.descr);
  if (!item)
    return RuntimeError(ErrorKind::UnsupportedDType, arg,
                        "'descr' one of <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1 (little-endian)",
                        "'" + excerpt(header.descr) + "'");
  if (header.fortran_order) return invalid("'fortran_order': False (C order)", "True");
  const auto count = checked_element_count(header.shape);
  if (!count) return invalid("a 'shape' whose element count fits in int64", shape_text(header.shape));

  // The data must be exactly count × width bytes: fewer is a truncated file (checked before any
  // allocation, so a huge consistent header costs nothing), more is not an array NumPy wrote.
  const std::uint64_t n = static_cast<std::uint64_t>(*count), width = static_cast<std::uint64_t>(item->width);
  const std::uint64_t available = size - prefix_len - header_len;
  if (n > available / width)
    return io(fmt::format("{} elements of {} bytes for shape {}", n, width, shape_text(header.shape)),
              fmt::format("{} bytes of data (a truncated file)", available));
  if (n * width != available)
    return invalid(fmt::format("{} bytes of data for shape {}", n * width, shape_text(header.shape)),
                   fmt::format("{} bytes", available));
  auto out = allocate_host(arg, header.shape, dtype);
  if (!out.ok()) return out.error();

  // Read in chunks: the file's bytes never sit in memory next to the whole array.
  constexpr std::uint64_t kChunkItems = 1 << 16;
  std::vector<char> chunk(static_cast<std::size_t>(std::min(n, kChunkItems) * width));
  for (std::uint64_t first = 0; first < n; first += kChunkItems) {
    const std::uint64_t items = std::min(kChunkItems, n - first);
    if (!read(chunk.data(), items * width))
      return io(fmt::format("{} bytes of data", n * width), "a file that ended early (truncated while read)");
    for (std::uint64_t i = 0; i < items; ++i)
      if (auto s = store_item(out.value(), first + i, *item, chunk.data() + i * width, arg); !s.ok()) return s.error();
  }
  return std::move(out.value());
}

}  // namespace

Result<HostData, RuntimeError> read_npy(std::istream& in, std::uint64_t size, DType dtype,
                                        const std::string& argument) {
  // The reader throws nothing itself; this turns anything a library call might throw into an
  // error naming the argument rather than letting it escape from a tool.
  try {
    return read_stream(in, size, dtype, argument);
  } catch (const std::bad_alloc&) {
    return RuntimeError(ErrorKind::OutOfMemory, argument, "host memory for the array", "an allocation failure");
  } catch (const std::exception& e) {
    return RuntimeError(ErrorKind::IoFailure, argument, "a readable .npy file", e.what());
  }
}

Result<HostData, RuntimeError> read_npy(const std::string& path, DType dtype, const std::string& argument) {
  const std::string& arg = argument.empty() ? path : argument;
  namespace fs = std::filesystem;
  std::error_code ec;
  // Only a regular file: a directory fails to read, and /dev/zero or a pipe never ends.
  const auto status = fs::status(path, ec);
  if (ec) return RuntimeError(ErrorKind::IoFailure, arg, "a readable .npy file", ec.message());
  if (!fs::is_regular_file(status)) {
    const char* what = fs::is_directory(status)        ? "a directory"
                       : fs::is_character_file(status) ? "a character device"
                       : fs::is_block_file(status)     ? "a block device"
                       : fs::is_fifo(status)           ? "a pipe"
                       : fs::is_socket(status)         ? "a socket"
                                                       : "not a regular file";
    return RuntimeError(ErrorKind::IoFailure, arg, "a regular .npy file", what);
  }
  const auto size = fs::file_size(path, ec);
  if (ec) return RuntimeError(ErrorKind::IoFailure, arg, "a readable .npy file", ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return RuntimeError(ErrorKind::IoFailure, arg, "a readable .npy file", std::strerror(errno));
  return read_npy(in, size, dtype, arg);
}

Status<RuntimeError> write_npy(const std::string& path, const HostData& data) {
  std::string descr;
  std::string payload;
  switch (data.dtype) {
    case DType::I32: descr = "<i4"; break;
    case DType::I64: descr = "<i8"; break;
    case DType::U32: descr = "<u4"; break;
    case DType::U8: descr = "|u1"; break;
    default: descr = "<f4"; break;
  }
  if (descr != "<f4") {
    // Integers as stored (the dtype's own little-endian layout): exact, never through double, where
    // an i64 of 2^63 - 1 would round to 2^63 and wrap to -2^63.
    payload.assign(reinterpret_cast<const char*>(data.bytes.data()), data.bytes.size());
  } else {
    for (double v : data.to_f64()) {
      const float f = static_cast<float>(v);
      payload.append(reinterpret_cast<const char*>(&f), 4);
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
