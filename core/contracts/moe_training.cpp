#include "contracts/moe_training.h"

#include <cmath>

#include <fmt/format.h>

namespace rudnn::contracts {

namespace {

using Err = MoeError;

bool index_dtype(DType d) { return d == DType::U32 || d == DType::I32 || d == DType::I64; }

}  // namespace

std::optional<MoeError> check_router_weights(const RouterWeightsSignature& sig) {
  const MoeOperand& x = sig.logits;
  if (auto e = check_float<Err>(x, "logits")) return e;
  if (x.shape.size() != 2)
    return fail<Err>(ErrorKind::ShapeMismatch, "logits", "rank 2 [tokens, experts]", shape_to_string(x.shape));
  const std::int64_t t = x.shape[0], experts = x.shape[1];
  if (experts == 0) return fail<Err>(ErrorKind::EmptyDimension, "logits", "experts > 0", shape_to_string(x.shape));
  const MoeOperand& idx = sig.indices;
  if (!index_dtype(idx.dtype))
    return fail<Err>(ErrorKind::UnsupportedDType, "indices", "u32, i32 or i64", std::string(dtype_name(idx.dtype)));
  if (idx.shape.size() != 2)
    return fail<Err>(ErrorKind::ShapeMismatch, "indices", "rank 2 [tokens, top_k]", shape_to_string(idx.shape));
  if (!same_extent(idx.shape[0], t))
    return fail<Err>(ErrorKind::ShapeMismatch, "indices",
                     fmt::format("[{}, top_k] (the logits' tokens)", extent_text(t)), shape_to_string(idx.shape));
  const std::int64_t k = idx.shape[1];
  const std::int64_t max_k = known(experts) ? std::min(experts, kMaxRouterTopK) : kMaxRouterTopK;
  if (known(k) && (k < 1 || k > max_k))
    return fail<Err>(ErrorKind::InvalidValue, "indices",
                     fmt::format("top_k in 1..={} (min(experts, {}))", max_k, kMaxRouterTopK),
                     fmt::format("{} ({})", k, shape_to_string(idx.shape)));
  if (auto e = check_device<Err>(idx, "indices", x, "logits")) return e;
  if (sig.grad_weights) {
    const MoeOperand& g = *sig.grad_weights;
    if (g.dtype != DType::F32)
      return fail<Err>(is_quantized(g.dtype) ? ErrorKind::QuantizedDType : ErrorKind::UnsupportedDType, "grad_weights",
                       "f32", std::string(dtype_name(g.dtype)));
    if (auto e = check_shape<Err>(g, "grad_weights", {t, k}, "[tokens, top_k], the indices' shape")) return e;
    if (auto e = check_device<Err>(g, "grad_weights", x, "logits")) return e;
  }
  if (!std::isfinite(sig.scale) || sig.scale <= 0)
    return fail<Err>(ErrorKind::InvalidValue, "scale", "a finite value > 0", fmt::format("{}", sig.scale));
  return std::nullopt;
}

std::optional<MoeError> check_combine_backward(const CombineBackwardSignature& sig) {
  if (auto e = check_combine(sig.combine)) return e;
  const MoeOperand& y = sig.combine.expert_rows;
  const MoeOperand& g = sig.grad_output;
  if (auto e = check_float<Err>(g, "grad_output")) return e;
  if (g.dtype != y.dtype)
    return fail<Err>(ErrorKind::UnsupportedDType, "grad_output",
                     fmt::format("{} (the expert output's dtype)", dtype_name(y.dtype)),
                     std::string(dtype_name(g.dtype)));
  if (auto e = check_shape<Err>(g, "grad_output", {sig.combine.slots.shape[0], y.shape[1]}, "[tokens, hidden]"))
    return e;
  return check_device<Err>(g, "grad_output", y, "expert_output");
}

std::optional<MoeError> check_dispatch_backward(const DispatchBackwardSignature& sig) {
  const MoeOperand& d = sig.drows;
  if (auto e = check_float<Err>(d, "drows")) return e;
  if (d.shape.size() != 2)
    return fail<Err>(ErrorKind::ShapeMismatch, "drows", "rank 2 [tokens x top_k, hidden]", shape_to_string(d.shape));
  if (d.shape[1] == 0) return fail<Err>(ErrorKind::EmptyDimension, "drows", "hidden > 0", shape_to_string(d.shape));
  const MoeOperand& s = sig.slots;
  if (s.dtype != DType::U32 || s.shape.size() != 2)
    return fail<Err>(s.dtype != DType::U32 ? ErrorKind::UnsupportedDType : ErrorKind::ShapeMismatch, "slots",
                     "u32 [tokens, top_k]", fmt::format("{} {}", dtype_name(s.dtype), shape_to_string(s.shape)));
  const std::int64_t t = s.shape[0], k = s.shape[1];
  if (known(t) && known(k) && known(d.shape[0]) && d.shape[0] != t * k)
    return fail<Err>(ErrorKind::ShapeMismatch, "drows",
                     fmt::format("[{}, hidden] (tokens x top_k = {} x {} rows)", t * k, t, k),
                     shape_to_string(d.shape));
  return check_device<Err>(s, "slots", d, "drows");
}

std::optional<MoeError> check_experts_backward(const ExpertsBackwardSignature& sig) {
  if (auto e = check_experts(sig.experts)) return e;
  const MoeOperand& rows = sig.experts.rows;
  const MoeOperand& d = sig.dexpert;
  if (auto e = check_float<Err>(d, "dexpert")) return e;
  if (d.dtype != rows.dtype)
    return fail<Err>(ErrorKind::UnsupportedDType, "dexpert",
                     fmt::format("{} (the experts' dtype)", dtype_name(rows.dtype)), std::string(dtype_name(d.dtype)));
  if (auto e = check_shape<Err>(d, "dexpert", rows.shape, "[rows, hidden], the dispatched rows' shape")) return e;
  if (auto e = check_device<Err>(d, "dexpert", rows, "rows")) return e;
  const MoeOperand& s = sig.slots;
  if (s.dtype != DType::U32 || s.shape.size() != 2)
    return fail<Err>(s.dtype != DType::U32 ? ErrorKind::UnsupportedDType : ErrorKind::ShapeMismatch, "slots",
                     "u32 [tokens, top_k]", fmt::format("{} {}", dtype_name(s.dtype), shape_to_string(s.shape)));
  if (known(s.shape[0]) && known(s.shape[1]) && known(rows.shape[0]) && s.shape[0] * s.shape[1] != rows.shape[0])
    return fail<Err>(ErrorKind::ShapeMismatch, "slots", fmt::format("tokens x top_k = {} (the rows)", rows.shape[0]),
                     shape_to_string(s.shape));
  return check_device<Err>(s, "slots", rows, "rows");
}

std::string describe_call(const RouterWeightsSignature& sig) {
  return fmt::format(
      "logits {} {}, indices {} {}{}, {}{}", shape_to_string(sig.logits.shape), dtype_name(sig.logits.dtype),
      shape_to_string(sig.indices.shape), dtype_name(sig.indices.dtype), sig.grad_weights ? ", grad_weights" : "",
      sig.scoring == RouterScore::Softmax ? "softmax" : "sigmoid", sig.renormalize ? " renormalized" : "");
}

}  // namespace rudnn::contracts
