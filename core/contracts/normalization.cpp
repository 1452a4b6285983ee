#include "contracts/normalization.h"

#include <cmath>
#include <fmt/format.h>

namespace rudnn::contracts {

std::string_view norm_op_name(NormKind kind) {
  switch (kind) {
    case NormKind::LayerNorm: return "layer_norm";
    case NormKind::RmsNorm: return "rms_norm";
    case NormKind::Softmax: return "softmax_last_axis";
  }
  return "?";
}

namespace {

std::optional<NormalizationError> check_affine(const NormOperand& p, std::string_view name, const NormOperand& input,
                                               std::int64_t h) {
  std::string arg(name);
  if (is_quantized(p.dtype))
    return fail<NormalizationError>(ErrorKind::QuantizedDType, arg, "non-quantized f32",
                                    std::string(dtype_name(p.dtype)));
  if (p.dtype != DType::F32)
    return fail<NormalizationError>(ErrorKind::UnsupportedDType, arg, "f32", std::string(dtype_name(p.dtype)));
  bool shape_ok = p.shape.size() == 1 && (h == kDynamic || p.shape[0] == kDynamic || p.shape[0] == h);
  if (!shape_ok)
    return fail<NormalizationError>(
        ErrorKind::ShapeMismatch, arg,
        fmt::format("shape [{}] (the last dim of input)", h == kDynamic ? "H" : std::to_string(h)),
        shape_to_string(p.shape));
  if (p.device != input.device)
    return fail<NormalizationError>(ErrorKind::DeviceMismatch, arg,
                                    fmt::format("the input's device ({})", input.device),
                                    fmt::format("device {}", p.device));
  return std::nullopt;
}

}  // namespace

std::optional<NormalizationError> check_normalization(const NormSignature& sig) {
  const std::string input_name = sig.kind == NormKind::Softmax ? "logits" : "input";
  const NormOperand& x = sig.input;
  if (is_quantized(x.dtype))
    return fail<NormalizationError>(ErrorKind::QuantizedDType, input_name, "non-quantized f32, f16 or bf16",
                                    std::string(dtype_name(x.dtype)));
  if (!is_float(x.dtype))
    return fail<NormalizationError>(ErrorKind::UnsupportedDType, input_name, "f32, f16 or bf16",
                                    std::string(dtype_name(x.dtype)));
  if (x.shape.empty())
    return fail<NormalizationError>(ErrorKind::ShapeMismatch, input_name, "rank >= 1", "a rank-0 tensor");
  const std::int64_t h = x.shape.back();
  if (h == 0)
    return fail<NormalizationError>(ErrorKind::EmptyDimension, input_name, "last dim > 0", shape_to_string(x.shape));
  if (sig.kind == NormKind::Softmax) return std::nullopt;

  if (!sig.gamma) return fail<NormalizationError>(ErrorKind::ShapeMismatch, "gamma", "a tensor of shape [H]", "none");
  if (auto e = check_affine(*sig.gamma, "gamma", x, h)) return e;
  if (sig.beta) {
    if (sig.kind != NormKind::LayerNorm)
      return fail<NormalizationError>(ErrorKind::InvalidValue, "beta", "no beta for rms_norm", "a beta tensor");
    if (auto e = check_affine(*sig.beta, "beta", x, h)) return e;
  }
  if (!std::isfinite(sig.epsilon) || !(sig.epsilon > 0))
    return fail<NormalizationError>(ErrorKind::InvalidValue, "epsilon", "finite and > 0",
                                    fmt::format("{}", sig.epsilon));
  return std::nullopt;
}

std::string describe_call(const NormSignature& sig) {
  auto one = [](std::string_view name, const NormOperand& o) {
    return std::string(name) + " " + shape_to_string(o.shape) + " " + std::string(dtype_name(o.dtype));
  };
  std::string s = one(sig.kind == NormKind::Softmax ? "logits" : "input", sig.input);
  if (sig.gamma) s += ", " + one("gamma", *sig.gamma);
  if (sig.beta) s += ", " + one("beta", *sig.beta);
  return s;
}

}  // namespace rudnn::contracts
