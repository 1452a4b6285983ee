// How autotune times a convolution candidate: the key's call (contracts::conv_key_words) at the
// batch bucket, random activations per input set, one weight (and bias).
#if RUDNN_HAS_AUTOTUNE
#include "contracts/conv.h"
#include "rudnn/autotune/spaces/convolution.h"
#include "rudnn/compiler/conv.h"
#include "tuning_problem.h"

namespace rudnn::ops {
namespace {

Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                    const autotune::TuningKey& key) {
  bool bias_grad = false;
  auto parsed = key.dtypes.size() == 1 && key.buckets.size() == 1
                    ? contracts::conv_signature_from_key(key.static_dims, key.dtypes[0], key.buckets[0], &bias_grad)
                    : std::nullopt;
  if (!parsed)
    return RuntimeError(ErrorKind::InvalidValue, "key", "a convolution key (dtype, conv_key_words, [batch])",
                        key.to_string());
  contracts::ConvSignature sig = *parsed;
  const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
  for (contracts::Operand* o : {&sig.input, &sig.weight}) o->device = id;
  if (sig.bias) sig.bias->device = id;
  if (sig.grad_output) sig.grad_output->device = id;
  if (auto e = contracts::check_conv(sig))
    return RuntimeError(e->kind(), e->argument(), e->expected(), e->actual(), e->detail());
  using Role = TuningSlot::Role;
  const DType d = key.dtypes[0];
  std::vector<TuningSlot> slots;
  switch (sig.direction) {
    case contracts::ConvDirection::Forward:
      slots = {{Role::PerSetInput, "input", sig.input.shape, d, {}},
               {Role::Input, "weight", sig.weight.shape, d, {}},
               sig.bias ? TuningSlot{Role::Input, "bias", sig.bias->shape, sig.bias->dtype, {}}
                        : TuningSlot{Role::Absent, "bias", {}, d, {}},
               {Role::Output, "output", contracts::conv_output_shape(sig), d, {}}};
      break;
    case contracts::ConvDirection::DataBackward:
      slots = {{Role::PerSetInput, "grad_output", sig.grad_output->shape, d, {}},
               {Role::Input, "weight", sig.weight.shape, d, {}},
               {Role::Output, "grad_input", sig.input.shape, d, {}}};
      break;
    case contracts::ConvDirection::WeightBackward:
      slots = {{Role::PerSetInput, "input", sig.input.shape, d, {}},
               {Role::PerSetInput, "grad_output", sig.grad_output->shape, d, {}},
               {Role::Output, "grad_weight", sig.weight.shape, d, {}}};
      if (bias_grad) slots.push_back({Role::Output, "grad_bias", {sig.weight.shape[0]}, DType::F32, {}});
      break;
  }
  return SlotTuningProblem::make(
      device, std::move(slots), [sig, bias_grad](const compiler::KernelConfig& config, const compiler::Target& target) {
        return compiler::lower_conv(compiler::ConvRequest{sig, "autotune", bias_grad, config, nullptr}, target);
      });
}

const bool kRegistered = register_tuning_problem(autotune::convolution_search_space()->family(), &make);

}  // namespace
}  // namespace rudnn::ops
#endif
