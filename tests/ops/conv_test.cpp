// Convolution through the public entries (conv_forward, conv_forward_nhwc, conv_data_backward,
// conv_weight_backward) on the host emulation device against the FP64 oracles
// (tests/reference/conv.h, themselves checked against central differences of the forward here):
// 1-D/2-D/3-D, strides 1/2/3, padding 0..k, dilation 1/2, groups 1/2/C, kernels 1x1, 3x3, 7x7, 1-D
// k=4, 3-D 3x3x3, odd extents, N = 1 and N > 1, bias absent/f32/input dtype, every dtype and strategy;
// channels-first = channels-last (bit for bit: the same kernels on swapped data); Direct =
// ImplicitGemm to rounding; what ran (ConvInfo) and the documented substitutions; determinism
// under both thread orders; every contract line rejected with nothing launched. Outputs poisoned.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "contract_fixture.h"
#include "device_limits.h"
#include "host/emulator.h"
#include "jit.h"
#include "op_test_util.h"
#include "reference/conv.h"
#include "rudnn/autotune.h"
#include "rudnn/convolution.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using convolution::ConvAlgorithm;
using convolution::ConvInfo;
using convolution::ConvLayout;
using convolution::ConvOptions;
using convolution::ConvStrategy;
using runtime::host::Schedule;
using testing::fresh_seed;
using testing::host_values;
using testing::relative_l2;

struct Case {
  const char* name;
  int dims;  // spatial dims
  std::int64_t n, c, o, groups;
  std::array<std::int64_t, 3> in, k, stride, pad, dil;  // the last `dims` entries are used
  int bias;                                             // 0 none, 1 f32, 2 the input dtype
  DType dtype;
};

// The cases of the matrix, each at one dtype (the dtypes rotate so each meets every kind of
// case) to keep the emulator's compile count small.
const Case kCases[] = {
    {"k3_s1_p1_nhwc", 2, 2, 8, 8, 1, {1, 9, 7}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 1, DType::BF16},
    {"k1_pointwise", 2, 3, 16, 8, 1, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 0, DType::F16},
    {"k7_s2_p3", 2, 1, 3, 8, 1, {1, 15, 13}, {1, 7, 7}, {1, 2, 2}, {0, 3, 3}, {1, 1, 1}, 2, DType::F32},
    {"k3_s3_p0_dil2", 2, 2, 4, 6, 1, {1, 17, 16}, {1, 3, 3}, {1, 3, 3}, {0, 0, 2}, {1, 2, 2}, 2, DType::BF16},
    {"grouped2", 2, 2, 8, 6, 2, {1, 7, 9}, {1, 3, 3}, {1, 2, 1}, {0, 1, 0}, {1, 1, 1}, 1, DType::F16},
    {"depthwise", 2, 2, 8, 8, 8, {1, 11, 10}, {1, 3, 3}, {1, 1, 2}, {0, 1, 1}, {1, 1, 1}, 1, DType::F32},
    {"depthwise_mult2", 2, 1, 4, 8, 4, {1, 9, 9}, {1, 5, 5}, {1, 2, 2}, {0, 2, 2}, {1, 1, 1}, 0, DType::BF16},
    {"one_d_k4", 1, 3, 6, 5, 1, {1, 1, 19}, {1, 1, 4}, {1, 1, 2}, {0, 0, 2}, {1, 1, 1}, 1, DType::F32},
    {"three_d", 3, 2, 4, 4, 1, {5, 6, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 0}, {1, 1, 1}, 1, DType::BF16},
    {"three_d_f32_s2", 3, 1, 3, 4, 1, {7, 5, 6}, {3, 3, 3}, {2, 1, 2}, {1, 1, 1}, {1, 1, 1}, 0, DType::F32},
    {"pad_equals_k", 2, 1, 4, 4, 1, {1, 4, 5}, {1, 3, 3}, {1, 1, 1}, {0, 3, 3}, {1, 1, 1}, 0, DType::F16},
};

reference::ConvShape shape_of(const Case& c) {
  reference::ConvShape s;
  s.batch = c.n;
  s.channels = c.c;
  s.out_channels = c.o;
  s.groups = c.groups;
  s.input = c.in;
  s.kernel = c.k;
  s.stride = c.stride;
  s.padding = c.pad;
  s.dilation = c.dil;
  return s;
}

ConvOptions options_of(const Case& c) {
  ConvOptions o;
  for (int d = 3 - c.dims; d < 3; ++d) {
    o.stride.push_back(c.stride[d]);
    o.padding.push_back(c.pad[d]);
    o.dilation.push_back(c.dil[d]);
  }
  o.groups = c.groups;
  return o;
}

// [N, spatial..., C] / [N, C, spatial...] of an activation with `channels` and 3-D extents `sp`.
Shape activation(const Case& c, std::int64_t channels, const std::array<std::int64_t, 3>& sp, bool last) {
  Shape s = {c.n};
  if (!last) s.push_back(channels);
  for (int d = 3 - c.dims; d < 3; ++d) s.push_back(sp[d]);
  if (last) s.push_back(channels);
  return s;
}
Shape weight_shape(const Case& c, bool last) {
  Shape s = {c.o};
  if (!last) s.push_back(c.c / c.groups);
  for (int d = 3 - c.dims; d < 3; ++d) s.push_back(c.k[d]);
  if (last) s.push_back(c.c / c.groups);
  return s;
}

