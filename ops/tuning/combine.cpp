// How autotune times a combine candidate: the bucket's tokens, random expert rows per input set,
// slots mapping each (token, choice) to its own row, random weights.
#if RUDNN_HAS_AUTOTUNE
#include "contracts/moe.h"
#include "rudnn/autotune/spaces/moe.h"
#include "tuning_problem.h"

namespace rudnn::ops {
namespace {

Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                    const autotune::TuningKey& key) {
  // dtypes {rows, weights}; static dims {H, top_k}; buckets {T}.
  if (key.op != "rudnn.combine" || key.static_dims.size() != 2 || key.buckets.size() != 1 || key.dtypes.size() != 2)
    return RuntimeError(ErrorKind::InvalidValue, "key", "rudnn.combine dtypes [H, top_k] [T]", key.to_string());
  const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
  const std::int64_t h = key.static_dims[0], k = key.static_dims[1], tokens = key.buckets[0];
  contracts::CombineSignature sig{
      {{tokens * k, h}, key.dtypes[0], id}, {{tokens, k}, DType::U32, id}, {{tokens, k}, key.dtypes[1], id}};
  if (auto e = contracts::check_combine(sig))
    return RuntimeError(e->kind(), e->argument(), e->expected(), e->actual(), e->detail());
  using Role = TuningSlot::Role;
  // Slots: expert_rows, slots, weights, out.
  std::vector<TuningSlot> slots = {{Role::PerSetInput, "expert_rows", sig.expert_rows.shape, sig.expert_rows.dtype, {}},
                                   {Role::Input, "slots", sig.slots.shape, DType::U32,
                                    [](std::mt19937_64&, std::int64_t i) { return static_cast<double>(i); }},
                                   {Role::Input, "weights", sig.weights.shape, sig.weights.dtype, {}},
                                   {Role::Output, "out", {tokens, h}, sig.expert_rows.dtype, {}}};
  return SlotTuningProblem::make(device, std::move(slots),
                                 [sig](const compiler::KernelConfig& config, const compiler::Target& target) {
                                   return compiler::lower_combine(compiler::CombineRequest{sig, config}, target);
                                 });
}

const bool kRegistered = register_tuning_problem(autotune::moe_combine_search_space()->family(), &make);

}  // namespace
}  // namespace rudnn::ops
#endif
