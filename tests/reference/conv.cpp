#include "reference/conv.h"

namespace rudnn::reference {

std::array<std::int64_t, 3> ConvShape::output() const {
  std::array<std::int64_t, 3> out{};
  for (int d = 0; d < 3; ++d) out[d] = (input[d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1;
  return out;
}

std::int64_t ConvShape::input_elements() const { return batch * input[0] * input[1] * input[2] * channels; }

std::int64_t ConvShape::weight_elements() const {
  return out_channels * kernel[0] * kernel[1] * kernel[2] * (channels / groups);
}

std::int64_t ConvShape::output_elements() const {
  const auto o = output();
  return batch * o[0] * o[1] * o[2] * out_channels;
}

namespace {

// Calls f(x_index, w_index, y_index) for every (input, weight, output) triple that one multiply of
// the convolution touches: the one loop nest all four oracles share, so they are each other's adjoints.
template <class F>
void for_each_tap(const ConvShape& s, F&& f) {
  const auto out = s.output();
  const std::int64_t cg = s.channels / s.groups, og = s.out_channels / s.groups;
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t od = 0; od < out[0]; ++od)
      for (std::int64_t oh = 0; oh < out[1]; ++oh)
        for (std::int64_t ow = 0; ow < out[2]; ++ow)
          for (std::int64_t o = 0; o < s.out_channels; ++o) {
            const std::int64_t g = o / og;
            const std::int64_t y = (((n * out[0] + od) * out[1] + oh) * out[2] + ow) * s.out_channels + o;
            for (std::int64_t kd = 0; kd < s.kernel[0]; ++kd)
              for (std::int64_t kh = 0; kh < s.kernel[1]; ++kh)
                for (std::int64_t kw = 0; kw < s.kernel[2]; ++kw) {
                  const std::int64_t id = od * s.stride[0] - s.padding[0] + kd * s.dilation[0];
                  const std::int64_t ih = oh * s.stride[1] - s.padding[1] + kh * s.dilation[1];
                  const std::int64_t iw = ow * s.stride[2] - s.padding[2] + kw * s.dilation[2];
                  if (id < 0 || id >= s.input[0] || ih < 0 || ih >= s.input[1] || iw < 0 || iw >= s.input[2]) continue;
                  for (std::int64_t c = 0; c < cg; ++c) {
                    const std::int64_t x =
                        (((n * s.input[0] + id) * s.input[1] + ih) * s.input[2] + iw) * s.channels + g * cg + c;
                    const std::int64_t w = (((o * s.kernel[0] + kd) * s.kernel[1] + kh) * s.kernel[2] + kw) * cg + c;
                    f(x, w, y);
                  }
                }
          }
}

}  // namespace

std::vector<double> conv_forward(const std::vector<double>& input, const std::vector<double>& weight,
                                 const std::vector<double>& bias, const ConvShape& shape) {
  std::vector<double> out(static_cast<std::size_t>(shape.output_elements()), 0.0);
  if (!bias.empty())
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = bias[i % static_cast<std::size_t>(shape.out_channels)];
  for_each_tap(shape, [&](std::int64_t x, std::int64_t w, std::int64_t y) { out[y] += input[x] * weight[w]; });
  return out;
}

std::vector<double> conv_data_backward(const std::vector<double>& grad_output, const std::vector<double>& weight,
                                       const ConvShape& shape) {
  std::vector<double> dx(static_cast<std::size_t>(shape.input_elements()), 0.0);
  for_each_tap(shape, [&](std::int64_t x, std::int64_t w, std::int64_t y) { dx[x] += grad_output[y] * weight[w]; });
  return dx;
}

std::vector<double> conv_weight_backward(const std::vector<double>& input, const std::vector<double>& grad_output,
                                         const ConvShape& shape) {
  std::vector<double> dw(static_cast<std::size_t>(shape.weight_elements()), 0.0);
  for_each_tap(shape, [&](std::int64_t x, std::int64_t w, std::int64_t y) { dw[w] += grad_output[y] * input[x]; });
  return dw;
}

std::vector<double> conv_bias_backward(const std::vector<double>& grad_output, const ConvShape& shape) {
  std::vector<double> db(static_cast<std::size_t>(shape.out_channels), 0.0);
  for (std::size_t i = 0; i < grad_output.size(); ++i) db[i % db.size()] += grad_output[i];
  return db;
}

std::vector<double> swap_last_two(const std::vector<double>& in, std::int64_t a, std::int64_t b, std::int64_t s) {
  std::vector<double> out(in.size());
  for (std::int64_t i = 0; i < a; ++i)
    for (std::int64_t j = 0; j < b; ++j)
      for (std::int64_t k = 0; k < s; ++k) out[(i * s + k) * b + j] = in[(i * b + j) * s + k];
  return out;
}

}  // namespace rudnn::reference
