#include "contracts/attention.h"

#include "contracts/arch.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace rudnn::contracts {

namespace {

using Err = AttentionSetupError;

// [B or 1, Hq or 1, Tq, Tk] of a mask or bias.
std::optional<AttentionSetupError> check_broadcast(const AttentionOperand& x, const char* name, std::int64_t b,
                                                   std::int64_t hq, std::int64_t tq, std::int64_t tk) {
  const bool ok = x.shape.size() == 4 && (x.shape[0] == 1 || same_extent(x.shape[0], b)) &&
                  (x.shape[1] == 1 || same_extent(x.shape[1], hq)) && same_extent(x.shape[2], tq) &&
                  same_extent(x.shape[3], tk);
  if (!ok)
    return fail<Err>(
        ErrorKind::ShapeMismatch, name,
        fmt::format("[{} or 1, {} or 1, {}, {}] ([batch, q_heads, q_len, kv_len], broadcast over batch and "
                    "heads)",
                    extent_text(b), extent_text(hq), extent_text(tq), extent_text(tk)),
        shape_to_string(x.shape));
  return std::nullopt;
}

}  // namespace

std::string_view strategy_name(AttentionStrategy s) {
  switch (s) {
    case AttentionStrategy::FlashBlackboxAccelerated: return "flash_mma";
    case AttentionStrategy::FlashUnit: return "flash_unit";
    case AttentionStrategy::Fallback: return "fallback";
    case AttentionStrategy::Autotune: return "autotune";
  }
  return "?";
}

std::optional<AttentionStrategy> parse_attention_strategy(std::string_view name) {
  for (auto s : {AttentionStrategy::FlashBlackboxAccelerated, AttentionStrategy::FlashUnit, AttentionStrategy::Fallback,
                 AttentionStrategy::Autotune})
    if (strategy_name(s) == name) return s;
  return std::nullopt;
}

std::optional<AttentionSetupError> check_attention(const AttentionSignature& sig) {
  const AttentionOperand& q = sig.query;
  if (auto e = check_float<Err>(q, "query")) return e;
  if (q.shape.size() != 4)
    return fail<Err>(ErrorKind::ShapeMismatch, "query", "rank 4 [batch, q_heads, q_len, head_dim]",
                     shape_to_string(q.shape));
  const std::int64_t b = q.shape[0], hq = q.shape[1], tq = q.shape[2], d = q.shape[3];
  if (b == 0 || hq == 0 || d == 0)
    return fail<Err>(ErrorKind::EmptyDimension, "query", "batch, q_heads and head_dim > 0", shape_to_string(q.shape));
  auto same_dtype = [&](const AttentionOperand& x, const char* name) -> std::optional<AttentionSetupError> {
    if (auto e = check_float<Err>(x, name)) return e;
    if (x.dtype != q.dtype)
      return fail<Err>(ErrorKind::UnsupportedDType, name, fmt::format("{} (the query dtype)", dtype_name(q.dtype)),
                       std::string(dtype_name(x.dtype)));
    return std::nullopt;
  };
  if (auto e = same_dtype(sig.key, "key")) return e;
  const Shape& k = sig.key.shape;
  if (k.size() != 4 || !same_extent(k[0], b) || !same_extent(k[3], d))
    return fail<Err>(
        ErrorKind::ShapeMismatch, "key",
        fmt::format("[{}, kv_heads, kv_len, {}] (batch and head_dim of query)", extent_text(b), extent_text(d)),
        shape_to_string(k));
  const std::int64_t hkv = k[1], tk = k[2];
  if (hkv == 0) return fail<Err>(ErrorKind::EmptyDimension, "key", "kv_heads > 0", shape_to_string(k));
  if (known(hq) && known(hkv) && hq % hkv != 0)
    return fail<Err>(ErrorKind::ShapeMismatch, "key", fmt::format("kv_heads dividing q_heads ({})", hq),
                     fmt::format("{} kv_heads", hkv));
  if (auto e = same_dtype(sig.value, "value")) return e;
  const Shape& v = sig.value.shape;
  if (v.size() != 4 || !same_extent(v[0], b) || !same_extent(v[1], hkv) || !same_extent(v[2], tk))
    return fail<Err>(ErrorKind::ShapeMismatch, "value",
                     fmt::format("[{}, {}, {}, value_dim] (batch, kv_heads, kv_len of key)", extent_text(b),
                                 extent_text(hkv), extent_text(tk)),
                     shape_to_string(v));
  if (v[3] == 0) return fail<Err>(ErrorKind::EmptyDimension, "value", "value_dim > 0", shape_to_string(v));
  if (sig.mask) {
    if (sig.mask->dtype != DType::U8)
      return fail<Err>(ErrorKind::UnsupportedDType, "mask", "u8 (boolean, nonzero = excluded)",
                       std::string(dtype_name(sig.mask->dtype)));
    if (auto e = check_broadcast(*sig.mask, "mask", b, hq, tq, tk)) return e;
  }
  if (sig.bias) {
    if (auto e = check_float<Err>(*sig.bias, "attn_bias")) return e;
    if (sig.bias->dtype != DType::F32 && sig.bias->dtype != q.dtype)
      return fail<Err>(ErrorKind::UnsupportedDType, "attn_bias",
                       fmt::format("f32 or {} (the query dtype)", dtype_name(q.dtype)),
                       std::string(dtype_name(sig.bias->dtype)));
    if (auto e = check_broadcast(*sig.bias, "attn_bias", b, hq, tq, tk)) return e;
  }
  for (auto [x, name] : {std::pair{&sig.key, "key"}, {&sig.value, "value"}})
    if (x->device != q.device)
      return fail<Err>(ErrorKind::DeviceMismatch, name, fmt::format("the device of query ({})", q.device),
                       fmt::format("device {}", x->device));
  for (auto [x, name] : {std::pair{&sig.mask, "mask"}, {&sig.bias, "attn_bias"}})
    if (*x && (*x)->device != q.device)
      return fail<Err>(ErrorKind::DeviceMismatch, name, fmt::format("the device of query ({})", q.device),
                       fmt::format("device {}", (*x)->device));
  if (!std::isfinite(sig.scale))
    return fail<Err>(ErrorKind::InvalidValue, "scale", "a finite value", fmt::format("{}", sig.scale));
  return std::nullopt;
}

