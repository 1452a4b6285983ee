// torch.ops.rudnn.moe_dispatch, moe_experts and moe_combine: the MoE layer's steps as separate ops,
// for a model that composes them itself (its own router weights, a shared expert beside the routed
// ones, its own experts between dispatch and combine), each differentiable through its *_backward op.
//
// A dispatch travels between the ops as three int32 tensors: the routing's expert_indices and the
// dispatch's offsets and slots. Each op after moe_dispatch gives them back to the library through
// RoutingPlan::adopt, which reads them back and checks them (an index
// ≥ experts, offsets that are not the choices' running count, a slot outside its expert's rows or
// taken twice: a MoeError naming the tensor). That costs host synchronizations in every op (one per
// tensor read back), which the fused moe_layer does not pay (docs/pytorch.md).
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

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
using Triple = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using Four = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// Raises a library error about `from` (an argument of the library call) naming `to` (this op's).
[[noreturn]] void fail_naming(const Call& call, const Error& e, std::string_view from, const char* to) {
  if (e.argument() == from) call.fail(Error(e.kind(), to, e.expected(), e.actual(), e.detail()));
  call.fail(e);
}
template <class T>
T take_named(const Call& call, Result<T, MoeError>&& result, std::string_view from, const char* to) {
  if (!result) fail_naming(call, result.error(), from, to);
  return std::move(result.value());
}
void check_named(const Call& call, const Status<MoeError>& status, std::string_view from, const char* to) {
  if (!status) fail_naming(call, status.error(), from, to);
}

// The routing's weights: the caller's, or for the ops that read none (moe_dispatch, moe_experts and
// dispatch's gradient; a RoutingPlan holds weights all the same) an unread buffer of the selection's
// shape, kept alive in `unread`.
Tensor routing_weights(Call& call, const at::Tensor& indices, const std::optional<at::Tensor>& weights,
                       at::Tensor& unread) {
  if (weights) return call.in(*weights, "weights");
  unread = call.empty(indices.sizes(), c10::ScalarType::Float);
  return call.out(unread, "weights");
}

moe::RoutingPlan routing(Call& call, const at::Tensor& indices, Int experts, at::Tensor& unread) {
  Tensor i = call.in(indices, "expert_indices", DType::U32);
  return call.take(moe::RoutingPlan::create(i, routing_weights(call, indices, std::nullopt, unread), experts));
}

// A dispatch from its tensors, checked (RoutingPlan::adopt: the indices, offsets and slots read back
// once each). `rows` gives the rows' shape and dtype; an op that does not read them passes the tensor
// of that shape it has, and an error about it names that tensor's argument. Without `experts` the
// count comes from the offsets (experts + 1 entries), and an index with no expert in them is named
// as the offsets' shape (the likelier mistake; the message says which index).
moe::Dispatched adopt(Call& call, const at::Tensor& indices, const std::optional<at::Tensor>& weights,
                      std::optional<Int> experts, const at::Tensor& rows, const char* rows_argument,
                      const at::Tensor& offsets, const at::Tensor& slots, at::Tensor& unread) {
  if (!experts && (offsets.dim() != 1 || offsets.size(0) < 2))
    call.fail(Error(ErrorKind::ShapeMismatch, "offsets", "[experts + 1] with experts >= 1", c10::str(offsets.sizes())));
  // The views in the argument order, so that the first bad one is the one named.
  Tensor i = call.in(indices, "expert_indices", DType::U32);
  Tensor w = routing_weights(call, indices, weights, unread);
  Tensor r = call.in(rows, rows_argument);
  Tensor o = call.in(offsets, "offsets", DType::U32);
  Tensor s = call.in(slots, "slots", DType::U32);
  auto d = moe::RoutingPlan::adopt(i, w, experts ? *experts : offsets.size(0) - 1, r, o, s);
  if (!d && !experts && d.error().kind() == ErrorKind::InvalidValue && d.error().argument() == "expert_indices")
    call.fail(Error(ErrorKind::ShapeMismatch, "offsets",
                    "an entry for every expert index + 1 (expert_indices: " + d.error().actual() + ")",
                    c10::str(offsets.sizes())));
  return take_named(call, std::move(d), "rows", rows_argument);
}

// combine's dispatch (its routing has the caller's weights).
moe::Dispatched adopt_combine(Call& call, const at::Tensor& expert_output, const at::Tensor& indices,
                              const at::Tensor& weights, const at::Tensor& offsets, const at::Tensor& slots) {
  at::Tensor none;
  return adopt(call, indices, weights, std::nullopt, expert_output, "expert_output", offsets, slots, none);
}

// --- the device kernels ------------------------------------------------------------------------

