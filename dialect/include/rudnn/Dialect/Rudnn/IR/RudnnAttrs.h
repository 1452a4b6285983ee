#pragma once
// Attributes of the rudnn dialect: #rudnn.size (a launch size expression) and #rudnn.param
// (a kernel parameter). The plain structs below are their storage.
#include <cstdint>

#include "llvm/ADT/Hashing.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

namespace rudnn::dialect {

// One factor of a size expression: a constant, the rows (product of all but the last dim) of
// operand `operand`, dim `dim` of operand `operand`, the row stride of operand `operand` (the
// elements from one row to the next: the last extent when contiguous, more for a view whose rows
// sit apart in a larger buffer, SPEC §13), or the element stride of dim `dim` of operand `operand`
// (the product of the later extents when contiguous, a caller's view's own otherwise; 0 for a dim
// of extent 1, which is never stepped over).
struct SizeFactor {
  enum class Kind : std::int64_t { Const, Rows, Dim, RowStride, Stride };
  Kind kind = Kind::Const;
  std::int64_t operand = -1;
  std::int64_t dim = -1;
  std::int64_t value = 1;

  static SizeFactor constant(std::int64_t v) { return {Kind::Const, -1, -1, v}; }
  static SizeFactor rows(std::int64_t operand) { return {Kind::Rows, operand, -1, 1}; }
  static SizeFactor dimOf(std::int64_t operand, std::int64_t dim) { return {Kind::Dim, operand, dim, 1}; }
  static SizeFactor rowStride(std::int64_t operand) { return {Kind::RowStride, operand, -1, 1}; }
  static SizeFactor strideOf(std::int64_t operand, std::int64_t dim) { return {Kind::Stride, operand, dim, 1}; }
  bool operator==(const SizeFactor&) const = default;
};
inline llvm::hash_code hash_value(const SizeFactor& f) {
  return llvm::hash_combine(static_cast<std::int64_t>(f.kind), f.operand, f.dim, f.value);
}

enum class KernelParamKind : std::int64_t { Buffer, NullBuffer, Size, F32 };

}  // namespace rudnn::dialect

#define GET_ATTRDEF_CLASSES
#include "rudnn/Dialect/Rudnn/IR/RudnnAttrs.h.inc"