std::optional<AttentionSetupError> check_strategy_fits(const AttentionSignature& sig, AttentionStrategy strategy,
                                                       const std::string& arch) {
  const std::int64_t d = sig.query.shape[3], dv = sig.value.shape[3];
  const std::string dims =
      fmt::format("head_dim {}, value_dim {}, {}", extent_text(d), extent_text(dv), dtype_name(sig.query.dtype));
  switch (strategy) {
    case AttentionStrategy::FlashBlackboxAccelerated: {
      const bool half = sig.query.dtype == DType::F16 || sig.query.dtype == DType::BF16;
      const bool dim_ok = d == dv && std::find(std::begin(kFlashMmaHeadDims), std::end(kFlashMmaHeadDims), d) !=
                                         std::end(kFlashMmaHeadDims);
      if (!half || !dim_ok)
        return fail<Err>(ErrorKind::Unsupported, "strategy",
                         "FlashBlackboxAccelerated: f16 or bf16 with head_dim = value_dim in {64, 96, 128, 256}", dims);
      if (!has_mma_m16n8k16(arch))
        return fail<Err>(ErrorKind::Unsupported, "strategy",
                         std::string("FlashBlackboxAccelerated: ") + kMmaRequirement, arch);
      return std::nullopt;
    }
    case AttentionStrategy::FlashUnit:
      if (!known(d) || !known(dv) || d > kFlashUnitMaxHeadDim || dv > kFlashUnitMaxHeadDim)
        return fail<Err>(ErrorKind::Unsupported, "strategy", "FlashUnit: head_dim and value_dim <= 256", dims);
      return std::nullopt;
    case AttentionStrategy::Fallback:
      if (!known(d) || !known(dv) || d > kFallbackMaxHeadDim || dv > kFallbackMaxHeadDim)
        return fail<Err>(ErrorKind::Unsupported, "strategy", "Fallback: head_dim and value_dim <= 1024", dims);
      return std::nullopt;
    case AttentionStrategy::Autotune:
      return fail<Err>(ErrorKind::InvalidValue, "strategy", "a concrete strategy", "Autotune");
  }
  return std::nullopt;
}

std::string describe_call(const AttentionSignature& sig) {
  auto one = [](const char* name, const AttentionOperand& o) {
    return std::string(name) + " " + shape_to_string(o.shape) + " " + std::string(dtype_name(o.dtype));
  };
  std::string s = one("query", sig.query) + ", " + one("key", sig.key) + ", " + one("value", sig.value);
  if (sig.mask) s += ", " + one("mask", *sig.mask);
  if (sig.bias) s += ", " + one("attn_bias", *sig.bias);
  if (sig.causal) s += ", causal";
  return s;
}

}  // namespace rudnn::contracts
