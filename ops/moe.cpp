// The public MoE routing entries: contract check → plan cache → (cold) compiler → launch.
#include "rudnn/moe.h"

#include <bit>
#include <limits>
#include <initializer_list>

#include <fmt/format.h>

#include "contracts/moe.h"
#include "log.h"
#include "plan_cache.h"
#include "tuned_plan.h"
#if RUDNN_HAS_AUTOTUNE
#include <random>

#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/tuner.h"
#endif

namespace rudnn::moe {

namespace {

int device_id(const Device& d) { return d.kind() == DeviceKind::Host ? -1 : d.ordinal(); }

contracts::MoeOperand operand(const Tensor& t) { return {t.shape(), t.dtype(), device_id(t.device())}; }

std::optional<MoeError> check_layout(const Tensor& t, const char* name) {
  if (!t.is_contiguous())
    return MoeError(ErrorKind::ShapeMismatch, name, "a contiguous tensor", "strides " + shape_to_string(t.strides()));
  return std::nullopt;
}

}  // namespace

// The one way the routing ops construct a plan (RoutingPlan's constructor is private).
struct RoutingPlanAccess {
  static RoutingPlan make(Tensor indices, Tensor weights, std::int64_t experts) {
    return RoutingPlan(std::move(indices), std::move(weights), experts);
  }
};

namespace {

// Plan-key word 0: distinct from every NormKind (0..2).
constexpr std::int64_t kRouteKey = 100;
constexpr std::int64_t kGroupedKey = 101;
constexpr std::int64_t kDispatchKey = 102;
constexpr std::int64_t kExpertsKey = 103;
constexpr std::int64_t kCombineKey = 104;

// The cached plan of `key`, or (cold) the one `lower(target)` describes, built and cached.
template <class Lower>
Result<std::shared_ptr<const ops::Plan>, MoeError> plan_for(const ops::PlanKey& key, const Device& device, Lower lower) {
  auto& cache = ops::PlanCache::instance();
  if (std::shared_ptr<const ops::Plan> plan = cache.find(key)) return plan;
  Result<compiler::LoweredOp, RuntimeError> lowered = lower(ops::target_for(device));
  if (!lowered.ok()) return MoeError::from(lowered.error());
  auto built = ops::build_plan(device, lowered.value());
  if (!built.ok()) return MoeError::from(built.error());
  const auto& first = built.value()->kernels.front().launch;
  runtime::log_info("plan {} on {}: {} ({}; heuristic)", built.value()->op_name, device.to_string(), first.entry,
                    first.config.to_string());
  cache.insert(key, built.value());
  return built.value();
}

// Fresh outputs on `queue`, poisoned when the tests ask for it.
Result<Tensor, MoeError> output(const Shape& shape, DType dtype, const Queue& queue) {
  auto t = Tensor::empty(shape, dtype, queue);
  if (!t.ok()) return MoeError::from(t.error());
  if (ops::poison_outputs())
    if (auto s = t->poison(); !s.ok()) return MoeError::from(s.error());
  return std::move(t.value());
}

Status<MoeError> launch(const ops::Plan& plan, const Queue& queue, std::initializer_list<const Tensor*> slots) {
  std::array<ops::OperandView, 8> views{};
  std::size_t n = 0;
  for (const Tensor* t : slots) views[n++] = {t->data(), &t->shape()};
  if (auto s = ops::run_plan(plan, queue, std::span(views.data(), n)); !s.ok()) return MoeError::from(s.error());
  return {};
}

std::optional<MoeError> same_queue(const Tensor& t, const char* name, const Tensor& ref, const char* ref_name) {
  if (t.device() == ref.device() && !(t.queue() == ref.queue()))
    return MoeError(ErrorKind::QueueMismatch, name, std::string("the queue of ") + ref_name,
                    "another queue of the same device");
  return std::nullopt;
}

Result<RoutingPlan, MoeError> run(bool grouped, const contracts::GroupRouteSignature& sig, const Tensor& logits,
                                  const Tensor* bias) {
  const Device& device = logits.device();
  ops::PlanKey key;
  if (grouped) {
    key.words = {kGroupedKey,
                 static_cast<std::int64_t>(logits.dtype()),
                 logits.shape()[1],
                 sig.top_k | (sig.groups << 8) | (sig.selected_groups << 16),
                 (sig.bias ? 1 : 0) | (sig.group_top_two ? 2 : 0) | (sig.renormalize ? 4 : 0),
                 static_cast<std::int64_t>(device.kind()),
                 device.ordinal(),
                 static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(static_cast<float>(sig.scale))),
                 0,
                 0};
  } else {
    key.words = {kRouteKey, static_cast<std::int64_t>(logits.dtype()), logits.shape()[1], sig.top_k,
                 sig.renormalize ? 1 : 0, static_cast<std::int64_t>(device.kind()), device.ordinal(), 0, 0, 0};
  }
  auto plan = plan_for(key, device, [&](const compiler::Target& target) {
    return compiler::lower_routing(compiler::RouteRequest{grouped, sig, std::nullopt}, target);
  });
  if (!plan.ok()) return plan.error();

