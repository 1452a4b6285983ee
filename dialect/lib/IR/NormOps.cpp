// Verifiers of the normalization family. The contract itself is rudnn::contracts::check_normalization
// (core/contracts/normalization.cpp), so the verifier and the public API reject the same calls with
// the same message.
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/NormConfig.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

using namespace mlir;

namespace rudnn::dialect {

std::optional<NormOpView> asNormOp(Operation* op) {
  NormOpView view;
  view.op = op;
  if (auto ln = dyn_cast<LayerNormOp>(op)) {
    view.kind = contracts::NormKind::LayerNorm;
    view.input = ln.getInput();
    view.gamma = ln.getGamma();
    view.beta = ln.getBeta();
    view.epsilon = ln.getEpsilon().convertToDouble();
    view.kernelConfig = ln.getKernelConfigAttr();
  } else if (auto rms = dyn_cast<RmsNormOp>(op)) {
    view.kind = contracts::NormKind::RmsNorm;
    view.input = rms.getInput();
    view.gamma = rms.getGamma();
    view.epsilon = rms.getEpsilon().convertToDouble();
    view.kernelConfig = rms.getKernelConfigAttr();
  } else if (auto sm = dyn_cast<SoftmaxLastAxisOp>(op)) {
    view.kind = contracts::NormKind::Softmax;
    view.input = sm.getInput();
    view.kernelConfig = sm.getKernelConfigAttr();
  } else {
    return std::nullopt;
  }
  return view;
}

namespace {

FailureOr<contracts::NormOperand> toNormOperand(Operation* op, Value value, StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  std::optional<DType> dtype = toDType(type.getElementType());
  if (!dtype) {
    // No rudnn DType at all (f64, i8, complex, ...): outside every supported set.
    return op->emitOpError() << name << ": expected a rudnn element type (f32, f16, bf16, ...), got "
                             << type.getElementType();
  }
  contracts::NormOperand operand;
  operand.dtype = *dtype;
  operand.device = 0;  // one module describes one call on one device
  for (std::int64_t d : type.getShape()) operand.shape.push_back(ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  return operand;
}

// A config must name every key of the template's RowPolicy with an integer, and be one the
// template can instantiate for the input's dtype and last dim.
LogicalResult verifyKernelConfig(const NormOpView& view, DType dtype, std::int64_t h) {
  norm_config::RowConfig config;
  std::int64_t* fields[] = {&config.threadsPerRow, &config.rowsPerBlock, &config.vectorWidth};
  for (std::size_t i = 0; i < norm_config::kKeys.size(); ++i) {
    auto value = view.kernelConfig.getAs<IntegerAttr>(norm_config::kKeys[i]);
    if (!value)
      return view.op->emitOpError() << "kernel_config: expected an integer '" << norm_config::kKeys[i] << "', got "
                                    << view.kernelConfig;
    *fields[i] = value.getInt();
  }
  if (view.kernelConfig.size() != norm_config::kKeys.size())
    return view.op->emitOpError() << "kernel_config: expected exactly threads_per_row, rows_per_block "
                                     "and vector_width, got "
                                  << view.kernelConfig;
  if (auto why = norm_config::checkRowConfig(config, dtype, h))
    return view.op->emitOpError() << "kernel_config: " << *why;
  if (view.op->hasAttr(kUnalignedAttrName) && config.vectorWidth != 1)
    return view.op->emitOpError() << "kernel_config: vector_width must be 1 for an op marked " << kUnalignedAttrName
                                  << ", got " << config.vectorWidth;
  return success();
}

LogicalResult verifyNormOp(Operation* op) {
  std::optional<NormOpView> view = asNormOp(op);
  contracts::NormSignature sig;
  sig.kind = view->kind;
  sig.epsilon = view->epsilon;
  auto input = toNormOperand(op, view->input, view->kind == contracts::NormKind::Softmax ? "logits" : "input");
  if (failed(input)) return failure();
  sig.input = *input;
  if (view->gamma) {
    auto gamma = toNormOperand(op, view->gamma, "gamma");
    if (failed(gamma)) return failure();
    sig.gamma = *gamma;
  }
  if (view->beta) {
    auto beta = toNormOperand(op, view->beta, "beta");
    if (failed(beta)) return failure();
    sig.beta = *beta;
  }
  if (auto error = contracts::check_normalization(sig)) return op->emitOpError() << error->message();
  if (view->kernelConfig) {
    std::int64_t h = sig.input.shape.back();
    return verifyKernelConfig(*view, sig.input.dtype, h);
  }
  return success();
}

}  // namespace

LogicalResult LayerNormOp::verify() { return verifyNormOp(getOperation()); }
LogicalResult RmsNormOp::verify() { return verifyNormOp(getOperation()); }
LogicalResult SoftmaxLastAxisOp::verify() { return verifyNormOp(getOperation()); }

}  // namespace rudnn::dialect
