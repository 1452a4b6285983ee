// How autotune times a gated delta candidate: the buckets' batch, heads and length, random q/k/v
// per input set with bounded decays and betas (log_decay in [-0.5, 0], beta in [0, 1], keys small),
// and an initial state when the key has one.
#if RUDNN_HAS_AUTOTUNE
#include "contracts/gated_delta.h"
#include "rudnn/autotune/spaces/gated_delta.h"
#include "tuning_problem.h"

namespace rudnn::ops {
namespace {

double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                    const autotune::TuningKey& key) {
  // dtypes {query, beta}; static dims {K, V, chunk_size, has_state}; buckets {B, H, T}.
  if (key.op != "rudnn.gated_delta" || key.static_dims.size() != 4 || key.buckets.size() != 3 || key.dtypes.size() != 2)
    return RuntimeError(ErrorKind::InvalidValue, "key",
                        "rudnn.gated_delta dtypes [K, V, chunk_size, has_state] [B, H, T]", key.to_string());
  const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
  const std::int64_t k = key.static_dims[0], v = key.static_dims[1], b = key.buckets[0], h = key.buckets[1],
                     t = key.buckets[2];
  const DType d = key.dtypes[0], gd = key.dtypes[1];
  contracts::GatedDeltaSignature sig;
  sig.query = {{b, h, t, k}, d, id};
  sig.key = {{b, h, t, k}, d, id};
  sig.value = {{b, h, t, v}, d, id};
  sig.beta = {{b, h, t}, gd, id};
  sig.log_decay = {{b, h, t}, gd, id};
  if (key.static_dims[3]) sig.initial_state = contracts::GatedDeltaOperand{{b, h, k, v}, DType::F32, id};
  sig.chunk_size = key.static_dims[2];
  if (auto e = contracts::check_gated_delta(sig))
    return RuntimeError(e->kind(), e->argument(), e->expected(), e->actual(), e->detail());
  using Role = TuningSlot::Role;
  auto small = [](std::mt19937_64& rng, std::int64_t) { return uniform(rng, -0.15, 0.15); };
  // Slots: query, key, value, beta, log_decay, initial_state (kept when absent), output, final_state.
  std::vector<TuningSlot> slots = {
      {Role::PerSetInput, "query", sig.query.shape, d, small},
      {Role::PerSetInput, "key", sig.key.shape, d, small},
      {Role::PerSetInput, "value", sig.value.shape, d, {}},
      {Role::PerSetInput, "beta", sig.beta.shape, gd,
       [](std::mt19937_64& rng, std::int64_t) { return uniform(rng, 0, 1); }},
      {Role::PerSetInput, "log_decay", sig.log_decay.shape, gd,
       [](std::mt19937_64& rng, std::int64_t) { return uniform(rng, -0.5, 0); }},
      sig.initial_state ? TuningSlot{Role::Input, "initial_state", sig.initial_state->shape, DType::F32, small}
                        : TuningSlot{Role::Absent, "initial_state", {}, DType::F32, {}},
      {Role::Output, "output", {b, h, t, v}, d, {}},
      {Role::Output, "final_state", {b, h, k, v}, DType::F32, {}}};
  return SlotTuningProblem::make(device, std::move(slots),
                                 [sig](const compiler::KernelConfig& config, const compiler::Target& target) {
                                   return compiler::lower_gated_delta(compiler::GatedDeltaRequest{sig, config}, target);
                                 });
}

const bool kRegistered = register_tuning_problem(autotune::gated_delta_search_space()->family(), &make);

}  // namespace
}  // namespace rudnn::ops
#endif
