#pragma once
// What every contract looks at, and the checks the families' contracts are composed of: one rule
// each, written once, returning the family's error type E (a FamilyError<Tag>).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "rudnn/dtype.h"
#include "rudnn/error.h"
#include "rudnn/tensor.h"

namespace rudnn::contracts {

// An operand as a contract sees it. Dynamic extents (MLIR `?`) are kDynamic and pass the checks
// that need a value; the runtime entries always have concrete extents.
struct Operand {
  Shape shape;
  DType dtype = DType::F32;
  int device = 0;  // an identity for "same device": equal numbers are the same device
};

inline constexpr std::int64_t kDynamic = -1;

inline bool known(std::int64_t extent) { return extent != kDynamic; }
// Equal, or either unknown.
inline bool same_extent(std::int64_t a, std::int64_t b) { return !known(a) || !known(b) || a == b; }
// "64", or "?" for a dynamic extent.
inline std::string extent_text(std::int64_t extent) { return known(extent) ? std::to_string(extent) : "?"; }

template <class E>
E fail(ErrorKind kind, std::string argument, std::string expected, std::string actual) {
  return E(kind, std::move(argument), std::move(expected), std::move(actual));
}

// A non-quantized f32, f16 or bf16 tensor.
template <class E>
std::optional<E> check_float(const Operand& x, std::string_view name) {
  if (is_quantized(x.dtype))
    return fail<E>(ErrorKind::QuantizedDType, std::string(name), "non-quantized f32, f16 or bf16",
                   std::string(dtype_name(x.dtype)));
  if (!is_float(x.dtype))
    return fail<E>(ErrorKind::UnsupportedDType, std::string(name), "f32, f16 or bf16",
                   std::string(dtype_name(x.dtype)));
  return std::nullopt;
}

// Exactly the extents of `want` (kDynamic entries on either side match anything).
template <class E>
std::optional<E> check_shape(const Operand& x, std::string_view name, const Shape& want, std::string_view layout) {
  bool ok = x.shape.size() == want.size();
  for (std::size_t d = 0; ok && d < want.size(); ++d) ok = same_extent(x.shape[d], want[d]);
  if (ok) return std::nullopt;
  std::string w = "[";
  for (std::size_t d = 0; d < want.size(); ++d) w += (d ? ", " : "") + extent_text(want[d]);
  return fail<E>(ErrorKind::ShapeMismatch, std::string(name), fmt::format("{}] ({})", w, layout),
                 shape_to_string(x.shape));
}

// On the device of `ref`.
template <class E>
std::optional<E> check_device(const Operand& x, std::string_view name, const Operand& ref, std::string_view ref_name) {
  if (x.device == ref.device) return std::nullopt;
  return fail<E>(ErrorKind::DeviceMismatch, std::string(name),
                 fmt::format("the device of {} ({})", ref_name, ref.device), fmt::format("device {}", x.device));
}

}  // namespace rudnn::contracts
