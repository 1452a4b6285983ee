// torch.ops.rudnn.moe_* → rudnn::moe: the routings into torch's buffers; the selected router weights
// with their gradient; the whole layer with its intermediates in one torch-allocated workspace, and
// its backward (SPEC §10's chain, recomputing the forward; docs/pytorch.md says why).
#include <algorithm>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <vector>

#include "autograd.h"
#include "call.h"
#include "moe_common.h"
#include "rudnn/moe.h"

namespace rudnn::python {

namespace {

constexpr const auto& kFamily = kMoeFamily;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Int = std::int64_t;
using Pair = std::tuple<at::Tensor, at::Tensor>;

// The router's gradient (selected_router_backward) takes top_k ≤ 64 (SPEC §10); the forward takes any
// top_k ≤ E. A differentiable call over 64 is rejected before it runs, not at backward.
constexpr Int kMaxTrainingTopK = 64;

// The routing of a layer: softmax top-k when not grouped, else DeepSeek-V3's grouped sigmoid routing.
struct Routing {
  Int top_k;
  bool renormalize, grouped;
  Int groups, selected_groups;
  bool group_top_two;
  double scale;
  std::string strategy;

  moe::RoutingOptions softmax() const { return {.top_k = top_k, .renormalize = renormalize}; }
  moe::GroupRoutingOptions group() const {
    return {.top_k = top_k,
            .groups = groups,
            .selected_groups = selected_groups,
            .group_top_two = group_top_two,
            .renormalize = renormalize,
            .scale = static_cast<float>(scale)};
  }
  // The weights of the selection as a function of the logits, for the router's gradient.
  moe::RouterWeightOptions weights() const {
    if (!grouped) return {.scoring = moe::RouterScoring::Softmax, .renormalize = renormalize, .scale = 1.0f};
    return {.scoring = moe::RouterScoring::Sigmoid, .renormalize = renormalize, .scale = static_cast<float>(scale)};
  }
};

moe::RouterWeightOptions scoring(bool sigmoid, bool renormalize, double scale) {
  return {sigmoid ? moe::RouterScoring::Sigmoid : moe::RouterScoring::Softmax, renormalize, static_cast<float>(scale)};
}
Pair route(const at::Tensor& logits, const std::optional<at::Tensor>& bias, const Routing& r) {
  Call call(kFamily, {{"logits", &logits}, {"bias", bias ? &*bias : nullptr}});
  Tensor l = call.in(logits, "logits");
  std::optional<Tensor> b = call.in(bias, "bias");
  const Int tokens = logits.dim() ? logits.size(0) : 0, experts = logits.dim() ? logits.size(-1) : 0;
  // At most top_k = experts columns: a larger top_k is the library's InvalidValue naming top_k
  // (checked before the outputs' shapes), not a huge or overflowing allocation here.
  at::Tensor weights = call.empty({tokens, std::clamp<Int>(r.top_k, 0, experts)}, logits.scalar_type());
  at::Tensor indices = call.empty(weights.sizes(), c10::ScalarType::Int);
  Tensor i = call.out(indices, "expert_indices", DType::U32);
  Tensor w = call.out(weights, "weights");
  if (r.grouped)
    call.take(moe::route_sigmoid_grouped_into(l, b, r.group(), i, w));
  else
    call.take(moe::route_into(l, r.softmax(), i, w));
  call.finish();
  return {weights, indices};
}

Pair moe_route(const at::Tensor& logits, Int top_k, bool renormalize) {
  return route(logits, std::nullopt, Routing{.top_k = top_k, .renormalize = renormalize, .grouped = false});
}

Pair moe_route_sigmoid_grouped(const at::Tensor& logits, const std::optional<at::Tensor>& bias, Int top_k, Int groups,
                               Int selected_groups, bool group_top_two, bool renormalize, double scale) {
  return route(logits, bias,
               Routing{top_k, renormalize, true, groups, selected_groups, group_top_two, scale, std::string()});
}

at::Tensor router_weights(const at::Tensor& logits, const at::Tensor& indices, bool sigmoid, bool renormalize,
                          double scale) {
  Call call(kFamily, {{"logits", &logits}, {"indices", &indices}});
  Tensor l = call.in(logits, "logits");
  Tensor i = call.in(indices, "indices");
  at::Tensor out = call.empty(indices.sizes(), c10::ScalarType::Float);
  call.check(moe::selected_router_weights_into(l, i, scoring(sigmoid, renormalize, scale), call.out(out, "out")));
  call.finish();
  return out;
}

at::Tensor router_weights_backward(const at::Tensor& grad_weights, const at::Tensor& logits, const at::Tensor& indices,
                                   bool sigmoid, bool renormalize, double scale) {
  Call call(kFamily, {{"logits", &logits}, {"indices", &indices}, {"grad_weights", &grad_weights}});
  Tensor l = call.in(logits, "logits");
  Tensor i = call.in(indices, "indices");
  Tensor g = call.in(grad_weights, "grad_weights");
  at::Tensor out = call.empty(logits.sizes(), logits.scalar_type());
  call.check(moe::selected_router_backward_into(l, i, g, scoring(sigmoid, renormalize, scale), call.out(out, "out")));
  call.finish();
  return out;
}

using RouterWeightsSignature = at::Tensor(const at::Tensor&, const at::Tensor&, bool, bool, double);

// moe_router_weights' kernel below autograd (the device kernel, or the fake one while tracing).
at::Tensor router_weights_below_autograd(const at::Tensor& logits, const at::Tensor& indices, bool sigmoid,
                                         bool renormalize, double scale) {
  at::AutoDispatchBelowADInplaceOrView below;
  static auto op = rudnn_op<RouterWeightsSignature>("moe_router_weights");
  return op.call(logits, indices, sigmoid, renormalize, scale);
}

struct RouterWeightsFunction : torch::autograd::Function<RouterWeightsFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& indices, bool sigmoid,
                            bool renormalize, double scale) {
    ctx->save_for_backward({logits, indices});
    ctx->saved_data["sigmoid"] = sigmoid;
    ctx->saved_data["renormalize"] = renormalize;
    ctx->saved_data["scale"] = scale;
    return router_weights_below_autograd(logits, indices, sigmoid, renormalize, scale);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    auto& data = ctx->saved_data;
    static auto op = rudnn_op<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, bool, bool, double)>(
        "moe_router_weights_backward");
    at::Tensor dlogits = op.call(grads[0].to(c10::ScalarType::Float).contiguous(), saved[0], saved[1],
                                 data["sigmoid"].toBool(), data["renormalize"].toBool(), data["scale"].toDouble());
    return {dlogits, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor router_weights_autograd(const at::Tensor& logits, const at::Tensor& indices, bool sigmoid, bool renormalize,
                                   double scale) {
  if (!forward_needs_grad(logits)) return router_weights_below_autograd(logits, indices, sigmoid, renormalize, scale);
  return RouterWeightsFunction::apply(logits, indices, sigmoid, renormalize, scale);
}

Routing routing_of(Int top_k, bool renormalize, bool grouped, Int groups, Int selected_groups, bool group_top_two,
                   double scale, std::string_view strategy) {
  return {top_k, renormalize, grouped, groups, selected_groups, group_top_two, scale, std::string(strategy)};
}

// The layer's workspace bytes, a function of the shapes, dtypes, device, top_k and strategy
// (SwiGluExperts::layer_workspace_bytes), asked of the library once per such signature: a warm call
// does not check the call and look up the experts' plan twice (forward_into does both). The cache
// starts over past kKept signatures (serving varies the token count).
std::size_t workspace_bytes(const Call& call, const moe::SwiGluExperts& experts, const Tensor& input,
                            const Tensor& logits, Int top_k, moe::GroupedStrategy strategy) {
  constexpr std::size_t kKept = 4096;
  static std::mutex mutex;
  static std::map<std::vector<Int>, std::size_t> kept;
  std::vector<Int> key{static_cast<Int>(call.device().type()), call.device().index(), top_k,
                       static_cast<Int>(strategy)};
  for (const Tensor* t : {&input, &logits, &experts.gate(), &experts.up(), &experts.down()}) {
    key.push_back(static_cast<Int>(t->dtype()));
    key.push_back(t->rank());
    key.insert(key.end(), t->shape().begin(), t->shape().end());
  }
  {
    std::lock_guard lock(mutex);
    if (auto found = kept.find(key); found != kept.end()) return found->second;
  }
  const std::size_t bytes = call.take(experts.layer_workspace_bytes(input, logits, top_k, strategy));
  std::lock_guard lock(mutex);
  if (kept.size() >= kKept) kept.clear();
  kept.emplace(std::move(key), bytes);
  return bytes;
}

at::Tensor moe_layer(const at::Tensor& input, const at::Tensor& logits, const std::optional<at::Tensor>& bias,
                     const at::Tensor& gate, const at::Tensor& up, const at::Tensor& down, Int top_k, bool renormalize,
                     bool grouped, Int groups, Int selected_groups, bool group_top_two, double scale,
                     std::string_view strategy) {
  Call call(kFamily, {{"input", &input},
                      {"logits", &logits},
                      {"bias", bias ? &*bias : nullptr},
                      {"gate", &gate},
                      {"up", &up},
                      {"down", &down}});
  const auto chosen = experts_strategy(call, strategy);
  const Routing r = routing_of(top_k, renormalize, grouped, groups, selected_groups, group_top_two, scale, strategy);
  if (bias && !grouped)
    call.fail(Error(ErrorKind::InvalidValue, "bias", "None for softmax routing (grouped = false)", "a tensor"));
  Tensor x = call.in(input, "input");
  Tensor l = call.in(logits, "logits");
  std::optional<Tensor> b = call.in(bias, "bias");
  auto experts = swiglu_experts(call, gate, up, down);
  const std::size_t bytes = workspace_bytes(call, experts, x, l, top_k, chosen);
  at::Tensor workspace = call.empty({static_cast<Int>(bytes)}, c10::ScalarType::Byte);
  at::Tensor out = call.empty(input.sizes(), input.scalar_type());
  Tensor y = call.out(out, "out");
  Tensor ws = call.out(workspace, "workspace");
  if (r.grouped)
    call.check(experts.forward_sigmoid_grouped_into(x, l, b, r.group(), chosen, y, ws));
  else
    call.check(experts.forward_into(x, l, r.softmax(), chosen, y, ws));
  call.finish();
  return out;
}

using Five = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// The layer's backward: the forward again in SPEC §10's training form (FP32 router weights, the
// experts' training cache), then combine, experts, dispatch and router backward.
Five moe_layer_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& logits,
                        const std::optional<at::Tensor>& bias, const at::Tensor& gate, const at::Tensor& up,
                        const at::Tensor& down, Int top_k, bool renormalize, bool grouped, Int groups,
                        Int selected_groups, bool group_top_two, double scale, std::string_view strategy) {
  Call call(kFamily, {{"input", &input},
                      {"logits", &logits},
                      {"bias", bias ? &*bias : nullptr},
                      {"gate", &gate},
                      {"up", &up},
                      {"down", &down},
                      {"grad_output", &grad_output}});
  const auto chosen = experts_strategy(call, strategy);
  const Routing r = routing_of(top_k, renormalize, grouped, groups, selected_groups, group_top_two, scale, strategy);
  auto experts = swiglu_experts(call, gate, up, down);
  Tensor dy = call.in(grad_output, "grad_output");
  Tensor x = call.in(input, "input");
  Tensor l = call.in(logits, "logits");
  std::optional<Tensor> b = call.in(bias, "bias");
  at::Tensor dinput = call.empty(input.sizes(), input.scalar_type());
  at::Tensor dlogits = call.empty(logits.sizes(), logits.scalar_type());
  at::Tensor dgate = call.empty(gate.sizes(), c10::ScalarType::Float);
  at::Tensor dup = call.empty(up.sizes(), c10::ScalarType::Float);
  at::Tensor ddown = call.empty(down.sizes(), c10::ScalarType::Float);

  auto routing = call.take(r.grouped ? moe::route_sigmoid_grouped(l, b, r.group()) : moe::route(l, r.softmax()));
  auto train = call.take(routing.into_training(l, r.weights()));
  auto dispatched = call.take(train.routing().dispatch(x));
  auto forward = call.take(experts.forward_dispatched_training(dispatched, chosen));
  auto combined = call.take(dispatched.combine_backward(forward.output, dy));
  // The gradient of each dispatched row, summed per token by dispatch_backward.
  auto row_grads = call.take(Tensor::empty(dispatched.rows().shape(), experts.dtype(), call.queue()));
  // The experts' backward with the forward's strategy (Auto: tensor cores where the forward's rule allows).
  moe::ExpertGradients into{.dinput = row_grads,
                            .dgate = call.out(dgate, "dgate"),
                            .dup = call.out(dup, "dup"),
                            .ddown = call.out(ddown, "ddown")};
  call.check(forward.cache.backward_into(combined.dexpert, chosen, into));
  call.check(dispatched.dispatch_backward_into(row_grads, call.out(dinput, "dinput")));
  call.check(moe::selected_router_backward_into(l, train.routing().expert_indices(), combined.dweights, r.weights(),
                                                call.out(dlogits, "dlogits")));
  call.finish();
  return {dinput, dlogits, dgate.to(gate.scalar_type()), dup.to(up.scalar_type()), ddown.to(down.scalar_type())};
}

using LayerSignature = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                  const at::Tensor&, const at::Tensor&, const at::Tensor&, Int, bool, bool, Int, Int,
                                  bool, double, std::string_view);

