// torch.ops.rudnn.moe_* → rudnn::moe: the routings into torch's buffers, the whole layer with its
// intermediates in one torch-allocated workspace, and the layer's backward (SPEC §10's chain,
// recomputing the forward; docs/pytorch.md says why).
#include "bridge.h"
#include "rudnn/moe.h"

namespace rudnn::python {

namespace {

// (grouped, top_k, renormalize, groups, selected_groups, group_top_two, scale): softmax top-k when
// not grouped, else DeepSeek-V3's grouped sigmoid routing.
using Routing = std::tuple<bool, std::int64_t, bool, std::int64_t, std::int64_t, bool, float>;

bool grouped(const Routing& r) { return std::get<0>(r); }
moe::RoutingOptions softmax_options(const Routing& r) {
  return {.top_k = std::get<1>(r), .renormalize = std::get<2>(r)};
}
moe::GroupRoutingOptions group_options(const Routing& r) {
  return {.top_k = std::get<1>(r),
          .groups = std::get<3>(r),
          .selected_groups = std::get<4>(r),
          .group_top_two = std::get<5>(r),
          .renormalize = std::get<2>(r),
          .scale = std::get<6>(r)};
}
// The weights of the selection as a function of the logits, for the router's gradient.
moe::RouterWeightOptions weight_options(const Routing& r) {
  if (!grouped(r)) return {.scoring = moe::RouterScoring::Softmax, .renormalize = std::get<2>(r), .scale = 1.0f};
  return {.scoring = moe::RouterScoring::Sigmoid, .renormalize = std::get<2>(r), .scale = std::get<6>(r)};
}
// The router weights' options of the moe_router_weights op.
moe::RouterWeightOptions scoring(bool sigmoid, bool renormalize, float scale) {
  return {sigmoid ? moe::RouterScoring::Sigmoid : moe::RouterScoring::Softmax, renormalize, scale};
}
// strategy: a GroupedStrategy's number.
moe::GroupedStrategy strategy_of(int strategy) { return static_cast<moe::GroupedStrategy>(strategy); }

Result<moe::RoutingPlan, MoeError> route(const Tensor& logits, const std::optional<Tensor>& bias, const Routing& r) {
  if (grouped(r)) return moe::route_sigmoid_grouped(logits, bias, group_options(r));
  return moe::route(logits, softmax_options(r));
}

Result<moe::SwiGluExperts, MoeError> experts_of(Views& v, const TensorArg& gate, const TensorArg& up,
                                                const TensorArg& down) {
  auto g = v(gate, "gate");
  auto u = v(up, "up");
  auto d = v(down, "down");
  if (v.error()) return MoeError(*v.error());
  return moe::SwiGluExperts::create(*g, *u, *d);
}

// The layer's backward: the forward again in SPEC §10's training form (FP32 router weights, the
// experts' training cache), then combine, experts, dispatch and router backward.
std::optional<Error> layer_backward(const moe::SwiGluExperts& experts, const Tensor& input, const Tensor& logits,
                                    const std::optional<Tensor>& bias, const Routing& r, moe::GroupedStrategy strategy,
                                    const Tensor& grad_output, const Tensor& dinput, const Tensor& dlogits,
                                    const Tensor& dgate, const Tensor& dup, const Tensor& ddown) {
  auto routing = route(logits, bias, r);
  if (!routing) return routing.error();
  auto train = routing->into_training(logits, weight_options(r));
  if (!train) return train.error();
  auto dispatched = train->routing().dispatch(input);
  if (!dispatched) return dispatched.error();
  auto forward = experts.forward_dispatched_training(*dispatched, strategy);
  if (!forward) return forward.error();
  auto combined = dispatched->combine_backward(forward->output, grad_output);
  if (!combined) return combined.error();
  // The gradient of each dispatched row, summed per token by dispatch_backward.
  auto row_grads = Tensor::empty(dispatched->rows().shape(), experts.dtype(), input.queue());
  if (!row_grads) return row_grads.error();
  // The experts' backward with the forward's strategy (Auto: tensor cores where the forward's rule allows).
  moe::ExpertGradients into{.dinput = *row_grads, .dgate = dgate, .dup = dup, .ddown = ddown};
  if (auto s = forward->cache.backward_into(combined->dexpert, strategy, into); !s) return s.error();
  if (auto s = dispatched->dispatch_backward_into(*row_grads, dinput); !s) return s.error();
  return failure(moe::selected_router_backward_into(logits, train->routing().expert_indices(), combined->dweights,
                                                    weight_options(r), dlogits));
}

}  // namespace

void bind_moe(nb::module_& m) {
  // The selected experts' weights as a function of the logits (SPEC §10) and their gradient;
  // sigmoid: the scoring (softmax otherwise).
  m.def("router_weights", [](const Place& place, const TensorArg& logits, const TensorArg& indices, bool sigmoid,
                             bool renormalize, float scale, const TensorArg& out) {
    return run("moe", place, [&](Views& v) -> std::optional<Error> {
      auto l = v(logits, "logits");
      auto i = v(indices, "indices");
      auto w = v(out, "out");
      if (v.error()) return v.error();
      return failure(moe::selected_router_weights_into(*l, *i, scoring(sigmoid, renormalize, scale), *w));
    });
  });
  m.def("router_weights_backward",
        [](const Place& place, const TensorArg& logits, const TensorArg& indices, const TensorArg& grad_weights,
           bool sigmoid, bool renormalize, float scale, const TensorArg& out) {
          return run("moe", place, [&](Views& v) -> std::optional<Error> {
            auto l = v(logits, "logits");
            auto i = v(indices, "indices");
            auto g = v(grad_weights, "grad_weights");
            auto d = v(out, "out");
            if (v.error()) return v.error();
            return failure(moe::selected_router_backward_into(*l, *i, *g, scoring(sigmoid, renormalize, scale), *d));
          });
        });
  m.def("route", [](const Place& place, const TensorArg& logits, const OptionalTensor& bias, const Routing& r,
                    const TensorArg& expert_indices, const TensorArg& weights) {
    return run("moe", place, [&](Views& v) -> std::optional<Error> {
      auto l = v(logits, "logits");
      auto b = v(bias, "bias");
      auto i = v(expert_indices, "expert_indices");
      auto w = v(weights, "weights");
      if (v.error()) return v.error();
      auto plan = grouped(r) ? moe::route_sigmoid_grouped_into(*l, b, group_options(r), *i, *w)
                             : moe::route_into(*l, softmax_options(r), *i, *w);
      if (!plan) return plan.error();
      return std::nullopt;
    });
  });
  // The bytes of the layer's workspace: (error or None, bytes).
  m.def("layer_workspace_bytes",
        [](const Place& place, const TensorArg& input, const TensorArg& logits, const TensorArg& gate,
           const TensorArg& up, const TensorArg& down, std::int64_t top_k, int strategy) {
          std::size_t bytes = 0;
          Outcome outcome = run("moe", place, [&](Views& v) -> std::optional<Error> {
            auto experts = experts_of(v, gate, up, down);
            auto x = v(input, "input");
            auto l = v(logits, "logits");
            if (v.error()) return v.error();
            if (!experts) return experts.error();
            auto needed = experts->layer_workspace_bytes(*x, *l, top_k, strategy_of(strategy));
            if (!needed) return needed.error();
            bytes = *needed;
            return std::nullopt;
          });
          return std::make_tuple(outcome, bytes);
        });
  m.def("layer", [](const Place& place, const TensorArg& input, const TensorArg& logits, const OptionalTensor& bias,
                    const TensorArg& gate, const TensorArg& up, const TensorArg& down, const Routing& r, int strategy,
                    const TensorArg& out, const TensorArg& workspace) {
    return run("moe", place, [&](Views& v) -> std::optional<Error> {
      auto experts = experts_of(v, gate, up, down);
      auto x = v(input, "input");
      auto l = v(logits, "logits");
      auto b = v(bias, "bias");
      auto y = v(out, "out");
      auto ws = v(workspace, "workspace");
      if (v.error()) return v.error();
      if (!experts) return experts.error();
      if (grouped(r))
        return failure(
            experts->forward_sigmoid_grouped_into(*x, *l, b, group_options(r), strategy_of(strategy), *y, *ws));
      return failure(experts->forward_into(*x, *l, softmax_options(r), strategy_of(strategy), *y, *ws));
    });
  });
  m.def("layer_backward",
        [](const Place& place, const TensorArg& grad_output, const TensorArg& input, const TensorArg& logits,
           const OptionalTensor& bias, const TensorArg& gate, const TensorArg& up, const TensorArg& down,
           const Routing& r, int strategy, const TensorArg& dinput, const TensorArg& dlogits, const TensorArg& dgate,
           const TensorArg& dup, const TensorArg& ddown) {
          return run("moe", place, [&](Views& v) -> std::optional<Error> {
            auto experts = experts_of(v, gate, up, down);
            auto dy = v(grad_output, "grad_output");
            auto x = v(input, "input");
            auto l = v(logits, "logits");
            auto b = v(bias, "bias");
            auto dx = v(dinput, "dinput");
            auto dl = v(dlogits, "dlogits");
            auto dg = v(dgate, "dgate");
            auto du = v(dup, "dup");
            auto dd = v(ddown, "ddown");
            if (v.error()) return v.error();
            if (!experts) return experts.error();
            return layer_backward(*experts, *x, *l, b, r, strategy_of(strategy), *dy, *dx, *dl, *dg, *du, *dd);
          });
        });
}

}  // namespace rudnn::python