  const Shape out_shape{logits.shape()[0], sig.top_k};
  auto indices = output(out_shape, DType::U32, logits.queue());
  if (!indices.ok()) return indices.error();
  auto weights = output(out_shape, logits.dtype(), logits.queue());
  if (!weights.ok()) return weights.error();
  if (out_shape[0] > 0) {
    std::array<ops::OperandView, 4> views{};
    std::size_t n = 0;
    views[n++] = {logits.data(), &logits.shape()};
    if (grouped) views[n++] = {bias ? bias->data() : nullptr, bias ? &bias->shape() : nullptr};
    views[n++] = {indices->data(), &indices->shape()};
    views[n++] = {weights->data(), &weights->shape()};
    if (auto s = ops::run_plan(*plan.value(), logits.queue(), std::span(views.data(), n)); !s.ok())
      return MoeError::from(s.error());
  }
  return RoutingPlanAccess::make(std::move(indices.value()), std::move(weights.value()), logits.shape()[1]);
}

}  // namespace


Result<RoutingPlan, MoeError> RoutingPlan::create(Tensor expert_indices, Tensor weights, std::int64_t experts) {
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
    return MoeError(ErrorKind::UnsupportedDType, "weights", "f32, f16 or bf16", std::string(dtype_name(weights.dtype())));
  if (weights.shape() != ix.shape())
    return MoeError(ErrorKind::ShapeMismatch, "weights", shape_to_string(ix.shape()) + " (the shape of expert_indices)",
                    shape_to_string(weights.shape()));
  if (weights.device() != ix.device())
    return MoeError(ErrorKind::DeviceMismatch, "weights", "the device of expert_indices (" + ix.device().to_string() + ")",
                    weights.device().to_string());
  if (auto e = same_queue(weights, "weights", ix, "expert_indices")) return *e;
  for (auto [t, name] : {std::pair{&ix, "expert_indices"}, {&weights, "weights"}})
    if (auto e = check_layout(*t, name)) return *e;
  auto host = to_host(ix);
  if (!host.ok()) return MoeError::from(host.error());
  const auto values = host->to_f64();
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] >= static_cast<double>(experts))
      return MoeError(ErrorKind::InvalidValue, "expert_indices", fmt::format("indices < {} (experts)", experts),
                      fmt::format("{} at [{}, {}]", values[i], i / static_cast<std::size_t>(ix.dim(1)),
                                  i % static_cast<std::size_t>(ix.dim(1))));
  return RoutingPlan(std::move(expert_indices), std::move(weights), experts);
}

Result<RoutingPlan, MoeError> route(const Tensor& logits, RoutingOptions options) {
  contracts::RouteSignature sig{operand(logits), options.top_k, options.renormalize};
  if (auto e = contracts::check_route(sig)) return *e;
  if (auto e = check_layout(logits, "logits")) return *e;
  contracts::GroupRouteSignature g;
  g.logits = sig.logits;
  g.top_k = options.top_k;
  g.renormalize = options.renormalize;
  return run(false, g, logits, nullptr);
}

