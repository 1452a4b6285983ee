// The normalization family (rudnn.layer_norm, rudnn.rms_norm, rudnn.softmax_last_axis) in the
// graph runner and rudnn-precompile.
#include "family.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/normalization.h"

namespace rudnn::ops {
namespace {

std::optional<RuntimeError> run(mlir::Operation& op, GraphValues& values) {
  const dialect::NormOpView norm = *dialect::asNormOp(&op);  // registered for exactly these ops
  const float epsilon = static_cast<float>(norm.epsilon);
  auto out = [&]() -> Result<Tensor, NormalizationError> {
    switch (norm.kind) {
      case contracts::NormKind::LayerNorm:
        return normalization::layer_norm(values[norm.input], values[norm.gamma], values.optional(norm.beta), epsilon);
      case contracts::NormKind::RmsNorm:
        return normalization::rms_norm(values[norm.input], values[norm.gamma], epsilon);
      case contracts::NormKind::Softmax: break;
    }
    return normalization::softmax_last_axis(values[norm.input]);
  }();
  if (!out.ok()) return op_error(out.error(), op);
  return values.bind(op.getResult(0), std::move(out.value()));
}

// The entry lowers once per (aligned, misaligned) buffer case and, under autotune, any config of
// the search space.
Result<std::vector<compiler::LoweredOp>, RuntimeError> kernels(mlir::Operation& op, const compiler::Target& target,
                                                               bool with_candidates, const std::string& where) {
  const dialect::NormOpView norm = *dialect::asNormOp(&op);
  if (auto e = require_static(norm.input, {-1}, where, "input")) return *e;
  contracts::NormSignature sig;
  sig.kind = norm.kind;
  sig.epsilon = norm.epsilon;
  sig.input = operand_of(norm.input);
  if (norm.gamma) sig.gamma = operand_of(norm.gamma);
  if (norm.beta) sig.beta = operand_of(norm.beta);
  std::vector<compiler::NormRequest> requests = {{sig, true, std::nullopt}, {sig, false, std::nullopt}};
  if (with_candidates)
    for (auto& config : compiler::normalization_variants(sig.kind, sig.input.dtype, sig.input.shape.back()))
      requests.push_back({sig, true, config});
  std::vector<compiler::LoweredOp> out;
  for (const auto& request : requests) {
    auto lowered = compiler::lower_normalization(request, target);
    if (!lowered.ok()) return lowered.error();
    out.push_back(std::move(lowered.value()));
  }
  return out;
}

const bool kRegistered =
    register_family({"normalization",
                     {dialect::LayerNormOp::getOperationName().str(), dialect::RmsNormOp::getOperationName().str(),
                      dialect::SoftmaxLastAxisOp::getOperationName().str()},
                     &run,
                     &kernels});

}  // namespace
}  // namespace rudnn::ops