// Channels-last values (the oracle's layout) → channels-first.
std::vector<double> to_first(const std::vector<double>& v, std::int64_t outer, std::int64_t pixels, std::int64_t ch) {
  return reference::swap_last_two(v, outer, pixels, ch);
}

struct Data {
  reference::ConvShape shape;
  std::vector<double> x, w, bias, dy;
};

Data make(const Case& c, std::mt19937_64& rng) {
  Data d;
  d.shape = shape_of(c);
  d.x = testing::random_values(static_cast<std::size_t>(d.shape.input_elements()), c.dtype, rng, -1, 1);
  d.w = testing::random_values(static_cast<std::size_t>(d.shape.weight_elements()), c.dtype, rng, -1, 1);
  if (c.bias) d.bias = testing::random_values(static_cast<std::size_t>(c.o), c.bias == 1 ? DType::F32 : c.dtype, rng);
  d.dy = testing::random_values(static_cast<std::size_t>(d.shape.output_elements()), c.dtype, rng, -1, 1);
  return d;
}

class Conv : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

std::int64_t pixels(const std::array<std::int64_t, 3>& e) { return e[0] * e[1] * e[2]; }

TEST_P(Conv, ForwardMatchesTheOracleInBothLayoutsAndStrategies) {
  const Case& c = GetParam();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("{} {} seed {}", c.name, dtype_name(c.dtype), seed));
  std::mt19937_64 rng(seed);
  const Data d = make(c, rng);
  const auto want = reference::conv_forward(d.x, d.w, d.bias, d.shape);
  const auto out = d.shape.output();
  const Device host = Device::host();
  const Tensor x_last = testing::upload(activation(c, c.c, c.in, true), c.dtype, d.x, host);
  const Tensor w_last = testing::upload(weight_shape(c, true), c.dtype, d.w, host);
  const Tensor x_first =
      testing::upload(activation(c, c.c, c.in, false), c.dtype, to_first(d.x, c.n, pixels(c.in), c.c), host);
  const Tensor w_first =
      testing::upload(weight_shape(c, false), c.dtype, to_first(d.w, c.o, pixels(c.k), c.c / c.groups), host);
  std::optional<Tensor> bias;
  if (c.bias) bias = testing::upload({c.o}, c.bias == 1 ? DType::F32 : c.dtype, d.bias, host);
  std::vector<double> direct;
  for (ConvStrategy strategy : {ConvStrategy::Direct, ConvStrategy::ImplicitGemm}) {
    SCOPED_TRACE(strategy == ConvStrategy::Direct ? "direct" : "implicit_gemm");
    ConvInfo info;
    auto y = convolution::conv_forward_nhwc(x_last, w_last, bias, options_of(c), strategy, &info);
    ASSERT_TRUE(y.ok()) << y.error().message();
    EXPECT_EQ(y->shape(), activation(c, c.o, out, true));
    const auto got = host_values(*y);
    EXPECT_LE(relative_l2(got, want), testing::tolerance(c.dtype));
    // What ran: the preference or a documented substitution.
    const bool grouped = c.groups > 1, f32_3d = c.dtype == DType::F32 && c.dims == 3;
    if (strategy == ConvStrategy::ImplicitGemm) {
      EXPECT_EQ(info.substituted, grouped || f32_3d) << info.reason;
      if (!info.substituted)
        EXPECT_EQ(info.algorithm,
                  c.dtype == DType::F32 ? ConvAlgorithm::ImplicitGemm : ConvAlgorithm::ImplicitGemmTensorCore);
    } else {
      EXPECT_FALSE(info.substituted);
      EXPECT_EQ(info.algorithm, c.groups == c.c && c.groups > 1 ? ConvAlgorithm::Depthwise : ConvAlgorithm::Direct);
    }
    // Channels-last forward: no temporaries, but for the implicit GEMM's zero-padded copies of x and
    // w (one after the other, 256-byte aligned) where C is not whole 16-byte vectors (gemmGeometry).
    const std::int64_t vector = 16 / static_cast<std::int64_t>(dtype_size(c.dtype));
    const std::int64_t padded = (c.c + vector - 1) / vector * vector;
    const std::int64_t elem = static_cast<std::int64_t>(dtype_size(c.dtype));
    const bool pads = strategy == ConvStrategy::ImplicitGemm && !info.substituted && padded != c.c;
    const std::int64_t x_bytes = c.n * pixels(c.in) * padded * elem, w_bytes = c.o * pixels(c.k) * padded * elem;
    EXPECT_EQ(info.workspace_bytes, pads ? (x_bytes + 255) / 256 * 256 + w_bytes : 0);
    // Channels-first: the same kernel on swapped data, so the same bits once swapped back.
    auto yf = convolution::conv_forward(x_first, w_first, bias, options_of(c), strategy, &info);
    ASSERT_TRUE(yf.ok()) << yf.error().message();
    EXPECT_EQ(yf->shape(), activation(c, c.o, out, false));
    EXPECT_EQ(host_values(*yf), to_first(got, c.n, pixels(out), c.o));
    EXPECT_GT(info.workspace_bytes, 0);
    if (strategy == ConvStrategy::Direct)
      direct = got;
    else  // Direct = ImplicitGemm to rounding
      EXPECT_LE(relative_l2(got, direct), 2 * testing::tolerance(c.dtype));
  }
}

