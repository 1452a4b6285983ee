// lower_router_weights / lower_combine_backward / lower_dispatch_backward: a request → `func.func
// @main` with one MoE training op, every extent dynamic → verify → select kernel config → lower to
// launch → KernelLaunches.
#include <fmt/format.h>

#include "Pipeline/SingleOp.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/MoETrainingOps.h"
#include "rudnn/compiler/moe_training.h"

using namespace mlir;

namespace rudnn::compiler {

using namespace pipeline_detail;

namespace {

// A rank-`rank` tensor of `dtype` with every extent dynamic.
RankedTensorType dynamicType(MLIRContext* ctx, std::size_t rank, DType dtype) {
  return RankedTensorType::get(SmallVector<std::int64_t>(rank, ShapedType::kDynamic),
                               dialect::toElementType(ctx, dtype));
}
RankedTensorType dynamicType(MLIRContext* ctx, const contracts::MoeOperand& o) {
  return dynamicType(ctx, o.shape.size(), o.dtype);
}

}  // namespace

Result<LoweredOp, RuntimeError> lower_router_weights(const RouterWeightsRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::RouterWeightsSignature& sig = request.signature;
  const bool backward = sig.grad_weights.has_value();
  SmallVector<Type> args = {dynamicType(&ctx, sig.logits), dynamicType(&ctx, sig.indices)};
  if (backward) args.push_back(dynamicType(&ctx, *sig.grad_weights));
  Type result = backward ? args[0] : dynamicType(&ctx, 2, DType::F32);
  return lowerSingleOp(args, {result}, request.config, contracts::describe_call(sig), target,
                       [&](OpBuilder& b, ValueRange a) -> Operation* {
                         auto scoring =
                             b.getStringAttr(sig.scoring == contracts::RouterScore::Sigmoid ? "sigmoid" : "softmax");
                         auto renormalize = b.getBoolAttr(sig.renormalize);
                         auto scale = b.getF32FloatAttr(static_cast<float>(sig.scale));
                         if (backward)
                           return dialect::RouterBackwardOp::create(b, b.getUnknownLoc(), result, a[0], a[1], a[2],
                                                                    scoring, renormalize, scale, DictionaryAttr());
                         return dialect::RouterWeightsOp::create(b, b.getUnknownLoc(), result, a[0], a[1], scoring,
                                                                 renormalize, scale, DictionaryAttr());
                       });
}

Result<LoweredOp, RuntimeError> lower_combine_backward(const CombineBackwardRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::CombineBackwardSignature& sig = request.signature;
  SmallVector<Type> args = {dynamicType(&ctx, sig.combine.expert_rows), dynamicType(&ctx, sig.grad_output),
                            dynamicType(&ctx, sig.combine.slots), dynamicType(&ctx, sig.combine.weights)};
  SmallVector<Type> results = {args[0], dynamicType(&ctx, 2, DType::F32)};
  return lowerSingleOp(args, results, request.config, contracts::describe_call(sig.combine), target,
                       [&](OpBuilder& b, ValueRange a) -> Operation* {
                         return dialect::CombineBackwardOp::create(
                             b, b.getUnknownLoc(), results, a[0], a[1], a[2], a[3],
                             b.getStringAttr(request.plane ? "plane" : "serial"), DictionaryAttr());
                       });
}

Result<LoweredOp, RuntimeError> lower_dispatch_backward(const DispatchBackwardRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::DispatchBackwardSignature& sig = request.signature;
  SmallVector<Type> args = {dynamicType(&ctx, sig.drows), dynamicType(&ctx, sig.slots)};
  return lowerSingleOp(args, {args[0]}, request.config,
                       fmt::format("drows {} {}, slots {}", shape_to_string(sig.drows.shape),
                                   dtype_name(sig.drows.dtype), shape_to_string(sig.slots.shape)),
                       target, [&](OpBuilder& b, ValueRange a) -> Operation* {
                         return dialect::DispatchBackwardOp::create(b, b.getUnknownLoc(), args[0], a[0], a[1],
                                                                    DictionaryAttr());
                       });
}

Result<LoweredOp, RuntimeError> lower_experts_backward(const ExpertsBackwardRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::ExpertsBackwardSignature& sig = request.signature;
  const contracts::ExpertWeights& w = sig.experts.weights;
  SmallVector<Type> args = {dynamicType(&ctx, sig.experts.rows),
                            dynamicType(&ctx, sig.experts.offsets),
                            dynamicType(&ctx, sig.slots),
                            dynamicType(&ctx, w.gate),
                            dynamicType(&ctx, w.up),
                            dynamicType(&ctx, w.down),
                            dynamicType(&ctx, sig.dexpert)};
  SmallVector<Type> results = {args[0], dynamicType(&ctx, 3, DType::F32), dynamicType(&ctx, 3, DType::F32),
                               dynamicType(&ctx, 3, DType::F32)};
  return lowerSingleOp(args, results, request.config, contracts::describe_call(sig.experts), target,
                       [&](OpBuilder& b, ValueRange a) -> Operation* {
                         return dialect::SwiGluExpertsBackwardOp::create(
                             b, b.getUnknownLoc(), results, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                             b.getStringAttr(contracts::strategy_name(request.strategy)), DictionaryAttr());
                       });
}

}  // namespace rudnn::compiler
