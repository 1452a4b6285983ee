#pragma once
// FP64 oracles of convolution (SPEC §6): direct loops, literally, in double. No code shared with the
// kernel templates. Channels-last over three spatial dims (1-D/2-D: leading extents 1):
//   input [N, D, H, W, C], weight [O, KD, KH, KW, C/G], bias [O] (empty = none), output [N, OD, OH, OW, O].
// Group g: output channels [g·O/G, (g+1)·O/G) read input channels [g·C/G, (g+1)·C/G).
#include <array>
#include <cstdint>
#include <vector>

namespace rudnn::reference {

struct ConvShape {
  std::int64_t batch = 1, channels = 1, out_channels = 1, groups = 1;
  std::array<std::int64_t, 3> input{1, 1, 1};   // D, H, W
  std::array<std::int64_t, 3> kernel{1, 1, 1};  // KD, KH, KW
  std::array<std::int64_t, 3> stride{1, 1, 1};
  std::array<std::int64_t, 3> padding{0, 0, 0};
  std::array<std::int64_t, 3> dilation{1, 1, 1};

  std::array<std::int64_t, 3> output() const;  // (in + 2p − d(k − 1) − 1) / s + 1 per dim
  std::int64_t input_elements() const;         // N·D·H·W·C
  std::int64_t weight_elements() const;        // O·KD·KH·KW·C/G
  std::int64_t output_elements() const;        // N·OD·OH·OW·O
};

// y = conv(x, w) + bias
std::vector<double> conv_forward(const std::vector<double>& input, const std::vector<double>& weight,
                                 const std::vector<double>& bias, const ConvShape& shape);
// dx = ∂(Σ y·dy)/∂x
std::vector<double> conv_data_backward(const std::vector<double>& grad_output, const std::vector<double>& weight,
                                       const ConvShape& shape);
// dw = ∂(Σ y·dy)/∂w
std::vector<double> conv_weight_backward(const std::vector<double>& input, const std::vector<double>& grad_output,
                                         const ConvShape& shape);
// db[o] = Σ over N and the output pixels of dy[..., o]
std::vector<double> conv_bias_backward(const std::vector<double>& grad_output, const ConvShape& shape);

// Channels-first ↔ channels-last of one [A, B, S] tensor: out[a, s, b] = in[a, b, s].
std::vector<double> swap_last_two(const std::vector<double>& in, std::int64_t a, std::int64_t b, std::int64_t s);

}  // namespace rudnn::reference
