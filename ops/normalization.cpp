// The public normalization entries: contract check → plan cache → (cold) compiler → launch.
#include "rudnn/normalization.h"

#include <bit>
#include <cstring>

#include "contracts/normalization.h"
#include "plan_cache.h"

namespace rudnn::normalization {

namespace {

using contracts::NormKind;

// "Same device" identity for the contract: kind and ordinal.
int device_id(const Device& d) { return d.kind() == DeviceKind::Host ? -1 : d.ordinal(); }

contracts::NormOperand operand(const Tensor& t) { return {t.shape(), t.dtype(), device_id(t.device())}; }

std::optional<NormalizationError> check_layout(const Tensor& t, const char* name) {
  if (!t.is_contiguous())
    return NormalizationError(ErrorKind::ShapeMismatch, name, "a contiguous tensor", "strides " + shape_to_string(t.strides()));
  return std::nullopt;
}

bool aligned16(const Tensor& t) { return (reinterpret_cast<std::uintptr_t>(t.data()) & 15u) == 0; }

Result<Tensor, NormalizationError> run(NormKind kind, const Tensor& input, const Tensor* gamma, const Tensor* beta,
                                       float epsilon) {
  contracts::NormSignature sig;
  sig.kind = kind;
  sig.input = operand(input);
  if (gamma) sig.gamma = operand(*gamma);
  if (beta) sig.beta = operand(*beta);
  sig.epsilon = epsilon;
  if (auto e = contracts::check_normalization(sig)) return *e;
  const char* input_name = kind == NormKind::Softmax ? "logits" : "input";
  if (auto e = check_layout(input, input_name)) return *e;
  if (gamma)
    if (auto e = check_layout(*gamma, "gamma")) return *e;
  if (beta)
    if (auto e = check_layout(*beta, "beta")) return *e;

  const Device& device = input.device();
  bool aligned = aligned16(input) && (!gamma || aligned16(*gamma)) && (!beta || aligned16(*beta));

  ops::PlanKey key;
  key.words = {static_cast<std::int64_t>(kind), static_cast<std::int64_t>(input.dtype()), input.shape().back(),
               beta != nullptr, static_cast<std::int64_t>(device.kind()), device.ordinal(), aligned,
               static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(epsilon)), 0, 0};
  auto& cache = ops::PlanCache::instance();
  std::shared_ptr<const ops::Plan> plan = cache.find(key);
  if (!plan) {
    compiler::NormRequest request{sig, aligned, std::nullopt};
    auto lowered = compiler::lower_normalization(request, ops::target_for(device));
    if (!lowered.ok()) return NormalizationError::from(lowered.error());
    auto built = ops::build_plan(device, lowered.value());
    if (!built.ok()) return NormalizationError::from(built.error());
    plan = built.value();
    cache.insert(key, plan);
  }

  auto output = Tensor::empty(input.shape(), input.dtype(), input.queue());
  if (!output.ok()) return NormalizationError::from(output.error());
  if (ops::poison_outputs())
    if (auto s = output->poison(); !s.ok()) return NormalizationError::from(s.error());
  const Shape& shape = input.shape();
  // Operand slots as the lowering numbers them: input, [gamma, [beta]], output.
  std::array<ops::OperandView, 4> views{};
  std::size_t n = 0;
  views[n++] = {input.data(), &shape};
  if (kind != NormKind::Softmax) {
    views[n++] = {gamma->data(), &gamma->shape()};
    if (kind == NormKind::LayerNorm) views[n++] = {beta ? beta->data() : nullptr, beta ? &beta->shape() : nullptr};
  }
  views[n++] = {output->data(), &output->shape()};
  if (auto s = ops::run_plan(*plan, input.queue(), std::span(views.data(), n)); !s.ok())
    return NormalizationError::from(s.error());
  return std::move(output.value());
}

}  // namespace

Result<Tensor, NormalizationError> layer_norm(const Tensor& input, const Tensor& gamma,
                                              const std::optional<Tensor>& beta, float epsilon) {
  return run(NormKind::LayerNorm, input, &gamma, beta ? &*beta : nullptr, epsilon);
}

Result<Tensor, NormalizationError> rms_norm(const Tensor& input, const Tensor& gamma, float epsilon) {
  return run(NormKind::RmsNorm, input, &gamma, nullptr, epsilon);
}

Result<Tensor, NormalizationError> softmax_last_axis(const Tensor& logits) {
  return run(NormKind::Softmax, logits, nullptr, nullptr, 0.0f);
}

}  // namespace rudnn::normalization
