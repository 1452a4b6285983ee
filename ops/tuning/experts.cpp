// How autotune times an MoE experts candidate: the key's weights shape and strategy, a uniform load
// of `bucket` rows per expert (the largest the bucket serves), random rows per input set and one
// set of random weights (they dominate the bytes).
#if RUDNN_HAS_AUTOTUNE
#include <cmath>

#include "contracts/moe.h"
#include "rudnn/autotune/spaces/moe.h"
#include "tuning_problem.h"

namespace rudnn::ops {
namespace {

Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                    const autotune::TuningKey& key) {
  if (key.op != "rudnn.swiglu_experts" || key.dtypes.size() != 1 || key.static_dims.size() != 4 ||
      key.buckets.size() != 1)
    return RuntimeError(ErrorKind::InvalidValue, "key", "rudnn.swiglu_experts dtype [E, I, H, tensor_core] [rows]",
                        key.to_string());
  const std::int64_t e = key.static_dims[0], i = key.static_dims[1], h = key.static_dims[2], per = key.buckets[0];
  const DType d = key.dtypes[0];
  const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
  contracts::ExpertsSignature sig;
  sig.weights = {{{e, i, h}, d, id}, {{e, i, h}, d, id}, {{e, h, i}, d, id}};
  sig.rows = {{e * per, h}, d, id};
  sig.offsets = {{e + 1}, DType::U32, id};
  if (auto err = contracts::check_experts(sig))
    return RuntimeError(err->kind(), err->argument(), err->expected(), err->actual(), err->detail());
  const auto strategy =
      key.static_dims[3] != 0 ? contracts::ExpertsStrategy::TensorCore : contracts::ExpertsStrategy::Scalar;
  const double scale = 1.0 / std::sqrt(static_cast<double>(h));
  auto weight = [scale](std::mt19937_64& rng, std::int64_t) {
    return std::uniform_real_distribution<double>(-scale, scale)(rng);
  };
  using Role = TuningSlot::Role;
  // Slots: rows, offsets, gate, up, down, out.
  std::vector<TuningSlot> slots = {
      {Role::PerSetInput, "rows", sig.rows.shape, d, {}},
      {Role::Input, "offsets", sig.offsets.shape, DType::U32,
       [per](std::mt19937_64&, std::int64_t expert) { return static_cast<double>(expert * per); }},
      {Role::Input, "gate", sig.weights.gate.shape, d, weight},
      {Role::Input, "up", sig.weights.up.shape, d, weight},
      {Role::Input, "down", sig.weights.down.shape, d, weight},
      {Role::Output, "out", sig.rows.shape, d, {}}};
  return SlotTuningProblem::make(
      device, std::move(slots),
      [sig, strategy, per](const compiler::KernelConfig& config, const compiler::Target& target) {
        return compiler::lower_experts(compiler::ExpertsRequest{sig, strategy, config, per}, target);
      });
}

const bool kRegistered = register_tuning_problem(autotune::moe_experts_search_space()->family(), &make);

}  // namespace
}  // namespace rudnn::ops
#endif
