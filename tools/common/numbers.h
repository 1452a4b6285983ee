#pragma once
// The one strict number parser of the tools (rudnn-run, rudnn-bench, rudnn-precompile,
// rudnn-autotune). A numeric option's whole value must be the number: no prefix parse ("5abc"),
// no leading space or '+', no wrap of a negative into an unsigned seed, no empty value. The error
// names the option, what it expects and the value it got ("--time: expected an integer >= 1, got
// \"5abc\""). Header-only: rudnn-precompile and rudnn-autotune link the object libraries, not the
// tools' static library.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "rudnn/error.h"

namespace rudnn::tools {

// "--flag: expected <expected>, got "<text>"" (InvalidValue), the tools' error for a bad option value.
inline RuntimeError bad_option(const std::string& option, const std::string& expected, const std::string& text) {
  return RuntimeError(ErrorKind::InvalidValue, option, expected, fmt::format("\"{}\"", text));
}

namespace detail {

// The whole of `text` as a T (std::from_chars: no locale, no space, no '+'), or nullopt.
template <class T>
bool parse_whole(const std::string& text, T& out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

inline std::string int_range(std::int64_t lo, std::int64_t hi) {
  if (hi == std::numeric_limits<std::int64_t>::max()) return fmt::format("an integer >= {}", lo);
  return fmt::format("an integer in [{}, {}]", lo, hi);
}

}  // namespace detail

// A decimal integer in [lo, hi].
inline Result<std::int64_t, RuntimeError> parse_int(const std::string& option, const std::string& text, std::int64_t lo,
                                                    std::int64_t hi = std::numeric_limits<std::int64_t>::max()) {
  std::int64_t v = 0;
  if (!detail::parse_whole(text, v) || v < lo || v > hi) return bad_option(option, detail::int_range(lo, hi), text);
  return v;
}

// A decimal integer in [0, 2^64 - 1] (a random seed): "-1" is an error, not 2^64 - 1.
inline Result<std::uint64_t, RuntimeError> parse_uint64(const std::string& option, const std::string& text) {
  std::uint64_t v = 0;
  if (!detail::parse_whole(text, v)) return bad_option(option, "an integer in [0, 18446744073709551615]", text);
  return v;
}

// A finite decimal number ("1e3", "-0.5"); inf and nan are errors.
inline Result<double, RuntimeError> parse_double(const std::string& option, const std::string& text) {
  double v = 0;
  if (!detail::parse_whole(text, v) || !std::isfinite(v)) return bad_option(option, "a finite number", text);
  return v;
}

}  // namespace rudnn::tools
