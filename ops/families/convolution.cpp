// Convolution (rudnn.conv_forward, rudnn.conv_data_backward, rudnn.conv_weight_backward) in the
// graph runner and rudnn-precompile.
#include "contracts/arch.h"
#include "family.h"
#include "rudnn/Dialect/Rudnn/IR/ConvConfig.h"
#include "rudnn/Dialect/Rudnn/IR/ConvOps.h"
#include "rudnn/compiler/conv.h"
#include "rudnn/convolution.h"

namespace rudnn::ops {
namespace {

using convolution::ConvLayout;
using convolution::ConvStrategy;

ConvStrategy strategy_of(llvm::StringRef s) {
  return s == "direct" ? ConvStrategy::Direct : s == "autotune" ? ConvStrategy::Autotune : ConvStrategy::ImplicitGemm;
}

template <class Op>
convolution::ConvOptions options_of(Op op) {
  convolution::ConvOptions o;
  o.stride.assign(op.getStride().begin(), op.getStride().end());
  o.padding.assign(op.getPadding().begin(), op.getPadding().end());
  o.dilation.assign(op.getDilation().begin(), op.getDilation().end());
  o.groups = op.getGroups();
  return o;
}

// A result's shape with its dynamic batch taken from `batch_of`.
Shape shape_of(mlir::Value result, const Tensor& batch_of) {
  Shape s = operand_of(result).shape;
  if (!s.empty() && s[0] == contracts::kDynamic) s[0] = batch_of.dim(0);
  return s;
}

std::optional<RuntimeError> run(mlir::Operation& op, GraphValues& values) {
  if (auto f = llvm::dyn_cast<dialect::ConvForwardOp>(op)) {
    auto entry = f.getChannelsLast() ? &convolution::conv_forward_nhwc : &convolution::conv_forward;
    auto r = entry(values[f.getInput()], values[f.getWeight()], values.optional(f.getBias()), options_of(f),
                   strategy_of(f.getStrategy()), nullptr);
    if (!r.ok()) return op_error(r.error(), op);
    return values.bind(f.getOutput(), std::move(r.value()));
  }
  if (auto d = llvm::dyn_cast<dialect::ConvDataBackwardOp>(op)) {
    const Tensor& dy = values[d.getGradOutput()];
    auto r = convolution::conv_data_backward(
        dy, values[d.getWeight()], shape_of(d.getGradInput(), dy), options_of(d), strategy_of(d.getStrategy()),
        d.getChannelsLast() ? ConvLayout::ChannelsLast : ConvLayout::ChannelsFirst);
    if (!r.ok()) return op_error(r.error(), op);
    return values.bind(d.getGradInput(), std::move(r.value()));
  }
  auto w = llvm::cast<dialect::ConvWeightBackwardOp>(op);
  auto r = convolution::conv_weight_backward(
      values[w.getInput()], values[w.getGradOutput()], operand_of(w.getGrads()[0]).shape, options_of(w),
      w.getBiasGrad(), strategy_of(w.getStrategy()),
      w.getChannelsLast() ? ConvLayout::ChannelsLast : ConvLayout::ChannelsFirst);
  if (!r.ok()) return op_error(r.error(), op);
  if (auto e = values.bind(w.getGrads()[0], std::move(r->grad_weight))) return e;
  if (w.getBiasGrad()) return values.bind(w.getGrads()[1], std::move(*r->grad_bias));
  return std::nullopt;
}

// Every extent but the batch is baked into the kernels.
Result<std::vector<compiler::LoweredOp>, RuntimeError> kernels(mlir::Operation& op, const compiler::Target& target,
                                                               bool with_candidates, const std::string& where) {
  auto sig = dialect::convSignatureOf(&op);
  if (!sig) return RuntimeError(ErrorKind::InvalidValue, where, "a convolution op", op.getName().getStringRef().str());
  for (const Shape* s : {&sig->input.shape, &sig->weight.shape})
    for (std::size_t d = 1; d < s->size(); ++d)
      if ((*s)[d] == contracts::kDynamic)
        return RuntimeError(ErrorKind::ShapeMismatch, where, "static extents but the batch", shape_to_string(*s));
  compiler::ConvRequest request;
  request.signature = *sig;
  request.strategy = op.getAttrOfType<mlir::StringAttr>("strategy").str();
  request.bias_grad = op.getNumResults() > 1;
  // The entry's heuristic (through rudnn.batch_hint) and autotune's candidates see the call's
  // batch: a batch with few output tiles runs the split-K kernels. Their source is the same for every
  // split count, and batch 1 splits the forward and data backward the most (the weight backward's
  // split count only changes a launch constant), so the configs made for batch 1 name every kernel
  // any batch runs (lowered with the op's own, dynamic, batch).
  contracts::ConvSignature one = *sig;
  for (contracts::Operand* t : {&one.input, one.grad_output ? &*one.grad_output : nullptr})
    if (t && !t->shape.empty()) t->shape[0] = 1;
  const bool tensor_cores = contracts::has_mma_m16n8k16(target.arch);
  const auto max_shared = static_cast<std::int64_t>(target.limits.shared_memory_per_block_optin);
  std::vector<compiler::KernelConfig> configs;
  if (with_candidates)
    configs = compiler::conv_variants(one, tensor_cores, max_shared,
                                      contracts::has_wgmma(target.arch, target.host_emulation));
  if (!contracts::known(contracts::conv_geometry(*sig).batch)) {
    const DType dtype =
        sig->direction == contracts::ConvDirection::DataBackward ? sig->grad_output->dtype : sig->input.dtype;
    const auto h = dialect::conv_config::heuristicChoice(sig->direction, contracts::conv_geometry(one), dtype,
                                                         request.strategy != "direct", tensor_cores, max_shared);
    configs.push_back(compiler::KernelConfig{dialect::conv_config::valuesOf(h.choice)});
  }
  return lower_configs(request, configs, target, &compiler::lower_conv);
}

const bool kRegistered = register_family(
    {"convolution",
     {dialect::ConvForwardOp::getOperationName().str(), dialect::ConvDataBackwardOp::getOperationName().str(),
      dialect::ConvWeightBackwardOp::getOperationName().str()},
     &run,
     &kernels});

}  // namespace
}  // namespace rudnn::ops