TEST_P(Conv, BackwardMatchesTheOracleAndIsDeterministic) {
  const Case& c = GetParam();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("{} {} seed {}", c.name, dtype_name(c.dtype), seed));
  std::mt19937_64 rng(seed);
  const Data d = make(c, rng);
  const auto out = d.shape.output();
  const Device host = Device::host();
  const Tensor x = testing::upload(activation(c, c.c, c.in, true), c.dtype, d.x, host);
  const Tensor w = testing::upload(weight_shape(c, true), c.dtype, d.w, host);
  const Tensor dy = testing::upload(activation(c, c.o, out, true), c.dtype, d.dy, host);
  const auto want_dx = reference::conv_data_backward(d.dy, d.w, d.shape);
  const auto want_dw = reference::conv_weight_backward(d.x, d.dy, d.shape);
  const auto want_db = reference::conv_bias_backward(d.dy, d.shape);
  for (ConvStrategy strategy : {ConvStrategy::Direct, ConvStrategy::ImplicitGemm}) {
    SCOPED_TRACE(strategy == ConvStrategy::Direct ? "direct" : "implicit_gemm");
    std::vector<double> dx_bits, dw_bits;
    for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
      runtime::host::set_default_schedule({order, seed});
      // A depthwise call runs the depthwise kernels in every direction (ImplicitGemm: substituted).
      const bool depthwise = c.groups == c.c && c.groups > 1;
      ConvInfo dx_info;
      auto dx = convolution::conv_data_backward(dy, w, activation(c, c.c, c.in, true), options_of(c), strategy,
                                                ConvLayout::ChannelsLast, &dx_info);
      ASSERT_TRUE(dx.ok()) << dx.error().message();
      if (depthwise) EXPECT_EQ(dx_info.algorithm, ConvAlgorithm::Depthwise);
      const auto got_dx = host_values(*dx);
      EXPECT_LE(relative_l2(got_dx, want_dx), testing::tolerance(c.dtype));
      ConvInfo info;
      auto dw = convolution::conv_weight_backward(x, dy, weight_shape(c, true), options_of(c), true, strategy,
                                                  ConvLayout::ChannelsLast, &info);
      ASSERT_TRUE(dw.ok()) << dw.error().message();
      if (depthwise) {
        EXPECT_EQ(info.algorithm, ConvAlgorithm::Depthwise);
        EXPECT_GT(info.workspace_bytes, 0);  // the FP32 split sums
      }
      const auto got_dw = host_values(dw->grad_weight);
      EXPECT_LE(relative_l2(got_dw, want_dw), testing::tolerance(c.dtype));
      ASSERT_TRUE(dw->grad_bias.has_value());
      EXPECT_EQ(dw->grad_bias->dtype(), DType::F32);
      EXPECT_LE(relative_l2(host_values(*dw->grad_bias), want_db), testing::tolerance(DType::F32));
      // Deterministic: the same bits under either thread order (no floating-point atomics).
      if (order == Schedule::Forward) {
        dx_bits = got_dx;
        dw_bits = got_dw;
      } else {
        EXPECT_EQ(got_dx, dx_bits);
        EXPECT_EQ(got_dw, dw_bits);
      }
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Matrix, Conv, ::testing::ValuesIn(kCases), case_name);

// Channels-first backward = channels-last backward on swapped data (same kernels, same bits).
TEST(ConvLayouts, ChannelsFirstBackwardIsChannelsLastSwapped) {
  ops::set_poison_outputs(true);
  const Case c = kCases[3];  // strided, padded, dilated
  std::mt19937_64 rng(fresh_seed());
  const Data d = make(c, rng);
  const auto out = d.shape.output();
  const Device host = Device::host();
  auto up = [&](const Shape& s, const std::vector<double>& v) { return testing::upload(s, c.dtype, v, host); };
  const Tensor x_l = up(activation(c, c.c, c.in, true), d.x), dy_l = up(activation(c, c.o, out, true), d.dy),
               w_l = up(weight_shape(c, true), d.w);
  const Tensor x_f = up(activation(c, c.c, c.in, false), to_first(d.x, c.n, pixels(c.in), c.c)),
               dy_f = up(activation(c, c.o, out, false), to_first(d.dy, c.n, pixels(out), c.o)),
               w_f = up(weight_shape(c, false), to_first(d.w, c.o, pixels(c.k), c.c));
  for (ConvStrategy s : {ConvStrategy::Direct, ConvStrategy::ImplicitGemm}) {
    auto dx_l = convolution::conv_data_backward(dy_l, w_l, x_l.shape(), options_of(c), s, ConvLayout::ChannelsLast);
    auto dx_f = convolution::conv_data_backward(dy_f, w_f, x_f.shape(), options_of(c), s, ConvLayout::ChannelsFirst);
    ASSERT_TRUE(dx_l.ok() && dx_f.ok());
    EXPECT_EQ(host_values(*dx_f), to_first(host_values(*dx_l), c.n, pixels(c.in), c.c));
    auto dw_l =
        convolution::conv_weight_backward(x_l, dy_l, w_l.shape(), options_of(c), false, s, ConvLayout::ChannelsLast);
    auto dw_f =
        convolution::conv_weight_backward(x_f, dy_f, w_f.shape(), options_of(c), false, s, ConvLayout::ChannelsFirst);
    ASSERT_TRUE(dw_l.ok() && dw_f.ok());
    EXPECT_FALSE(dw_l->grad_bias.has_value());
    EXPECT_EQ(host_values(dw_f->grad_weight), to_first(host_values(dw_l->grad_weight), c.o, pixels(c.k), c.c));
  }
}