at::Tensor layer_below_autograd(const at::Tensor& input, const at::Tensor& logits,
                                const std::optional<at::Tensor>& bias, const at::Tensor& gate, const at::Tensor& up,
                                const at::Tensor& down, const Routing& r) {
  at::AutoDispatchBelowADInplaceOrView below;
  static auto op = rudnn_op<LayerSignature>("moe_layer");
  return op.call(input, logits, bias, gate, up, down, r.top_k, r.renormalize, r.grouped, r.groups, r.selected_groups,
                 r.group_top_two, r.scale, r.strategy);
}

// Saves the inputs (no activations: the backward recomputes the forward).
struct LayerFunction : torch::autograd::Function<LayerFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& logits,
                            const std::optional<at::Tensor>& bias, const at::Tensor& gate, const at::Tensor& up,
                            const at::Tensor& down, const Routing* r) {
    ctx->save_for_backward({input, logits, bias ? *bias : at::Tensor(), gate, up, down});
    auto& data = ctx->saved_data;
    data["top_k"] = r->top_k;
    data["renormalize"] = r->renormalize;
    data["grouped"] = r->grouped;
    data["groups"] = r->groups;
    data["selected_groups"] = r->selected_groups;
    data["group_top_two"] = r->group_top_two;
    data["scale"] = r->scale;
    data["strategy"] = r->strategy;
    return layer_below_autograd(input, logits, bias, gate, up, down, *r);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    auto& data = ctx->saved_data;
    static auto op =
        rudnn_op<Five(const at::Tensor&, const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                      const at::Tensor&, const at::Tensor&, const at::Tensor&, Int, bool, bool, Int, Int, bool, double,
                      std::string_view)>("moe_layer_backward");
    const std::optional<at::Tensor> bias = s[2].defined() ? std::optional<at::Tensor>(s[2]) : std::nullopt;
    auto [dinput, dlogits, dgate, dup, ddown] = op.call(
        grads[0].contiguous(), s[0], s[1], bias, s[3], s[4], s[5], data["top_k"].toInt(), data["renormalize"].toBool(),
        data["grouped"].toBool(), data["groups"].toInt(), data["selected_groups"].toInt(),
        data["group_top_two"].toBool(), data["scale"].toDouble(), data["strategy"].toStringRef());
    return {dinput, dlogits, at::Tensor(), dgate, dup, ddown, at::Tensor()};
  }
};

