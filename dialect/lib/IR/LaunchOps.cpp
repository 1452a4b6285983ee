// rudnn.launch: every reference to an operand/result must exist, and every size must be computable
// from ranked operands.
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

using namespace mlir;

namespace rudnn::dialect {

namespace {

LogicalResult verifySize(LaunchOp op, SizeExprAttr size, StringRef where) {
  const std::int64_t slots = op->getNumOperands() + op->getNumResults();
  for (const SizeFactor& f : size.getFactors()) {
    if (f.kind == SizeFactor::Kind::Const) continue;
    if (f.operand >= slots)
      return op.emitOpError() << where << ": operand " << f.operand << " out of range (the launch has " << slots
                              << " operands and results)";
    Value value =
        f.operand < op->getNumOperands() ? op->getOperand(f.operand) : op->getResult(f.operand - op->getNumOperands());
    auto type = cast<RankedTensorType>(value.getType());
    if ((f.kind == SizeFactor::Kind::Dim || f.kind == SizeFactor::Kind::Stride) && f.dim >= type.getRank())
      return op.emitOpError() << where << ": dim " << f.dim << " out of range for " << type;
    if ((f.kind == SizeFactor::Kind::Rows || f.kind == SizeFactor::Kind::RowStride) && type.getRank() < 1)
      return op.emitOpError() << where << ": rows of a rank-0 operand";
  }
  return success();
}

}  // namespace

LogicalResult LaunchOp::verify() {
  if (getGrid().size() != 3) return emitOpError() << "grid: expected 3 sizes, got " << getGrid().size();
  if (getBlock().size() != 3) return emitOpError() << "block: expected 3 extents, got " << getBlock().size();
  for (std::int64_t extent : getBlock())
    if (extent < 1) return emitOpError() << "block: extents must be >= 1";
  if (getDynamicSharedBytesAttr().getInt() < 0) return emitOpError() << "shared: must be >= 0";
  for (auto [i, size] : llvm::enumerate(getGrid().getAsRange<SizeExprAttr>()))
    if (failed(verifySize(*this, size, "grid[" + std::to_string(i) + "]"))) return failure();
  const std::int64_t slots = getNumOperands() + getNumResults();
  for (KernelParamAttr param : getParams().getAsRange<KernelParamAttr>()) {
    if (param.getKind() == KernelParamKind::Buffer && param.getOperand() >= slots)
      return emitOpError() << "param '" << param.getName() << "': operand " << param.getOperand()
                           << " out of range (the launch has " << slots << " operands and results)";
    if (param.getKind() == KernelParamKind::Size &&
        failed(verifySize(*this, param.getSize(), ("param '" + param.getName() + "'").str())))
      return failure();
  }
  if (ArrayAttr elements = getResultElementsAttr()) {
    if (elements.size() != getNumResults())
      return emitOpError() << "result_elements: expected one size per result (" << getNumResults() << "), got "
                           << elements.size();
    for (auto [i, size] : llvm::enumerate(elements.getAsRange<SizeExprAttr>()))
      if (failed(verifySize(*this, size, "result_elements[" + std::to_string(i) + "]"))) return failure();
  }
  for (NamedAttribute entry : getKernelConfig())
    if (!isa<IntegerAttr>(entry.getValue()))
      return emitOpError() << "config: '" << entry.getName() << "' must be an integer";
  return success();
}

}  // namespace rudnn::dialect
