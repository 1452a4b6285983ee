// The public attention entry: contract check → strategy fit → plan cache → (cold) compiler, with the
// autotune provider for the Autotune strategy → launches (ops/entry.h). How autotune times an
// attention candidate: ops/tuning/attention.cpp.
#include "rudnn/attention.h"

#include <array>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "contracts/arch.h"
#include "contracts/attention.h"
#include "entry.h"

namespace rudnn::attention {

namespace {

using ops::as;
using ops::operand;

contracts::AttentionStrategy to_contract(attention::AttentionStrategy s) {
  switch (s) {
    case attention::AttentionStrategy::FlashBlackboxAccelerated:
      return contracts::AttentionStrategy::FlashBlackboxAccelerated;
    case attention::AttentionStrategy::FlashUnit: return contracts::AttentionStrategy::FlashUnit;
    case attention::AttentionStrategy::Fallback: return contracts::AttentionStrategy::Fallback;
    case attention::AttentionStrategy::Autotune: return contracts::AttentionStrategy::Autotune;
  }
  return contracts::AttentionStrategy::Fallback;
}

// Whether the tensor-core kernel can copy the rows of `t` with 16-byte cp.async and stores: a 16-byte
// aligned start and, in every dim it steps over, a stride of whole 16-byte units.
bool rows_aligned16(const Tensor& t) {
  if ((reinterpret_cast<std::uintptr_t>(t.data()) & 15u) != 0) return false;
  for (std::size_t d = 0; d + 1 < t.shape().size(); ++d)
    if (t.shape()[d] > 1 && static_cast<std::uint64_t>(t.strides()[d]) * dtype_size(t.dtype()) % 16 != 0) return false;
  return true;
}

// Whether the rows of `t` [B, H, T, X] within each batch are evenly spaced, head after head (a dense
// tensor's are; a token-major view's are not when T > 1 and H > 1).
bool heads_tq_rows_apart(const Tensor& t) {
  return t.dim(1) == 1 || t.dim(2) == 1 || t.strides()[1] == t.dim(2) * t.strides()[2];
}

// Strides along the dims `t` steps over (a dim of extent 1 may carry any), for comparing layouts.
std::array<std::int64_t, 3> stepped_strides(const Tensor& t) {
  std::array<std::int64_t, 3> s{};
  for (std::size_t d = 0; d < 3; ++d) s[d] = t.shape()[d] > 1 ? t.strides()[d] : 0;
  return s;
}

// The strategy that runs: the requested one, except that Autotune on views the tensor-core kernel
// cannot copy (rows_aligned16, or value strides other than the key's) chooses between the plain-core
// ones (docs/serving.md).
contracts::AttentionStrategy effective_strategy(contracts::AttentionStrategy requested, bool aligned,
                                                const contracts::AttentionSignature& sig, const std::string& arch) {
  if (requested != contracts::AttentionStrategy::Autotune || aligned) return requested;
  if (!contracts::check_strategy_fits(sig, contracts::AttentionStrategy::FlashUnit, arch))
    return contracts::AttentionStrategy::FlashUnit;
  return contracts::AttentionStrategy::Fallback;
}

// log2 of a power-of-two bucket (autotune::anchor rounds up to one).
std::int64_t log2_bucket(std::int64_t v) {
  std::int64_t b = 0;
  while ((std::int64_t{1} << b) < v) ++b;
  return b;
}

}  // namespace

attention::AttentionStrategy default_strategy() {
#if RUDNN_HAS_AUTOTUNE
  return attention::AttentionStrategy::Autotune;
#else
  return attention::AttentionStrategy::Fallback;
#endif
}

namespace {

// What a call needs before its launch: the plan and the output's shape.
struct Prepared {
  std::shared_ptr<const ops::Plan> plan;
  Shape out_shape;
};

// The contract, the caller's buffers (`into`, `workspace`: checked when given) and the plan.
Result<Prepared, AttentionSetupError> prepare(const Tensor& query, const Tensor& key, const Tensor& value,
                                              const std::optional<Tensor>& mask, const std::optional<Tensor>& attn_bias,
                                              AttentionModuleOptions options, attention::AttentionStrategy strategy,
                                              const Tensor* into, const Tensor* workspace) {
  contracts::AttentionSignature sig{operand(query), operand(key), operand(value), std::nullopt,
                                    std::nullopt,   1.0,          options.causal};
  if (mask) sig.mask = operand(*mask);
  if (attn_bias) sig.bias = operand(*attn_bias);
  if (options.scale)
    sig.scale = *options.scale;
  else if (query.rank() == 4 && query.dim(3) > 0)
    sig.scale = 1.0 / std::sqrt(static_cast<double>(query.dim(3)));
  if (auto e = contracts::check_attention(sig)) return *e;
  const contracts::AttentionStrategy asked = to_contract(strategy);
#if !RUDNN_HAS_AUTOTUNE
  if (asked == contracts::AttentionStrategy::Autotune)
    return AttentionSetupError(ErrorKind::Unsupported, "strategy", "a build with the autotune component for Autotune",
                               "a build without it");
#endif
  const std::string& arch = query.device().info().arch;  // target_for's arch, without copying DeviceInfo
  if (asked != contracts::AttentionStrategy::Autotune)
    if (auto e = contracts::check_strategy_fits(sig, asked, arch)) return *e;
  // Query, key, value (and out, below) may be views with any strides but a dense last dim (SPEC
  // §13: an engine's token-major or fused QKV buffers); mask and bias are dense.
  for (auto [t, name] : {std::pair{&query, "query"}, {&key, "key"}, {&value, "value"}})
    if (auto e = ops::check_layout(*t, name, ops::Layout::Strided)) return as<AttentionSetupError>(*e);
  for (auto [t, name] : {std::pair{mask ? &*mask : nullptr, "mask"}, {attn_bias ? &*attn_bias : nullptr, "attn_bias"}})
    if (t)
      if (auto e = ops::check_contiguous(*t, name)) return as<AttentionSetupError>(*e);
  for (auto [t, name] : {std::pair{&key, "key"},
                         {&value, "value"},
                         {mask ? &*mask : nullptr, "mask"},
                         {attn_bias ? &*attn_bias : nullptr, "attn_bias"}})
    if (t)
      if (auto e = ops::check_same_queue(*t, name, query, "query")) return as<AttentionSetupError>(*e);

  const Device& device = query.device();
  const std::int64_t b = query.dim(0), hq = query.dim(1), tq = query.dim(2), d = query.dim(3);
  const std::int64_t hkv = key.dim(1), tk = key.dim(2), dv = value.dim(3);
  const ops::NamedTensor others[] = {{&query, "query"},
                                     {&key, "key"},
                                     {&value, "value"},
                                     {mask ? &*mask : nullptr, "mask"},
                                     {attn_bias ? &*attn_bias : nullptr, "attn_bias"},
                                     {into, "out"}};
  if (into)
    if (auto e = ops::check_output(*into, "out", {b, hq, tq, dv}, query.dtype(), query, std::span(others, 5),
                                   ops::Layout::Strided))
      return as<AttentionSetupError>(*e);
  if (workspace)
    if (auto e = ops::check_workspace(*workspace, query, others)) return as<AttentionSetupError>(*e);
  // The tensor-core kernel copies whole rows 16 bytes at a time, and steps K and V alike.
  bool aligned = true;
  for (auto [t, name] : {std::pair{&query, "query"}, {&key, "key"}, {&value, "value"}, {into, "out"}}) {
    if (!t || rows_aligned16(*t)) continue;
    aligned = false;
    if (asked == contracts::AttentionStrategy::FlashBlackboxAccelerated)
      return AttentionSetupError(
          ErrorKind::Unsupported, name,
          "FlashBlackboxAccelerated: a 16-byte aligned start and strides of whole 16-byte units (8 elements)",
          fmt::format("address {} with strides {}", t->data(), shape_to_string(t->strides())));
  }
  if (aligned && stepped_strides(key) != stepped_strides(value)) {
    aligned = false;
    if (asked == contracts::AttentionStrategy::FlashBlackboxAccelerated)
      return AttentionSetupError(
          ErrorKind::Unsupported, "value", "FlashBlackboxAccelerated: the key's strides",
          fmt::format("strides {} (key {})", shape_to_string(value.strides()), shape_to_string(key.strides())));
  }
  const contracts::AttentionStrategy requested = effective_strategy(asked, aligned, sig, arch);
  // Token-major prefill with grouped heads: the tensor-core kernel takes one head per panel.
  const bool head_panels = hq > hkv && !(heads_tq_rows_apart(query) && (!into || heads_tq_rows_apart(*into)));
  // Decode with a small group: short panels, which the heuristic keeps off the 128-row warpgroup-MMA
  // tiles (Tq is dynamic in the plan, so the hint is part of its key).
  const bool short_panels = compiler::attention_hints_short_panels(requested, arch) &&
                            compiler::attention_panels_short(hq, hkv, tq, head_panels);
  const std::int64_t mode = ops::autotune_mode_word(requested == contracts::AttentionStrategy::Autotune);
  // With autotune the plan serves one (B, Tq, Tk) bucket: the tuned tile depends on it.
  const std::int64_t buckets = mode ? log2_bucket(b) | (log2_bucket(tq) << 8) | (log2_bucket(tk) << 16) : 0;
  auto broadcast = [](const std::optional<Tensor>& t) -> std::int64_t {
    if (!t) return 0;
    return 1 | (t->dim(0) == 1 ? 2 : 0) | (t->dim(1) == 1 ? 4 : 0) | (static_cast<std::int64_t>(t->dtype()) << 3);
  };
  const ops::PlanKey pkey = ops::PlanKeyBuilder("rudnn.attention")
                                .add(query.dtype())
                                .add(static_cast<std::int64_t>(requested))
                                .add(options.causal)
                                .add(hq)
                                .add(hkv)
                                .add(d)
                                .add(dv)
                                .add(broadcast(mask))
                                .add(broadcast(attn_bias))
                                .add(device)
                                .add_bits(static_cast<float>(sig.scale))
                                .add(mode)
                                .add(buckets)
                                .add(head_panels)
                                .add(short_panels)
                                .key();
  auto plan =
      ops::cached_plan(pkey, query.queue(), ops::Tunable::Yes, mode != 0, [&](compiler::ConfigProvider* provider) {
        compiler::AttentionRequest request{sig, requested, std::nullopt, provider};
        request.head_panels = head_panels;
        request.short_panels = short_panels;
        return compiler::lower_attention(request, ops::target_for(device));
      });
  if (!plan.ok()) return as<AttentionSetupError>(plan.error());
  return Prepared{plan.value(), {b, hq, tq, dv}};
}

// One attention call into `into` (a caller's buffer) or a fresh output, its temporaries in
// `workspace` (a caller's) or from the queue's pool.
Result<Tensor, AttentionSetupError> run(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const std::optional<Tensor>& mask, const std::optional<Tensor>& attn_bias,
                                        AttentionModuleOptions options, attention::AttentionStrategy strategy,
                                        const Tensor* into, const Tensor* workspace = nullptr) {
  auto prepared = prepare(query, key, value, mask, attn_bias, options, strategy, into, workspace);
  if (!prepared.ok()) return prepared.error();
  const ops::Plan& plan = *prepared->plan;
  // Slots: query, key, value, mask, attn_bias (kept, maybe empty), output.
  const Tensor* m = mask ? &*mask : nullptr;
  const Tensor* bias = attn_bias ? &*attn_bias : nullptr;
  auto out = ops::output_or(into, prepared->out_shape, query.dtype(), query.queue());
  if (!out.ok()) return as<AttentionSetupError>(out.error());
  const auto launched =
      workspace ? ops::launch_in_workspace(plan, query.queue(), {&query, &key, &value, m, bias, &*out}, *workspace)
                : ops::launch(plan, query.queue(), {&query, &key, &value, m, bias, &*out});
  if (!launched.ok()) return as<AttentionSetupError>(launched.error());
  return std::move(out.value());
}

}  // namespace

Result<std::size_t, AttentionSetupError> attention_workspace_bytes(
    const Tensor& query, const Tensor& key, const Tensor& value, const std::optional<Tensor>& mask,
    const std::optional<Tensor>& attn_bias, AttentionModuleOptions options, AttentionStrategy strategy) {
  auto prepared = prepare(query, key, value, mask, attn_bias, options, strategy, nullptr, nullptr);
  if (!prepared.ok()) return prepared.error();
  const Shape& os = prepared->out_shape;
  auto bytes = ops::workspace_bytes(*prepared->plan, {{nullptr, &query.shape()},
                                                      {nullptr, &key.shape()},
                                                      {nullptr, &value.shape()},
                                                      {nullptr, mask ? &mask->shape() : nullptr},
                                                      {nullptr, attn_bias ? &attn_bias->shape() : nullptr},
                                                      {nullptr, &os}});
  if (!bytes.ok()) return as<AttentionSetupError>(bytes.error());
  return *bytes;
}

Status<AttentionSetupError> attention_into(const Tensor& query, const Tensor& key, const Tensor& value,
                                           const std::optional<Tensor>& mask, const std::optional<Tensor>& attn_bias,
                                           const Tensor& out, const Tensor& workspace, AttentionModuleOptions options,
                                           AttentionStrategy strategy) {
  auto r = run(query, key, value, mask, attn_bias, options, strategy, &out, &workspace);
  if (!r.ok()) return r.error();
  return {};
}

Result<Tensor, AttentionSetupError> attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                              const std::optional<Tensor>& mask, const std::optional<Tensor>& attn_bias,
                                              AttentionModuleOptions options, attention::AttentionStrategy strategy) {
  return run(query, key, value, mask, attn_bias, options, strategy, nullptr);
}

Status<AttentionSetupError> attention_into(const Tensor& query, const Tensor& key, const Tensor& value,
                                           const std::optional<Tensor>& mask, const std::optional<Tensor>& attn_bias,
                                           const Tensor& out, AttentionModuleOptions options,
                                           attention::AttentionStrategy strategy) {
  auto r = run(query, key, value, mask, attn_bias, options, strategy, &out);
  if (!r.ok()) return r.error();
  return {};
}

}  // namespace rudnn::attention