at::Tensor moe_layer_autograd(const at::Tensor& input, const at::Tensor& logits, const std::optional<at::Tensor>& bias,
                              const at::Tensor& gate, const at::Tensor& up, const at::Tensor& down, Int top_k,
                              bool renormalize, bool grouped, Int groups, Int selected_groups, bool group_top_two,
                              double scale, std::string_view strategy) {
  const Routing r = routing_of(top_k, renormalize, grouped, groups, selected_groups, group_top_two, scale, strategy);
  if (!forward_needs_grad(input, logits, gate, up, down))
    return layer_below_autograd(input, logits, bias, gate, up, down, r);
  if (top_k > kMaxTrainingTopK)
    raise(kFamily, Error(ErrorKind::InvalidValue, "top_k",
                         "≤ " + std::to_string(kMaxTrainingTopK) + " for a differentiable call (the router's gradient)",
                         std::to_string(top_k)));
  return LayerFunction::apply(input, logits, bias, gate, up, down, &r);
}

void kernels(torch::Library& m) {
  m.impl("moe_route", guarded<kFamily, &moe_route>);
  m.impl("moe_route_sigmoid_grouped", guarded<kFamily, &moe_route_sigmoid_grouped>);
  m.impl("moe_router_weights", guarded<kFamily, &router_weights>);
  m.impl("moe_router_weights_backward", guarded<kFamily, &router_weights_backward>);
  m.impl("moe_layer", guarded<kFamily, &moe_layer>);
  m.impl("moe_layer_backward", guarded<kFamily, &moe_layer_backward>);
}

}  // namespace

RUDNN_TORCH_KERNELS(kernels)

TORCH_LIBRARY_IMPL(rudnn, Autograd, m) {
  m.impl("moe_router_weights", &router_weights_autograd);
  m.impl("moe_layer", &moe_layer_autograd);
  for (const char* op : {"moe_route", "moe_route_sigmoid_grouped", "moe_router_weights_backward", "moe_layer_backward"})
    m.impl(op, forward_only(kFamily));
}

}  // namespace rudnn::python