// N = 0: an empty output, no fault.
TEST(ConvEmpty, ZeroBatch) {
  ops::set_poison_outputs(true);
  const Case c = kCases[0];
  auto x = Tensor::empty({0, 9, 7, 8}, DType::BF16, Device::host());
  auto w = Tensor::empty({8, 3, 3, 8}, DType::BF16, Device::host());
  ASSERT_TRUE(x.ok() && w.ok());
  auto y = convolution::conv_forward_nhwc(*x, *w, std::nullopt, options_of(c), ConvStrategy::ImplicitGemm);
  ASSERT_TRUE(y.ok()) << y.error().message();
  EXPECT_EQ(y->shape(), (Shape{0, 9, 7, 8}));
}

// Every kernel a call takes fits the device's shared memory. A depthwise kernel stages the input halo
// of its tile, which grows with stride and dilation: where no depthwise tile fits, the direct kernel
// serves the call (before, the launch failed). `device_bytes` 0: the host device as it is (227 KiB,
// an H100's); else it reports that much, as a smaller GPU does.
void expect_within_shared_memory(const Case& c, std::size_t device_bytes, ConvAlgorithm forward_algorithm,
                                 ConvAlgorithm data_algorithm, ConvAlgorithm weight_algorithm,
                                 ConvStrategy strategy = ConvStrategy::Direct) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("{} device bytes {} seed {}", c.name, device_bytes, seed));
  std::optional<testing::ScopedSharedMemory> smaller;
  if (device_bytes) smaller.emplace(device_bytes);
  std::mt19937_64 rng(seed);
  const Data d = make(c, rng);
  const Device host = Device::host();
  const Tensor x = testing::upload(activation(c, c.c, c.in, true), c.dtype, d.x, host);
  const Tensor w = testing::upload(weight_shape(c, true), c.dtype, d.w, host);
  const Tensor dy = testing::upload(activation(c, c.o, d.shape.output(), true), c.dtype, d.dy, host);
  ConvInfo info;
  auto y = convolution::conv_forward_nhwc(x, w, std::nullopt, options_of(c), strategy, &info);
  ASSERT_TRUE(y.ok()) << y.error().message();
  EXPECT_EQ(info.algorithm, forward_algorithm) << info.tile;
  EXPECT_LE(relative_l2(host_values(*y), reference::conv_forward(d.x, d.w, {}, d.shape)), testing::tolerance(c.dtype));
  auto dx = convolution::conv_data_backward(dy, w, x.shape(), options_of(c), strategy, ConvLayout::ChannelsLast, &info);
  ASSERT_TRUE(dx.ok()) << dx.error().message();
  EXPECT_EQ(info.algorithm, data_algorithm) << info.tile;
  EXPECT_LE(relative_l2(host_values(*dx), reference::conv_data_backward(d.dy, d.w, d.shape)),
            testing::tolerance(c.dtype));
  auto dw = convolution::conv_weight_backward(x, dy, w.shape(), options_of(c), false, strategy,
                                              ConvLayout::ChannelsLast, &info);
  ASSERT_TRUE(dw.ok()) << dw.error().message();
  EXPECT_EQ(info.algorithm, weight_algorithm) << info.tile;
  EXPECT_LE(relative_l2(host_values(dw->grad_weight), reference::conv_weight_backward(d.x, d.dy, d.shape)),
            testing::tolerance(c.dtype));
}

TEST(ConvSharedMemory, DepthwiseHaloBeyondTheDeviceRunsDirect) {
  ops::set_poison_outputs(true);
  // 7x7, dilation 6, f32: an 8x8 tile's halo is 44x44 pixels of 32 channels (248 KB) in both the
  // forward and the data backward, more than any GPU has: both run on the direct kernel.
  const Case wide{"dw_k7_d6", 2, 1, 8, 8, 8, {1, 46, 45}, {1, 7, 7}, {1, 1, 1}, {0, 3, 3}, {1, 6, 6}, 0, DType::F32};
  // The weight backward's depthwise kernel keeps one float per thread: it runs everywhere.
  expect_within_shared_memory(wide, 0, ConvAlgorithm::Direct, ConvAlgorithm::Direct, ConvAlgorithm::Depthwise);
  // Stride 2, dilation 3: the forward's halo (33x33, 139 KB) fits an H100's 227 KiB, not sm_86's
  // 99 KiB; the data backward's (13x13) fits both.
  const Case mid{"dw_k7_s2_d3", 2, 1, 8, 8, 8, {1, 21, 20}, {1, 7, 7}, {1, 2, 2}, {0, 3, 3}, {1, 3, 3}, 0, DType::F32};
  expect_within_shared_memory(mid, 0, ConvAlgorithm::Depthwise, ConvAlgorithm::Depthwise, ConvAlgorithm::Depthwise);
  expect_within_shared_memory(mid, testing::kSm86SharedBytes, ConvAlgorithm::Direct, ConvAlgorithm::Depthwise,
                              ConvAlgorithm::Depthwise);
}

