// The public MoE entries (routing, dispatch, experts, combine, forward): contract check → plan cache
// → (cold) compiler → launch, written with the entry toolkit (ops/entry.h).
#include "rudnn/moe.h"

#include <bit>
#include <limits>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>

#include "contracts/moe.h"
#include "entry.h"
#include "moe_strategy.h"

namespace rudnn::moe {

namespace {

using ops::as;
using ops::operand;

std::optional<MoeError> check_layout(const Tensor& t, const char* name) {
  if (auto e = ops::check_contiguous(t, name)) return as<MoeError>(*e);
  return std::nullopt;
}

std::optional<MoeError> same_queue(const Tensor& t, const char* name, const Tensor& ref, const char* ref_name) {
  if (auto e = ops::check_same_queue(t, name, ref, ref_name)) return as<MoeError>(*e);
  return std::nullopt;
}

// The selection read back (U32 values, exact in a double): its first index ≥ experts, as the error.
std::optional<MoeError> index_beyond_experts(const std::vector<double>& indices, std::int64_t experts,
                                             std::int64_t top_k) {
  const auto k = static_cast<std::size_t>(top_k);
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (indices[i] >= static_cast<double>(experts))
      return MoeError(ErrorKind::InvalidValue, "expert_indices", fmt::format("indices < {} (experts)", experts),
                      fmt::format("{} at [{}, {}]", indices[i], i / k, i % k));
  return std::nullopt;
}

// A tensor's values on the host (a copy and a synchronization of its queue).
Result<std::vector<double>, MoeError> read_back(const Tensor& t) {
  auto host = to_host(t);
  if (!host.ok()) return MoeError::from(host.error());
  return host->to_f64();
}

}  // namespace

// The one way the routing ops construct a plan (RoutingPlan's constructor is private).
struct RoutingPlanAccess {
  static RoutingPlan make(Tensor indices, Tensor weights, std::int64_t experts) {
    return RoutingPlan(std::move(indices), std::move(weights), experts);
  }
};

namespace {

// A routing's two outputs: fresh, or a caller's buffers (checked before anything runs).
struct RouteOutputs {
  const Tensor* indices = nullptr;
  const Tensor* weights = nullptr;
};

Result<RoutingPlan, MoeError> run(bool grouped, const contracts::GroupRouteSignature& sig, const Tensor& logits,
                                  const Tensor* bias, RouteOutputs into = {}) {
  const Shape out_shape{logits.shape()[0], sig.top_k};
  if (into.indices) {
    const ops::NamedTensor inputs[] = {{&logits, "logits"}, {bias, "bias"}};
    const ops::OutputBuffer outputs[] = {{into.indices, "expert_indices", out_shape, DType::U32},
                                         {into.weights, "weights", out_shape, logits.dtype()}};
    if (auto e = ops::check_outputs(outputs, logits, inputs)) return as<MoeError>(*e);
  }
  const Device& device = logits.device();
  const std::int64_t mode = ops::autotune_mode_word(true);
  ops::PlanKeyBuilder key(grouped ? "rudnn.route_sigmoid_grouped" : "rudnn.route");
  key.add(logits.dtype()).add(logits.shape()[1]).add(sig.top_k).add(sig.renormalize).add(device);
  key.add(mode).add(ops::autotune_bucket(logits.shape()[0], mode));
  if (grouped)
    key.add(sig.groups)
        .add(sig.selected_groups)
        .add(sig.bias.has_value())
        .add(sig.group_top_two)
        .add_bits(static_cast<float>(sig.scale));
  auto plan = ops::cached_plan(key.key(), logits.queue(), ops::Tunable::Yes, mode != 0,
                               [&](compiler::ConfigProvider* provider) {
                                 compiler::RouteRequest request{grouped, sig, std::nullopt};
                                 request.provider = provider;
                                 return compiler::lower_routing(request, ops::target_for(device));
                               });
  if (!plan.ok()) return as<MoeError>(plan.error());

  auto indices = ops::output_or(into.indices, out_shape, DType::U32, logits.queue());
  if (!indices.ok()) return as<MoeError>(indices.error());
  auto weights = ops::output_or(into.weights, out_shape, logits.dtype(), logits.queue());
  if (!weights.ok()) return as<MoeError>(weights.error());
  if (out_shape[0] > 0) {
    // Slots: logits, [bias (kept, maybe empty, for grouped routing)], indices, weights.
    auto launched = grouped ? ops::launch(**plan, logits.queue(), {&logits, bias, &*indices, &*weights})
                            : ops::launch(**plan, logits.queue(), {&logits, &*indices, &*weights});
    if (!launched.ok()) return as<MoeError>(launched.error());
  }
  return RoutingPlanAccess::make(std::move(indices.value()), std::move(weights.value()), logits.shape()[1]);
}

}  // namespace

Result<RoutingPlan, MoeError> RoutingPlan::create(Tensor expert_indices, Tensor weights, std::int64_t experts) {
  std::vector<double> unused;
  return create_reading(std::move(expert_indices), std::move(weights), experts, unused);
}

Result<Dispatched, MoeError> RoutingPlan::adopt(Tensor expert_indices, Tensor weights, std::int64_t experts,
                                                Tensor rows, Tensor offsets, Tensor slots) {
  std::vector<double> indices;
  auto routing = create_reading(std::move(expert_indices), std::move(weights), experts, indices);
  if (!routing.ok()) return routing.error();
  return routing->adopt_reading(std::move(rows), std::move(offsets), std::move(slots), &indices);
}

Result<RoutingPlan, MoeError> RoutingPlan::create_reading(Tensor expert_indices, Tensor weights, std::int64_t experts,
                                                          std::vector<double>& indices_read) {
  // Indices and offsets are U32: more experts than that could not be addressed (and experts + 1
  // offsets must not overflow).
  constexpr std::int64_t kMaxExperts = std::numeric_limits<std::uint32_t>::max();
  if (experts < 1 || experts > kMaxExperts)
    return MoeError(ErrorKind::InvalidValue, "experts", fmt::format(">= 1 and <= {}", kMaxExperts),
                    std::to_string(experts));
  const Tensor& ix = expert_indices;
  if (ix.dtype() != DType::U32)
    return MoeError(ErrorKind::UnsupportedDType, "expert_indices", "u32", std::string(dtype_name(ix.dtype())));
  if (ix.rank() != 2 || ix.dim(1) < 1 || ix.dim(1) > experts)
    return MoeError(ErrorKind::ShapeMismatch, "expert_indices",
                    fmt::format("rank 2 [tokens, top_k] with 1 <= top_k <= {} (experts)", experts),
                    shape_to_string(ix.shape()));
  if (!is_float(weights.dtype()) || is_quantized(weights.dtype()))
    return MoeError(ErrorKind::UnsupportedDType, "weights", "f32, f16 or bf16",
                    std::string(dtype_name(weights.dtype())));
  if (weights.shape() != ix.shape())
    return MoeError(ErrorKind::ShapeMismatch, "weights", shape_to_string(ix.shape()) + " (the shape of expert_indices)",
                    shape_to_string(weights.shape()));
  if (weights.device() != ix.device())
    return MoeError(ErrorKind::DeviceMismatch, "weights",
                    "the device of expert_indices (" + ix.device().to_string() + ")", weights.device().to_string());
  if (auto e = same_queue(weights, "weights", ix, "expert_indices")) return *e;
  for (auto [t, name] : {std::pair{&ix, "expert_indices"}, {&weights, "weights"}})
    if (auto e = check_layout(*t, name)) return *e;
  auto values = read_back(ix);
  if (!values.ok()) return values.error();
  if (auto e = index_beyond_experts(*values, experts, ix.dim(1))) return *e;
  indices_read = std::move(values.value());
  return RoutingPlan(std::move(expert_indices), std::move(weights), experts);
}

namespace {

Result<RoutingPlan, MoeError> route_impl(const Tensor& logits, RoutingOptions options, RouteOutputs into) {
  contracts::RouteSignature sig{operand(logits), options.top_k, options.renormalize};
  if (auto e = contracts::check_route(sig)) return *e;
  if (auto e = check_layout(logits, "logits")) return *e;
  contracts::GroupRouteSignature g;
  g.logits = sig.logits;
  g.top_k = options.top_k;
  g.renormalize = options.renormalize;
  return run(false, g, logits, nullptr, into);
}

contracts::GroupRouteSignature group_route_signature(const Tensor& logits, const std::optional<Tensor>& bias,
                                                     const GroupRoutingOptions& options) {
  contracts::GroupRouteSignature sig;
  sig.logits = operand(logits);
  if (bias) sig.bias = operand(*bias);
  sig.top_k = options.top_k;
  sig.groups = options.groups;
  sig.selected_groups = options.selected_groups;
  sig.group_top_two = options.group_top_two;
  sig.renormalize = options.renormalize;
  sig.scale = options.scale;
  return sig;
}

Result<RoutingPlan, MoeError> route_sigmoid_grouped_impl(const Tensor& logits, const std::optional<Tensor>& bias,
                                                         GroupRoutingOptions options, RouteOutputs into) {
  const contracts::GroupRouteSignature sig = group_route_signature(logits, bias, options);
  if (auto e = contracts::check_route_sigmoid_grouped(sig)) return *e;
  if (auto e = check_layout(logits, "logits")) return *e;
  if (bias) {
    if (auto e = check_layout(*bias, "bias")) return *e;
    if (!(bias->queue() == logits.queue()))
      return MoeError(ErrorKind::QueueMismatch, "bias", "the logits' queue", "another queue of the same device");
  }
  return run(true, sig, logits, bias ? &*bias : nullptr, into);
}

}  // namespace

Result<RoutingPlan, MoeError> route(const Tensor& logits, RoutingOptions options) {
  return route_impl(logits, options, {});
}

Result<RoutingPlan, MoeError> route_into(const Tensor& logits, RoutingOptions options, const Tensor& expert_indices,
                                         const Tensor& weights) {
  return route_impl(logits, options, {&expert_indices, &weights});
}

Result<RoutingPlan, MoeError> route_sigmoid_grouped(const Tensor& logits, const std::optional<Tensor>& bias,
                                                    GroupRoutingOptions options) {
  return route_sigmoid_grouped_impl(logits, bias, options, {});
}

Result<RoutingPlan, MoeError> route_sigmoid_grouped_into(const Tensor& logits, const std::optional<Tensor>& bias,
                                                         GroupRoutingOptions options, const Tensor& expert_indices,
                                                         const Tensor& weights) {
  return route_sigmoid_grouped_impl(logits, bias, options, {&expert_indices, &weights});
}

// --- dispatch, experts, combine -------------------------------------------------------------

Result<Dispatched, MoeError> RoutingPlan::dispatch(const Tensor& input) const { return dispatch_impl(input, nullptr); }

Result<Dispatched, MoeError> RoutingPlan::dispatch_into(const Tensor& input, const Tensor& rows, const Tensor& offsets,
                                                        const Tensor& slots) const {
  const Tensor* const into[] = {&rows, &offsets, &slots};
  return dispatch_impl(input, into);
}

Result<Dispatched, MoeError> RoutingPlan::dispatch_impl(const Tensor& input, const Tensor* const* into) const {
  contracts::DispatchSignature sig{operand(input), operand(indices_), experts_};
  if (auto e = contracts::check_dispatch(sig)) return *e;
  if (auto e = check_layout(input, "input")) return *e;
  if (auto e = same_queue(input, "input", indices_, "the routing")) return *e;
  const Device& device = input.device();
  const std::int64_t tokens = input.shape()[0], hidden = input.shape()[1], k = top_k();
  // The three outputs: rows, offsets, slots (the caller's buffers when `into`).
  const ops::OutputBuffer outputs[] = {{into ? into[0] : nullptr, "rows", {tokens * k, hidden}, input.dtype()},
                                       {into ? into[1] : nullptr, "offsets", {experts_ + 1}, DType::U32},
                                       {into ? into[2] : nullptr, "slots", {tokens, k}, DType::U32}};
  if (into) {
    // The combine reads the weights later: they count as an input too.
    const ops::NamedTensor inputs[] = {{&input, "input"}, {&indices_, "expert_indices"}, {&weights_, "weights"}};
    if (auto e = ops::check_outputs(outputs, input, inputs)) return as<MoeError>(*e);
  }
  const std::int64_t mode = ops::autotune_mode_word(true);
  const ops::PlanKey key = ops::PlanKeyBuilder("rudnn.dispatch")
                               .add(input.dtype())
                               .add(hidden)
                               .add(k)
                               .add(experts_)
                               .add(device)
                               .add(mode)
                               .add(ops::autotune_bucket(tokens, mode))
                               .key();
  auto plan =
      ops::cached_plan(key, input.queue(), ops::Tunable::Yes, mode != 0, [&](compiler::ConfigProvider* provider) {
        compiler::DispatchRequest request{sig, std::nullopt};
        request.provider = provider;
        return compiler::lower_dispatch(request, ops::target_for(device));
      });
  if (!plan.ok()) return as<MoeError>(plan.error());
  auto buffer = [&](int i) {
    const ops::OutputBuffer& o = outputs[i];
    return ops::output_or(o.tensor, o.shape, o.dtype, input.queue());
  };
  auto rows = buffer(0);
  if (!rows.ok()) return as<MoeError>(rows.error());
  auto offsets = buffer(1);
  if (!offsets.ok()) return as<MoeError>(offsets.error());
  auto slots = buffer(2);
  if (!slots.ok()) return as<MoeError>(slots.error());
  if (auto s = ops::launch(**plan, input.queue(), {&input, &indices_, &*rows, &*offsets, &*slots}); !s.ok())
    return as<MoeError>(s.error());
  return Dispatched(*this, std::move(rows.value()), std::move(offsets.value()), std::move(slots.value()));
}

Result<Dispatched, MoeError> RoutingPlan::adopt_dispatch(Tensor rows, Tensor offsets, Tensor slots) const {
  return adopt_reading(std::move(rows), std::move(offsets), std::move(slots), nullptr);
}

Result<Dispatched, MoeError> RoutingPlan::adopt_reading(Tensor rows, Tensor offsets, Tensor slots,
                                                        const std::vector<double>* indices_read) const {
  const std::int64_t tokens = this->tokens(), k = top_k(), n = tokens * k;
  if (is_quantized(rows.dtype()))
    return MoeError(ErrorKind::QuantizedDType, "rows", "f32, f16 or bf16", std::string(dtype_name(rows.dtype())));
  if (!is_float(rows.dtype()))
    return MoeError(ErrorKind::UnsupportedDType, "rows", "f32, f16 or bf16", std::string(dtype_name(rows.dtype())));
  if (rows.rank() != 2 || rows.dim(0) != n || rows.dim(1) < 1)
    return MoeError(ErrorKind::ShapeMismatch, "rows", fmt::format("[{}, hidden >= 1] (tokens x top_k rows)", n),
                    shape_to_string(rows.shape()));
  for (auto [t, name] : {std::pair{&offsets, "offsets"}, {&slots, "slots"}})
    if (t->dtype() != DType::U32)
      return MoeError(ErrorKind::UnsupportedDType, name, "u32", std::string(dtype_name(t->dtype())));
  if (offsets.shape() != Shape{experts_ + 1})
    return MoeError(ErrorKind::ShapeMismatch, "offsets", fmt::format("[{}] (experts + 1)", experts_ + 1),
                    shape_to_string(offsets.shape()));
  if (slots.shape() != indices_.shape())
    return MoeError(ErrorKind::ShapeMismatch, "slots",
                    shape_to_string(indices_.shape()) + " (the routing's [T, top_k])", shape_to_string(slots.shape()));
  for (auto [t, name] : {std::pair{&rows, "rows"}, {&offsets, "offsets"}, {&slots, "slots"}}) {
    if (t->device() != indices_.device())
      return MoeError(ErrorKind::DeviceMismatch, name, "the routing's device (" + indices_.device().to_string() + ")",
                      t->device().to_string());
    if (auto e = same_queue(*t, name, indices_, "the routing")) return *e;
    if (auto e = check_layout(*t, name)) return *e;
  }
  // The selection (unless the caller just read it) and the two index tensors on the host. Values below
  // 2^32 are exact in a double. create() checked the indices, but the tensor may have been written
  // since: index only what is in range.
  std::vector<double> selection;
  if (!indices_read) {
    auto read = read_back(indices_);
    if (!read.ok()) return read.error();
    if (auto e = index_beyond_experts(*read, experts_, k)) return *e;
    selection = std::move(read.value());
  }
  const std::vector<double>& chosen = indices_read ? *indices_read : selection;
  auto offsets_read = read_back(offsets);
  if (!offsets_read.ok()) return offsets_read.error();
  auto slots_read = read_back(slots);
  if (!slots_read.ok()) return slots_read.error();
  const std::vector<double>& begin = *offsets_read;
  const std::vector<double>& slot = *slots_read;
  // offsets must be the running sum of each expert's number of choices.
  std::vector<std::int64_t> expected(static_cast<std::size_t>(experts_) + 1, 0);
  for (double e : chosen) ++expected[static_cast<std::size_t>(e) + 1];
  for (std::size_t e = 0; e + 1 < expected.size(); ++e) expected[e + 1] += expected[e];
  for (std::size_t e = 0; e < expected.size(); ++e)
    if (begin[e] != static_cast<double>(expected[e]))
      return MoeError(ErrorKind::InvalidValue, "offsets",
                      fmt::format("{} at [{}] (the running count of the routing's choices)", expected[e], e),
                      fmt::format("{}", begin[e]));
  std::vector<bool> taken(static_cast<std::size_t>(n), false);
  for (std::size_t i = 0; i < slot.size(); ++i) {
    const auto e = static_cast<std::size_t>(chosen[i]);
    const double row = slot[i];
    const auto t = i / static_cast<std::size_t>(k), j = i % static_cast<std::size_t>(k);
    if (row < begin[e] || row >= begin[e + 1])
      return MoeError(ErrorKind::InvalidValue, "slots",
                      fmt::format("a row in [{}, {}) (expert {}'s) at [{}, {}]", begin[e], begin[e + 1], e, t, j),
                      fmt::format("{}", row));
    if (taken[static_cast<std::size_t>(row)])
      return MoeError(ErrorKind::InvalidValue, "slots", fmt::format("a row no other choice takes at [{}, {}]", t, j),
                      fmt::format("{}, taken before", row));
    taken[static_cast<std::size_t>(row)] = true;
  }
  return Dispatched(*this, std::move(rows), std::move(offsets), std::move(slots));
}

Result<Tensor, MoeError> Dispatched::combine(const Tensor& expert_output) const {
  return combine_impl(expert_output, nullptr);
}

Status<MoeError> Dispatched::combine_into(const Tensor& expert_output, const Tensor& out) const {
  auto r = combine_impl(expert_output, &out);
  if (!r.ok()) return r.error();
  return {};
}

Result<Tensor, MoeError> Dispatched::combine_impl(const Tensor& expert_output, const Tensor* into) const {
  contracts::CombineSignature sig{operand(expert_output), operand(slots_), operand(routing_.weights())};
  if (auto e = contracts::check_combine(sig)) return *e;
  if (auto e = check_layout(expert_output, "expert_output")) return *e;
  if (expert_output.shape()[1] != hidden())
    return MoeError(ErrorKind::ShapeMismatch, "expert_output",
                    fmt::format("[{}, {}] (the dispatched rows' shape)", rows_.shape()[0], hidden()),
                    shape_to_string(expert_output.shape()));
  if (auto e = same_queue(expert_output, "expert_output", slots_, "the routing")) return *e;
  if (auto e = same_queue(routing_.weights(), "weights", expert_output, "expert_output")) return *e;
  if (into) {
    const ops::NamedTensor inputs[] = {
        {&expert_output, "expert_output"}, {&slots_, "slots"}, {&routing_.weights(), "weights"}};
    if (auto e = ops::check_output(*into, "out", {tokens(), hidden()}, expert_output.dtype(), expert_output, inputs))
      return as<MoeError>(*e);
  }
  const Device& device = expert_output.device();
  const std::int64_t mode = ops::autotune_mode_word(true);
  const ops::PlanKey key = ops::PlanKeyBuilder("rudnn.combine")
                               .add(expert_output.dtype())
                               .add(routing_.weights().dtype())
                               .add(hidden())
                               .add(top_k())
                               .add(device)
                               .add(mode)
                               .add(ops::autotune_bucket(tokens(), mode))
                               .key();
  auto plan = ops::cached_plan(key, expert_output.queue(), ops::Tunable::Yes, mode != 0,
                               [&](compiler::ConfigProvider* provider) {
                                 compiler::CombineRequest request{sig, std::nullopt};
                                 request.provider = provider;
                                 return compiler::lower_combine(request, ops::target_for(device));
                               });
  if (!plan.ok()) return as<MoeError>(plan.error());
  auto out = ops::output_or(into, {tokens(), hidden()}, expert_output.dtype(), expert_output.queue());
  if (!out.ok()) return as<MoeError>(out.error());
  if (auto s = ops::launch(**plan, expert_output.queue(), {&expert_output, &slots_, &routing_.weights(), &*out});
      !s.ok())
    return as<MoeError>(s.error());
  return std::move(out.value());
}

namespace {

contracts::ExpertWeights weights_of(const SwiGluExperts& e) {
  return {operand(e.gate()), operand(e.up()), operand(e.down())};
}

// Rows per expert bucketed to a power of two: the tile (heuristic or tuned) depends on it. The same
// anchoring as autotune's (the smallest power of two ≥ the load), so one tuned tile serves the bucket.
std::int64_t load_bucket(std::int64_t rows, std::int64_t experts) {
  const std::int64_t per = (rows + experts - 1) / std::max<std::int64_t>(experts, 1);
  std::int64_t b = 1;
  while (b < per) b *= 2;
  return b;
}

// The experts' plan for `sig` (rows [n, H] on `device`) with the resolved strategy: lowered once per
// (dtype, dims, device, strategy, load bucket).
Result<std::shared_ptr<const ops::Plan>, MoeError> experts_plan(const SwiGluExperts& e,
                                                                const contracts::ExpertsSignature& sig,
                                                                contracts::ExpertsStrategy resolved,
                                                                const Device& device, const Queue& queue) {
  const std::int64_t bucket = load_bucket(sig.rows.shape[0], e.experts());
  const std::int64_t mode = ops::autotune_mode_word(true);
  const ops::PlanKey key = ops::PlanKeyBuilder("rudnn.swiglu_experts")
                               .add(e.dtype())
                               .add(e.experts())
                               .add(e.inter())
                               .add(e.hidden())
                               .add(device)
                               .add(resolved == contracts::ExpertsStrategy::TensorCore)
                               .add(bucket)
                               .add(mode)
                               .key();
  auto plan = ops::cached_plan(key, queue, ops::Tunable::Yes, mode != 0, [&](compiler::ConfigProvider* provider) {
    return compiler::lower_experts(compiler::ExpertsRequest{sig, resolved, std::nullopt, bucket, provider},
                                   ops::target_for(device));
  });
  if (!plan.ok()) return as<MoeError>(plan.error());
  return std::move(plan.value());
}

// The temporaries of the experts over `n` dispatched rows of `e` with `strategy` on `queue`: the
// plan's workspace layout for those shapes (the plan is made, as the call would make it).
Result<std::size_t, MoeError> experts_workspace_bytes(const SwiGluExperts& e, std::int64_t n, GroupedStrategy strategy,
                                                      const Queue& queue) {
  const Device& device = queue.device();
  const Shape rows_shape{n, e.hidden()}, offsets_shape{e.experts() + 1}, out_shape{n, e.hidden()};
  contracts::ExpertsSignature sig{weights_of(e),
                                  {rows_shape, e.dtype(), ops::device_id(device)},
                                  {offsets_shape, DType::U32, ops::device_id(device)}};
  if (auto err = contracts::check_experts(sig)) return *err;
  auto chosen = contracts::resolve_experts_strategy(to_contract(strategy), sig.weights, ops::target_for(device).arch);
  if (!chosen.ok()) return chosen.error();
  auto plan = experts_plan(e, sig, chosen.value(), device, queue);
  if (!plan.ok()) return plan.error();
  auto bytes = ops::workspace_bytes(**plan, {{nullptr, &rows_shape},
                                             {nullptr, &offsets_shape},
                                             {e.gate().data(), &e.gate().shape()},
                                             {e.up().data(), &e.up().shape()},
                                             {e.down().data(), &e.down().shape()},
                                             {nullptr, &out_shape}});
  if (!bytes.ok()) return as<MoeError>(bytes.error());
  return *bytes;
}

}  // namespace

Result<SwiGluExperts, MoeError> SwiGluExperts::create(Tensor gate, Tensor up, Tensor down) {
  contracts::ExpertWeights w{operand(gate), operand(up), operand(down)};
  if (auto e = contracts::check_expert_weights(w)) return *e;
  for (auto [t, name] : {std::pair{&gate, "gate"}, {&up, "up"}, {&down, "down"}})
    if (auto e = check_layout(*t, name)) return *e;
  return SwiGluExperts(std::move(gate), std::move(up), std::move(down));
}

Result<Tensor, MoeError> SwiGluExperts::forward_dispatched(const Dispatched& dispatched) const {
  return forward_dispatched_with_strategy(dispatched, GroupedStrategy::Scalar);
}

Result<Tensor, MoeError> SwiGluExperts::forward_dispatched_with_strategy(const Dispatched& dispatched,
                                                                         GroupedStrategy strategy) const {
  return experts_impl(dispatched, strategy, nullptr);
}

Status<MoeError> SwiGluExperts::forward_dispatched_into(const Dispatched& dispatched, GroupedStrategy strategy,
                                                        const Tensor& out) const {
  auto r = experts_impl(dispatched, strategy, &out);
  if (!r.ok()) return r.error();
  return {};
}

Result<std::size_t, MoeError> SwiGluExperts::workspace_bytes(const Dispatched& dispatched,
                                                             GroupedStrategy strategy) const {
  std::size_t bytes = 0;
  auto r = experts_impl(dispatched, strategy, nullptr, nullptr, &bytes);
  if (!r.ok()) return r.error();
  return bytes;
}

Status<MoeError> SwiGluExperts::forward_dispatched_into(const Dispatched& dispatched, GroupedStrategy strategy,
                                                        const Tensor& out, const Tensor& workspace) const {
  auto r = experts_impl(dispatched, strategy, &out, &workspace);
  if (!r.ok()) return r.error();
  return {};
}

Result<Tensor, MoeError> SwiGluExperts::experts_impl(const Dispatched& dispatched, GroupedStrategy strategy,
                                                     const Tensor* into, const Tensor* workspace,
                                                     std::size_t* bytes_needed) const {
  const Tensor& rows = dispatched.rows();
  contracts::ExpertsSignature sig{weights_of(*this), operand(rows), operand(dispatched.expert_offsets())};
  if (auto e = contracts::check_experts(sig)) return *e;
  if (auto e = same_queue(rows, "dispatched", gate_, "the expert weights")) return *e;
  const Device& device = rows.device();
  // TensorCore that this device or these weights cannot serve is the caller's error; Auto then
  // takes Scalar (and only then).
  auto chosen = contracts::resolve_experts_strategy(to_contract(strategy), sig.weights, ops::target_for(device).arch);
  if (!chosen.ok()) return chosen.error();
  const contracts::ExpertsStrategy resolved = chosen.value();
  const std::int64_t n = rows.shape()[0];
  // The slots and the routing weights count as inputs too: the combine reads them after the experts.
  const ops::NamedTensor others[] = {{&rows, "dispatched"},
                                     {&dispatched.expert_offsets(), "dispatched"},
                                     {&dispatched.slots(), "dispatched"},
                                     {&dispatched.routing().weights(), "dispatched"},
                                     {&gate_, "gate"},
                                     {&up_, "up"},
                                     {&down_, "down"},
                                     {into, "out"}};
  if (into)
    if (auto e = ops::check_output(*into, "out", {n, hidden()}, dtype(), rows, std::span(others, 7)))
      return as<MoeError>(*e);
  if (workspace)
    if (auto e = ops::check_workspace(*workspace, rows, others)) return as<MoeError>(*e);
  auto plan = experts_plan(*this, sig, resolved, device, rows.queue());
  if (!plan.ok()) return plan.error();
  const Tensor& offsets = dispatched.expert_offsets();
  if (bytes_needed) {  // the size query: nothing runs (the layout of the plan just made)
    auto bytes = experts_workspace_bytes(*this, n, strategy, rows.queue());
    if (!bytes.ok()) return bytes.error();
    *bytes_needed = *bytes;
    return rows;  // the caller reads *bytes_needed
  }
  auto out = ops::output_or(into, {n, hidden()}, dtype(), rows.queue());
  if (!out.ok()) return as<MoeError>(out.error());
  const auto launched = workspace ? ops::launch_in_workspace(**plan, rows.queue(),
                                                             {&rows, &offsets, &gate_, &up_, &down_, &*out}, *workspace)
                                  : ops::launch(**plan, rows.queue(), {&rows, &offsets, &gate_, &up_, &down_, &*out});
  if (!launched.ok()) return as<MoeError>(launched.error());
  return std::move(out.value());
}

std::optional<MoeError> SwiGluExperts::check_forward(const Tensor& input, const Tensor& logits,
                                                     const Tensor* out) const {
  if (is_float(input.dtype()) && input.dtype() != dtype())
    return MoeError(ErrorKind::UnsupportedDType, "input", fmt::format("{} (the experts' dtype)", dtype_name(dtype())),
                    std::string(dtype_name(input.dtype())));
  if (input.shape().size() == 2 && input.shape()[1] != hidden())
    return MoeError(ErrorKind::ShapeMismatch, "input", fmt::format("[tokens, {}] (hidden of the experts)", hidden()),
                    shape_to_string(input.shape()));
  if (logits.shape().size() == 2 && logits.shape()[1] != experts())
    return MoeError(ErrorKind::ShapeMismatch, "logits", fmt::format("[tokens, {}] (the experts)", experts()),
                    shape_to_string(logits.shape()));
  if (input.shape().size() == 2 && logits.shape().size() == 2 && input.shape()[0] != logits.shape()[0])
    return MoeError(ErrorKind::ShapeMismatch, "logits",
                    fmt::format("[{}, experts] (the tokens of input)", input.shape()[0]),
                    shape_to_string(logits.shape()));
  if (input.device() != gate_.device())
    return MoeError(ErrorKind::DeviceMismatch, "input", "the experts' device (" + gate_.device().to_string() + ")",
                    input.device().to_string());
  if (logits.device() != gate_.device())
    return MoeError(ErrorKind::DeviceMismatch, "logits", "the experts' device (" + gate_.device().to_string() + ")",
                    logits.device().to_string());
  if (auto e = same_queue(input, "input", logits, "logits")) return e;
  // The experts run on the input's queue: a mismatch found after routing and dispatch had run
  // would have compiled and launched three kernels for a call that must write nothing.
  if (auto e = same_queue(input, "input", gate_, "the expert weights")) return e;
  for (auto [t, name] : {std::pair{&input, "input"}, {&logits, "logits"}})
    if (auto e = check_layout(*t, name)) return e;
  if (out) {
    const ops::NamedTensor inputs[] = {
        {&input, "input"}, {&logits, "logits"}, {&gate_, "gate"}, {&up_, "up"}, {&down_, "down"}};
    if (auto e = ops::check_output(*out, "out", input.shape(), dtype(), input, inputs)) return as<MoeError>(*e);
  }
  return std::nullopt;
}

namespace {

// Dispatch, experts and combine after routing; every check already passed.
Result<Tensor, MoeError> finish_forward(const SwiGluExperts& experts, const RoutingPlan& routing, const Tensor& input,
                                        GroupedStrategy strategy, const Tensor* into = nullptr) {
  auto dispatched = routing.dispatch(input);
  if (!dispatched.ok()) return dispatched.error();
  auto rows = experts.forward_dispatched_with_strategy(*dispatched, strategy);
  if (!rows.ok()) return rows.error();
  if (!into) return dispatched->combine(*rows);
  if (auto st = dispatched->combine_into(*rows, *into); !st.ok()) return st.error();
  return *into;
}

}  // namespace

Result<Tensor, MoeError> SwiGluExperts::forward(const Tensor& input, const Tensor& logits,
                                                RoutingOptions options) const {
  return forward_impl(input, logits, options, nullptr);
}

Status<MoeError> SwiGluExperts::forward_into(const Tensor& input, const Tensor& logits, RoutingOptions options,
                                             const Tensor& out) const {
  auto r = forward_impl(input, logits, options, &out);
  if (!r.ok()) return r.error();
  return {};
}

Result<Tensor, MoeError> SwiGluExperts::forward_impl(const Tensor& input, const Tensor& logits, RoutingOptions options,
                                                     const Tensor* into) const {
  // Every contract first (routing, then the pairing with the experts), so a bad call writes nothing.
  contracts::RouteSignature route_sig{operand(logits), options.top_k, options.renormalize};
  if (auto e = contracts::check_route(route_sig)) return *e;
  contracts::DispatchSignature dispatch_sig{
      operand(input), {{logits.shape()[0], options.top_k}, DType::U32, operand(logits).device}, logits.shape()[1]};
  if (auto e = contracts::check_dispatch(dispatch_sig)) return *e;
  if (auto e = check_forward(input, logits, into)) return *e;
  auto routing = route(logits, options);
  if (!routing.ok()) return routing.error();
  return finish_forward(*this, *routing, input, GroupedStrategy::Scalar, into);
}

namespace {

// A whole-layer workspace: its regions' offsets, in order, each 256-byte aligned.
struct LayerLayout {
  std::size_t indices = 0, weights = 0, rows = 0, offsets = 0, slots = 0, expert_rows = 0, experts = 0, bytes = 0;
};

LayerLayout layer_layout(const SwiGluExperts& e, std::int64_t tokens, std::int64_t top_k, DType weights_dtype,
                         std::size_t experts_bytes) {
  constexpr std::size_t kAlign = 256;
  const auto n = static_cast<std::size_t>(tokens * top_k), h = static_cast<std::size_t>(e.hidden());
  LayerLayout l;
  std::size_t at = 0;
  auto take = [&](std::size_t& region, std::size_t bytes) {
    region = at;
    at += (bytes + kAlign - 1) / kAlign * kAlign;
  };
  take(l.indices, n * 4);
  take(l.weights, n * dtype_size(weights_dtype));
  take(l.rows, n * h * dtype_size(e.dtype()));
  take(l.offsets, static_cast<std::size_t>(e.experts() + 1) * 4);
  take(l.slots, n * 4);
  take(l.expert_rows, n * h * dtype_size(e.dtype()));
  take(l.experts, experts_bytes);
  l.bytes = at;
  return l;
}

// The layer's checked bytes: the experts' temporaries for T·top_k rows, then the layout.
Result<LayerLayout, MoeError> layer_of(const SwiGluExperts& e, const Tensor& logits, std::int64_t top_k,
                                       GroupedStrategy strategy) {
  const std::int64_t tokens = logits.shape()[0];
  auto experts = experts_workspace_bytes(e, tokens * top_k, strategy, logits.queue());
  if (!experts.ok()) return experts.error();
  return layer_layout(e, tokens, top_k, logits.dtype(), *experts);
}

// Route (by `route`, into the workspace's indices and weights), dispatch, the experts and combine,
// every intermediate a view of `workspace` at `l`'s offsets. The calls' checks have all passed.
template <class Route>
Status<MoeError> run_layer(const SwiGluExperts& e, const Tensor& input, const Tensor& logits, std::int64_t top_k,
                           GroupedStrategy strategy, const Tensor& out, const Tensor& workspace, const LayerLayout& l,
                           Route route) {
  const std::int64_t tokens = logits.shape()[0], n = tokens * top_k;
  auto* base = static_cast<std::byte*>(workspace.data());
  const Queue& queue = workspace.queue();
  auto view = [&](std::size_t offset, const Shape& shape, DType dtype) {
    return Tensor::view(base + offset, shape, {}, dtype, queue);
  };
  auto indices = view(l.indices, {tokens, top_k}, DType::U32);
  auto weights = view(l.weights, {tokens, top_k}, logits.dtype());
  auto rows = view(l.rows, {n, e.hidden()}, e.dtype());
  auto offsets = view(l.offsets, {e.experts() + 1}, DType::U32);
  auto slots = view(l.slots, {tokens, top_k}, DType::U32);
  auto expert_rows = view(l.expert_rows, {n, e.hidden()}, e.dtype());
  auto temporaries = view(l.experts, {static_cast<std::int64_t>(l.bytes - l.experts)}, DType::U8);
  for (const auto* v : {&indices, &weights, &rows, &offsets, &slots, &expert_rows, &temporaries})
    if (!v->ok()) return as<MoeError>(v->error());
  auto routing = route(*indices, *weights);
  if (!routing.ok()) return routing.error();
  auto dispatched = routing->dispatch_into(input, *rows, *offsets, *slots);
  if (!dispatched.ok()) return dispatched.error();
  if (auto st = e.forward_dispatched_into(*dispatched, strategy, *expert_rows, *temporaries); !st.ok())
    return st.error();
  return dispatched->combine_into(*expert_rows, out);
}

}  // namespace

namespace {

// The checks of a whole-layer workspace call after the routing's contract and the pairing with the
// experts (check_forward, with `out`): bias against `out`, the strategy (resolved with the experts'
// plan, before the workspace, as the allocating call), the workspace's placement, alignment and
// size. The workspace's layout.
Result<LayerLayout, MoeError> check_layer_workspace(const SwiGluExperts& experts, const Tensor& input,
                                                    const Tensor& logits, const Tensor* bias, std::int64_t top_k,
                                                    GroupedStrategy strategy, const Tensor& out,
                                                    const Tensor& workspace) {
  const ops::NamedTensor others[] = {
      {&input, "input"},         {&logits, "logits"},   {bias, "bias"},           {&out, "out"},
      {&experts.gate(), "gate"}, {&experts.up(), "up"}, {&experts.down(), "down"}};
  if (bias) {
    const ops::NamedTensor outs[] = {{&out, "out"}};
    if (auto e = ops::check_disjoint(outs, std::span(others + 2, 1))) return as<MoeError>(*e);
  }
  auto layout = layer_of(experts, logits, top_k, strategy);
  if (!layout.ok()) return layout.error();
  if (auto e = ops::check_workspace(workspace, input, others)) return as<MoeError>(*e);
  if (reinterpret_cast<std::uintptr_t>(workspace.data()) % Tensor::kViewAlignment != 0)
    return MoeError(ErrorKind::InvalidValue, "workspace",
                    fmt::format("{}-byte aligned storage", Tensor::kViewAlignment),
                    fmt::format("address {}", workspace.data()));
  if (workspace.nbytes() < layout->bytes)
    return MoeError(ErrorKind::InvalidValue, "workspace",
                    fmt::format("at least {} bytes (layer_workspace_bytes)", layout->bytes),
                    fmt::format("{} bytes", workspace.nbytes()));
  return layout;
}

// The pairing lines of a layer call, as forward's (the dispatch of T·top_k rows of `input`).
std::optional<MoeError> check_layer_dispatch(const Tensor& input, const Tensor& logits, std::int64_t top_k) {
  contracts::DispatchSignature sig{
      operand(input), {{logits.shape()[0], top_k}, DType::U32, operand(logits).device}, logits.shape()[1]};
  return contracts::check_dispatch(sig);
}

}  // namespace

Result<std::size_t, MoeError> SwiGluExperts::layer_workspace_bytes(const Tensor& input, const Tensor& logits,
                                                                   std::int64_t top_k, GroupedStrategy strategy) const {
  // The routing's lines first (the rank of the logits, top_k), as the calls check them.
  if (auto e = contracts::check_route({operand(logits), top_k, false})) return *e;
  if (auto e = check_layer_dispatch(input, logits, top_k)) return *e;
  if (auto e = check_forward(input, logits)) return *e;
  auto layout = layer_of(*this, logits, top_k, strategy);
  if (!layout.ok()) return layout.error();
  return layout->bytes;
}

Status<MoeError> SwiGluExperts::forward_into(const Tensor& input, const Tensor& logits, RoutingOptions options,
                                             GroupedStrategy strategy, const Tensor& out,
                                             const Tensor& workspace) const {
  if (auto e = contracts::check_route({operand(logits), options.top_k, options.renormalize})) return *e;
  if (auto e = check_layer_dispatch(input, logits, options.top_k)) return *e;
  if (auto e = check_forward(input, logits, &out)) return *e;
  auto layout = check_layer_workspace(*this, input, logits, nullptr, options.top_k, strategy, out, workspace);
  if (!layout.ok()) return layout.error();
  return run_layer(
      *this, input, logits, options.top_k, strategy, out, workspace, *layout,
      [&](const Tensor& indices, const Tensor& weights) { return route_into(logits, options, indices, weights); });
}

Status<MoeError> SwiGluExperts::forward_sigmoid_grouped_into(const Tensor& input, const Tensor& logits,
                                                             const std::optional<Tensor>& bias,
                                                             GroupRoutingOptions options, GroupedStrategy strategy,
                                                             const Tensor& out, const Tensor& workspace) const {
  if (auto e = contracts::check_route_sigmoid_grouped(group_route_signature(logits, bias, options))) return *e;
  if (auto e = check_layer_dispatch(input, logits, options.top_k)) return *e;
  if (auto e = check_forward(input, logits, &out)) return *e;
  auto layout =
      check_layer_workspace(*this, input, logits, bias ? &*bias : nullptr, options.top_k, strategy, out, workspace);
  if (!layout.ok()) return layout.error();
  return run_layer(*this, input, logits, options.top_k, strategy, out, workspace, *layout,
                   [&](const Tensor& indices, const Tensor& weights) {
                     return route_sigmoid_grouped_into(logits, bias, options, indices, weights);
                   });
}

Result<Tensor, MoeError> SwiGluExperts::forward_sigmoid_grouped(const Tensor& input, const Tensor& logits,
                                                                const std::optional<Tensor>& bias,
                                                                GroupRoutingOptions options,
                                                                GroupedStrategy strategy) const {
  return forward_sigmoid_grouped_impl(input, logits, bias, options, strategy, nullptr);
}

Status<MoeError> SwiGluExperts::forward_sigmoid_grouped_into(const Tensor& input, const Tensor& logits,
                                                             const std::optional<Tensor>& bias,
                                                             GroupRoutingOptions options, GroupedStrategy strategy,
                                                             const Tensor& out) const {
  auto r = forward_sigmoid_grouped_impl(input, logits, bias, options, strategy, &out);
  if (!r.ok()) return r.error();
  return {};
}

Result<Tensor, MoeError> SwiGluExperts::forward_sigmoid_grouped_impl(const Tensor& input, const Tensor& logits,
                                                                     const std::optional<Tensor>& bias,
                                                                     GroupRoutingOptions options,
                                                                     GroupedStrategy strategy,
                                                                     const Tensor* into) const {
  if (auto e = contracts::check_route_sigmoid_grouped(group_route_signature(logits, bias, options))) return *e;
  contracts::DispatchSignature dispatch_sig{
      operand(input), {{logits.shape()[0], options.top_k}, DType::U32, operand(logits).device}, logits.shape()[1]};
  if (auto e = contracts::check_dispatch(dispatch_sig)) return *e;
  if (auto e = check_forward(input, logits, into)) return *e;
  if (into && bias) {
    const ops::NamedTensor out[] = {{into, "out"}}, others[] = {{&*bias, "bias"}};
    if (auto e = ops::check_disjoint(out, others)) return as<MoeError>(*e);
  }
  if (strategy == GroupedStrategy::TensorCore)
    if (auto e = contracts::check_tensor_core_experts(weights_of(*this), ops::target_for(gate_.device()).arch))
      return *e;
  auto routing = route_sigmoid_grouped(logits, bias, options);
  if (!routing.ok()) return routing.error();
  return finish_forward(*this, *routing, input, strategy, into);
}

}  // namespace rudnn::moe
