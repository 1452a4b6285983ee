#pragma once
// The contract of SPEC §2, written once over plain shapes and dtypes. The public entries
// (ops/normalization.cpp) and the dialect verifiers (dialect/IR) both call it.
#include <optional>

#include "contracts/operand.h"
#include "rudnn/dtype.h"
#include "rudnn/error.h"
#include "rudnn/tensor.h"

namespace rudnn::contracts {

enum class NormKind { LayerNorm, RmsNorm, Softmax };
std::string_view norm_op_name(NormKind kind);  // "layer_norm", "rms_norm", "softmax_last_axis"

using NormOperand = Operand;  // the one operand type (contracts/operand.h)

struct NormSignature {
  NormKind kind = NormKind::LayerNorm;
  NormOperand input;                 // `logits` for softmax
  std::optional<NormOperand> gamma;  // layer_norm, rms_norm
  std::optional<NormOperand> beta;   // layer_norm only, optional
  double epsilon = 1e-5;             // layer_norm, rms_norm
};

// The call in words, for errors that must name its shapes (e.g. JitDisabled):
// "input [16, 4096] bf16, gamma [4096] f32, beta [4096] f32". A dynamic extent prints as -1.
std::string describe_call(const NormSignature& sig);

// The first violated contract line, or nothing.
std::optional<NormalizationError> check_normalization(const NormSignature& sig);

}  // namespace rudnn::contracts
