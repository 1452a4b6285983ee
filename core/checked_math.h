#pragma once
// Overflow-checked integer arithmetic for every size formed from user input (extents, strides,
// bytes, grid sizes, workspaces, shared-memory formulas): a wrapped product would pass a bound
// check and turn into a tiny allocation or a huge loop, so the overflow itself is the error.
#include <cstdint>
#include <initializer_list>
#include <optional>

namespace rudnn {

inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of all factors, or nullopt on overflow.
inline std::optional<std::int64_t> checked_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t r = 1;
  for (auto f : factors)
    if (__builtin_mul_overflow(r, f, &r)) return std::nullopt;
  return r;
}

}  // namespace rudnn
