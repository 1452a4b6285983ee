#pragma once
// The convolution contracts of SPEC §6, written once over plain shapes and dtypes. The public entries
// (rudnn/convolution.h) and the dialect verifiers (rudnn.conv_forward & co) both call them, and the
// compiler reads the normalized geometry from here.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "contracts/operand.h"
#include "rudnn/convolution.h"

namespace rudnn::contracts {

// Limits that keep every size formula far from overflow and the unrolled filter loops sane.
inline constexpr std::int64_t kMaxConvKernelExtent = 64;  // per spatial dim
inline constexpr std::int64_t kMaxConvPadding = 1 << 20;
inline constexpr std::int64_t kMaxConvStride = 1 << 20;  // stride and dilation
// Channels and spatial extents (plan keys pack two per word).
inline constexpr std::int64_t kMaxConvExtent = (std::int64_t{1} << 31) - 1;

enum class ConvDirection { Forward, DataBackward, WeightBackward };

struct ConvParams {
  std::vector<std::int64_t> stride, padding, dilation;  // per spatial dim; empty = defaults
  std::int64_t groups = 1;
};

// One call. Which operands are tensors depends on the direction; the others carry only the shape
// the call gives (dtype and device unused):
//   Forward:        input, weight tensors; bias optional tensor
//   DataBackward:   grad_output, weight tensors; input = the requested grad_input shape
//   WeightBackward: input, grad_output tensors; weight = the requested grad_weight shape
struct ConvSignature {
  ConvDirection direction = ConvDirection::Forward;
  bool channels_last = false;
  Operand input, weight;
  std::optional<Operand> bias, grad_output;
  ConvParams params;
};

// The convolution normalized to three spatial dims, channels-last (1-D/2-D: leading extents 1,
// kernel 1, stride 1, padding 0, dilation 1) — exactly the numbers of rudnn::conv::Geometry.
struct ConvGeometry {
  std::int64_t batch = 0, channels = 0, out_channels = 0, groups = 1;
  int spatial_dims = 0;  // 1, 2 or 3 (before normalization)
  std::array<std::int64_t, 3> input{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1},
      output{1, 1, 1};
  std::int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
  std::int64_t input_pixels() const { return input[0] * input[1] * input[2]; }
  std::int64_t output_pixels() const { return output[0] * output[1] * output[2]; }
  bool depthwise() const { return groups == channels && groups > 1; }
};

// The first violated contract line, or nothing. Order: the tensors' dtypes (float, non-quantized,
// one dtype; bias f32 or the input dtype), ranks, extents (channels, groups, filter), options, the
// output extents (>= 1; for backward, grad_output's extents must be the forward's), bias shape,
// devices. Dynamic extents (kDynamic) pass the checks that need them.
std::optional<ConvSetupError> check_conv(const ConvSignature& sig);

// The normalized geometry of a call that passed check_conv with static extents but the batch
// (kDynamic batch stays kDynamic).
ConvGeometry conv_geometry(const ConvSignature& sig);

// The forward output shape (grad_output's shape) in the call's layout.
Shape conv_output_shape(const ConvSignature& sig);

// The call as plain words for autotune keys (everything but the dtypes and the batch): direction,
// layout, groups, bias_grad, the bias dtype (0 none, 1 + dtype), each option list and each shape
// (input, weight; batch left out) with its length first. conv_signature_from_key inverts it.
std::vector<std::int64_t> conv_key_words(const ConvSignature& sig, bool bias_grad);
std::optional<ConvSignature> conv_signature_from_key(const std::vector<std::int64_t>& words, DType dtype,
                                                     std::int64_t batch, bool* bias_grad);

// "input [2, 64, 56, 56] bf16, weight [64, 64, 3, 3] bf16, stride [1, 1], padding [1, 1], ..."
std::string describe_call(const ConvSignature& sig);

}  // namespace rudnn::contracts
