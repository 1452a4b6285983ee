// The MoE first-order training entries of SPEC §10 (router weights and their backward, combine and
// dispatch backward, the experts' backward on plain or tensor cores): contract → layout and queue
// checks → plan (one per dtypes, options and strategy: every extent is a runtime size) → launch.
#include <span>

#include <fmt/format.h>

#include "contracts/moe_training.h"
#include "entry.h"
#include "moe_strategy.h"
#include "rudnn/compiler/moe_training.h"
#include "rudnn/moe.h"

namespace rudnn::moe {

namespace {

using ops::as;
using ops::operand;

contracts::RouterWeightsSignature router_signature(const Tensor& logits, const Tensor& indices,
                                                   const Tensor* grad_weights, const RouterWeightOptions& o) {
  contracts::RouterWeightsSignature sig;
  sig.logits = operand(logits);
  sig.indices = operand(indices);
  if (grad_weights) sig.grad_weights = operand(*grad_weights);
  sig.scoring = o.scoring == RouterScoring::Sigmoid ? contracts::RouterScore::Sigmoid : contracts::RouterScore::Softmax;
  sig.renormalize = o.renormalize;
  sig.scale = o.scale;
  return sig;
}

// ops::output_or as the family's error type.
Result<Tensor, MoeError> output_or(const Tensor* into, const Shape& shape, DType dtype, const Queue& queue) {
  auto out = ops::output_or(into, shape, dtype, queue);
  if (!out.ok()) return as<MoeError>(out.error());
  return std::move(out.value());
}

// selected_router_weights (grad_weights null) or selected_router_backward, into `into` when given.
Result<Tensor, MoeError> run_router(const Tensor& logits, const Tensor& indices, const Tensor* grad_weights,
                                    const RouterWeightOptions& options, const Tensor* into = nullptr) {
  const contracts::RouterWeightsSignature sig = router_signature(logits, indices, grad_weights, options);
  if (auto e = contracts::check_router_weights(sig)) return *e;
  if (auto e = ops::check_operands({{&logits, "logits"}, {&indices, "indices"}, {grad_weights, "grad_weights"}}))
    return as<MoeError>(*e);
  const Shape out_shape = grad_weights ? logits.shape() : indices.shape();
  const DType out_dtype = grad_weights ? logits.dtype() : DType::F32;
  if (into) {
    const ops::NamedTensor inputs[] = {{&logits, "logits"}, {&indices, "indices"}, {grad_weights, "grad_weights"}};
    const ops::OutputBuffer out[] = {{into, "out", out_shape, out_dtype}};
    if (auto e = ops::check_outputs(out, logits, inputs)) return as<MoeError>(*e);
  }
  const Device& device = logits.device();
  const ops::PlanKey key = ops::PlanKeyBuilder(grad_weights ? "rudnn.router_backward" : "rudnn.router_weights")
                               .add(logits.dtype())
                               .add(indices.dtype())
                               .add(static_cast<std::int64_t>(sig.scoring))
                               .add(sig.renormalize)
                               .add_bits(options.scale)
                               .add(device)
                               .key();
  auto plan = ops::cached_plan(key, logits.queue(), ops::Tunable::No, false, [&](compiler::ConfigProvider*) {
    return compiler::lower_router_weights({sig, std::nullopt}, ops::target_for(device));
  });
  if (!plan.ok()) return as<MoeError>(plan.error());
  auto out = output_or(into, out_shape, out_dtype, logits.queue());
  if (!out.ok()) return out.error();
  const Status<RuntimeError> launched =
      grad_weights ? ops::launch(**plan, logits.queue(), {&logits, &indices, grad_weights, &*out})
                   : ops::launch(**plan, logits.queue(), {&logits, &indices, &*out});
  if (!launched.ok()) return as<MoeError>(launched.error());
  return std::move(out.value());
}

}  // namespace

Result<Tensor, MoeError> selected_router_weights(const Tensor& logits, const Tensor& indices,
                                                 RouterWeightOptions options) {
  return run_router(logits, indices, nullptr, options);
}

Result<Tensor, MoeError> selected_router_backward(const Tensor& logits, const Tensor& indices,
                                                  const Tensor& grad_weights, RouterWeightOptions options) {
  return run_router(logits, indices, &grad_weights, options);
}

Status<MoeError> selected_router_weights_into(const Tensor& logits, const Tensor& indices, RouterWeightOptions options,
                                              const Tensor& out) {
  auto r = run_router(logits, indices, nullptr, options, &out);
  if (!r.ok()) return r.error();
  return {};
}

Status<MoeError> selected_router_backward_into(const Tensor& logits, const Tensor& indices, const Tensor& grad_weights,
                                               RouterWeightOptions options, const Tensor& out) {
  auto r = run_router(logits, indices, &grad_weights, options, &out);
  if (!r.ok()) return r.error();
  return {};
}

Result<RouterTrainingPlan, MoeError> RoutingPlan::into_training(const Tensor& logits,
                                                                RouterWeightOptions options) const {
  // The logits against this routing first: the indices are the plan's own, never the caller's error.
  if (logits.rank() == 2 && (logits.dim(0) != tokens() || logits.dim(1) != experts_))
    return MoeError(ErrorKind::ShapeMismatch, "logits",
                    fmt::format("[{}, {}] (the routing's tokens and experts)", tokens(), experts_),
                    shape_to_string(logits.shape()));
  if (auto e = ops::check_same_queue(logits, "logits", indices_, "the routing")) return as<MoeError>(*e);
  auto weights = selected_router_weights(logits, indices_, options);
  if (!weights.ok()) return weights.error();
  return RouterTrainingPlan(RoutingPlan(indices_, std::move(weights.value()), experts_), logits, options);
}

Result<Tensor, MoeError> RouterTrainingPlan::backward(const Tensor& grad_weights) const {
  return selected_router_backward(logits_, routing_.expert_indices(), grad_weights, options_);
}

Result<CombineGradients, MoeError> Dispatched::combine_backward(const Tensor& expert_output,
                                                                const Tensor& grad_output) const {
  return combine_backward_with_strategy(expert_output, grad_output, CombineGradientStrategy::Serial);
}

Result<CombineGradients, MoeError> Dispatched::combine_backward_with_strategy(const Tensor& expert_output,
                                                                              const Tensor& grad_output,
                                                                              CombineGradientStrategy strategy) const {
  return combine_backward_impl(expert_output, grad_output, strategy, nullptr);
}

Status<MoeError> Dispatched::combine_backward_into(const Tensor& expert_output, const Tensor& grad_output,
                                                   CombineGradientStrategy strategy,
                                                   const CombineGradients& into) const {
  auto r = combine_backward_impl(expert_output, grad_output, strategy, &into);
  if (!r.ok()) return r.error();
  return {};
}

Result<CombineGradients, MoeError> Dispatched::combine_backward_impl(const Tensor& expert_output,
                                                                     const Tensor& grad_output,
                                                                     CombineGradientStrategy strategy,
                                                                     const CombineGradients* into) const {
  const Tensor& weights = routing_.weights();
  contracts::CombineBackwardSignature sig{{operand(expert_output), operand(slots_), operand(weights)},
                                          operand(grad_output)};
  if (auto e = contracts::check_combine_backward(sig)) return *e;
  if (expert_output.dim(1) != hidden() || expert_output.dim(0) != rows_.dim(0))
    return MoeError(ErrorKind::ShapeMismatch, "expert_output",
                    fmt::format("[{}, {}] (the dispatched rows' shape)", rows_.dim(0), hidden()),
                    shape_to_string(expert_output.shape()));
  // The caller's tensors against the routing's (as combine): a mismatch names the caller's tensor.
  for (auto [t, name] : {std::pair{&expert_output, "expert_output"}, {&grad_output, "grad_output"}}) {
    if (auto e = ops::check_contiguous(*t, name)) return as<MoeError>(*e);
    if (auto e = ops::check_same_queue(*t, name, slots_, "the routing")) return as<MoeError>(*e);
  }
  if (into) {
    const ops::NamedTensor inputs[] = {
        {&expert_output, "expert_output"}, {&grad_output, "grad_output"}, {&slots_, "slots"}, {&weights, "weights"}};
    const ops::OutputBuffer outs[] = {{&into->dexpert, "dexpert", expert_output.shape(), expert_output.dtype()},
                                      {&into->dweights, "dweights", {tokens(), top_k()}, DType::F32}};
    if (auto e = ops::check_outputs(outs, expert_output, inputs)) return as<MoeError>(*e);
  }
  const bool plane = strategy == CombineGradientStrategy::Plane;
  const Device& device = expert_output.device();
  const ops::PlanKey key = ops::PlanKeyBuilder("rudnn.combine_backward")
                               .add(expert_output.dtype())
                               .add(weights.dtype())
                               .add(plane)
                               .add(device)
                               .key();
  auto plan = ops::cached_plan(key, expert_output.queue(), ops::Tunable::No, false, [&](compiler::ConfigProvider*) {
    return compiler::lower_combine_backward({sig, plane, std::nullopt}, ops::target_for(device));
  });
  if (!plan.ok()) return as<MoeError>(plan.error());
  auto dexpert =
      output_or(into ? &into->dexpert : nullptr, expert_output.shape(), expert_output.dtype(), expert_output.queue());
  if (!dexpert.ok()) return dexpert.error();
  auto dweights = output_or(into ? &into->dweights : nullptr, {tokens(), top_k()}, DType::F32, expert_output.queue());
  if (!dweights.ok()) return dweights.error();
  if (auto s = ops::launch(**plan, expert_output.queue(),
                           {&expert_output, &grad_output, &slots_, &weights, &*dexpert, &*dweights});
      !s.ok())
    return as<MoeError>(s.error());
  return CombineGradients{std::move(dexpert.value()), std::move(dweights.value())};
}

Result<Tensor, MoeError> Dispatched::dispatch_backward(const Tensor& drows) const {
  return dispatch_backward_impl(drows, nullptr);
}

Status<MoeError> Dispatched::dispatch_backward_into(const Tensor& drows, const Tensor& out) const {
  auto r = dispatch_backward_impl(drows, &out);
  if (!r.ok()) return r.error();
  return {};
}

Result<Tensor, MoeError> Dispatched::dispatch_backward_impl(const Tensor& drows, const Tensor* into) const {
  contracts::DispatchBackwardSignature sig{operand(drows), operand(slots_)};
  if (auto e = contracts::check_dispatch_backward(sig)) return *e;
  if (drows.dim(1) != hidden())
    return MoeError(ErrorKind::ShapeMismatch, "drows",
                    fmt::format("[{}, {}] (the dispatched rows' shape)", rows_.dim(0), hidden()),
                    shape_to_string(drows.shape()));
  if (auto e = ops::check_contiguous(drows, "drows")) return as<MoeError>(*e);
  if (auto e = ops::check_same_queue(drows, "drows", slots_, "the routing")) return as<MoeError>(*e);
  if (into) {
    const ops::NamedTensor inputs[] = {{&drows, "drows"}, {&slots_, "slots"}};
    const ops::OutputBuffer out[] = {{into, "out", {tokens(), hidden()}, drows.dtype()}};
    if (auto e = ops::check_outputs(out, drows, inputs)) return as<MoeError>(*e);
  }
  const Device& device = drows.device();
  const ops::PlanKey key = ops::PlanKeyBuilder("rudnn.dispatch_backward").add(drows.dtype()).add(device).key();
  auto plan = ops::cached_plan(key, drows.queue(), ops::Tunable::No, false, [&](compiler::ConfigProvider*) {
    return compiler::lower_dispatch_backward({sig, std::nullopt}, ops::target_for(device));
  });
  if (!plan.ok()) return as<MoeError>(plan.error());
  auto out = output_or(into, {tokens(), hidden()}, drows.dtype(), drows.queue());
  if (!out.ok()) return out.error();
  if (auto s = ops::launch(**plan, drows.queue(), {&drows, &slots_, &*out}); !s.ok()) return as<MoeError>(s.error());
  return std::move(out.value());
}

}  // namespace rudnn::moe

