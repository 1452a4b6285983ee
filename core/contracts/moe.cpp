#include "contracts/moe.h"

#include <cmath>
#include <fmt/format.h>

namespace rudnn::contracts {

namespace {

MoeError fail(ErrorKind kind, std::string argument, std::string expected, std::string actual) {
  return MoeError(kind, std::move(argument), std::move(expected), std::move(actual));
}

// logits: non-quantized F32/F16/BF16, rank 2 [T, E], E > 0.
std::optional<MoeError> check_logits(const MoeOperand& x) {
  if (is_quantized(x.dtype))
    return fail(ErrorKind::QuantizedDType, "logits", "non-quantized f32, f16 or bf16", std::string(dtype_name(x.dtype)));
  if (!is_float(x.dtype))
    return fail(ErrorKind::UnsupportedDType, "logits", "f32, f16 or bf16", std::string(dtype_name(x.dtype)));
  if (x.shape.size() != 2)
    return fail(ErrorKind::ShapeMismatch, "logits", "rank 2 [tokens, experts]", shape_to_string(x.shape));
  if (x.shape[1] == 0)
    return fail(ErrorKind::EmptyDimension, "logits", "experts > 0", shape_to_string(x.shape));
  return std::nullopt;
}

}  // namespace

std::optional<MoeError> check_route(const RouteSignature& sig) {
  if (auto e = check_logits(sig.logits)) return e;
  const std::int64_t experts = sig.logits.shape[1];
  if (sig.top_k < 1 || (experts != kDynamic && sig.top_k > experts))
    return fail(ErrorKind::InvalidValue, "top_k",
                experts == kDynamic ? std::string("1 <= top_k <= experts") : fmt::format("1 <= top_k <= {} (experts)", experts),
                std::to_string(sig.top_k));
  return std::nullopt;
}

std::optional<MoeError> check_route_sigmoid_grouped(const GroupRouteSignature& sig) {
  if (auto e = check_logits(sig.logits)) return e;
  const std::int64_t experts = sig.logits.shape[1];
  const bool known = experts != kDynamic;
  if (known && experts > kMaxGroupedExperts)
    return fail(ErrorKind::InvalidValue, "logits", fmt::format("experts in 1..={}", kMaxGroupedExperts),
                shape_to_string(sig.logits.shape));
  if (sig.groups < 1 || sig.groups > kMaxGroups)
    return fail(ErrorKind::InvalidValue, "groups", fmt::format("1..={}", kMaxGroups), std::to_string(sig.groups));
  if (sig.top_k < 1 || sig.top_k > kMaxGroupedTopK)
    return fail(ErrorKind::InvalidValue, "top_k", fmt::format("1..={}", kMaxGroupedTopK), std::to_string(sig.top_k));
  if (known && experts % sig.groups != 0)
    return fail(ErrorKind::InvalidValue, "groups", fmt::format("a divisor of experts ({})", experts),
                std::to_string(sig.groups));
  if (sig.selected_groups < 1 || sig.selected_groups > sig.groups)
    return fail(ErrorKind::InvalidValue, "selected_groups", fmt::format("1 <= selected_groups <= groups ({})", sig.groups),
                std::to_string(sig.selected_groups));
  if (known) {
    const std::int64_t per_group = experts / sig.groups;
    if (sig.top_k > sig.selected_groups * per_group)
      return fail(ErrorKind::InvalidValue, "top_k",
                  fmt::format("<= selected_groups x experts_per_group ({} x {} = {})", sig.selected_groups, per_group,
                              sig.selected_groups * per_group),
                  std::to_string(sig.top_k));
    if (sig.group_top_two && per_group < 2)
      return fail(ErrorKind::InvalidValue, "group_top_two", "at least 2 experts per group",
                  fmt::format("{} expert(s) per group", per_group));
  }
  if (!std::isfinite(sig.scale) || !(sig.scale > 0))
    return fail(ErrorKind::InvalidValue, "scale", "finite and > 0", fmt::format("{}", sig.scale));
  if (sig.bias) {
    const MoeOperand& b = *sig.bias;
    if (is_quantized(b.dtype))
      return fail(ErrorKind::QuantizedDType, "bias", "non-quantized f32", std::string(dtype_name(b.dtype)));
    if (b.dtype != DType::F32)
      return fail(ErrorKind::UnsupportedDType, "bias", "f32", std::string(dtype_name(b.dtype)));
    const bool shape_ok = b.shape.size() == 1 && (!known || b.shape[0] == kDynamic || b.shape[0] == experts);
    if (!shape_ok)
      return fail(ErrorKind::ShapeMismatch, "bias",
                  fmt::format("shape [{}] (the experts of logits)", known ? std::to_string(experts) : "E"),
                  shape_to_string(b.shape));
    if (b.device != sig.logits.device)
      return fail(ErrorKind::DeviceMismatch, "bias", fmt::format("the logits' device ({})", sig.logits.device),
                  fmt::format("device {}", b.device));
  }
  return std::nullopt;
}

namespace {
std::string one(std::string_view name, const MoeOperand& o) {
  return std::string(name) + " " + shape_to_string(o.shape) + " " + std::string(dtype_name(o.dtype));
}
}  // namespace

std::string describe_call(const RouteSignature& sig) {
  return one("logits", sig.logits) + fmt::format(", top_k {}", sig.top_k);
}

std::string describe_call(const GroupRouteSignature& sig) {
  std::string s = one("logits", sig.logits);
  if (sig.bias) s += ", " + one("bias", *sig.bias);
  return s + fmt::format(", top_k {}, groups {}, selected_groups {}", sig.top_k, sig.groups, sig.selected_groups);
}

}  // namespace rudnn::contracts