Result<RoutingPlan, MoeError> route_sigmoid_grouped(const Tensor& logits, const std::optional<Tensor>& bias,
                                                    GroupRoutingOptions options) {
  contracts::GroupRouteSignature sig;
  sig.logits = operand(logits);
  if (bias) sig.bias = operand(*bias);
  sig.top_k = options.top_k;
  sig.groups = options.groups;
  sig.selected_groups = options.selected_groups;
  sig.group_top_two = options.group_top_two;
  sig.renormalize = options.renormalize;
  sig.scale = options.scale;
  if (auto e = contracts::check_route_sigmoid_grouped(sig)) return *e;
  if (auto e = check_layout(logits, "logits")) return *e;
  if (bias) {
    if (auto e = check_layout(*bias, "bias")) return *e;
    if (!(bias->queue() == logits.queue()))
      return MoeError(ErrorKind::QueueMismatch, "bias", "the logits' queue", "another queue of the same device");
  }
  return run(true, sig, logits, bias ? &*bias : nullptr);
}

// --- dispatch, experts, combine -------------------------------------------------------------

Result<Dispatched, MoeError> RoutingPlan::dispatch(const Tensor& input) const {
  contracts::DispatchSignature sig{operand(input), operand(indices_), experts_};
  if (auto e = contracts::check_dispatch(sig)) return *e;
  if (auto e = check_layout(input, "input")) return *e;
  if (auto e = same_queue(input, "input", indices_, "the routing")) return *e;
  const Device& device = input.device();
  const std::int64_t tokens = input.shape()[0], hidden = input.shape()[1], k = top_k();
  ops::PlanKey key;
  key.words = {kDispatchKey, static_cast<std::int64_t>(input.dtype()), hidden, k, experts_,
               static_cast<std::int64_t>(device.kind()), device.ordinal(), 0, 0, 0};
  auto plan = plan_for(key, device, [&](const compiler::Target& target) {
    return compiler::lower_dispatch(compiler::DispatchRequest{sig, std::nullopt}, target);
  });
  if (!plan.ok()) return plan.error();
  auto rows = output({tokens * k, hidden}, input.dtype(), input.queue());
  if (!rows.ok()) return rows.error();
  auto offsets = output({experts_ + 1}, DType::U32, input.queue());
  if (!offsets.ok()) return offsets.error();
  auto slots = output({tokens, k}, DType::U32, input.queue());
  if (!slots.ok()) return slots.error();
  if (auto s = launch(*plan.value(), input.queue(), {&input, &indices_, &*rows, &*offsets, &*slots}); !s.ok())
    return s.error();
  return Dispatched(*this, std::move(rows.value()), std::move(offsets.value()), std::move(slots.value()));
}

Result<Tensor, MoeError> Dispatched::combine(const Tensor& expert_output) const {
  contracts::CombineSignature sig{operand(expert_output), operand(slots_), operand(routing_.weights())};
  if (auto e = contracts::check_combine(sig)) return *e;
  if (auto e = check_layout(expert_output, "expert_output")) return *e;
  if (expert_output.shape()[1] != hidden())
    return MoeError(ErrorKind::ShapeMismatch, "expert_output",
                    fmt::format("[{}, {}] (the dispatched rows' shape)", rows_.shape()[0], hidden()),
                    shape_to_string(expert_output.shape()));
  if (auto e = same_queue(expert_output, "expert_output", slots_, "the routing")) return *e;
  if (auto e = same_queue(routing_.weights(), "weights", expert_output, "expert_output")) return *e;
  const Device& device = expert_output.device();
  ops::PlanKey key;
  key.words = {kCombineKey, static_cast<std::int64_t>(expert_output.dtype()),
               static_cast<std::int64_t>(routing_.weights().dtype()), hidden(), top_k(),
               static_cast<std::int64_t>(device.kind()), device.ordinal(), 0, 0, 0};
  auto plan = plan_for(key, device, [&](const compiler::Target& target) {
    return compiler::lower_combine(compiler::CombineRequest{sig, std::nullopt}, target);
  });
  if (!plan.ok()) return plan.error();
  auto out = output({tokens(), hidden()}, expert_output.dtype(), expert_output.queue());
  if (!out.ok()) return out.error();
  if (auto s = launch(*plan.value(), expert_output.queue(), {&expert_output, &slots_, &routing_.weights(), &*out});
      !s.ok())
    return s.error();
  return std::move(out.value());
}

