// Convolution on a real GPU against the FP64 oracles of tests/reference/conv.h: forward, data and
// weight backward, channels-last, for Direct (incl. depthwise) and ImplicitGemm (tensor cores for
// bf16/f16, plain cores for f32), on a ResNet-like 3×3 layer, a strided 7×7 stem, a 1×1 layer, a
// depthwise 3×3, a grouped layer, a 3-D 3×3×3 layer and a 7×7×512 stage at batch 2 (split-K);
// weight backward twice gives the same bits.
// Every test prints SKIP without a CUDA device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "../ops/op_test_util.h"
#include "gpu_test_util.h"
#include "reference/conv.h"
#include "rudnn/convolution.h"

namespace rudnn {
namespace {

using convolution::ConvStrategy;
using testing::host_values;

class ConvOnGpu : public testing::GpuTest {};

struct Layer {
  const char* name;
  int dims;
  std::int64_t n, c, o, groups;
  std::array<std::int64_t, 3> in, k, stride, pad;
};

Shape with(std::int64_t n, const std::array<std::int64_t, 3>& sp, int dims, std::int64_t ch) {
  Shape s = {n};
  for (int d = 3 - dims; d < 3; ++d) s.push_back(sp[d]);
  s.push_back(ch);
  return s;
}

void check_layer(const Layer& l, DType dtype, ConvStrategy strategy, const Device& device) {
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE(fmt::format("{} {} {} seed {}", l.name, dtype_name(dtype),
                           strategy == ConvStrategy::Direct ? "direct" : "implicit_gemm", seed));
  std::mt19937_64 rng(seed);
  reference::ConvShape s;
  s.batch = l.n;
  s.channels = l.c;
  s.out_channels = l.o;
  s.groups = l.groups;
  s.input = l.in;
  s.kernel = l.k;
  s.stride = l.stride;
  s.padding = l.pad;
  const auto out = s.output();
  convolution::ConvOptions options;
  for (int d = 3 - l.dims; d < 3; ++d) {
    options.stride.push_back(l.stride[d]);
    options.padding.push_back(l.pad[d]);
    options.dilation.push_back(1);
  }
  options.groups = l.groups;
  auto x = testing::random_values(static_cast<std::size_t>(s.input_elements()), dtype, rng, -1, 1);
  auto w = testing::random_values(static_cast<std::size_t>(s.weight_elements()), dtype, rng, -0.5, 0.5);
  auto dy = testing::random_values(static_cast<std::size_t>(s.output_elements()), dtype, rng, -1, 1);
  const Shape xs = with(l.n, l.in, l.dims, l.c), ws = with(l.o, l.k, l.dims, l.c / l.groups),
              ys = with(l.n, out, l.dims, l.o);
  const Tensor xt = testing::upload(xs, dtype, x, device), wt = testing::upload(ws, dtype, w, device),
               dyt = testing::upload(ys, dtype, dy, device);
  const double tol = 2 * testing::tolerance(dtype);
  auto y = convolution::conv_forward_nhwc(xt, wt, std::nullopt, options, strategy);
  ASSERT_TRUE(y.ok()) << y.error().message();
  EXPECT_LE(testing::relative_l2(host_values(*y), reference::conv_forward(x, w, {}, s)), tol);
  auto dx = convolution::conv_data_backward(dyt, wt, xs, options, strategy, convolution::ConvLayout::ChannelsLast);
  ASSERT_TRUE(dx.ok()) << dx.error().message();
  EXPECT_LE(testing::relative_l2(host_values(*dx), reference::conv_data_backward(dy, w, s)), tol);
  std::vector<double> first;
  for (int run = 0; run < 2; ++run) {
    auto dw =
        convolution::conv_weight_backward(xt, dyt, ws, options, true, strategy, convolution::ConvLayout::ChannelsLast);
    ASSERT_TRUE(dw.ok()) << dw.error().message();
    const auto got = host_values(dw->grad_weight);
    if (run == 0) {
      EXPECT_LE(testing::relative_l2(got, reference::conv_weight_backward(x, dy, s)), tol);
      EXPECT_LE(testing::relative_l2(host_values(*dw->grad_bias), reference::conv_bias_backward(dy, s)), 1e-5);
      first = got;
    } else {
      EXPECT_EQ(got, first) << "weight backward is not deterministic";
    }
  }
}

const Layer kLayers[] = {
    {"resnet 3x3", 2, 4, 64, 64, 1, {1, 28, 28}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}},
    {"stem 7x7 s2", 2, 2, 3, 64, 1, {1, 45, 47}, {1, 7, 7}, {1, 2, 2}, {0, 3, 3}},
    {"1x1 s2", 2, 4, 128, 256, 1, {1, 14, 14}, {1, 1, 1}, {1, 2, 2}, {0, 0, 0}},
    {"odd channels", 2, 3, 13, 29, 1, {1, 11, 9}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}},
    {"3-D 3x3x3", 3, 2, 16, 32, 1, {6, 12, 12}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}},
    // Few output tiles: the forward and data backward split K (18 splits of 144 K blocks at bf16).
    {"7x7x512 split-K", 2, 2, 512, 512, 1, {1, 7, 7}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}},
};

TEST_F(ConvOnGpu, ImplicitGemmMatchesTheOracle) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (const Layer& l : kLayers) check_layer(l, dtype, ConvStrategy::ImplicitGemm, device_);
}

TEST_F(ConvOnGpu, DirectMatchesTheOracle) {
  const Layer depthwise = {"depthwise 3x3", 2, 4, 64, 64, 64, {1, 30, 30}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}};
  const Layer grouped = {"grouped 4", 2, 2, 32, 64, 4, {1, 15, 15}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}};
  for (DType dtype : {DType::BF16, DType::F32}) {
    check_layer(depthwise, dtype, ConvStrategy::Direct, device_);
    check_layer(grouped, dtype, ConvStrategy::Direct, device_);
    check_layer(kLayers[0], dtype, ConvStrategy::Direct, device_);
    check_layer(kLayers[4], dtype, ConvStrategy::Direct, device_);
  }
}

// Small, for compute-sanitizer (scripts/gpu-check runs *Sanitized* under memcheck and racecheck).
TEST_F(ConvOnGpu, SanitizedSmall) {
  const Layer l = {"small", 2, 2, 16, 16, 1, {1, 9, 9}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}};
  check_layer(l, DType::BF16, ConvStrategy::ImplicitGemm, device_);
  // Split-K forward and data backward (9 and 2 splits) and their reduce.
  const Layer split = {"small split-K", 2, 2, 256, 64, 1, {1, 4, 4}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}};
  check_layer(split, DType::BF16, ConvStrategy::ImplicitGemm, device_);
  check_layer(l, DType::F32, ConvStrategy::Direct, device_);
}

}  // namespace
}  // namespace rudnn