// ImplicitGemm's 128-wide tensor-core tile needs 60 KiB: a device with 48 KiB runs the call Direct
// and reports the substitution (no supported GPU has so little; the rule is the same).
TEST(ConvSharedMemory, ImplicitGemmBeyondTheDeviceIsASubstitution) {
  ops::set_poison_outputs(true);
  const Case c{"igemm_o128", 2, 1, 8, 128, 1, {1, 6, 5}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 0, DType::BF16};
  // The data backward's GEMM has C = 8 columns: the 64-wide tile (40 KiB) fits both.
  expect_within_shared_memory(c, 0, ConvAlgorithm::ImplicitGemmTensorCore, ConvAlgorithm::ImplicitGemmTensorCore,
                              ConvAlgorithm::ImplicitGemmTensorCore, ConvStrategy::ImplicitGemm);
  expect_within_shared_memory(c, 48 * 1024, ConvAlgorithm::Direct, ConvAlgorithm::ImplicitGemmTensorCore,
                              ConvAlgorithm::ImplicitGemmTensorCore, ConvStrategy::ImplicitGemm);
  testing::ScopedSharedMemory small(48 * 1024);
  const Device host = Device::host();
  std::mt19937_64 rng(fresh_seed());
  const Data d = make(c, rng);
  ConvInfo info;
  auto y = convolution::conv_forward_nhwc(testing::upload(activation(c, c.c, c.in, true), c.dtype, d.x, host),
                                          testing::upload(weight_shape(c, true), c.dtype, d.w, host), std::nullopt,
                                          options_of(c), ConvStrategy::ImplicitGemm, &info);
  ASSERT_TRUE(y.ok()) << y.error().message();
  EXPECT_TRUE(info.substituted);
  EXPECT_NE(info.reason.find("shared memory"), std::string::npos) << info.reason;
}

