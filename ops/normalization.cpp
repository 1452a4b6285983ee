// The public normalization entries: contract check → plan cache → (cold) compiler → launch.
// With the autotune component, the cold path hands the compiler an autotune ConfigProvider (the
// default Autotune strategy), and this file also tells autotune how to build and launch a
// normalization candidate (NormTuningProblem).
#include "rudnn/normalization.h"

#include <bit>
#include <cstring>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "contracts/normalization.h"
#include "entry.h"
#include "log.h"
#if RUDNN_HAS_AUTOTUNE
#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/tuner.h"
#endif

namespace rudnn::normalization {

namespace {

using contracts::NormKind;
using ops::as;

// Whether `t`, whose rows are `row_stride` elements apart, takes the kernel's vector loads and
// stores: a 16-byte aligned start (the heuristic then picks a width that divides h, so every dense
// row is aligned), and for a row-strided view a row stride of whole 16-byte units too.
bool aligned16(const Tensor& t, std::int64_t row_stride) {
  if ((reinterpret_cast<std::uintptr_t>(t.data()) & 15u) != 0) return false;
  return row_stride == t.shape().back() || static_cast<std::uint64_t>(row_stride) * dtype_size(t.dtype()) % 16 == 0;
}
bool aligned16(const Tensor& t) { return aligned16(t, t.shape().back()); }  // dense (gamma, beta)

// The rows bucket: the only runtime size a tuned normalization config depends on
// (autotune::normalization_search_space()); 0 when autotune is not asked.
std::int64_t rows_bucket([[maybe_unused]] const Shape& shape, [[maybe_unused]] std::int64_t mode_word) {
#if RUDNN_HAS_AUTOTUNE
  if (mode_word == 0) return 0;
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return autotune::anchor(rows);
#else
  return 0;
#endif
}

// One norm call into `into` (a caller's buffer, checked) or a fresh output.
Result<Tensor, NormalizationError> run(NormKind kind, const Tensor& input, const Tensor* gamma, const Tensor* beta,
                                       float epsilon, const Tensor* into = nullptr) {
  contracts::NormSignature sig;
  sig.kind = kind;
  sig.input = ops::operand(input);
  if (gamma) sig.gamma = ops::operand(*gamma);
  if (beta) sig.beta = ops::operand(*beta);
  sig.epsilon = epsilon;
  if (auto e = contracts::check_normalization(sig)) return *e;
  const char* input_name = kind == NormKind::Softmax ? "logits" : "input";
  // Layout only: the contract already put every operand on the input's device; a norm op reads
  // its parameters on the input's queue. The input and the output may be row-strided views.
  if (auto e = ops::check_layout(input, input_name, ops::Layout::Rows)) return as<NormalizationError>(*e);
  for (auto [t, name] : {std::pair{gamma, "gamma"}, {beta, "beta"}})
    if (t)
      if (auto e = ops::check_contiguous(*t, name)) return as<NormalizationError>(*e);
  if (into) {
    const ops::NamedTensor inputs[] = {{&input, input_name}, {gamma, "gamma"}, {beta, "beta"}};
    if (auto e = ops::check_output(*into, "out", input.shape(), input.dtype(), input, inputs, ops::Layout::Rows))
      return as<NormalizationError>(*e);
  }
  // Both layouts were accepted above, so each has a row stride. The kernel steps rows with 32-bit
  // strides (templates/rudnn/norm/row_norm.cuh); one row never steps.
  const std::int64_t input_stride = *input.row_stride();
  const std::int64_t out_stride = into ? *into->row_stride() : input.shape().back();
  const bool rows_step = input.numel() > input.shape().back();
  for (auto [stride, name] : {std::pair{input_stride, input_name}, {out_stride, "out"}})
    if (rows_step && stride > std::numeric_limits<std::int32_t>::max())
      return NormalizationError(ErrorKind::InvalidValue, name, "a row stride below 2^31 elements",
                                std::to_string(stride));

  const Device& device = input.device();
  // Misaligned buffers take the heuristic's vector width 1; autotune is not asked for them.
  const bool aligned = aligned16(input, input_stride) && (!gamma || aligned16(*gamma)) && (!beta || aligned16(*beta)) &&
                       (!into || aligned16(*into, out_stride));
  const std::int64_t mode = ops::autotune_mode_word(aligned);
  const ops::PlanKey key = ops::PlanKeyBuilder(contracts::norm_op_name(kind))
                               .add(input.dtype())
                               .add(input.shape().back())
                               .add(input.rank())  // the plan reads h as dim(rank − 1) of the input
                               .add(beta != nullptr)
                               .add(device)
                               .add(aligned)
                               .add_bits(epsilon)
                               .add(mode)
                               .add(rows_bucket(input.shape(), mode))
                               .key();
  auto plan =
      ops::cached_plan(key, input.queue(), ops::Tunable::Yes, mode != 0, [&](compiler::ConfigProvider* provider) {
        compiler::NormRequest request{sig, aligned, std::nullopt};
        request.provider = provider;
        return compiler::lower_normalization(request, ops::target_for(device));
      });
  if (!plan.ok()) return as<NormalizationError>(plan.error());
  auto out = ops::output_or(into, input.shape(), input.dtype(), input.queue());
  if (!out.ok()) return as<NormalizationError>(out.error());
  // Slots: input, [gamma, [beta]], output (beta's slot is kept, empty, for a layer_norm without one).
  Status<RuntimeError> launched = kind == NormKind::Softmax ? ops::launch(**plan, input.queue(), {&input, &*out})
                                  : kind == NormKind::RmsNorm
                                      ? ops::launch(**plan, input.queue(), {&input, gamma, &*out})
                                      : ops::launch(**plan, input.queue(), {&input, gamma, beta, &*out});
  if (!launched.ok()) return as<NormalizationError>(launched.error());
  return std::move(out.value());
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

namespace {
Status<NormalizationError> status_of(Result<Tensor, NormalizationError> r) {
  if (!r.ok()) return r.error();
  return {};
}
}  // namespace

Status<NormalizationError> layer_norm_into(const Tensor& input, const Tensor& gamma, const std::optional<Tensor>& beta,
                                           float epsilon, const Tensor& out) {
  return status_of(run(NormKind::LayerNorm, input, &gamma, beta ? &*beta : nullptr, epsilon, &out));
}

Status<NormalizationError> rms_norm_into(const Tensor& input, const Tensor& gamma, float epsilon, const Tensor& out) {
  return status_of(run(NormKind::RmsNorm, input, &gamma, nullptr, epsilon, &out));
}

Status<NormalizationError> softmax_last_axis_into(const Tensor& logits, const Tensor& out) {
  return status_of(run(NormKind::Softmax, logits, nullptr, nullptr, 0.0f, &out));
}

}  // namespace rudnn::normalization
