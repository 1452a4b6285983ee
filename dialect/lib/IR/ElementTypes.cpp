#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace rudnn::dialect {

std::optional<DType> toDType(Type t) {
  if (t.isF32()) return DType::F32;
  if (t.isF16()) return DType::F16;
  if (t.isBF16()) return DType::BF16;
  if (isa<Float8E4M3FNType>(t)) return DType::FP8E4M3;
  if (t.isSignlessInteger(32)) return DType::I32;
  if (t.isUnsignedInteger(32)) return DType::U32;
  if (t.isUnsignedInteger(8)) return DType::U8;
  if (t.isSignlessInteger(64)) return DType::I64;
  return std::nullopt;
}

Type toElementType(MLIRContext* ctx, DType dtype) {
  Builder b(ctx);
  switch (dtype) {
    case DType::F32: return b.getF32Type();
    case DType::F16: return b.getF16Type();
    case DType::BF16: return b.getBF16Type();
    case DType::FP8E4M3: return b.getType<Float8E4M3FNType>();
    case DType::I32: return b.getIntegerType(32);
    case DType::U32: return b.getIntegerType(32, /*isSigned=*/false);
    case DType::I64: return b.getIntegerType(64);
    case DType::U8: return b.getIntegerType(8, /*isSigned=*/false);
  }
  return {};
}

std::optional<contracts::Operand> contractOperandOf(mlir::Type rankedTensorType) {
  auto ranked = mlir::cast<mlir::RankedTensorType>(rankedTensorType);
  std::optional<DType> dtype = toDType(ranked.getElementType());
  if (!dtype) return std::nullopt;
  contracts::Operand o;
  o.dtype = *dtype;
  for (std::int64_t d : ranked.getShape()) o.shape.push_back(mlir::ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  return o;
}

const char* cTypeName(DType dtype) {
  switch (dtype) {
    case DType::F32: return "float";
    case DType::F16: return "rudnn::f16";
    case DType::BF16: return "rudnn::bf16";
    case DType::FP8E4M3: return "rudnn::fp8e4m3";
    case DType::I32: return "rudnn::i32";
    case DType::U32: return "rudnn::u32";
    case DType::I64: return "rudnn::i64";
    case DType::U8: return "rudnn::u8";
  }
  return "?";
}

}  // namespace rudnn::dialect