// Split-K (issue 12): where a batch's output tiles are few, the forward and the data backward cut
// their reduction over taps·channels into ordered FP32 split sums (the call's workspace) and a
// reduce that adds the bias. Batch 2 of a 4x4 layer with 256 -> 64 channels: the forward is one
// 64x64 tile over 72 K blocks (9 splits), the data backward two 128x128 tiles over 18 (2 splits).
// Against the oracle, the same bits under either thread order and in both layouts; a batch of
// the same bucket shares the plan, one of another bucket gets its own (batch 64: 16 tiles, still
// split).
TEST(ConvSplitK, FewTilesSplitTheForwardAndDataBackward) {
  ops::set_poison_outputs(true);
  for (std::int64_t n : {2, 64}) {
    const Case c{"split_k", 2, n, 256, 64, 1, {1, 4, 4}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 1, DType::BF16};
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("batch {} seed {}", n, seed));
    std::mt19937_64 rng(seed);
    const Data d = make(c, rng);
    const Device host = Device::host();
    const Tensor x = testing::upload(activation(c, c.c, c.in, true), c.dtype, d.x, host);
    const Tensor w = testing::upload(weight_shape(c, true), c.dtype, d.w, host);
    const Tensor dy = testing::upload(activation(c, c.o, c.in, true), c.dtype, d.dy, host);
    const Tensor bias = testing::upload({c.o}, DType::F32, d.bias, host);
    const Tensor x_first =
        testing::upload(activation(c, c.c, c.in, false), c.dtype, to_first(d.x, c.n, pixels(c.in), c.c), host);
    const Tensor w_first = testing::upload(weight_shape(c, false), c.dtype, to_first(d.w, c.o, pixels(c.k), c.c), host);
    const std::int64_t forward_splits = 9, data_splits = 2;
    std::vector<double> y_bits, dx_bits;
    for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
      runtime::host::set_default_schedule({order, seed});
      ConvInfo info;
      auto y = convolution::conv_forward_nhwc(x, w, bias, options_of(c), ConvStrategy::ImplicitGemm, &info);
      ASSERT_TRUE(y.ok()) << y.error().message();
      EXPECT_NE(info.tile.find(fmt::format("splits={}", forward_splits)), std::string::npos) << info.tile;
      EXPECT_EQ(info.workspace_bytes, forward_splits * n * 16 * 64 * 4);  // the FP32 split sums
      const auto got_y = host_values(*y);
      EXPECT_LE(relative_l2(got_y, reference::conv_forward(d.x, d.w, d.bias, d.shape)), testing::tolerance(c.dtype));
      auto yf = convolution::conv_forward(x_first, w_first, bias, options_of(c), ConvStrategy::ImplicitGemm);
      ASSERT_TRUE(yf.ok()) << yf.error().message();
      EXPECT_EQ(host_values(*yf), to_first(got_y, c.n, pixels(c.in), c.o));
      auto dx = convolution::conv_data_backward(dy, w, x.shape(), options_of(c), ConvStrategy::ImplicitGemm,
                                                ConvLayout::ChannelsLast, &info);
      ASSERT_TRUE(dx.ok()) << dx.error().message();
      EXPECT_NE(info.tile.find(fmt::format("splits={}", data_splits)), std::string::npos) << info.tile;
      EXPECT_EQ(info.workspace_bytes, data_splits * n * 16 * 256 * 4);
      const auto got_dx = host_values(*dx);
      EXPECT_LE(relative_l2(got_dx, reference::conv_data_backward(d.dy, d.w, d.shape)), testing::tolerance(c.dtype));
      if (order == Schedule::Forward) {
        y_bits = got_y;
        dx_bits = got_dx;
      } else {
        EXPECT_EQ(got_y, y_bits);
        EXPECT_EQ(got_dx, dx_bits);
      }
    }
    runtime::host::set_default_schedule({});
  }
  // Autotune without a tuned answer (tuning off) falls back to the same batch-aware heuristic.
  {
    const auto saved = autotune::mode();
    autotune::set_mode(autotune::Mode::Off);
    const Case c{"split_k_untuned", 2,         2,         256,       64, 1,          {1, 4, 4},
                 {1, 3, 3},         {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 0,  DType::BF16};
    std::mt19937_64 rng(fresh_seed());
    const Data d = make(c, rng);
    ConvInfo info;
    auto y =
        convolution::conv_forward_nhwc(testing::upload(activation(c, c.c, c.in, true), c.dtype, d.x, Device::host()),
                                       testing::upload(weight_shape(c, true), c.dtype, d.w, Device::host()),
                                       std::nullopt, options_of(c), ConvStrategy::Autotune, &info);
    autotune::set_mode(saved);
    ASSERT_TRUE(y.ok()) << y.error().message();
    EXPECT_NE(info.tile.find("splits=9"), std::string::npos) << info.tile;
    EXPECT_LE(relative_l2(host_values(*y), reference::conv_forward(d.x, d.w, {}, d.shape)),
              testing::tolerance(c.dtype));
  }
  // Batch 3 shares batch 4's bucket: its plan is made once (a second call of the bucket is warm).
  const Case c{"split_k_bucket", 2,         3,         256,       64, 1,          {1, 4, 4},
               {1, 3, 3},        {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 0,  DType::BF16};
  std::mt19937_64 rng(fresh_seed());
  const Data d = make(c, rng);
  const Tensor w = testing::upload(weight_shape(c, true), c.dtype, d.w, Device::host());
  const Tensor x3 = testing::upload(activation(c, c.c, c.in, true), c.dtype, d.x, Device::host());
  auto y3 = convolution::conv_forward_nhwc(x3, w, std::nullopt, options_of(c), ConvStrategy::ImplicitGemm);
  ASSERT_TRUE(y3.ok()) << y3.error().message();
  EXPECT_LE(relative_l2(host_values(*y3), reference::conv_forward(d.x, d.w, {}, d.shape)), testing::tolerance(c.dtype));
  Case c4 = c;
  c4.n = 4;
  const Data d4 = make(c4, rng);
  const Tensor x4 = testing::upload(activation(c4, c.c, c.in, true), c.dtype, d4.x, Device::host());
  const Stats before = stats();
  auto y4 = convolution::conv_forward_nhwc(x4, w, std::nullopt, options_of(c), ConvStrategy::ImplicitGemm);
  ASSERT_TRUE(y4.ok()) << y4.error().message();
  EXPECT_EQ(stats().plan_cache_misses, before.plan_cache_misses);
  EXPECT_LE(relative_l2(host_values(*y4), reference::conv_forward(d4.x, d.w, {}, d4.shape)),
            testing::tolerance(c.dtype));
}

// Autotune: a measured choice among every registered kernel that serves the call, cached; the result
// is the oracle's, and ConvInfo reports what was chosen (never a substitution).
TEST(ConvAutotune, MeasuresCachesAndReports) {
  ops::set_poison_outputs(true);
  const auto saved = autotune::mode();
  autotune::set_mode(autotune::Mode::Full);
  for (const Case& c : {kCases[0], kCases[7]}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("{} seed {}", c.name, seed));
    std::mt19937_64 rng(seed);
    const Data d = make(c, rng);
    const Device host = Device::host();
    const Tensor x = testing::upload(activation(c, c.c, c.in, true), c.dtype, d.x, host);
    const Tensor w = testing::upload(weight_shape(c, true), c.dtype, d.w, host);
    std::optional<Tensor> bias;
    if (c.bias) bias = testing::upload({c.o}, c.bias == 1 ? DType::F32 : c.dtype, d.bias, host);
    const Stats before = stats();
    ConvInfo info;
    auto y = convolution::conv_forward_nhwc(x, w, bias, options_of(c), ConvStrategy::Autotune, &info);
    ASSERT_TRUE(y.ok()) << y.error().message();
    EXPECT_LE(relative_l2(host_values(*y), reference::conv_forward(d.x, d.w, d.bias, d.shape)),
              testing::tolerance(c.dtype));
    EXPECT_EQ(stats().autotune_runs, before.autotune_runs + 1);
    auto choice = autotune::last_choice();
    ASSERT_TRUE(choice.has_value());
    EXPECT_EQ(choice->op, "rudnn.conv_forward");
    EXPECT_EQ(choice->source, autotune::Source::Tuned);
    EXPECT_FALSE(info.substituted);
    EXPECT_EQ(info.tile, choice->config);
    // Warm: the plan is reused, nothing tuned again.
    auto again = convolution::conv_forward_nhwc(x, w, bias, options_of(c), ConvStrategy::Autotune);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(stats().autotune_runs, before.autotune_runs + 1);
  }
  autotune::set_mode(saved);
}

