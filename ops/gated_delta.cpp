// The public gated delta entries: contract check (plus the chunk's shared-memory bound against the
// device's real limit) → plan cache → (cold) compiler → one launch.
#include "rudnn/gated_delta.h"

#include "contracts/arch.h"

#include <bit>

#include "contracts/gated_delta.h"
#include "log.h"
#include "plan_cache.h"

namespace rudnn::gated_delta {

namespace {

// Plan-key word 0: distinct from the normalization (0..2) and MoE (100..) keys.
constexpr std::int64_t kGatedDeltaKey = 200;

int device_id(const Device& d) { return d.kind() == DeviceKind::Host ? -1 : d.ordinal(); }
contracts::GatedDeltaOperand operand(const Tensor& t) { return {t.shape(), t.dtype(), device_id(t.device())}; }

Result<GatedDeltaOutput, GatedDeltaError> run(const GatedDeltaInput& in, std::int64_t chunk) {
  contracts::GatedDeltaSignature sig{operand(in.query), operand(in.key), operand(in.value), operand(in.beta),
                                     operand(in.log_decay), std::nullopt, in.query_scale, chunk};
  if (in.initial_state) sig.initial_state = operand(*in.initial_state);
  if (auto e = contracts::check_gated_delta(sig)) return *e;
  const Device& device = in.query.device();
  const std::int64_t b = in.query.dim(0), h = in.query.dim(1), t = in.query.dim(2), k = in.query.dim(3),
                     v = in.value.dim(3);
  if (chunk > 0)
    if (auto e = contracts::check_chunk_shared_memory(
            chunk, k, static_cast<std::int64_t>(device.info().shared_memory_per_block_optin),
            // f16/bf16 take the tensor-core kernel where the device has tensor cores
            in.query.dtype() != DType::F32 && contracts::has_mma_m16n8k16(ops::target_for(device).arch)))
      return *e;
  std::vector<std::pair<const Tensor*, const char*>> all = {
      {&in.query, "query"}, {&in.key, "key"}, {&in.value, "value"}, {&in.beta, "beta"}, {&in.log_decay, "log_decay"}};
  if (in.initial_state) all.push_back({&*in.initial_state, "initial_state"});
  for (auto [x, name] : all) {
    if (!x->is_contiguous())
      return GatedDeltaError(ErrorKind::ShapeMismatch, name, "a contiguous tensor",
                             "strides " + shape_to_string(x->strides()));
    if (!(x->queue() == in.query.queue()))
      return GatedDeltaError(ErrorKind::QueueMismatch, name, "the query's queue", "another queue of the same device");
  }

  ops::PlanKey key;
  key.words = {kGatedDeltaKey,
               static_cast<std::int64_t>(in.query.dtype()) | (static_cast<std::int64_t>(in.beta.dtype()) << 8),
               k,
               v,
               chunk,
               in.initial_state ? 1 : 0,
               static_cast<std::int64_t>(device.kind()),
               device.ordinal(),
               static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(in.query_scale)),
               0};
  auto& cache = ops::PlanCache::instance();
  std::shared_ptr<const ops::Plan> plan = cache.find(key);
  if (!plan) {
    auto lowered = compiler::lower_gated_delta({sig, std::nullopt}, ops::target_for(device));
    if (!lowered.ok()) return GatedDeltaError::from(lowered.error());
    auto built = ops::build_plan(device, lowered.value());
    if (!built.ok()) return GatedDeltaError::from(built.error());
    plan = built.value();
    const auto& first = plan->kernels.front().launch;
    runtime::log_info("plan {} on {}: {} ({}; heuristic)", plan->op_name, device.to_string(), first.entry,
                      first.config.to_string());
    cache.insert(key, plan);
  }

  auto output = Tensor::empty({b, h, t, v}, in.query.dtype(), in.query.queue());
  if (!output.ok()) return GatedDeltaError::from(output.error());
  auto state = Tensor::empty({b, h, k, v}, DType::F32, in.query.queue());
  if (!state.ok()) return GatedDeltaError::from(state.error());
  if (ops::poison_outputs()) {
    if (auto s = output->poison(); !s.ok()) return GatedDeltaError::from(s.error());
    if (auto s = state->poison(); !s.ok()) return GatedDeltaError::from(s.error());
  }
  std::array<ops::OperandView, 8> views{};
  for (auto [i, x] : {std::pair{0, &in.query}, {1, &in.key}, {2, &in.value}, {3, &in.beta}, {4, &in.log_decay}})
    views[static_cast<std::size_t>(i)] = {x->data(), &x->shape()};
  if (in.initial_state) views[5] = {in.initial_state->data(), &in.initial_state->shape()};
  views[6] = {output->data(), &output->shape()};
  views[7] = {state->data(), &state->shape()};
  if (auto s = ops::run_plan(*plan, in.query.queue(), views); !s.ok()) return GatedDeltaError::from(s.error());
  return GatedDeltaOutput{std::move(output.value()), std::move(state.value())};
}

}  // namespace

Result<GatedDeltaOutput, GatedDeltaError> chunk_gated_delta_rule(const GatedDeltaInput& input, std::int64_t chunk_size) {
  if (chunk_size <= 0)
    return GatedDeltaError(ErrorKind::InvalidValue, "chunk_size", "> 0", std::to_string(chunk_size));
  return run(input, chunk_size);
}

Result<GatedDeltaOutput, GatedDeltaError> gated_delta_rule(const GatedDeltaInput& input) { return run(input, 0); }

}  // namespace rudnn::gated_delta
