#pragma once
// The one mapping between MLIR element types and rudnn::DType.
#include <optional>

#include "contracts/operand.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"
#include "rudnn/dtype.h"

namespace rudnn::dialect {

// f32/f16/bf16, i32 (signless), ui32, i64 (signless), f8E4M3FN; anything else has no DType.
std::optional<DType> toDType(mlir::Type elementType);
mlir::Type toElementType(mlir::MLIRContext* ctx, DType dtype);

// A ranked tensor (type or value) as the contracts see it (dynamic extents are contracts::kDynamic, device 0),
// or nothing when its element type has no DType.
std::optional<contracts::Operand> contractOperandOf(mlir::Type rankedTensorType);
inline std::optional<contracts::Operand> contractOperandOf(mlir::Value value) {
  return contractOperandOf(value.getType());
}

// C++ spelling of an element type in generated sources: "float", "rudnn::f16", "rudnn::bf16", ...
const char* cTypeName(DType dtype);

}  // namespace rudnn::dialect
