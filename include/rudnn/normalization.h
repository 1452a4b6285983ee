#pragma once
// Normalization along the last axis (SPEC §2). Statistics and affine math in FP32; the output has
// the input's shape and dtype. A rejected call returns a NormalizationError and writes nothing.
#include <optional>

#include "rudnn/error.h"
#include "rudnn/export.h"
#include "rudnn/tensor.h"

namespace rudnn::normalization {

using rudnn::NormalizationError;

// y = (x − mean) / sqrt(var + epsilon) · gamma + beta   (biased variance; beta optional)
RUDNN_API Result<Tensor, NormalizationError> layer_norm(const Tensor& input, const Tensor& gamma,
                                                        const std::optional<Tensor>& beta, float epsilon);
// y = x / sqrt(mean(x²) + epsilon) · gamma
RUDNN_API Result<Tensor, NormalizationError> rms_norm(const Tensor& input, const Tensor& gamma, float epsilon);
// y = exp(x − max) / Σ exp(x − max)
RUDNN_API Result<Tensor, NormalizationError> softmax_last_axis(const Tensor& logits);

// The same into a caller's buffer `out` (SPEC §13; e.g. a Tensor::view of an engine's memory): the
// input's shape and dtype, contiguous, on its device and queue, overlapping no input (not in place).
// A rejected call names `out` and writes nothing.
RUDNN_API Status<NormalizationError> layer_norm_into(const Tensor& input, const Tensor& gamma,
                                                     const std::optional<Tensor>& beta, float epsilon,
                                                     const Tensor& out);
RUDNN_API Status<NormalizationError> rms_norm_into(const Tensor& input, const Tensor& gamma, float epsilon,
                                                   const Tensor& out);
RUDNN_API Status<NormalizationError> softmax_last_axis_into(const Tensor& logits, const Tensor& out);

}  // namespace rudnn::normalization
