// torch.ops.rudnn.paged_* → rudnn::paged_attention through a PagedPlan found by its id: attention and
// MLA (split-KV with the plan's kept workspaces), their backward (the atomic path, or the ordered one
// when the plan says deterministic_backward) as their autograd, and append in place.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include "autograd.h"
#include "call.h"
#include "paged_plan.h"

namespace rudnn::python {

namespace {

constexpr char kFamily[] = "paged_attention";
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Int = std::int64_t;
using paged_attention::SplitWorkspace;

std::shared_ptr<PagedPlanState> plan_of(Int id) {
  auto plan = PagedPlanState::find(id);
  if (!plan)
    raise(kFamily, Error(ErrorKind::InvalidValue, "plan", "the id of a live rudnn.paged_attention.PagedPlan",
                         std::to_string(id)));
  return plan;
}

// Every tensor on the plan's device, checked before the call opens its queue; then the call's stream
// must be the plan's (its metadata lives there): a call from another stream is rejected before any
// workspace is made for it.
Call open(const PagedPlanState& plan, std::initializer_list<Call::Named> tensors) {
  const c10::Device device =
      plan.place().cuda ? c10::Device(c10::DeviceType::CUDA, plan.place().ordinal) : c10::Device(c10::DeviceType::CPU);
  for (const auto& [name, tensor] : tensors)
    if (tensor->device() != device)
      raise(kFamily, Error(ErrorKind::DeviceMismatch, name, "the plan's device (" + plan.place().device() + ")",
                           tensor->device().str()));
  return Call(kFamily, tensors);
}
void check_stream(const Call& call, const PagedPlanState& plan) {
  const PlanPlace place{.cuda = call.device().is_cuda(),
                        .ordinal = call.device().is_cuda() ? call.device().index() : 0,
                        .stream = call.stream()};
  if (place != plan.place())
    call.fail(Error(ErrorKind::QueueMismatch, "query", "the plan's device and stream (" + plan.place().describe() + ")",
                    place.describe()));
}

void check_splits(Int splits) {
  if (splits < 1)
    raise(kFamily, Error(ErrorKind::InvalidValue, "splits", "1 (unsplit) or 2..=32", std::to_string(splits)));
}

// The ranks a kept workspace reads dims from, checked first so that a wrong rank is the library's
// kind of error, never an out-of-range dim().
// `value` is the cache the values come from, named `value_name` ("value", or MLA's "latent").
void check_ranks(const Call& call, const Tensor& q, const Tensor* value, const char* value_name = "value") {
  if (q.rank() != 3)
    call.fail(Error(ErrorKind::ShapeMismatch, "query", "[queries, heads, dim]", shape_to_string(q.shape())));
  if (value && value->rank() != 4)
    call.fail(
        Error(ErrorKind::ShapeMismatch, value_name, "[pages, page_size, heads, dim]", shape_to_string(value->shape())));
}

// The split workspace of a call (splits = 1: none; the library checks the rest). Under the plan's
// workspace mutex, after check_ranks(call, q, &value).
Result<SplitWorkspace*, PagedAttentionError> workspace_of(PagedPlanState& plan, const Schedule& schedule,
                                                          const Tensor& q, const Tensor& value, Int splits) {
  if (splits == 1) return static_cast<SplitWorkspace*>(nullptr);
  return plan.split_workspace(schedule, q, q.dim(1), value.dim(3), splits);
}

// Runs `body` (the library's Status) under the plan's workspace mutex, and checks the status after
// releasing it: an error is raised under the GIL, never while holding the plan's lock (a thread that
// holds the GIL may be waiting for that lock).
template <class Body>
void under_plan_lock(const Call& call, PagedPlanState& plan, Body&& body) {
  Status<PagedAttentionError> status = [&]() -> Status<PagedAttentionError> {
    std::lock_guard lock(plan.workspace_mutex());
    return body();
  }();
  call.check(status);
}

// A schedule's generation as the forward ops' second output (a 0-dim CPU int64 tensor). The backward
// ops take it back and check that the plan is still on that schedule: as an output it reaches a
// torch.compile'd backward too, in which anything the autograd function saved aside is a constant of
// the trace.
at::Tensor generation_tensor(const Schedule& schedule) {
  return at::scalar_tensor(static_cast<Int>(schedule.generation), at::TensorOptions(at::kLong));
}

// A backward runs on its forward's schedule: a plan re-planned in between (in place or not) is an
// error, never the gradient of another schedule.
void check_generation(const at::Tensor& generation, const Schedule& schedule) {
  if (generation.dim() != 0 || generation.scalar_type() != at::kLong || !generation.device().is_cpu())
    raise(kFamily,
          Error(ErrorKind::InvalidValue, "generation", "the forward's generation output (a 0-dim int64 CPU tensor)",
                "a " + std::to_string(generation.dim()) + "-dim " + c10::toString(generation.scalar_type()) +
                    " tensor on " + generation.device().str()));
  const Int forward = generation.item<Int>(), now = static_cast<Int>(schedule.generation);
  if (forward != now)
    raise(kFamily, Error(ErrorKind::InvalidValue, "plan",
                         "the schedule of the forward (generation " + std::to_string(forward) + ")",
                         "re-planned since (generation " + std::to_string(now) + ")"));
}

std::tuple<at::Tensor, at::Tensor> paged_attention(const at::Tensor& query, const at::Tensor& key,
                                                   const at::Tensor& value, Int plan_id, double scale, bool causal,
                                                   Int splits) {
  auto plan = plan_of(plan_id);
  const Schedule schedule = plan->schedule();  // this call's schedule, whatever a replan does meanwhile
  check_splits(splits);
  Call call = open(*plan, {{"query", &query}, {"key", &key}, {"value", &value}});
  Tensor q = call.in(query, "query");
  Tensor k = call.in(key, "key");
  Tensor v = call.in(value, "value");
  std::vector<Int> shape{0};
  if (query.dim() == 3 && value.dim() == 4) shape = {query.size(0), query.size(1), value.size(3)};
  at::Tensor out = call.empty(shape, query.scalar_type());
  Tensor o = call.out(out, "out");
  check_stream(call, *plan);
  if (splits != 1) check_ranks(call, q, &v);
  under_plan_lock(call, *plan, [&]() -> Status<PagedAttentionError> {
    auto workspace = workspace_of(*plan, schedule, q, v, splits);
    if (!workspace) return workspace.error();
    return schedule.plan->attention_into(q, k, v, static_cast<float>(scale), causal, o, *workspace);
  });
  call.finish();
  return {out, generation_tensor(schedule)};
}

std::tuple<at::Tensor, at::Tensor> paged_mla(const at::Tensor& query, const at::Tensor& query_rope,
                                             const at::Tensor& latent, const at::Tensor& key_rope, Int plan_id,
                                             double scale, bool causal, Int splits) {
  auto plan = plan_of(plan_id);
  const Schedule schedule = plan->schedule();  // this call's schedule, whatever a replan does meanwhile
  check_splits(splits);
  Call call =
      open(*plan, {{"query", &query}, {"query_rope", &query_rope}, {"latent", &latent}, {"key_rope", &key_rope}});
  Tensor q = call.in(query, "query");
  Tensor qp = call.in(query_rope, "query_rope");
  Tensor lat = call.in(latent, "latent");
  Tensor kp = call.in(key_rope, "key_rope");
  at::Tensor out = call.empty(query.sizes(), query.scalar_type());
  Tensor o = call.out(out, "out");
  check_stream(call, *plan);
  if (splits != 1) check_ranks(call, q, &lat, "latent");
  under_plan_lock(call, *plan, [&]() -> Status<PagedAttentionError> {
    auto workspace = workspace_of(*plan, schedule, q, lat, splits);
    if (!workspace) return workspace.error();
    return schedule.plan->mla_into(q, qp, lat, kp, static_cast<float>(scale), causal, o, *workspace);
  });
  call.finish();
  return {out, generation_tensor(schedule)};
}

// Gradient buffers for the wanted inputs, in q's dtype (the others: empty, and not computed). The
// library writes every element: a cache slot no query row reaches gets an exact 0.
std::vector<at::Tensor> gradients(const Call& call, const at::Tensor& query,
                                  std::initializer_list<const at::Tensor*> of, c10::ArrayRef<bool> wanted) {
  std::vector<at::Tensor> out;
  std::size_t i = 0;
  for (const at::Tensor* t : of) {
    const bool want = i < wanted.size() && wanted[i];
    out.push_back(call.empty(want ? t->sizes() : at::IntArrayRef{0}, query.scalar_type()));
    ++i;
  }
  return out;
}
Tensor* wanted_view(Call& call, std::vector<std::optional<Tensor>>& views, const at::Tensor& buffer, bool want,
                    const char* argument) {
  if (!want) return nullptr;
  views.push_back(call.out(buffer, argument));
  return &*views.back();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> paged_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& generation, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, Int plan_id, double scale, bool causal, std::array<bool, 3> wanted) {
  auto plan = plan_of(plan_id);
  const Schedule schedule = plan->schedule();  // this call's schedule, whatever a replan does meanwhile
  check_generation(generation, schedule);
  Call call = open(*plan, {{"query", &query}, {"key", &key}, {"value", &value}, {"grad_out", &grad_out}});
  Tensor q = call.in(query, "query");
  Tensor k = call.in(key, "key");
  Tensor v = call.in(value, "value");
  Tensor dy = call.in(grad_out, "grad_out");
  auto grads = gradients(call, query, {&query, &key, &value}, wanted);
  std::vector<std::optional<Tensor>> views;
  views.reserve(3);
  paged_attention::AttentionBackwardOutputs out{wanted_view(call, views, grads[0], wanted[0], "dquery"),
                                                wanted_view(call, views, grads[1], wanted[1], "dkey"),
                                                wanted_view(call, views, grads[2], wanted[2], "dvalue")};
  check_stream(call, *plan);
  const float s = static_cast<float>(scale);
  if (!plan->deterministic_backward()) {
    call.check(schedule.plan->attention_backward_selected_into(q, k, v, dy, s, causal, out));
  } else {
    check_ranks(call, q, nullptr);
    under_plan_lock(call, *plan, [&]() -> Status<PagedAttentionError> {
      auto workspace = plan->ordered_workspace(schedule, q);
      if (!workspace) return workspace.error();
      return schedule.plan->attention_backward_ordered_into(q, k, v, dy, s, causal, **workspace, out);
    });
  }
  call.finish();
  return {grads[0], grads[1], grads[2]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> paged_mla_backward(
    const at::Tensor& grad_out, const at::Tensor& generation, const at::Tensor& query, const at::Tensor& query_rope,
    const at::Tensor& latent, const at::Tensor& key_rope, Int plan_id, double scale, bool causal,
    std::array<bool, 4> wanted) {
  auto plan = plan_of(plan_id);
  const Schedule schedule = plan->schedule();  // this call's schedule, whatever a replan does meanwhile
  check_generation(generation, schedule);
  Call call = open(*plan, {{"query", &query},
                           {"query_rope", &query_rope},
                           {"latent", &latent},
                           {"key_rope", &key_rope},
                           {"grad_out", &grad_out}});
  Tensor q = call.in(query, "query");
  Tensor qp = call.in(query_rope, "query_rope");
  Tensor lat = call.in(latent, "latent");
  Tensor kp = call.in(key_rope, "key_rope");
  Tensor dy = call.in(grad_out, "grad_out");
  auto grads = gradients(call, query, {&query, &query_rope, &latent, &key_rope}, wanted);
  std::vector<std::optional<Tensor>> views;
  views.reserve(4);
  paged_attention::MlaBackwardOutputs out{wanted_view(call, views, grads[0], wanted[0], "dquery"),
                                          wanted_view(call, views, grads[1], wanted[1], "dquery_rope"),
                                          wanted_view(call, views, grads[2], wanted[2], "dlatent"),
                                          wanted_view(call, views, grads[3], wanted[3], "dkey_rope")};
  check_stream(call, *plan);
  const float s = static_cast<float>(scale);
  if (!plan->deterministic_backward()) {
    call.check(schedule.plan->mla_backward_selected_into(q, qp, lat, kp, dy, s, causal, out));
  } else {
    check_ranks(call, q, nullptr);
    under_plan_lock(call, *plan, [&]() -> Status<PagedAttentionError> {
      auto workspace = plan->ordered_workspace(schedule, q);
      if (!workspace) return workspace.error();
      return schedule.plan->mla_backward_ordered_into(q, qp, lat, kp, dy, s, causal, **workspace, out);
    });
  }
  call.finish();
  return {grads[0], grads[1], grads[2], grads[3]};
}

// Writes key and value at each query row's slot of the caches, in place.
void paged_append(const at::Tensor& key, const at::Tensor& value, const at::Tensor& key_cache,
                  const at::Tensor& value_cache, Int plan_id) {
  auto plan = plan_of(plan_id);
  const Schedule schedule = plan->schedule();  // this call's schedule, whatever a replan does meanwhile
  for (const auto& [name, cache] : {std::pair{"key_cache", &key_cache}, std::pair{"value_cache", &value_cache}}) {
    const auto address = reinterpret_cast<std::uintptr_t>(cache->data_ptr());
    if (!cache->is_contiguous() || address % Tensor::kViewAlignment) {
      std::string strides = "(";
      for (std::size_t i = 0; i < cache->strides().size(); ++i)
        strides += (i ? ", " : "") + std::to_string(cache->strides()[i]);
      char where[32];
      std::snprintf(where, sizeof where, "%#zx", static_cast<std::size_t>(address));
      raise(kFamily, Error(ErrorKind::InvalidValue, name, "a contiguous, 16-byte aligned cache (written in place)",
                           "strides " + strides + (cache->dim() == 1 ? ",)" : ")") + " at address " + where));
    }
  }
  Call call = open(*plan, {{"key", &key}, {"value", &value}, {"key_cache", &key_cache}, {"value_cache", &value_cache}});
  Tensor k = call.in(key, "key");
  Tensor v = call.in(value, "value");
  Tensor kc = call.out(key_cache, "key_cache");
  Tensor vc = call.out(value_cache, "value_cache");
  check_stream(call, *plan);
  void* const key_storage = kc.data();
  void* const value_storage = vc.data();
  // Moved: no other handle shares the views, so append writes the torch tensors in place.
  auto appended = call.take(schedule.plan->append(k, v, std::move(kc), std::move(vc)));
  if (appended.key_cache.data() != key_storage || appended.value_cache.data() != value_storage)
    call.fail(Error(ErrorKind::Internal, "key_cache", "appended in place", "a copy"));
  call.finish();
  // A mutated input's version moves (as for torch's in-place ops), so a backward that saved the caches
  // before this append fails loudly instead of reading the new rows.
  for (const at::Tensor* cache : {&key_cache, &value_cache})
    if (!cache->is_inference()) torch::autograd::impl::bump_version(*cache);
}

// The plan stays alive until the backward (a compiled graph's id alone would not keep it).
struct PlanKeeper : torch::CustomClassHolder {
  explicit PlanKeeper(std::shared_ptr<PagedPlanState> plan) : plan(std::move(plan)) {}
  std::shared_ptr<PagedPlanState> plan;
};

// What the backward needs: the inputs and the forward's generation (saved), the call's scalars, which
// inputs want a gradient, and the plan kept alive.
void save_call(AutogradContext* ctx, Int plan_id, double scale, bool causal, variable_list inputs,
               const at::Tensor& generation) {
  c10::List<bool> wanted;
  for (const at::Tensor& t : inputs) wanted.push_back(requires_grad(t));
  inputs.push_back(generation);
  ctx->save_for_backward(inputs);
  ctx->mark_non_differentiable({generation});
  ctx->saved_data["plan"] = plan_id;
  ctx->saved_data["scale"] = scale;
  ctx->saved_data["causal"] = causal;
  ctx->saved_data["wanted"] = wanted;
  if (auto plan = PagedPlanState::find(plan_id))
    ctx->saved_data["keep"] = c10::IValue::make_capsule(c10::make_intrusive<PlanKeeper>(std::move(plan)));
}

using Forward = std::tuple<at::Tensor, at::Tensor>;  // the output and the schedule's generation
using AttentionSignature = Forward(const at::Tensor&, const at::Tensor&, const at::Tensor&, Int, double, bool, Int);
using MlaSignature = Forward(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, Int, double,
                             bool, Int);

// The kernels below autograd (the device kernel, or the fake one while tracing).
Forward attention_below_autograd(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, Int plan,
                                 double scale, bool causal, Int splits) {
  at::AutoDispatchBelowADInplaceOrView below;
  static auto op = rudnn_op<AttentionSignature>("paged_attention");
  return op.call(query, key, value, plan, scale, causal, splits);
}
Forward mla_below_autograd(const at::Tensor& query, const at::Tensor& query_rope, const at::Tensor& latent,
                           const at::Tensor& key_rope, Int plan, double scale, bool causal, Int splits) {
  at::AutoDispatchBelowADInplaceOrView below;
  static auto op = rudnn_op<MlaSignature>("paged_mla");
  return op.call(query, query_rope, latent, key_rope, plan, scale, causal, splits);
}

struct AttentionFunction : torch::autograd::Function<AttentionFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& query, const at::Tensor& key,
                               const at::Tensor& value, Int plan, double scale, bool causal, Int splits) {
    auto [out, generation] = attention_below_autograd(query, key, value, plan, scale, causal, splits);
    save_call(ctx, plan, scale, causal, {query, key, value}, generation);
    return {out, generation};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    auto& data = ctx->saved_data;
    const auto list = data["wanted"].toBoolList();
    const std::array<bool, 3> wanted{list[0], list[1], list[2]};
    static auto op = rudnn_op<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
        const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, Int, double,
        bool, std::array<bool, 3>)>("paged_attention_backward");
    auto [dq, dk, dv] = op.call(grads[0].contiguous(), s[3], s[0], s[1], s[2], data["plan"].toInt(),
                                data["scale"].toDouble(), data["causal"].toBool(), wanted);
    return {wanted[0] ? dq : at::Tensor(),
            wanted[1] ? dk : at::Tensor(),
            wanted[2] ? dv : at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

struct MlaFunction : torch::autograd::Function<MlaFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& query, const at::Tensor& query_rope,
                               const at::Tensor& latent, const at::Tensor& key_rope, Int plan, double scale,
                               bool causal, Int splits) {
    auto [out, generation] = mla_below_autograd(query, query_rope, latent, key_rope, plan, scale, causal, splits);
    save_call(ctx, plan, scale, causal, {query, query_rope, latent, key_rope}, generation);
    return {out, generation};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    auto& data = ctx->saved_data;
    const auto list = data["wanted"].toBoolList();
    const std::array<bool, 4> wanted{list[0], list[1], list[2], list[3]};
    static auto op = rudnn_op<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
        const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
        const at::Tensor&, Int, double, bool, std::array<bool, 4>)>("paged_mla_backward");
    auto [dq, dqp, dlatent, dkp] = op.call(grads[0].contiguous(), s[4], s[0], s[1], s[2], s[3], data["plan"].toInt(),
                                           data["scale"].toDouble(), data["causal"].toBool(), wanted);
    return {wanted[0] ? dq : at::Tensor(),
            wanted[1] ? dqp : at::Tensor(),
            wanted[2] ? dlatent : at::Tensor(),
            wanted[3] ? dkp : at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

Forward paged_attention_autograd(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, Int plan,
                                 double scale, bool causal, Int splits) {
  if (!forward_needs_grad(query, key, value))
    return attention_below_autograd(query, key, value, plan, scale, causal, splits);
  const variable_list out = AttentionFunction::apply(query, key, value, plan, scale, causal, splits);
  return {out[0], out[1]};
}

Forward paged_mla_autograd(const at::Tensor& query, const at::Tensor& query_rope, const at::Tensor& latent,
                           const at::Tensor& key_rope, Int plan, double scale, bool causal, Int splits) {
  if (!forward_needs_grad(query, query_rope, latent, key_rope))
    return mla_below_autograd(query, query_rope, latent, key_rope, plan, scale, causal, splits);
  const variable_list out = MlaFunction::apply(query, query_rope, latent, key_rope, plan, scale, causal, splits);
  return {out[0], out[1]};
}

void kernels(torch::Library& m) {
  m.impl("paged_attention", guarded<kFamily, &paged_attention>);
  m.impl("paged_mla", guarded<kFamily, &paged_mla>);
  m.impl("paged_attention_backward", guarded<kFamily, &paged_attention_backward>);
  m.impl("paged_mla_backward", guarded<kFamily, &paged_mla_backward>);
  m.impl("paged_append", guarded<kFamily, &paged_append>);
}

}  // namespace

RUDNN_TORCH_KERNELS(kernels)

TORCH_LIBRARY_IMPL(rudnn, Autograd, m) {
  m.impl("paged_attention", &paged_attention_autograd);
  m.impl("paged_mla", &paged_mla_autograd);
  for (const char* op : {"paged_attention_backward", "paged_mla_backward"}) m.impl(op, forward_only(kFamily));
}

}  // namespace rudnn::python