Triple moe_dispatch(const at::Tensor& input, const at::Tensor& indices, Int experts) {
  Call call(kFamily, {{"input", &input}, {"expert_indices", &indices}});
  Tensor x = call.in(input, "input");
  if (experts > moe::kMaxDispatchExperts)  // before experts + 1 offsets are allocated
    call.fail(Error(ErrorKind::InvalidValue, "experts",
                    "<= " + std::to_string(moe::kMaxDispatchExperts) + " (dispatch's per-expert counters)",
                    std::to_string(experts)));
  at::Tensor unread;
  const moe::RoutingPlan r = routing(call, indices, experts, unread);
  // A wrong input shape is the library's error; the buffers only need some shape until then.
  const Int hidden = input.dim() == 2 ? input.size(1) : 0;
  at::Tensor rows = call.empty({r.tokens() * r.top_k(), hidden}, input.scalar_type());
  at::Tensor offsets = call.empty({experts + 1}, c10::ScalarType::Int);
  at::Tensor slots = call.empty(indices.sizes(), c10::ScalarType::Int);
  call.take(r.dispatch_into(x, call.out(rows, "rows"), call.out(offsets, "offsets", DType::U32),
                            call.out(slots, "slots", DType::U32)));
  call.finish();
  return {rows, offsets, slots};
}

at::Tensor moe_dispatch_backward(const at::Tensor& grad_rows, const at::Tensor& indices, const at::Tensor& offsets,
                                 const at::Tensor& slots) {
  Call call(kFamily,
            {{"grad_rows", &grad_rows}, {"expert_indices", &indices}, {"offsets", &offsets}, {"slots", &slots}});
  at::Tensor unread;
  // The gradient stands for the rows (dispatch's backward reads no row): one view of it serves both.
  const moe::Dispatched d =
      adopt(call, indices, std::nullopt, std::nullopt, grad_rows, "grad_rows", offsets, slots, unread);
  at::Tensor out = call.empty({d.routing().tokens(), d.hidden()}, grad_rows.scalar_type());
  call.check(d.dispatch_backward_into(d.rows(), call.out(out, "out")));
  call.finish();
  return out;
}

// What both experts ops start from: the strategy, the experts and the dispatch they run on (its
// routing's count of experts is the experts', so offsets of another length are named as such).
struct AdoptedExperts {
  moe::GroupedStrategy strategy;
  moe::SwiGluExperts experts;
  at::Tensor unread;  // the routing's stand-in weights
  moe::Dispatched dispatched;
};

AdoptedExperts adopt_experts(Call& call, const at::Tensor& rows, const at::Tensor& indices, const at::Tensor& offsets,
                             const at::Tensor& slots, const at::Tensor& gate, const at::Tensor& up,
                             const at::Tensor& down, std::string_view strategy) {
  const auto chosen = experts_strategy(call, strategy);
  moe::SwiGluExperts experts = swiglu_experts(call, gate, up, down);
  at::Tensor unread;
  moe::Dispatched d = adopt(call, indices, std::nullopt, experts.experts(), rows, "rows", offsets, slots, unread);
  return {chosen, std::move(experts), std::move(unread), std::move(d)};
}

at::Tensor moe_experts(const at::Tensor& rows, const at::Tensor& indices, const at::Tensor& offsets,
                       const at::Tensor& slots, const at::Tensor& gate, const at::Tensor& up, const at::Tensor& down,
                       std::string_view strategy) {
  Call call(kFamily, {{"rows", &rows},
                      {"expert_indices", &indices},
                      {"offsets", &offsets},
                      {"slots", &slots},
                      {"gate", &gate},
                      {"up", &up},
                      {"down", &down}});
  const AdoptedExperts a = adopt_experts(call, rows, indices, offsets, slots, gate, up, down, strategy);
  at::Tensor out = call.empty(rows.sizes(), gate.scalar_type());
  call.check(a.experts.forward_dispatched_into(a.dispatched, a.strategy, call.out(out, "out")));
  call.finish();
  return out;
}

