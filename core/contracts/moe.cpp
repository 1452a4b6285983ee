#include "contracts/moe.h"

#include "contracts/arch.h"
#include "rudnn/shared_memory.h"

#include <cmath>
#include <fmt/format.h>

namespace rudnn::contracts {

// Dispatch's per-expert counters fit the least shared memory of any supported GPU.
static_assert(shared_memory::dispatch_rank(moe::kMaxDispatchExperts) <= contracts::kSmallestSharedBytes);

namespace {

using Err = MoeError;

// logits: non-quantized F32/F16/BF16, rank 2 [T, E], E > 0.
std::optional<MoeError> check_logits(const MoeOperand& x) {
  if (auto e = check_float<Err>(x, "logits")) return e;
  if (x.shape.size() != 2)
    return fail<Err>(ErrorKind::ShapeMismatch, "logits", "rank 2 [tokens, experts]", shape_to_string(x.shape));
  if (x.shape[1] == 0) return fail<Err>(ErrorKind::EmptyDimension, "logits", "experts > 0", shape_to_string(x.shape));
  return std::nullopt;
}

}  // namespace

std::optional<MoeError> check_route(const RouteSignature& sig) {
  if (auto e = check_logits(sig.logits)) return e;
  const std::int64_t experts = sig.logits.shape[1];
  if (sig.top_k < 1 || (experts != kDynamic && sig.top_k > experts))
    return fail<Err>(
        ErrorKind::InvalidValue, "top_k",
        experts == kDynamic ? std::string("1 <= top_k <= experts") : fmt::format("1 <= top_k <= {} (experts)", experts),
        std::to_string(sig.top_k));
  return std::nullopt;
}

std::optional<MoeError> check_route_sigmoid_grouped(const GroupRouteSignature& sig) {
  if (auto e = check_logits(sig.logits)) return e;
  const std::int64_t experts = sig.logits.shape[1];
  const bool known = experts != kDynamic;
  if (known && experts > kMaxGroupedExperts)
    return fail<Err>(ErrorKind::InvalidValue, "logits", fmt::format("experts in 1..={}", kMaxGroupedExperts),
                     shape_to_string(sig.logits.shape));
  if (sig.groups < 1 || sig.groups > kMaxGroups)
    return fail<Err>(ErrorKind::InvalidValue, "groups", fmt::format("1..={}", kMaxGroups), std::to_string(sig.groups));
  if (sig.top_k < 1 || sig.top_k > kMaxGroupedTopK)
    return fail<Err>(ErrorKind::InvalidValue, "top_k", fmt::format("1..={}", kMaxGroupedTopK),
                     std::to_string(sig.top_k));
  if (known && experts % sig.groups != 0)
    return fail<Err>(ErrorKind::InvalidValue, "groups", fmt::format("a divisor of experts ({})", experts),
                     std::to_string(sig.groups));
  if (sig.selected_groups < 1 || sig.selected_groups > sig.groups)
    return fail<Err>(ErrorKind::InvalidValue, "selected_groups",
                     fmt::format("1 <= selected_groups <= groups ({})", sig.groups),
                     std::to_string(sig.selected_groups));
  if (known) {
    const std::int64_t per_group = experts / sig.groups;
    if (sig.top_k > sig.selected_groups * per_group)
      return fail<Err>(ErrorKind::InvalidValue, "top_k",
                       fmt::format("<= selected_groups x experts_per_group ({} x {} = {})", sig.selected_groups,
                                   per_group, sig.selected_groups * per_group),
                       std::to_string(sig.top_k));
    if (sig.group_top_two && per_group < 2)
      return fail<Err>(ErrorKind::InvalidValue, "group_top_two", "at least 2 experts per group",
                       fmt::format("{} expert(s) per group", per_group));
  }
  if (!std::isfinite(sig.scale) || !(sig.scale > 0))
    return fail<Err>(ErrorKind::InvalidValue, "scale", "finite and > 0", fmt::format("{}", sig.scale));
  if (sig.bias) {
    const MoeOperand& b = *sig.bias;
    if (is_quantized(b.dtype))
      return fail<Err>(ErrorKind::QuantizedDType, "bias", "non-quantized f32", std::string(dtype_name(b.dtype)));
    if (b.dtype != DType::F32)
      return fail<Err>(ErrorKind::UnsupportedDType, "bias", "f32", std::string(dtype_name(b.dtype)));
    const bool shape_ok = b.shape.size() == 1 && (!known || b.shape[0] == kDynamic || b.shape[0] == experts);
    if (!shape_ok)
      return fail<Err>(ErrorKind::ShapeMismatch, "bias",
                       fmt::format("shape [{}] (the experts of logits)", known ? std::to_string(experts) : "E"),
                       shape_to_string(b.shape));
    if (b.device != sig.logits.device)
      return fail<Err>(ErrorKind::DeviceMismatch, "bias", fmt::format("the logits' device ({})", sig.logits.device),
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

// --- dispatch, experts, combine -------------------------------------------------------------

namespace {

// A non-quantized float tensor of rank `rank`.
std::optional<MoeError> check_float_rank(const MoeOperand& x, const char* name, std::size_t rank, const char* layout) {
  if (auto e = check_float<Err>(x, name)) return e;
  if (x.shape.size() != rank) return fail<Err>(ErrorKind::ShapeMismatch, name, layout, shape_to_string(x.shape));
  return std::nullopt;
}

std::optional<MoeError> check_u32(const MoeOperand& x, const char* name, std::size_t rank, const char* layout) {
  if (x.dtype != DType::U32)
    return fail<Err>(ErrorKind::UnsupportedDType, name, "u32", std::string(dtype_name(x.dtype)));
  if (x.shape.size() != rank) return fail<Err>(ErrorKind::ShapeMismatch, name, layout, shape_to_string(x.shape));
  return std::nullopt;
}

std::optional<MoeError> check_positive(const MoeOperand& x, const char* name, std::size_t from) {
  for (std::size_t d = from; d < x.shape.size(); ++d)
    if (x.shape[d] == 0)
      return fail<Err>(ErrorKind::EmptyDimension, name, fmt::format("dim {} > 0", d), shape_to_string(x.shape));
  return std::nullopt;
}

std::optional<MoeError> check_same_dtype(const MoeOperand& x, const char* name, const MoeOperand& ref,
                                         const char* ref_name) {
  if (x.dtype != ref.dtype)
    return fail<Err>(ErrorKind::UnsupportedDType, name,
                     fmt::format("{} (the dtype of {})", dtype_name(ref.dtype), ref_name),
                     std::string(dtype_name(x.dtype)));
  return std::nullopt;
}

}  // namespace

std::string_view strategy_name(ExpertsStrategy s) {
  switch (s) {
    case ExpertsStrategy::Scalar: return "scalar";
    case ExpertsStrategy::Auto: return "auto";
    case ExpertsStrategy::TensorCore: return "tensor_core";
  }
  return "?";
}

std::optional<MoeError> check_dispatch(const DispatchSignature& sig) {
  if (auto e = check_float_rank(sig.input, "input", 2, "rank 2 [tokens, hidden]")) return e;
  if (auto e = check_positive(sig.input, "input", 1)) return e;
  if (auto e = check_u32(sig.indices, "indices", 2, "rank 2 [tokens, top_k]")) return e;
  if (auto e = check_positive(sig.indices, "indices", 1)) return e;
  if (!same_extent(sig.input.shape[0], sig.indices.shape[0]))
    return fail<Err>(ErrorKind::ShapeMismatch, "input",
                     fmt::format("{} tokens (the routing's tokens)", extent_text(sig.indices.shape[0])),
                     shape_to_string(sig.input.shape));
  // U32 indices and offsets address at most 2^32 − 1 experts (and experts + 1 must not overflow).
  if (sig.experts < 1 || sig.experts > std::int64_t{0xffffffff})
    return fail<Err>(ErrorKind::InvalidValue, "experts", ">= 1 and <= 4294967295", std::to_string(sig.experts));
  if (sig.experts > moe::kMaxDispatchExperts)
    return fail<Err>(ErrorKind::InvalidValue, "experts",
                     fmt::format("<= {} (dispatch's per-expert counters in shared memory)", moe::kMaxDispatchExperts),
                     std::to_string(sig.experts));
  if (known(sig.indices.shape[1]) && sig.indices.shape[1] > sig.experts)
    return fail<Err>(ErrorKind::ShapeMismatch, "indices", fmt::format("top_k <= {} (experts)", sig.experts),
                     shape_to_string(sig.indices.shape));
  if (auto e = check_device<Err>(sig.input, "input", sig.indices, "routing")) return e;
  return std::nullopt;
}

std::optional<MoeError> check_expert_weights(const ExpertWeights& w) {
  if (auto e = check_float_rank(w.gate, "gate", 3, "rank 3 [experts, inter, hidden]")) return e;
  if (auto e = check_positive(w.gate, "gate", 0)) return e;
  if (auto e = check_same_dtype(w.up, "up", w.gate, "gate")) return e;
  if (auto e = check_same_dtype(w.down, "down", w.gate, "gate")) return e;
  if (w.up.shape != w.gate.shape)
    return fail<Err>(ErrorKind::ShapeMismatch, "up", shape_to_string(w.gate.shape) + " (the shape of gate)",
                     shape_to_string(w.up.shape));
  const Shape want_down{w.gate.shape[0], w.gate.shape[2], w.gate.shape[1]};
  if (w.down.shape != want_down)
    return fail<Err>(ErrorKind::ShapeMismatch, "down",
                     shape_to_string(want_down) + " ([experts, hidden, inter] of gate)", shape_to_string(w.down.shape));
  if (auto e = check_device<Err>(w.up, "up", w.gate, "gate")) return e;
  if (auto e = check_device<Err>(w.down, "down", w.gate, "gate")) return e;
  return std::nullopt;
}

std::optional<MoeError> check_experts(const ExpertsSignature& sig) {
  if (auto e = check_expert_weights(sig.weights)) return e;
  const std::int64_t experts = experts_of(sig.weights), hidden = hidden_of(sig.weights);
  if (auto e = check_float_rank(sig.rows, "rows", 2, "rank 2 [rows, hidden]")) return e;
  if (auto e = check_same_dtype(sig.rows, "rows", sig.weights.gate, "the expert weights")) return e;
  if (!same_extent(sig.rows.shape[1], hidden))
    return fail<Err>(ErrorKind::ShapeMismatch, "rows", fmt::format("[rows, {}] (hidden of the expert weights)", hidden),
                     shape_to_string(sig.rows.shape));
  if (auto e = check_u32(sig.offsets, "offsets", 1, "rank 1 [experts + 1]")) return e;
  if (!same_extent(sig.offsets.shape[0], experts + 1))
    return fail<Err>(
        ErrorKind::ShapeMismatch, "offsets",
        fmt::format("[{}] (experts + 1: the routing must cover the experts' {} experts)", experts + 1, experts),
        shape_to_string(sig.offsets.shape));
  if (auto e = check_device<Err>(sig.rows, "rows", sig.weights.gate, "expert weights")) return e;
  if (auto e = check_device<Err>(sig.offsets, "offsets", sig.weights.gate, "expert weights")) return e;
  return std::nullopt;
}

std::optional<MoeError> check_combine(const CombineSignature& sig) {
  if (auto e = check_float_rank(sig.expert_rows, "expert_output", 2, "rank 2 [tokens x top_k, hidden]")) return e;
  if (auto e = check_positive(sig.expert_rows, "expert_output", 1)) return e;
  if (auto e = check_u32(sig.slots, "slots", 2, "rank 2 [tokens, top_k]")) return e;
  if (auto e = check_float_rank(sig.weights, "weights", 2, "rank 2 [tokens, top_k]")) return e;
  if (!same_extent(sig.weights.shape[0], sig.slots.shape[0]) || !same_extent(sig.weights.shape[1], sig.slots.shape[1]))
    return fail<Err>(ErrorKind::ShapeMismatch, "weights", shape_to_string(sig.slots.shape) + " (the routing's shape)",
                     shape_to_string(sig.weights.shape));
  const std::int64_t t = sig.slots.shape[0], k = sig.slots.shape[1];
  if (known(t) && known(k) && known(sig.expert_rows.shape[0]) && sig.expert_rows.shape[0] != t * k)
    return fail<Err>(ErrorKind::ShapeMismatch, "expert_output",
                     fmt::format("[{}, hidden] (tokens x top_k = {} x {} rows)", t * k, t, k),
                     shape_to_string(sig.expert_rows.shape));
  if (auto e = check_device<Err>(sig.slots, "slots", sig.expert_rows, "expert_output")) return e;
  if (auto e = check_device<Err>(sig.weights, "weights", sig.expert_rows, "expert_output")) return e;
  return std::nullopt;
}

std::optional<MoeError> check_tensor_core_experts(const ExpertWeights& w, const std::string& arch) {
  const DType d = w.gate.dtype;
  if (d != DType::F16 && d != DType::BF16)
    return fail<Err>(ErrorKind::Unsupported, "strategy", "f16 or bf16 expert weights for TensorCore",
                     std::string(dtype_name(d)));
  const std::int64_t h = hidden_of(w), i = inter_of(w);
  // A dynamic extent (kDynamic, in IR lowered for every shape) is checked when the call has it.
  if ((h != kDynamic && h % 8 != 0) || (i != kDynamic && i % 8 != 0))
    return fail<Err>(ErrorKind::Unsupported, "strategy", "hidden and inter multiples of 8 for TensorCore",
                     fmt::format("hidden {}, inter {}", h, i));
  if (!has_mma_m16n8k16(arch)) return fail<Err>(ErrorKind::Unsupported, "strategy", kMmaRequirement, arch);
  return std::nullopt;
}

Result<ExpertsStrategy, MoeError> resolve_experts_strategy(ExpertsStrategy requested, const ExpertWeights& w,
                                                           const std::string& arch) {
  if (requested == ExpertsStrategy::Scalar) return ExpertsStrategy::Scalar;
  std::optional<MoeError> unsupported = check_tensor_core_experts(w, arch);
  if (unsupported && requested == ExpertsStrategy::TensorCore) return *unsupported;
  return unsupported ? ExpertsStrategy::Scalar : ExpertsStrategy::TensorCore;
}

std::string describe_call(const DispatchSignature& sig) {
  return one("input", sig.input) + ", " + one("indices", sig.indices) + fmt::format(", experts {}", sig.experts);
}

std::string describe_call(const ExpertsSignature& sig) {
  return one("rows", sig.rows) + ", " + one("offsets", sig.offsets) + ", " + one("gate", sig.weights.gate) + ", " +
         one("up", sig.weights.up) + ", " + one("down", sig.weights.down);
}

std::string describe_call(const CombineSignature& sig) {
  return one("expert_output", sig.expert_rows) + ", " + one("slots", sig.slots) + ", " + one("weights", sig.weights);
}

}  // namespace rudnn::contracts
