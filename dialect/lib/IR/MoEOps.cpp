// Verifiers of the MoE routing ops. The contract itself is rudnn::contracts::check_route /
// check_route_sigmoid_grouped (core/contracts/moe.cpp): the verifier and the public API reject the
// same calls with the same message. Then the IR-only rules: result types and kernel_config.
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

using namespace mlir;

namespace rudnn::dialect {

std::optional<RouteOpView> asRouteOp(Operation* op) {
  RouteOpView view;
  view.op = op;
  if (auto r = dyn_cast<RouteOp>(op)) {
    view.logits = r.getLogits();
    view.options.top_k = r.getTopK();
    view.options.renormalize = r.getRenormalize();
    view.kernelConfig = r.getKernelConfigAttr();
  } else if (auto g = dyn_cast<RouteSigmoidGroupedOp>(op)) {
    view.grouped = true;
    view.logits = g.getLogits();
    view.bias = g.getBias();
    view.options.top_k = g.getTopK();
    view.options.groups = g.getGroups();
    view.options.selected_groups = g.getSelectedGroups();
    view.options.group_top_two = g.getGroupTopTwo();
    view.options.renormalize = g.getRenormalize();
    view.options.scale = g.getScale().convertToDouble();
    view.kernelConfig = g.getKernelConfigAttr();
  } else {
    return std::nullopt;
  }
  return view;
}

namespace {

FailureOr<contracts::MoeOperand> toOperand(Operation* op, Value value, StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  std::optional<DType> dtype = toDType(type.getElementType());
  if (!dtype)
    return op->emitOpError() << name << ": expected a rudnn element type (f32, f16, bf16, ...), got "
                             << type.getElementType();
  contracts::MoeOperand operand;
  operand.dtype = *dtype;
  operand.device = 0;
  for (std::int64_t d : type.getShape()) operand.shape.push_back(ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  return operand;
}

bool extentMatches(std::int64_t a, std::int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

LogicalResult verifyResult(Operation* op, Value result, StringRef name, Type elementType, std::int64_t tokens,
                           std::int64_t topK) {
  auto type = cast<RankedTensorType>(result.getType());
  if (type.getElementType() != elementType || type.getRank() != 2 || !extentMatches(type.getDimSize(0), tokens) ||
      !extentMatches(type.getDimSize(1), topK))
    return op->emitOpError() << name << ": expected " << RankedTensorType::get({tokens, topK}, elementType)
                             << ", got " << type;
  return success();
}

LogicalResult verifyRouteOp(Operation* op) {
  std::optional<RouteOpView> view = asRouteOp(op);
  auto logits = toOperand(op, view->logits, "logits");
  if (failed(logits)) return failure();
  if (view->grouped) {
    contracts::GroupRouteSignature sig = view->options;
    sig.logits = *logits;
    if (view->bias) {
      auto bias = toOperand(op, view->bias, "bias");
      if (failed(bias)) return failure();
      sig.bias = *bias;
    }
    if (auto error = contracts::check_route_sigmoid_grouped(sig)) return op->emitOpError() << error->message();
  } else {
    contracts::RouteSignature sig;
    sig.logits = *logits;
    sig.top_k = view->options.top_k;
    sig.renormalize = view->options.renormalize;
    if (auto error = contracts::check_route(sig)) return op->emitOpError() << error->message();
  }
  RankedTensorType type = view->logitsType();
  const std::int64_t tokens = type.getDimSize(0), topK = view->options.top_k;
  Builder b(op->getContext());
  if (failed(verifyResult(op, op->getResult(0), "indices", b.getIntegerType(32, /*isSigned=*/false), tokens, topK)) ||
      failed(verifyResult(op, op->getResult(1), "weights", type.getElementType(), tokens, topK)))
    return failure();
  if (view->kernelConfig) {
    auto rows = view->kernelConfig.getAs<IntegerAttr>(route_config::kRowsPerBlock);
    if (!rows || view->kernelConfig.size() != 1)
      return op->emitOpError() << "kernel_config: expected exactly an integer 'rows_per_block', got "
                               << view->kernelConfig;
    bool known = false;
    for (std::int64_t c : route_config::kRowsPerBlockChoices) known |= rows.getInt() == c;
    if (!known)
      return op->emitOpError() << "kernel_config: rows_per_block must be 1, 2, 4 or 8, got " << rows.getInt();
  }
  return success();
}

}  // namespace

LogicalResult RouteOp::verify() { return verifyRouteOp(getOperation()); }
LogicalResult RouteSigmoidGroupedOp::verify() { return verifyRouteOp(getOperation()); }

}  // namespace rudnn::dialect