// The backward oracles are the gradient of the forward oracle: L = Σ y·dy is linear in x and w, so
// central differences are exact up to rounding at any step.
TEST(ConvOracle, BackwardIsTheGradientOfTheForward) {
  std::mt19937_64 rng(fresh_seed());
  for (const Case& c : {kCases[3], kCases[4], kCases[8]}) {
    const Data d = make(c, rng);
    auto loss = [&](const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b) {
      const auto y = reference::conv_forward(x, w, b, d.shape);
      double l = 0;
      for (std::size_t i = 0; i < y.size(); ++i) l += y[i] * d.dy[i];
      return l;
    };
    const std::vector<double> bias(static_cast<std::size_t>(c.o), 0.25);
    const auto dx = reference::conv_data_backward(d.dy, d.w, d.shape);
    const auto dw = reference::conv_weight_backward(d.x, d.dy, d.shape);
    const auto db = reference::conv_bias_backward(d.dy, d.shape);
    const double h = 0.5;
    for (std::size_t i = 0; i < d.x.size(); i += 7) {
      auto x = d.x;
      const double saved = x[i];
      x[i] = saved + h;
      const double up = loss(x, d.w, bias);
      x[i] = saved - h;
      const double down = loss(x, d.w, bias);
      EXPECT_NEAR((up - down) / (2 * h), dx[i], 1e-9 * (1 + std::abs(dx[i]))) << c.name << " x " << i;
    }
    for (std::size_t i = 0; i < d.w.size(); i += 5) {
      auto w = d.w;
      const double saved = w[i];
      w[i] = saved + h;
      const double up = loss(d.x, w, bias);
      w[i] = saved - h;
      const double down = loss(d.x, w, bias);
      EXPECT_NEAR((up - down) / (2 * h), dw[i], 1e-9 * (1 + std::abs(dw[i]))) << c.name << " w " << i;
    }
    for (std::size_t i = 0; i < db.size(); ++i) {
      auto b = bias;
      b[i] += h;
      const double up = loss(d.x, d.w, b);
      b[i] -= 2 * h;
      const double down = loss(d.x, d.w, b);
      EXPECT_NEAR((up - down) / (2 * h), db[i], 1e-9 * (1 + std::abs(db[i]))) << c.name << " b " << i;
    }
  }
}

// Every contract line of SPEC §6 through the API: a ConvSetupError naming the argument, nothing
// planned or launched.
class ConvContract : public testing::ContractTest {};

