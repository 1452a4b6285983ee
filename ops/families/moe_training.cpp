// MoE training (rudnn.router_weights, rudnn.router_backward, rudnn.combine_backward,
// rudnn.dispatch_backward, rudnn.swiglu_experts_backward) in the graph runner and rudnn-precompile. The router ops take
// plain tensors (rudnn.router_weights on a routing op's indices also makes that routing a training one: see run);
// combine_backward, dispatch_backward and swiglu_experts_backward run on the Dispatched object of the rudnn.dispatch
// their slots (rows) come from (ops/families/moe.cpp attaches it), as rudnn.combine does.
#include <fmt/format.h>

#include "family.h"
#include "moe_strategy.h"
#include "rudnn/Dialect/Rudnn/IR/MoETrainingOps.h"
#include "rudnn/compiler/moe_training.h"
#include "rudnn/moe.h"

namespace rudnn::ops {
namespace {

template <class Op>
moe::RouterWeightOptions options_of(Op op) {
  return {op.getScoring() == "sigmoid" ? moe::RouterScoring::Sigmoid : moe::RouterScoring::Softmax, op.getRenormalize(),
          op.getScale().convertToFloat()};
}

std::optional<RuntimeError> run(mlir::Operation& op, GraphValues& values) {
  if (auto w = llvm::dyn_cast<dialect::RouterWeightsOp>(op)) {
    // On the indices of a routing op of this graph: RoutingPlan::into_training — the routing is
    // re-attached with the recomputed FP32 weights, so a later rudnn.dispatch of these indices
    // dispatches (and combines) with them.
    if (auto routing = values.attached<moe::RoutingPlan>(w.getIndices())) {
      auto training = routing->into_training(values[w.getLogits()], options_of(w));
      if (!training.ok()) return op_error(training.error(), op);
      values.attach(w.getIndices(), std::make_shared<moe::RoutingPlan>(training->routing()));
      return values.bind(w.getWeights(), training->routing().weights());
    }
    auto r = moe::selected_router_weights(values[w.getLogits()], values[w.getIndices()], options_of(w));
    if (!r.ok()) return op_error(r.error(), op);
    return values.bind(w.getWeights(), std::move(r.value()));
  }
  if (auto b = llvm::dyn_cast<dialect::RouterBackwardOp>(op)) {
    auto r = moe::selected_router_backward(values[b.getLogits()], values[b.getIndices()], values[b.getGradWeights()],
                                           options_of(b));
    if (!r.ok()) return op_error(r.error(), op);
    return values.bind(b.getGradLogits(), std::move(r.value()));
  }
  if (auto cb = llvm::dyn_cast<dialect::CombineBackwardOp>(op)) {
    auto d = values.attached<moe::Dispatched>(cb.getSlots());
    if (!d) return foreign_value(op, "slots", "the slots result of a rudnn.dispatch in this graph");
    if (values[cb.getWeights()].data() != d->routing().weights().data())
      return foreign_value(op, "weights", "the weights of the routing the slots came from");
    auto r = d->combine_backward_with_strategy(
        values[cb.getExpertRows()], values[cb.getGradOutput()],
        cb.getStrategy() == "plane" ? moe::CombineGradientStrategy::Plane : moe::CombineGradientStrategy::Serial);
    if (!r.ok()) return op_error(r.error(), op);
    if (auto e = values.bind(cb.getDexpert(), std::move(r->dexpert))) return e;
    return values.bind(cb.getDweights(), std::move(r->dweights));
  }
  if (auto eb = llvm::dyn_cast<dialect::SwiGluExpertsBackwardOp>(op)) {
    auto d = values.attached<moe::Dispatched>(eb.getRows());
    if (!d) return foreign_value(op, "rows", "the rows result of a rudnn.dispatch in this graph");
    if (values[eb.getOffsets()].data() != d->expert_offsets().data())
      return foreign_value(op, "offsets", "the offsets of the dispatch the rows came from");
    if (values[eb.getSlots()].data() != d->slots().data())
      return foreign_value(op, "slots", "the slots of the dispatch the rows came from");
    auto experts = moe::SwiGluExperts::create(values[eb.getGate()], values[eb.getUp()], values[eb.getDown()]);
    if (!experts.ok()) return op_error(experts.error(), op);
    auto cache = experts->training_cache(*d);
    if (!cache.ok()) return op_error(cache.error(), op);
    auto r = cache->backward_with_strategy(values[eb.getDexpert()], moe::grouped_strategy(eb.getStrategy().str()));
    if (!r.ok()) return op_error(r.error(), op);
    if (auto e = values.bind(eb.getDinput(), std::move(r->dinput))) return e;
    if (auto e = values.bind(eb.getDgate(), std::move(r->dgate))) return e;
    if (auto e = values.bind(eb.getDup(), std::move(r->dup))) return e;
    return values.bind(eb.getDdown(), std::move(r->ddown));
  }
  auto db = llvm::cast<dialect::DispatchBackwardOp>(op);
  auto d = values.attached<moe::Dispatched>(db.getSlots());
  if (!d) return foreign_value(op, "slots", "the slots result of a rudnn.dispatch in this graph");
  auto r = d->dispatch_backward(values[db.getDrows()]);
  if (!r.ok()) return op_error(r.error(), op);
  return values.bind(db.getDinput(), std::move(r.value()));
}

// Every extent is a runtime size of the kernels: one lowering per op (its dtypes and options).
Result<std::vector<compiler::LoweredOp>, RuntimeError> kernels(mlir::Operation& op, const compiler::Target& target,
                                                               bool, const std::string& where) {
  auto one = [](Result<compiler::LoweredOp, RuntimeError> r) -> Result<std::vector<compiler::LoweredOp>, RuntimeError> {
    if (!r.ok()) return r.error();
    return std::vector<compiler::LoweredOp>{std::move(r.value())};
  };
  if (auto sig = dialect::routerSignatureOf(&op))
    return one(compiler::lower_router_weights({*sig, std::nullopt}, target));
  if (auto cb = llvm::dyn_cast<dialect::CombineBackwardOp>(op)) {
    auto sig = dialect::combineBackwardSignatureOf(cb);
    if (!sig) return RuntimeError(ErrorKind::InvalidValue, where, "rudnn element types", "others");
    return one(compiler::lower_combine_backward({*sig, cb.getStrategy() == "plane", std::nullopt}, target));
  }
  if (auto eb = llvm::dyn_cast<dialect::SwiGluExpertsBackwardOp>(op)) {
    auto sig = dialect::expertsBackwardSignatureOf(eb);
    if (!sig) return RuntimeError(ErrorKind::InvalidValue, where, "rudnn element types", "others");
    return one(compiler::lower_experts_backward(
        {*sig, moe::to_contract(moe::grouped_strategy(eb.getStrategy().str())), std::nullopt}, target));
  }
  auto db = llvm::cast<dialect::DispatchBackwardOp>(op);
  auto sig = dialect::dispatchBackwardSignatureOf(db);
  if (!sig) return RuntimeError(ErrorKind::InvalidValue, where, "rudnn element types", "others");
  return one(compiler::lower_dispatch_backward({*sig, std::nullopt}, target));
}

const bool kRegistered = register_family(
    {"moe training",
     {dialect::RouterWeightsOp::getOperationName().str(), dialect::RouterBackwardOp::getOperationName().str(),
      dialect::CombineBackwardOp::getOperationName().str(), dialect::DispatchBackwardOp::getOperationName().str(),
      dialect::SwiGluExpertsBackwardOp::getOperationName().str()},
     &run,
     &kernels});

}  // namespace
}  // namespace rudnn::ops
