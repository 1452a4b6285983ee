// How autotune times a normalization candidate: the key's signature with rows = the bucket (the
// largest size the bucket serves), random input and parameters per input set.
#if RUDNN_HAS_AUTOTUNE
#include <fmt/format.h>

#include "contracts/normalization.h"
#include "rudnn/autotune/spaces/normalization.h"
#include "tuning_problem.h"

namespace rudnn::ops {
namespace {

using contracts::NormKind;

Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                    const autotune::TuningKey& key) {
  std::optional<NormKind> kind;
  for (NormKind k : {NormKind::LayerNorm, NormKind::RmsNorm, NormKind::Softmax})
    if (key.op == "rudnn." + std::string(contracts::norm_op_name(k))) kind = k;
  if (!kind) return RuntimeError(ErrorKind::InvalidValue, "op", "a normalization op", key.op);
  const std::size_t operands = *kind == NormKind::Softmax ? 1 : *kind == NormKind::RmsNorm ? 2 : 0;
  if ((operands && key.dtypes.size() != operands) || (!operands && key.dtypes.size() != 2 && key.dtypes.size() != 3))
    return RuntimeError(ErrorKind::InvalidValue, "dtypes", fmt::format("one dtype per operand of {}", key.op),
                        std::to_string(key.dtypes.size()));
  if (key.static_dims.size() != 1 || key.buckets.size() != 1)
    return RuntimeError(ErrorKind::InvalidValue, "key", "static dims {H} and buckets {rows}", key.to_string());
  const std::int64_t h = key.static_dims[0], rows = key.buckets[0];
  const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
  contracts::NormSignature sig;
  sig.kind = *kind;
  sig.input = {{rows, h}, key.dtypes[0], id};
  if (key.dtypes.size() > 1) sig.gamma = contracts::NormOperand{{h}, key.dtypes[1], id};
  if (key.dtypes.size() > 2) sig.beta = contracts::NormOperand{{h}, key.dtypes[2], id};
  if (auto e = contracts::check_normalization(sig))
    return RuntimeError(e->kind(), e->argument(), e->expected(), e->actual(), e->detail());
  // Slots: input, [gamma, [beta]], output.
  using Role = TuningSlot::Role;
  std::vector<TuningSlot> slots = {{Role::PerSetInput, "input", sig.input.shape, sig.input.dtype, {}}};
  if (sig.gamma) slots.push_back({Role::PerSetInput, "gamma", sig.gamma->shape, sig.gamma->dtype, {}});
  if (*kind == NormKind::LayerNorm)
    slots.push_back(sig.beta ? TuningSlot{Role::PerSetInput, "beta", sig.beta->shape, sig.beta->dtype, {}}
                             : TuningSlot{Role::Absent, "beta", {}, DType::F32, {}});
  slots.push_back({Role::Output, "output", sig.input.shape, sig.input.dtype, {}});
  return SlotTuningProblem::make(
      device, std::move(slots), [sig](const compiler::KernelConfig& config, const compiler::Target& target) {
        return compiler::lower_normalization(compiler::NormRequest{sig, true, config}, target);
      });
}

const bool kRegistered = register_tuning_problem(autotune::normalization_search_space()->family(), &make);

}  // namespace
}  // namespace rudnn::ops
#endif