TEST_F(ConvContract, ForwardLines) {
  const DType f = DType::F32, b = DType::BF16;
  const ConvOptions o;
  const Tensor x = t({1, 4, 8, 8}, f), w = t({6, 4, 3, 3}, f);
  using convolution::conv_forward;
  expect_rejected(conv_forward(t({1, 4, 8, 8}, DType::I32), w, {}, o), ErrorKind::UnsupportedDType, "input");
  expect_rejected(conv_forward(t({1, 4, 8, 8}, DType::FP8E4M3), w, {}, o), ErrorKind::QuantizedDType, "input");
  expect_rejected(conv_forward(x, t({6, 4, 3, 3}, b), {}, o), ErrorKind::UnsupportedDType, "weight");
  expect_rejected(conv_forward(t({4, 8}, f), t({6, 4}, f), {}, o), ErrorKind::ShapeMismatch, "input");
  expect_rejected(conv_forward(t({1, 1, 4, 8, 8, 8}, f), w, {}, o), ErrorKind::ShapeMismatch, "input");
  expect_rejected(conv_forward(x, t({6, 4, 3}, f), {}, o), ErrorKind::ShapeMismatch, "weight");
  expect_rejected(conv_forward(x, t({6, 3, 3, 3}, f), {}, o), ErrorKind::ShapeMismatch, "weight");
  expect_rejected(conv_forward(t({1, 0, 8, 8}, f), t({6, 0, 3, 3}, f), {}, o), ErrorKind::EmptyDimension, "input");
  expect_rejected(conv_forward(t({1, 4, 0, 8}, f), w, {}, o), ErrorKind::EmptyDimension, "input");
  expect_rejected(conv_forward(x, t({0, 4, 3, 3}, f), {}, o), ErrorKind::EmptyDimension, "weight");
  expect_rejected(conv_forward(t({1, 4, 80, 8}, f), t({6, 4, 65, 3}, f), {}, o), ErrorKind::Unsupported, "weight");
  auto with = [](auto edit) {
    ConvOptions opt;
    edit(opt);
    return opt;
  };
  expect_rejected(conv_forward(x, w, {}, with([](ConvOptions& p) { p.groups = 0; })), ErrorKind::InvalidValue,
                  "groups");
  // groups must divide C (6 % 4) and O (4 % 3).
  expect_rejected(conv_forward(t({1, 6, 8, 8}, f), t({4, 1, 3, 3}, f), {}, with([](ConvOptions& p) { p.groups = 4; })),
                  ErrorKind::InvalidValue, "groups");
  expect_rejected(conv_forward(t({1, 6, 8, 8}, f), t({4, 2, 3, 3}, f), {}, with([](ConvOptions& p) { p.groups = 3; })),
                  ErrorKind::InvalidValue, "groups");
  expect_rejected(conv_forward(x, w, {}, with([](ConvOptions& p) { p.stride = {1}; })), ErrorKind::InvalidValue,
                  "stride");
  expect_rejected(conv_forward(x, w, {}, with([](ConvOptions& p) {
                                 p.stride = {1, 0};
                               })),
                  ErrorKind::InvalidValue, "stride");
  expect_rejected(conv_forward(x, w, {}, with([](ConvOptions& p) {
                                 p.padding = {-1, 0};
                               })),
                  ErrorKind::InvalidValue, "padding");
  expect_rejected(conv_forward(x, w, {}, with([](ConvOptions& p) {
                                 p.dilation = {1, 0};
                               })),
                  ErrorKind::InvalidValue, "dilation");
  // Output extent < 1: 2 rows under a 3-row filter without padding.
  expect_rejected(conv_forward(t({1, 4, 2, 8}, f), w, {}, o), ErrorKind::ShapeMismatch, "input");
  expect_rejected(conv_forward(x, w, t({6}, DType::F16), o), ErrorKind::UnsupportedDType, "bias");
  expect_rejected(conv_forward(x, w, t({5}, f), o), ErrorKind::ShapeMismatch, "bias");
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  expect_rejected(conv_forward(x, t({6, 4, 3, 3}, f, &q2.value()), {}, o), ErrorKind::QueueMismatch, "weight");
  // Channels-last layouts name the same arguments.
  expect_rejected(convolution::conv_forward_nhwc(t({1, 8, 8, 4}, f), t({6, 3, 3, 3}, f), {}, o),
                  ErrorKind::ShapeMismatch, "weight");
}

TEST_F(ConvContract, BackwardLines) {
  const DType f = DType::F32;
  const ConvOptions o;
  const Tensor x = t({1, 4, 8, 8}, f), w = t({6, 4, 3, 3}, f), dy = t({1, 6, 6, 6}, f);
  using convolution::conv_data_backward;
  using convolution::conv_weight_backward;
  const ConvStrategy s = ConvStrategy::ImplicitGemm;
  expect_rejected(conv_data_backward(t({1, 6, 6, 6}, DType::I32), w, x.shape(), o, s), ErrorKind::UnsupportedDType,
                  "grad_output");
  expect_rejected(conv_data_backward(dy, t({6, 4, 3, 3}, DType::F16), x.shape(), o, s), ErrorKind::UnsupportedDType,
                  "weight");
  expect_rejected(conv_data_backward(dy, w, {1, 4}, o, s), ErrorKind::ShapeMismatch, "input_shape");
  // A negative extent (the contracts' "dynamic" in a graph) is no shape a call can give.
  expect_rejected(conv_data_backward(dy, w, {1, 4, -1, 8}, o, s), ErrorKind::InvalidValue, "input_shape");
  expect_rejected(conv_weight_backward(x, dy, {6, 4, -3, 3}, o, false, s), ErrorKind::InvalidValue, "weight_shape");
  expect_rejected(conv_weight_backward(x, dy, {6, 4, 3, -1}, o, false, s), ErrorKind::InvalidValue, "weight_shape");
  expect_rejected(conv_data_backward(t({1, 6, 7, 6}, f), w, x.shape(), o, s), ErrorKind::ShapeMismatch, "grad_output");
  expect_rejected(conv_data_backward(dy, t({6, 3, 3, 3}, f), x.shape(), o, s), ErrorKind::ShapeMismatch, "weight");
  expect_rejected(conv_weight_backward(x, t({1, 6, 6, 6}, DType::BF16), w.shape(), o, false, s),
                  ErrorKind::UnsupportedDType, "grad_output");
  expect_rejected(conv_weight_backward(x, dy, {6, 3, 3, 3}, o, false, s), ErrorKind::ShapeMismatch, "weight_shape");
  expect_rejected(conv_weight_backward(x, t({1, 5, 6, 6}, f), w.shape(), o, true, s), ErrorKind::ShapeMismatch,
                  "grad_output");
  expect_rejected(conv_weight_backward(t({1, 4, 8, 8}, DType::FP8E4M3), dy, w.shape(), o, false, s),
                  ErrorKind::QuantizedDType, "input");
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  expect_rejected(conv_weight_backward(x, t({1, 6, 6, 6}, f, &q2.value()), w.shape(), o, false, s),
                  ErrorKind::QueueMismatch, "grad_output");
}

}  // namespace
}  // namespace rudnn