namespace rudnn::moe {

Result<SwiGluTrainingCache, MoeError> SwiGluExperts::training_cache(const Dispatched& dispatched) const {
  contracts::ExpertsSignature sig{
      {operand(gate_), operand(up_), operand(down_)}, operand(dispatched.rows()), operand(dispatched.expert_offsets())};
  if (auto e = contracts::check_experts(sig)) return *e;
  return SwiGluTrainingCache(gate_, up_, down_, dispatched.rows(), dispatched.expert_offsets(), dispatched.slots());
}

Result<SwiGluTraining, MoeError> SwiGluExperts::forward_dispatched_training(const Dispatched& dispatched,
                                                                            GroupedStrategy strategy) const {
  auto output = forward_dispatched_with_strategy(dispatched, strategy);
  if (!output.ok()) return output.error();
  auto cache = training_cache(dispatched);
  if (!cache.ok()) return cache.error();
  return SwiGluTraining{std::move(output.value()), std::move(cache.value())};
}

Result<ExpertGradients, MoeError> SwiGluTrainingCache::backward(const Tensor& dexpert) const {
  return backward_with_strategy(dexpert, GroupedStrategy::Scalar);
}

Result<ExpertGradients, MoeError> SwiGluTrainingCache::backward_with_strategy(const Tensor& dexpert,
                                                                              GroupedStrategy strategy) const {
  return backward_impl(dexpert, strategy, nullptr);
}

Status<MoeError> SwiGluTrainingCache::backward_into(const Tensor& dexpert, GroupedStrategy strategy,
                                                    const ExpertGradients& into) const {
  auto r = backward_impl(dexpert, strategy, &into);
  if (!r.ok()) return r.error();
  return {};
}

Result<ExpertGradients, MoeError> SwiGluTrainingCache::backward_impl(const Tensor& dexpert, GroupedStrategy strategy,
                                                                     const ExpertGradients* into) const {
  contracts::ExpertsBackwardSignature sig{
      {{operand(gate_), operand(up_), operand(down_)}, operand(rows_), operand(offsets_)},
      operand(slots_),
      operand(dexpert)};
  if (auto e = contracts::check_experts_backward(sig)) return *e;
  if (auto e = ops::check_operands({{&rows_, "rows"},
                                    {&offsets_, "offsets"},
                                    {&gate_, "gate"},
                                    {&up_, "up"},
                                    {&down_, "down"},
                                    {&dexpert, "dexpert"}}))
    return as<MoeError>(*e);
  const Device& device = rows_.device();
  // The forward's rule: TensorCore that this device or these weights cannot serve is the caller's
  // error; Auto then takes Scalar (and only then).
  auto chosen =
      contracts::resolve_experts_strategy(to_contract(strategy), sig.experts.weights, ops::target_for(device).arch);
  if (!chosen.ok()) return chosen.error();
  const contracts::ExpertsStrategy resolved = chosen.value();
  const std::int64_t experts = gate_.dim(0), inter = gate_.dim(1), hidden = gate_.dim(2);
  const Shape weight_shape{experts, inter, hidden}, down_shape{experts, hidden, inter};
  if (into) {
    const ops::NamedTensor inputs[] = {{&rows_, "rows"}, {&offsets_, "offsets"}, {&slots_, "slots"},   {&gate_, "gate"},
                                       {&up_, "up"},     {&down_, "down"},       {&dexpert, "dexpert"}};
    const ops::OutputBuffer outs[] = {{&into->dinput, "dinput", rows_.shape(), rows_.dtype()},
                                      {&into->dgate, "dgate", weight_shape, DType::F32},
                                      {&into->dup, "dup", weight_shape, DType::F32},
                                      {&into->ddown, "ddown", down_shape, DType::F32}};
    if (auto e = ops::check_outputs(outs, rows_, inputs)) return as<MoeError>(*e);
  }
  const ops::PlanKey key = ops::PlanKeyBuilder("rudnn.swiglu_experts_backward")
                               .add(rows_.dtype())
                               .add(device)
                               .add(resolved == contracts::ExpertsStrategy::TensorCore)
                               .key();
  auto plan = ops::cached_plan(key, rows_.queue(), ops::Tunable::No, false, [&](compiler::ConfigProvider*) {
    return compiler::lower_experts_backward({sig, resolved, std::nullopt}, ops::target_for(device));
  });
  if (!plan.ok()) return as<MoeError>(plan.error());
  auto dinput = output_or(into ? &into->dinput : nullptr, rows_.shape(), rows_.dtype(), rows_.queue());
  if (!dinput.ok()) return dinput.error();
  auto dgate = output_or(into ? &into->dgate : nullptr, weight_shape, DType::F32, rows_.queue());
  if (!dgate.ok()) return dgate.error();
  auto dup = output_or(into ? &into->dup : nullptr, weight_shape, DType::F32, rows_.queue());
  if (!dup.ok()) return dup.error();
  auto ddown = output_or(into ? &into->ddown : nullptr, down_shape, DType::F32, rows_.queue());
  if (!ddown.ok()) return ddown.error();
  if (auto s =
          ops::launch(**plan, rows_.queue(),
                      {&rows_, &offsets_, &slots_, &gate_, &up_, &down_, &dexpert, &*dinput, &*dgate, &*dup, &*ddown});
      !s.ok())
    return as<MoeError>(s.error());
  return ExpertGradients{std::move(dinput.value()), std::move(dgate.value()), std::move(dup.value()),
                         std::move(ddown.value())};
}

}  // namespace rudnn::moe