namespace {

contracts::ExpertWeights weights_of(const SwiGluExperts& e) {
  return {operand(e.gate()), operand(e.up()), operand(e.down())};
}

contracts::ExpertsStrategy to_contract(GroupedStrategy s) {
  switch (s) {
    case GroupedStrategy::Scalar: return contracts::ExpertsStrategy::Scalar;
    case GroupedStrategy::Auto: return contracts::ExpertsStrategy::Auto;
    case GroupedStrategy::TensorCore: return contracts::ExpertsStrategy::TensorCore;
  }
  return contracts::ExpertsStrategy::Scalar;
}

// Rows per expert bucketed to a power of two: the tile (heuristic or tuned) depends on it. The same
// anchoring as autotune's (the smallest power of two ≥ the load), so one tuned tile serves the bucket.
std::int64_t load_bucket(std::int64_t rows, std::int64_t experts) {
  const std::int64_t per = (rows + experts - 1) / std::max<std::int64_t>(experts, 1);
  std::int64_t b = 1;
  while (b < per) b *= 2;
  return b;
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
  const Tensor& rows = dispatched.rows();
  contracts::ExpertsSignature sig{weights_of(*this), operand(rows), operand(dispatched.expert_offsets())};
  if (auto e = contracts::check_experts(sig)) return *e;
  if (auto e = same_queue(rows, "dispatched", gate_, "the expert weights")) return *e;
  const Device& device = rows.device();
  // TensorCore that this device or these weights cannot serve is the caller's error; Auto then
  // takes Scalar (and only then).
  const std::string arch = ops::target_for(device).arch;
  contracts::ExpertsStrategy resolved = to_contract(strategy);
  if (resolved != contracts::ExpertsStrategy::Scalar) {
    std::optional<MoeError> unsupported = contracts::check_tensor_core_experts(sig.weights, arch);
    if (unsupported && resolved == contracts::ExpertsStrategy::TensorCore) return *unsupported;
    resolved = unsupported ? contracts::ExpertsStrategy::Scalar : contracts::ExpertsStrategy::TensorCore;
  }
  const std::int64_t n = rows.shape()[0];
  const std::int64_t bucket = load_bucket(n, experts());
  // Word 9: the autotune mode (0: heuristic only), which changes where the tile comes from.
  std::int64_t mode_word = 0;
#if RUDNN_HAS_AUTOTUNE
  if (autotune::mode() != autotune::Mode::Off) mode_word = 1 + static_cast<std::int64_t>(autotune::mode());
#endif
  ops::PlanKey key;
  key.words = {kExpertsKey,
               static_cast<std::int64_t>(dtype()),
               experts(),
               inter(),
               hidden(),
               static_cast<std::int64_t>(device.kind()) | (static_cast<std::int64_t>(device.ordinal()) << 8),
               resolved == contracts::ExpertsStrategy::TensorCore ? 1 : 0,
               bucket,
               mode_word,
               0};
  auto& cache = ops::PlanCache::instance();
  std::shared_ptr<const ops::Plan> plan = cache.find(key);
  if (!plan) {
    auto made = ops::make_tuned_plan(device, mode_word != 0, [&](compiler::ConfigProvider* provider) {
      return compiler::lower_experts(compiler::ExpertsRequest{sig, resolved, std::nullopt, bucket, provider},
                                     ops::target_for(device));
    });
    if (!made.ok()) return MoeError::from(made.error());
    plan = made.value();
    cache.insert(key, plan);
  }
  ops::note_choice(*plan);
  auto out = output({n, hidden()}, dtype(), rows.queue());
  if (!out.ok()) return out.error();
  if (auto s = launch(*plan, rows.queue(), {&rows, &dispatched.expert_offsets(), &gate_, &up_, &down_, &*out});
      !s.ok())
    return s.error();
  return std::move(out.value());
}

std::optional<MoeError> SwiGluExperts::check_forward(const Tensor& input, const Tensor& logits) const {
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
    return MoeError(ErrorKind::ShapeMismatch, "logits", fmt::format("[{}, experts] (the tokens of input)", input.shape()[0]),
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
  return std::nullopt;
}

namespace {

// Dispatch, experts and combine after routing; every check already passed.
Result<Tensor, MoeError> finish_forward(const SwiGluExperts& experts, const RoutingPlan& routing, const Tensor& input,
                                        GroupedStrategy strategy) {
  auto dispatched = routing.dispatch(input);
  if (!dispatched.ok()) return dispatched.error();
  auto rows = experts.forward_dispatched_with_strategy(*dispatched, strategy);
  if (!rows.ok()) return rows.error();
  return dispatched->combine(*rows);
}

}  // namespace

Result<Tensor, MoeError> SwiGluExperts::forward(const Tensor& input, const Tensor& logits,
                                                RoutingOptions options) const {
  // Every contract first (routing, then the pairing with the experts), so a bad call writes nothing.
  contracts::RouteSignature route_sig{operand(logits), options.top_k, options.renormalize};
  if (auto e = contracts::check_route(route_sig)) return *e;
  contracts::DispatchSignature dispatch_sig{operand(input), {{logits.shape()[0], options.top_k}, DType::U32,
                                                            operand(logits).device}, logits.shape()[1]};
  if (auto e = contracts::check_dispatch(dispatch_sig)) return *e;
  if (auto e = check_forward(input, logits)) return *e;
  auto routing = route(logits, options);
  if (!routing.ok()) return routing.error();
  return finish_forward(*this, *routing, input, GroupedStrategy::Scalar);
}

Result<Tensor, MoeError> SwiGluExperts::forward_sigmoid_grouped(const Tensor& input, const Tensor& logits,
                                                                const std::optional<Tensor>& bias,
                                                                GroupRoutingOptions options,
                                                                GroupedStrategy strategy) const {
  contracts::GroupRouteSignature route_sig;
  route_sig.logits = operand(logits);
  if (bias) route_sig.bias = operand(*bias);
  route_sig.top_k = options.top_k;
  route_sig.groups = options.groups;
  route_sig.selected_groups = options.selected_groups;
  route_sig.group_top_two = options.group_top_two;
  route_sig.renormalize = options.renormalize;
  route_sig.scale = options.scale;
  if (auto e = contracts::check_route_sigmoid_grouped(route_sig)) return *e;
  contracts::DispatchSignature dispatch_sig{operand(input), {{logits.shape()[0], options.top_k}, DType::U32,
                                                            operand(logits).device}, logits.shape()[1]};
  if (auto e = contracts::check_dispatch(dispatch_sig)) return *e;
  if (auto e = check_forward(input, logits)) return *e;
  if (strategy == GroupedStrategy::TensorCore)
    if (auto e = contracts::check_tensor_core_experts(weights_of(*this), ops::target_for(gate_.device()).arch))
      return *e;
  auto routing = route_sigmoid_grouped(logits, bias, options);
  if (!routing.ok()) return routing.error();
  return finish_forward(*this, *routing, input, strategy);
}

#if RUDNN_HAS_AUTOTUNE
namespace {

// How autotune builds and times an experts candidate: the key's weights shape and strategy, a
// uniform load of `bucket` rows per expert (the largest the bucket serves), random rows in `sets`
// copies and one set of random weights (they dominate the bytes), plans from the same build_plan
// as real calls.
class ExpertsTuningProblem final : public ops::PlanTuningProblem {
 public:
  static Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                            const autotune::TuningKey& key) {
    if (key.op != "rudnn.swiglu_experts" || key.dtypes.size() != 1 || key.static_dims.size() != 4 ||
        key.buckets.size() != 1)
      return RuntimeError(ErrorKind::InvalidValue, "key", "rudnn.swiglu_experts dtype [E, I, H, tensor_core] [rows]",
                          key.to_string());
    const std::int64_t e = key.static_dims[0], i = key.static_dims[1], h = key.static_dims[2];
    const DType d = key.dtypes[0];
    const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
    contracts::ExpertsSignature sig;
    sig.weights = {{{e, i, h}, d, id}, {{e, i, h}, d, id}, {{e, h, i}, d, id}};
    sig.rows = {{e * key.buckets[0], h}, d, id};
    sig.offsets = {{e + 1}, DType::U32, id};
    if (auto err = contracts::check_experts(sig))
      return RuntimeError(err->kind(), err->argument(), err->expected(), err->actual(), err->detail());
    auto queue = Queue::create(device);
    if (!queue.ok()) return queue.error();
    return std::unique_ptr<autotune::TuningProblem>(
        new ExpertsTuningProblem(device, queue.value(), sig, key.static_dims[3] != 0, key.buckets[0]));
  }

  Result<compiler::LoweredOp, RuntimeError> lower(const compiler::KernelConfig& config) const override {
    const auto strategy = tensor_core_ ? contracts::ExpertsStrategy::TensorCore : contracts::ExpertsStrategy::Scalar;
    return compiler::lower_experts(compiler::ExpertsRequest{sig_, strategy, config, per_expert_}, target());
  }

  std::size_t input_bytes() const override {
    std::size_t bytes = static_cast<std::size_t>(element_count(sig_.rows.shape)) * dtype_size(sig_.rows.dtype);
    for (const auto* w : {&sig_.weights.gate, &sig_.weights.up, &sig_.weights.down})
      bytes += static_cast<std::size_t>(element_count(w->shape)) * dtype_size(w->dtype);
    return bytes;
  }

  Status<RuntimeError> make_input_sets(int sets) override {
    std::mt19937_64 rng(0x5eed);  // fixed: values do not change a GEMM's time
    auto random = [&](const contracts::MoeOperand& o, double a) {
      std::uniform_real_distribution<double> u(-a, a);
      return random_tensor("tuning operand", o.shape, o.dtype, [&] { return u(rng); });
    };
    const std::int64_t experts = sig_.weights.gate.shape[0];
    std::vector<double> offsets(static_cast<std::size_t>(experts + 1));
    for (std::int64_t e = 0; e <= experts; ++e) offsets[static_cast<std::size_t>(e)] = static_cast<double>(e * per_expert_);
    auto off = Tensor::upload(HostData::from_f64(sig_.offsets.shape, DType::U32, offsets), queue_);
    if (!off.ok()) return off.error();
    offsets_.emplace(std::move(off.value()));
    const double scale = 1.0 / std::sqrt(static_cast<double>(sig_.weights.gate.shape[2]));
    for (auto [w, slot] : {std::pair{&sig_.weights.gate, &gate_}, {&sig_.weights.up, &up_}, {&sig_.weights.down, &down_}}) {
      auto t = random(*w, scale);
      if (!t.ok()) return t.error();
      slot->emplace(std::move(t.value()));
    }
    for (int i = 0; i < sets; ++i) {
      auto r = random(sig_.rows, 1.0);
      if (!r.ok()) return r.error();
      rows_.push_back(std::move(r.value()));
    }
    auto out = Tensor::empty(sig_.rows.shape, sig_.rows.dtype, queue_);
    if (!out.ok()) return out.error();
    output_.emplace(std::move(out.value()));
    return queue_.synchronize();
  }

 private:
  // The expert kernels write only their output (and a call-scoped temporary).
  Status<RuntimeError> launch_plan(const ops::Plan& plan, int input_set) override {
    const Tensor& rows = rows_[static_cast<std::size_t>(input_set)];
    std::array<ops::OperandView, 6> views{};
    std::size_t n = 0;
    const Tensor* all[] = {&rows, &*offsets_, &*gate_, &*up_, &*down_, &*output_};
    for (const Tensor* t : all) views[n++] = {t->data(), &t->shape()};
    return ops::run_plan(plan, queue_, std::span(views.data(), n));
  }

  ExpertsTuningProblem(Device device, Queue queue, contracts::ExpertsSignature sig, bool tensor_core,
                       std::int64_t per_expert)
      : PlanTuningProblem(std::move(device), std::move(queue)),
        sig_(std::move(sig)),
        tensor_core_(tensor_core),
        per_expert_(per_expert) {}

  contracts::ExpertsSignature sig_;
  bool tensor_core_;
  std::int64_t per_expert_;
  std::vector<Tensor> rows_;
  std::optional<Tensor> offsets_, gate_, up_, down_, output_;
};

// Registered when librudnn.so (or any binary with these objects) loads.
const bool kExpertsTuningRegistered = [] {
  autotune::register_problem_factory(std::string(autotune::moe_experts_search_space()->family()),
                                     &ExpertsTuningProblem::make);
  return true;
}();

}  // namespace
#endif

}  // namespace rudnn::moe
