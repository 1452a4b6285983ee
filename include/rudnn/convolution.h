#pragma once
// Convolution (SPEC §6): forward, data backward and weight backward over 1, 2 or 3 spatial dims,
// channels-first (N, C, spatial...) or channels-last (N, spatial..., C), f32/f16/bf16 with FP32
// accumulation. Every kernel runs channels-last; the channels-first entries convert their inputs to
// channels-last, run, and convert the result back (docs/convolution.md).
//
// The strategy is a preference: the library substitutes where the preferred path cannot serve the
// call (3-D f32 and grouped ImplicitGemm run Direct, as the guide says) and reports what actually ran
// in ConvInfo for every call, and at RUDNN_LOG=info. Results are deterministic: same inputs, same
// bits, run to run (no floating-point atomics). A rejected call returns a ConvSetupError naming the
// argument, the expected and the actual value, and writes nothing.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rudnn/error.h"
#include "rudnn/export.h"
#include "rudnn/tensor.h"

namespace rudnn {
struct ConvSetupErrorTag {};
using ConvSetupError = FamilyError<ConvSetupErrorTag>;
}  // namespace rudnn

namespace rudnn::convolution {

using rudnn::ConvSetupError;

// Per spatial dim (as many entries as the convolution has spatial dims; empty = the default for
// every dim: stride 1, padding 0, dilation 1). Padding is symmetric (each side).
struct ConvOptions {
  std::vector<std::int64_t> stride, padding, dilation;
  std::int64_t groups = 1;
};

enum class ConvStrategy {
  Direct,        // plain-core direct convolution (depthwise: a tiled kernel reading each input once per tile)
  ImplicitGemm,  // a GEMM with the im2col gather in the mainloop; tensor cores for f16/bf16
  Autotune,      // the fastest path and tile that fits, measured and cached per shape, dtype and device
};

// What ran. `substituted` with `reason` when it is not the requested strategy.
enum class ConvAlgorithm { Direct, Depthwise, ImplicitGemm, ImplicitGemmTensorCore };
struct ConvInfo {
  ConvAlgorithm algorithm = ConvAlgorithm::Direct;
  std::string tile;  // the kernel config ("algorithm=2,bm=128,...")
  // Device temporaries of the call (layout copies, split sums): the bytes a caller's workspace for
  // the same call needs (the *_into entries' `workspace`).
  std::int64_t workspace_bytes = 0;
  bool substituted = false;
  std::string reason;  // why, when substituted
};
RUDNN_API const char* algorithm_name(ConvAlgorithm algorithm);  // "direct", "depthwise", ...

// Autotune when the library has the autotune component, else ImplicitGemm.
RUDNN_API ConvStrategy default_strategy();

// input [N, C, spatial...], weight [O, C/groups, k...], bias [O] (f32 or the input dtype) → [N, O, out...]
// with out = (in + 2·padding − dilation·(k − 1) − 1) / stride + 1 ≥ 1 per dim.
RUDNN_API Result<Tensor, ConvSetupError> conv_forward(const Tensor& input, const Tensor& weight,
                                                      const std::optional<Tensor>& bias, const ConvOptions& options,
                                                      ConvStrategy strategy = default_strategy(),
                                                      ConvInfo* info = nullptr);
// input [N, spatial..., C], weight [O, k..., C/groups], bias [O] → [N, out..., O].
RUDNN_API Result<Tensor, ConvSetupError> conv_forward_nhwc(const Tensor& input, const Tensor& weight,
                                                           const std::optional<Tensor>& bias,
                                                           const ConvOptions& options,
                                                           ConvStrategy strategy = default_strategy(),
                                                           ConvInfo* info = nullptr);

enum class ConvLayout { ChannelsFirst, ChannelsLast };

// grad_input of the forward with `input_shape`: grad_output [N, O, out...] and weight [O, C/groups,
// k...] (channels-last: [N, out..., O], [O, k..., C/groups]) → [input_shape] in the grad_output dtype.
RUDNN_API Result<Tensor, ConvSetupError> conv_data_backward(const Tensor& grad_output, const Tensor& weight,
                                                            const Shape& input_shape, const ConvOptions& options,
                                                            ConvStrategy strategy = default_strategy(),
                                                            ConvLayout layout = ConvLayout::ChannelsFirst,
                                                            ConvInfo* info = nullptr);

struct ConvWeightGrads {
  Tensor grad_weight;               // weight_shape, in the input dtype
  std::optional<Tensor> grad_bias;  // f32 [O], when asked
};
// grad_weight (and grad_bias) of the forward with weight `weight_shape`: input [N, C, spatial...],
// grad_output [N, O, out...] (channels-last: [N, spatial..., C], [N, out..., O]).
RUDNN_API Result<ConvWeightGrads, ConvSetupError> conv_weight_backward(
    const Tensor& input, const Tensor& grad_output, const Shape& weight_shape, const ConvOptions& options,
    bool with_bias_grad = false, ConvStrategy strategy = default_strategy(),
    ConvLayout layout = ConvLayout::ChannelsFirst, ConvInfo* info = nullptr);

// The same into caller buffers (SPEC §13): each the allocating call's result shape and dtype,
// contiguous, on the input's device and queue, overlapping no input (nor each other). A rejected
// call names the buffer (out, grad_input, grad_weight, grad_bias) and writes nothing. The weight
// gradient's bias gradient is computed when grads.grad_bias holds a buffer. With `workspace` (a
// caller's buffer: contiguous, on the input's device and queue, overlapping no input and no output)
// the call's temporaries come from it and the call allocates nothing; it must hold the
// ConvInfo::workspace_bytes of the same call (e.g. the warm-up's), else InvalidValue naming it.
RUDNN_API Status<ConvSetupError> conv_forward_into(const Tensor& input, const Tensor& weight,
                                                   const std::optional<Tensor>& bias, const ConvOptions& options,
                                                   const Tensor& out, ConvStrategy strategy = default_strategy(),
                                                   ConvInfo* info = nullptr, const Tensor* workspace = nullptr);
RUDNN_API Status<ConvSetupError> conv_forward_nhwc_into(const Tensor& input, const Tensor& weight,
                                                        const std::optional<Tensor>& bias, const ConvOptions& options,
                                                        const Tensor& out, ConvStrategy strategy = default_strategy(),
                                                        ConvInfo* info = nullptr, const Tensor* workspace = nullptr);
RUDNN_API Status<ConvSetupError> conv_data_backward_into(const Tensor& grad_output, const Tensor& weight,
                                                         const Shape& input_shape, const ConvOptions& options,
                                                         const Tensor& grad_input,
                                                         ConvStrategy strategy = default_strategy(),
                                                         ConvLayout layout = ConvLayout::ChannelsFirst,
                                                         ConvInfo* info = nullptr, const Tensor* workspace = nullptr);
RUDNN_API Status<ConvSetupError> conv_weight_backward_into(const Tensor& input, const Tensor& grad_output,
                                                           const Shape& weight_shape, const ConvOptions& options,
                                                           const ConvWeightGrads& grads,
                                                           ConvStrategy strategy = default_strategy(),
                                                           ConvLayout layout = ConvLayout::ChannelsFirst,
                                                           ConvInfo* info = nullptr, const Tensor* workspace = nullptr);

}  // namespace rudnn::convolution
