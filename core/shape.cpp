#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checked_math.h"
#include "rudnn/tensor.h"

namespace rudnn {

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return s + "]";
}

std::int64_t element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::optional<std::int64_t> checked_element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) return std::nullopt;
    auto next = checked_mul(n, d);
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

std::optional<std::int64_t> checked_byte_count(const Shape& shape, DType dtype) {
  auto n = checked_element_count(shape);
  if (!n) return std::nullopt;
  return checked_mul(*n, static_cast<std::int64_t>(dtype_size(dtype)));
}

}  // namespace rudnn
