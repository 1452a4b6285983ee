// The public attention entry: contract check → strategy fit → plan cache → (cold) compiler, with the
// autotune provider for the Autotune strategy → launches (ops/entry.h). How autotune times an
// attention candidate: ops/tuning/attention.cpp.
#include "rudnn/attention.h"

#include <cmath>

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
  const contracts::AttentionStrategy requested = to_contract(strategy);
#if !RUDNN_HAS_AUTOTUNE
  if (requested == contracts::AttentionStrategy::Autotune)
    return AttentionSetupError(ErrorKind::Unsupported, "strategy", "a build with the autotune component for Autotune",
                               "a build without it");
#endif
  if (requested != contracts::AttentionStrategy::Autotune)
    if (auto e = contracts::check_strategy_fits(sig, requested, ops::target_for(query.device()).arch)) return *e;
  if (auto e = ops::check_operands({{&query, "query"},
                                    {&key, "key"},
                                    {&value, "value"},
                                    {mask ? &*mask : nullptr, "mask"},
                                    {attn_bias ? &*attn_bias : nullptr, "attn_bias"}}))
    return as<AttentionSetupError>(*e);

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
    if (auto e = ops::check_output(*into, "out", {b, hq, tq, dv}, query.dtype(), query, std::span(others, 5)))
      return as<AttentionSetupError>(*e);
  if (workspace)
    if (auto e = ops::check_workspace(*workspace, query, others)) return as<AttentionSetupError>(*e);
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
                                .key();
  auto plan =
      ops::cached_plan(pkey, query.queue(), ops::Tunable::Yes, mode != 0, [&](compiler::ConfigProvider* provider) {
        return compiler::lower_attention(compiler::AttentionRequest{sig, requested, std::nullopt, provider},
                                         ops::target_for(device));
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
  auto out =
      into ? Result<Tensor, RuntimeError>(*into) : ops::output(prepared->out_shape, query.dtype(), query.queue());
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
