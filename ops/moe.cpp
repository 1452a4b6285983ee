// The public MoE routing entries: contract check → plan cache → (cold) compiler → launch.
#include "rudnn/moe.h"

#include <bit>

#include "contracts/moe.h"
#include "log.h"
#include "plan_cache.h"

namespace rudnn::moe {

namespace {

int device_id(const Device& d) { return d.kind() == DeviceKind::Host ? -1 : d.ordinal(); }

contracts::MoeOperand operand(const Tensor& t) { return {t.shape(), t.dtype(), device_id(t.device())}; }

std::optional<MoeError> check_layout(const Tensor& t, const char* name) {
  if (!t.is_contiguous())
    return MoeError(ErrorKind::ShapeMismatch, name, "a contiguous tensor", "strides " + shape_to_string(t.strides()));
  return std::nullopt;
}

// Plan-key word 0: distinct from every NormKind (0..2).
constexpr std::int64_t kRouteKey = 100;
constexpr std::int64_t kGroupedKey = 101;

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
  auto& cache = ops::PlanCache::instance();
  std::shared_ptr<const ops::Plan> plan = cache.find(key);
  if (!plan) {
    compiler::RouteRequest request{grouped, sig, std::nullopt};
    auto lowered = compiler::lower_routing(request, ops::target_for(device));
    if (!lowered.ok()) return MoeError::from(lowered.error());
    auto built = ops::build_plan(device, lowered.value());
    if (!built.ok()) return MoeError::from(built.error());
    plan = built.value();
    const auto& first = plan->kernels.front().launch;
    runtime::log_info("plan {} on {}: {} ({}; heuristic)", plan->op_name, device.to_string(), first.entry,
                      first.config.to_string());
    cache.insert(key, plan);
  }

  const Shape out_shape{logits.shape()[0], sig.top_k};
  auto indices = Tensor::empty(out_shape, DType::U32, logits.queue());
  if (!indices.ok()) return MoeError::from(indices.error());
  auto weights = Tensor::empty(out_shape, logits.dtype(), logits.queue());
  if (!weights.ok()) return MoeError::from(weights.error());
  if (ops::poison_outputs()) {
    if (auto s = indices->poison(); !s.ok()) return MoeError::from(s.error());
    if (auto s = weights->poison(); !s.ok()) return MoeError::from(s.error());
  }
  if (out_shape[0] > 0) {
    std::array<ops::OperandView, 4> views{};
    std::size_t n = 0;
    views[n++] = {logits.data(), &logits.shape()};
    if (grouped) views[n++] = {bias ? bias->data() : nullptr, bias ? &bias->shape() : nullptr};
    views[n++] = {indices->data(), &indices->shape()};
    views[n++] = {weights->data(), &weights->shape()};
    if (auto s = ops::run_plan(*plan, logits.queue(), std::span(views.data(), n)); !s.ok())
      return MoeError::from(s.error());
  }
  return RoutingPlan(std::move(indices.value()), std::move(weights.value()), logits.shape()[1]);
}

}  // namespace

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

}  // namespace rudnn::moe
