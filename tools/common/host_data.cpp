#include "host_data.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

namespace rudnn::tools {

std::optional<IntRange> int_range(DType dtype) {
  switch (dtype) {
    case DType::U8: return IntRange{0, 255};
    case DType::U32: return IntRange{0, std::numeric_limits<std::uint32_t>::max()};
    case DType::I32:
      return IntRange{std::numeric_limits<std::int32_t>::min(),
                      static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())};
    case DType::I64:
      return IntRange{std::numeric_limits<std::int64_t>::min(),
                      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())};
    default: return std::nullopt;
  }
}

namespace {

RuntimeError bad_value(const HostData& data, std::size_t index, const std::string& value, const std::string& argument) {
  const IntRange r = *int_range(data.dtype);
  return RuntimeError(ErrorKind::InvalidValue, argument,
                      fmt::format("an integer in [{}, {}] ({})", r.lo, r.hi, dtype_name(data.dtype)),
                      fmt::format("{} at element {}", value, index));
}

// Writes an in-range integer as the dtype's own type.
void put_int(HostData& data, std::size_t index, std::int64_t v) {
  std::byte* p = data.bytes.data() + index * dtype_size(data.dtype);
  switch (data.dtype) {
    case DType::U8: *p = static_cast<std::byte>(static_cast<std::uint8_t>(v)); break;
    case DType::U32: {
      auto u = static_cast<std::uint32_t>(v);
      std::memcpy(p, &u, 4);
      break;
    }
    case DType::I32: {
      auto s = static_cast<std::int32_t>(v);
      std::memcpy(p, &s, 4);
      break;
    }
    default: std::memcpy(p, &v, 8); break;  // I64
  }
}

// Writes a value to a float dtype with HostData::from_f64's rounding (double → float → dtype).
void put_float(HostData& data, std::size_t index, double value) {
  std::byte* p = data.bytes.data() + index * dtype_size(data.dtype);
  const float f = static_cast<float>(value);
  switch (data.dtype) {
    case DType::F32: std::memcpy(p, &f, 4); break;
    case DType::F16: {
      auto h = float_to_half_bits(f);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::BF16: {
      auto h = float_to_bf16_bits(f);
      std::memcpy(p, &h, 2);
      break;
    }
    default: *p = static_cast<std::byte>(float_to_fp8e4m3_bits(f)); break;  // FP8E4M3
  }
}

}  // namespace

Result<HostData, RuntimeError> allocate_host(const std::string& argument, const Shape& shape, DType dtype) {
  const auto bytes = checked_byte_count(shape, dtype);
  if (!bytes)
    return RuntimeError(ErrorKind::InvalidValue, argument, "a shape whose size in bytes fits in 64 bits",
                        fmt::format("{} of {}", shape_to_string(shape), dtype_name(dtype)));
  HostData data{shape, dtype, {}};
  try {
    data.bytes.resize(static_cast<std::size_t>(*bytes));
  } catch (const std::bad_alloc&) {
    return RuntimeError(ErrorKind::OutOfMemory, argument, fmt::format("{} bytes of host memory", *bytes),
                        "an allocation failure", shape_to_string(shape) + " of " + std::string(dtype_name(dtype)));
  } catch (const std::length_error&) {
    return RuntimeError(ErrorKind::OutOfMemory, argument, fmt::format("{} bytes of host memory", *bytes),
                        "more than a vector can hold",
                        shape_to_string(shape) + " of " + std::string(dtype_name(dtype)));
  }
  return data;
}

Status<RuntimeError> store(HostData& data, std::size_t index, double value, const std::string& argument) {
  if (!int_range(data.dtype)) {
    put_float(data, index, value);
    return {};
  }
  // Integral and finite first; then the exact integer (every integral double below 2^64 in
  // magnitude converts exactly) goes through the integer overloads' range check.
  if (!std::isfinite(value) || value != std::trunc(value))
    return bad_value(data, index, fmt::format("{}", value), argument);
  if (value < 0) {
    if (value < -9223372036854775808.0) return bad_value(data, index, fmt::format("{}", value), argument);
    return store(data, index, static_cast<std::int64_t>(value), argument);
  }
  if (value >= 18446744073709551616.0) return bad_value(data, index, fmt::format("{}", value), argument);
  return store(data, index, static_cast<std::uint64_t>(value), argument);
}

Status<RuntimeError> store(HostData& data, std::size_t index, std::int64_t value, const std::string& argument) {
  const auto range = int_range(data.dtype);
  if (!range) {
    put_float(data, index, static_cast<double>(value));
    return {};
  }
  if (value < range->lo || (value > 0 && static_cast<std::uint64_t>(value) > range->hi))
    return bad_value(data, index, std::to_string(value), argument);
  put_int(data, index, value);
  return {};
}

Status<RuntimeError> store(HostData& data, std::size_t index, std::uint64_t value, const std::string& argument) {
  const auto range = int_range(data.dtype);
  if (!range) {
    put_float(data, index, static_cast<double>(value));
    return {};
  }
  if (value > range->hi) return bad_value(data, index, std::to_string(value), argument);
  put_int(data, index, static_cast<std::int64_t>(value));
  return {};
}

Result<HostData, RuntimeError> random_host_data(const std::string& argument, const Shape& shape, DType dtype,
                                                std::optional<std::pair<double, double>> range, std::mt19937_64& rng) {
  auto data = allocate_host(argument, shape, dtype);
  if (!data.ok()) return data.error();
  const auto ints = int_range(dtype);
  auto [lo, hi] = range ? *range : ints ? std::pair{0.0, 2.0} : std::pair{-1.0, 1.0};
  const std::size_t n = static_cast<std::size_t>(element_count(shape));  // allocated, so it fits
  if (!ints) {
    std::uniform_real_distribution<double> draw(lo, hi);
    for (std::size_t i = 0; i < n; ++i)
      if (auto s = store(*data, i, draw(rng), argument); !s.ok()) return s.error();
    return data;
  }
  // The integers of [lo, hi), as the argument's type can hold them.
  const double first = std::ceil(lo), last = std::ceil(hi) - 1;
  if (first > last || first < static_cast<double>(ints->lo) || last > static_cast<double>(ints->hi))
    return RuntimeError(ErrorKind::InvalidValue, "--random-range " + argument,
                        fmt::format("a range of integers inside [{}, {}] ({})", ints->lo, ints->hi, dtype_name(dtype)),
                        fmt::format("[{}, {})", lo, hi));
  // (an i64 range may end at 2^63 as a double, one past INT64_MAX)
  std::uniform_int_distribution<std::int64_t> draw(
      static_cast<std::int64_t>(first),
      last >= 0x1p63 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(last));
  for (std::size_t i = 0; i < n; ++i)
    if (auto s = store(*data, i, draw(rng), argument); !s.ok()) return s.error();
  return data;
}

}  // namespace rudnn::tools
