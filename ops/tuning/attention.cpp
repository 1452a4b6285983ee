// How autotune times an attention candidate: the key's heads, dims, flags and the buckets' sizes
// (B, Tq, Tk); random q/k/v per input set, one mask excluding ~20 % of keys and one bias.
#if RUDNN_HAS_AUTOTUNE
#include <cmath>

#include "contracts/attention.h"
#include "rudnn/autotune/spaces/attention.h"
#include "tuning_problem.h"

namespace rudnn::ops {
namespace {

Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                    const autotune::TuningKey& key) {
  // static dims {Hq, Hkv, D, Dv, causal, mask, bias, strategy}; buckets {B, Tq, Tk}; dtypes {query[, bias]}.
  if (key.op != "rudnn.attention" || key.static_dims.size() != 8 || key.buckets.size() != 3 || key.dtypes.empty())
    return RuntimeError(ErrorKind::InvalidValue, "key",
                        "rudnn.attention [Hq, Hkv, D, Dv, causal, mask, bias, strategy]", key.to_string());
  const auto& s = key.static_dims;
  const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
  const std::int64_t b = key.buckets[0], tq = key.buckets[1], tk = key.buckets[2];
  contracts::AttentionSignature sig;
  sig.query = {{b, s[0], tq, s[2]}, key.dtypes[0], id};
  sig.key = {{b, s[1], tk, s[2]}, key.dtypes[0], id};
  sig.value = {{b, s[1], tk, s[3]}, key.dtypes[0], id};
  if (s[5]) sig.mask = contracts::AttentionOperand{{1, 1, tq, tk}, DType::U8, id};
  if (s[6]) sig.bias = contracts::AttentionOperand{{1, 1, tq, tk}, key.dtypes.back(), id};
  sig.causal = s[4] != 0;
  sig.scale = 1.0 / std::sqrt(static_cast<double>(s[2]));
  if (auto e = contracts::check_attention(sig))
    return RuntimeError(e->kind(), e->argument(), e->expected(), e->actual(), e->detail());
  const auto strategy = static_cast<contracts::AttentionStrategy>(s[7]);
  using Role = TuningSlot::Role;
  // Slots: query, key, value, mask, attn_bias, output.
  std::vector<TuningSlot> slots = {
      {Role::PerSetInput, "query", sig.query.shape, sig.query.dtype, {}},
      {Role::PerSetInput, "key", sig.key.shape, sig.key.dtype, {}},
      {Role::PerSetInput, "value", sig.value.shape, sig.value.dtype, {}},
      sig.mask ? TuningSlot{Role::Input, "mask", sig.mask->shape, DType::U8,
                            [](std::mt19937_64& rng, std::int64_t) {
                              return std::uniform_real_distribution<double>(0.0, 1.0)(rng) > 0.8 ? 1.0 : 0.0;
                            }}
               : TuningSlot{Role::Absent, "mask", {}, DType::U8, {}},
      sig.bias ? TuningSlot{Role::Input, "attn_bias", sig.bias->shape, sig.bias->dtype, {}}
               : TuningSlot{Role::Absent, "attn_bias", {}, DType::F32, {}},
      {Role::Output, "output", {b, s[0], tq, s[3]}, sig.query.dtype, {}}};
  return SlotTuningProblem::make(
      device, std::move(slots), [sig, strategy](const compiler::KernelConfig& config, const compiler::Target& target) {
        return compiler::lower_attention(compiler::AttentionRequest{sig, strategy, config, nullptr}, target);
      });
}

const bool kRegistered = register_tuning_problem(autotune::attention_search_space()->family(), &make);

}  // namespace
}  // namespace rudnn::ops
#endif
