// How autotune times a dispatch candidate: the bucket's tokens, random rows per input set and one
// set of valid expert indices (uniform over the experts).
#if RUDNN_HAS_AUTOTUNE
#include "contracts/moe.h"
#include "rudnn/autotune/spaces/moe.h"
#include "tuning_problem.h"

namespace rudnn::ops {
namespace {

Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                    const autotune::TuningKey& key) {
  // static dims {H, top_k, experts}; buckets {T}.
  if (key.op != "rudnn.dispatch" || key.static_dims.size() != 3 || key.buckets.size() != 1 || key.dtypes.size() != 1)
    return RuntimeError(ErrorKind::InvalidValue, "key", "rudnn.dispatch dtype [H, top_k, experts] [T]",
                        key.to_string());
  const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
  const std::int64_t h = key.static_dims[0], k = key.static_dims[1], experts = key.static_dims[2],
                     tokens = key.buckets[0];
  contracts::DispatchSignature sig{{{tokens, h}, key.dtypes[0], id}, {{tokens, k}, DType::U32, id}, experts};
  if (auto e = contracts::check_dispatch(sig))
    return RuntimeError(e->kind(), e->argument(), e->expected(), e->actual(), e->detail());
  using Role = TuningSlot::Role;
  // Slots: input, indices, rows, offsets, slots.
  std::vector<TuningSlot> slots = {{Role::PerSetInput, "input", sig.input.shape, sig.input.dtype, {}},
                                   {Role::Input, "indices", sig.indices.shape, DType::U32,
                                    [experts](std::mt19937_64& rng, std::int64_t) {
                                      return static_cast<double>(rng() % static_cast<std::uint64_t>(experts));
                                    }},
                                   {Role::Output, "rows", {tokens * k, h}, sig.input.dtype, {}},
                                   {Role::Output, "offsets", {experts + 1}, DType::U32, {}},
                                   {Role::Output, "slots", {tokens, k}, DType::U32, {}}};
  return SlotTuningProblem::make(device, std::move(slots),
                                 [sig](const compiler::KernelConfig& config, const compiler::Target& target) {
                                   return compiler::lower_dispatch(compiler::DispatchRequest{sig, config}, target);
                                 });
}

const bool kRegistered = register_tuning_problem(autotune::moe_dispatch_search_space()->family(), &make);

}  // namespace
}  // namespace rudnn::ops
#endif