// The experts' gradients: their training cache on the adopted dispatch (the forward's gate/up
// recomputed, SPEC §10), weight gradients summed in FP32 and returned in the weights' dtype.
Four moe_experts_backward(const at::Tensor& grad_output, const at::Tensor& rows, const at::Tensor& indices,
                          const at::Tensor& offsets, const at::Tensor& slots, const at::Tensor& gate,
                          const at::Tensor& up, const at::Tensor& down, std::string_view strategy) {
  Call call(kFamily, {{"grad_output", &grad_output},
                      {"rows", &rows},
                      {"expert_indices", &indices},
                      {"offsets", &offsets},
                      {"slots", &slots},
                      {"gate", &gate},
                      {"up", &up},
                      {"down", &down}});
  const AdoptedExperts a = adopt_experts(call, rows, indices, offsets, slots, gate, up, down, strategy);
  Tensor dy = call.in(grad_output, "grad_output");
  const moe::SwiGluTrainingCache cache = call.take(a.experts.training_cache(a.dispatched));
  at::Tensor drows = call.empty(rows.sizes(), rows.scalar_type());
  at::Tensor dgate = call.empty(gate.sizes(), c10::ScalarType::Float);
  at::Tensor dup = call.empty(up.sizes(), c10::ScalarType::Float);
  at::Tensor ddown = call.empty(down.sizes(), c10::ScalarType::Float);
  const moe::ExpertGradients into{.dinput = call.out(drows, "drows"),
                                  .dgate = call.out(dgate, "dgate"),
                                  .dup = call.out(dup, "dup"),
                                  .ddown = call.out(ddown, "ddown")};
  check_named(call, cache.backward_into(dy, a.strategy, into), "dexpert", "grad_output");
  call.finish();
  return {drows, dgate.to(gate.scalar_type()), dup.to(up.scalar_type()), ddown.to(down.scalar_type())};
}

at::Tensor moe_combine(const at::Tensor& expert_output, const at::Tensor& indices, const at::Tensor& weights,
                       const at::Tensor& offsets, const at::Tensor& slots) {
  Call call(kFamily, {{"expert_output", &expert_output},
                      {"expert_indices", &indices},
                      {"weights", &weights},
                      {"offsets", &offsets},
                      {"slots", &slots}});
  // The expert output stands for the rows (combine reads no row): one view of it serves both.
  const moe::Dispatched d = adopt_combine(call, expert_output, indices, weights, offsets, slots);
  at::Tensor out = call.empty({d.routing().tokens(), d.hidden()}, expert_output.scalar_type());
  call.check(d.combine_into(d.rows(), call.out(out, "out")));
  call.finish();
  return out;
}

Pair moe_combine_backward(const at::Tensor& grad_output, const at::Tensor& expert_output, const at::Tensor& indices,
                          const at::Tensor& weights, const at::Tensor& offsets, const at::Tensor& slots) {
  Call call(kFamily, {{"grad_output", &grad_output},
                      {"expert_output", &expert_output},
                      {"expert_indices", &indices},
                      {"weights", &weights},
                      {"offsets", &offsets},
                      {"slots", &slots}});
  const moe::Dispatched d = adopt_combine(call, expert_output, indices, weights, offsets, slots);
  const Tensor& y = d.rows();
  Tensor dy = call.in(grad_output, "grad_output");
  at::Tensor dexpert = call.empty(expert_output.sizes(), expert_output.scalar_type());
  at::Tensor dweights = call.empty(weights.sizes(), c10::ScalarType::Float);
  call.check(
      d.combine_backward_into(y, dy, moe::CombineGradientStrategy::Serial,
                              {.dexpert = call.out(dexpert, "dexpert"), .dweights = call.out(dweights, "dweights")}));
  call.finish();
  return {dexpert, dweights.to(weights.scalar_type())};
}

// --- autograd: each op's Function saves its inputs and calls its *_backward op --------------------

using DispatchSignature = Triple(const at::Tensor&, const at::Tensor&, Int);
using ExpertsSignature = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    const at::Tensor&, const at::Tensor&, const at::Tensor&, std::string_view);
using CombineSignature = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    const at::Tensor&);

// Each forward op's kernel below autograd (the device kernel, or the fake one while tracing).
template <class Signature, class... Args>
auto below_autograd(const c10::TypedOperatorHandle<Signature>& op, const Args&... args) {
  at::AutoDispatchBelowADInplaceOrView below;
  return op.call(args...);
}
Triple dispatch_below(const at::Tensor& input, const at::Tensor& indices, Int experts) {
  static auto op = rudnn_op<DispatchSignature>("moe_dispatch");
  return below_autograd(op, input, indices, experts);
}
at::Tensor experts_below(const at::Tensor& rows, const at::Tensor& indices, const at::Tensor& offsets,
                         const at::Tensor& slots, const at::Tensor& gate, const at::Tensor& up, const at::Tensor& down,
                         std::string_view strategy) {
  static auto op = rudnn_op<ExpertsSignature>("moe_experts");
  return below_autograd(op, rows, indices, offsets, slots, gate, up, down, strategy);
}
at::Tensor combine_below(const at::Tensor& expert_output, const at::Tensor& indices, const at::Tensor& weights,
                         const at::Tensor& offsets, const at::Tensor& slots) {
  static auto op = rudnn_op<CombineSignature>("moe_combine");
  return below_autograd(op, expert_output, indices, weights, offsets, slots);
}

struct DispatchFunction : torch::autograd::Function<DispatchFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& indices, Int experts) {
    auto [rows, offsets, slots] = dispatch_below(input, indices, experts);
    ctx->save_for_backward({indices, offsets, slots});
    ctx->mark_non_differentiable({offsets, slots});
    return {rows, offsets, slots};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    const variable_list s = ctx->get_saved_variables();
    static auto op = rudnn_op<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&)>(
        "moe_dispatch_backward");
    return {op.call(grads[0].contiguous(), s[0], s[1], s[2]), at::Tensor(), at::Tensor()};
  }
};

Triple moe_dispatch_autograd(const at::Tensor& input, const at::Tensor& indices, Int experts) {
  if (!forward_needs_grad(input)) return dispatch_below(input, indices, experts);
  const variable_list out = DispatchFunction::apply(input, indices, experts);
  return {out[0], out[1], out[2]};
}

struct ExpertsFunction : torch::autograd::Function<ExpertsFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& rows, const at::Tensor& indices,
                            const at::Tensor& offsets, const at::Tensor& slots, const at::Tensor& gate,
                            const at::Tensor& up, const at::Tensor& down, std::string_view strategy) {
    ctx->save_for_backward({rows, indices, offsets, slots, gate, up, down});
    ctx->saved_data["strategy"] = std::string(strategy);
    return experts_below(rows, indices, offsets, slots, gate, up, down, strategy);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    static auto op =
        rudnn_op<Four(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                      const at::Tensor&, const at::Tensor&, const at::Tensor&, std::string_view)>(
            "moe_experts_backward");
    auto [drows, dgate, dup, ddown] = op.call(grads[0].contiguous(), s[0], s[1], s[2], s[3], s[4], s[5], s[6],
                                              ctx->saved_data["strategy"].toStringRef());
    return {drows, at::Tensor(), at::Tensor(), at::Tensor(), dgate, dup, ddown, at::Tensor()};
  }
};

at::Tensor moe_experts_autograd(const at::Tensor& rows, const at::Tensor& indices, const at::Tensor& offsets,
                                const at::Tensor& slots, const at::Tensor& gate, const at::Tensor& up,
                                const at::Tensor& down, std::string_view strategy) {
  if (!forward_needs_grad(rows, gate, up, down))
    return experts_below(rows, indices, offsets, slots, gate, up, down, strategy);
  return ExpertsFunction::apply(rows, indices, offsets, slots, gate, up, down, strategy);
}

struct CombineFunction : torch::autograd::Function<CombineFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& expert_output, const at::Tensor& indices,
                            const at::Tensor& weights, const at::Tensor& offsets, const at::Tensor& slots) {
    ctx->save_for_backward({expert_output, indices, weights, offsets, slots});
    return combine_below(expert_output, indices, weights, offsets, slots);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    static auto op = rudnn_op<Pair(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                   const at::Tensor&, const at::Tensor&)>("moe_combine_backward");
    auto [dexpert, dweights] = op.call(grads[0].contiguous(), s[0], s[1], s[2], s[3], s[4]);
    return {dexpert, at::Tensor(), dweights, at::Tensor(), at::Tensor()};
  }
};

at::Tensor moe_combine_autograd(const at::Tensor& expert_output, const at::Tensor& indices, const at::Tensor& weights,
                                const at::Tensor& offsets, const at::Tensor& slots) {
  if (!forward_needs_grad(expert_output, weights))
    return combine_below(expert_output, indices, weights, offsets, slots);
  return CombineFunction::apply(expert_output, indices, weights, offsets, slots);
}

void kernels(torch::Library& m) {
  m.impl("moe_dispatch", guarded<kFamily, &moe_dispatch>);
  m.impl("moe_dispatch_backward", guarded<kFamily, &moe_dispatch_backward>);
  m.impl("moe_experts", guarded<kFamily, &moe_experts>);
  m.impl("moe_experts_backward", guarded<kFamily, &moe_experts_backward>);
  m.impl("moe_combine", guarded<kFamily, &moe_combine>);
  m.impl("moe_combine_backward", guarded<kFamily, &moe_combine_backward>);
}

}  // namespace

RUDNN_TORCH_KERNELS(kernels)

TORCH_LIBRARY_IMPL(rudnn, Autograd, m) {
  m.impl("moe_dispatch", &moe_dispatch_autograd);
  m.impl("moe_experts", &moe_experts_autograd);
  m.impl("moe_combine", &moe_combine_autograd);
  for (const char* op : {"moe_dispatch_backward", "moe_experts_backward", "moe_combine_backward"})
    m.impl(op, forward_only(kFamily));
}

}  // namespace rudnn::python
