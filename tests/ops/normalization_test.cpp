// Normalization through the public entries on the host emulation device, against the FP64
// references, under forward and reverse thread orders, with poisoned outputs; and every contract
// line of SPEC §2 rejected with nothing compiled, launched or cached.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "host/emulator.h"
#include "host/host_device.h"
#include "jit.h"
#include "normalization.h"
#include "contract_fixture.h"
#include "op_test_util.h"
#include "plan_cache.h"
#include "rudnn/normalization.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using runtime::host::Schedule;
using testing::fresh_seed;

enum class Op { LayerNorm, LayerNormNoBeta, RmsNorm, Softmax };

std::string op_name(Op op) {
  switch (op) {
    case Op::LayerNorm: return "layer_norm";
    case Op::LayerNormNoBeta: return "layer_norm_no_beta";
    case Op::RmsNorm: return "rms_norm";
    case Op::Softmax: return "softmax";
  }
  return "?";
}

struct Case {
  Op op;
  DType dtype;
  std::int64_t h;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return fmt::format("{}_{}_h{}", op_name(info.param.op), dtype_name(info.param.dtype), info.param.h);
}

class NormOnEmulator : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

TEST_P(NormOnEmulator, MatchesFp64ReferenceUnderBothThreadOrders) {
  const Case c = GetParam();
  const Device device = Device::host();
  for (std::int64_t rows : {1, 3, 70}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("rows={} seed={}", rows, seed));
    std::mt19937_64 rng(seed);
    const auto n = static_cast<std::size_t>(rows * c.h);
    // Softmax also sees large logits, where a missing max-subtraction would overflow.
    auto x =
        testing::random_values(n, c.dtype, rng, c.op == Op::Softmax ? -60.0 : -3.0, c.op == Op::Softmax ? 60.0 : 5.0);
    auto gamma = testing::random_values(static_cast<std::size_t>(c.h), DType::F32, rng, 0.5, 1.5);
    auto beta = testing::random_values(static_cast<std::size_t>(c.h), DType::F32, rng);
    const float eps = 1e-5f;

    std::vector<double> want;
    switch (c.op) {
      case Op::LayerNorm: want = reference::layer_norm(x, rows, c.h, gamma, beta, eps); break;
      case Op::LayerNormNoBeta: want = reference::layer_norm(x, rows, c.h, gamma, {}, eps); break;
      case Op::RmsNorm: want = reference::rms_norm(x, rows, c.h, gamma, eps); break;
      case Op::Softmax: want = reference::softmax(x, rows, c.h); break;
    }
    Tensor tx = testing::upload({rows, c.h}, c.dtype, x, device);
    Tensor tg = testing::upload({c.h}, DType::F32, gamma, device);
    Tensor tb = testing::upload({c.h}, DType::F32, beta, device);

    std::vector<double> first;
    for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
      runtime::host::set_default_schedule({order, seed});
      Result<Tensor, NormalizationError> y = [&]() -> Result<Tensor, NormalizationError> {
        switch (c.op) {
          case Op::LayerNorm: return normalization::layer_norm(tx, tg, tb, eps);
          case Op::LayerNormNoBeta: return normalization::layer_norm(tx, tg, std::nullopt, eps);
          case Op::RmsNorm: return normalization::rms_norm(tx, tg, eps);
          case Op::Softmax: return normalization::softmax_last_axis(tx);
        }
        return normalization::softmax_last_axis(tx);
      }();
      ASSERT_TRUE(y.ok()) << y.error().message();
      EXPECT_EQ(y->shape(), (Shape{rows, c.h}));
      EXPECT_EQ(y->dtype(), c.dtype);
      auto got = to_host(y.value())->to_f64();
      const double err = testing::relative_l2(got, want);
      EXPECT_LE(err, testing::tolerance(c.dtype)) << "order " << static_cast<int>(order) << " (NaN = unwritten)";
      if (first.empty())
        first = got;
      else
        EXPECT_EQ(got, first) << "forward and reverse thread orders differ: a missing barrier";
    }
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Op op : {Op::LayerNorm, Op::LayerNormNoBeta, Op::RmsNorm, Op::Softmax})
    for (DType t : {DType::F32, DType::F16, DType::BF16})
      for (std::int64_t h : {1, 3, 32, 33, 257, 4096, 4097})
        if (op != Op::LayerNormNoBeta || h == 257) cases.push_back({op, t, h});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllOpsDtypesWidths, NormOnEmulator, ::testing::ValuesIn(all_cases()), case_name);

// Larger rows than the emulated grid allows: the launch clamps the grid and the kernel strides.
TEST(NormOnEmulatorLimits, GridLargerThanDeviceLimit) {
  ops::set_poison_outputs(true);
  auto& info = runtime::host_device_info();
  const int saved = info.max_grid_x;
  info.max_grid_x = 3;
  const Device device = Device::host();
  std::mt19937_64 rng(fresh_seed());
  const std::int64_t rows = 41, h = 64;
  auto x = testing::random_values(static_cast<std::size_t>(rows * h), DType::F32, rng);
  auto gamma = testing::random_values(static_cast<std::size_t>(h), DType::F32, rng);
  auto y = normalization::rms_norm(testing::upload({rows, h}, DType::F32, x, device),
                                   testing::upload({h}, DType::F32, gamma, device), 1e-6f);
  info.max_grid_x = saved;
  ASSERT_TRUE(y.ok()) << y.error().message();
  EXPECT_LE(testing::relative_l2(to_host(y.value())->to_f64(), reference::rms_norm(x, rows, h, gamma, 1e-6)), 1e-5);
}

TEST(NormCaching, WarmCallsHitThePlanCacheAcrossRowCounts) {
  const Device device = Device::host();
  std::mt19937_64 rng(fresh_seed());
  const std::int64_t h = 96;
  const auto g = testing::random_values(h, DType::F32, rng);
  auto gamma = testing::upload({h}, DType::F32, g, device);
  // 40, 5 x 7 and 6 x 8 rows fall in one power-of-two rows bucket (33..64): the Autotune strategy
  // keys plans by that bucket (with RUDNN_AUTOTUNE=off one plan serves every row count).
  auto x1 = testing::upload({40, h}, DType::BF16, testing::random_values(40 * h, DType::BF16, rng), device);
  const auto v2 = testing::random_values(35 * h, DType::BF16, rng);
  auto x2 = testing::upload({5, 7, h}, DType::BF16, v2, device);
  auto x3 = testing::upload({6, 8, h}, DType::BF16, testing::random_values(48 * h, DType::BF16, rng), device);
  ASSERT_TRUE(normalization::rms_norm(x1, gamma, 1e-5f).ok());
  // Another rank: its own plan (the kernel reads h as the input's last dim), from the same kernel.
  Stats before = stats();
  auto y = normalization::rms_norm(x2, gamma, 1e-5f);
  ASSERT_TRUE(y.ok()) << y.error().message();
  Stats after = stats();
  EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses + 1);
  EXPECT_EQ(after.jit_compiles, before.jit_compiles);
  EXPECT_EQ(y->shape(), (Shape{5, 7, h}));
  EXPECT_LE(testing::relative_l2(to_host(*y)->to_f64(), reference::rms_norm(v2, 35, h, g, 1e-5)), 1e-2);
  // Other leading dims of that rank, same bucket: the same plan.
  before = stats();
  ASSERT_TRUE(normalization::rms_norm(x3, gamma, 1e-5f).ok());
  after = stats();
  EXPECT_EQ(after.plan_cache_hits, before.plan_cache_hits + 1);
  EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses);
}

TEST(NormCaching, ColdPlanFromTheDiskCacheCompilesNothing) {
  const Device device = Device::host();
  std::mt19937_64 rng(fresh_seed());
  const std::int64_t h = 80;
  auto gamma = testing::upload({h}, DType::F32, testing::random_values(h, DType::F32, rng), device);
  auto x = testing::upload({3, h}, DType::F16, testing::random_values(3 * h, DType::F16, rng), device);
  ASSERT_TRUE(normalization::rms_norm(x, gamma, 1e-5f).ok());
  ops::PlanCache::instance().clear();
  const Stats before = stats();
  ASSERT_TRUE(normalization::rms_norm(x, gamma, 1e-5f).ok());
  const Stats after = stats();
  EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses + 1);
  EXPECT_EQ(after.jit_compiles, before.jit_compiles) << "a second cold plan must reuse the compiled kernel";
}

TEST(NormEdgeCases, ZeroRowsGivesAnEmptyOutput) {
  const Device device = Device::host();
  auto x = Tensor::empty({0, 16}, DType::F32, device);
  auto g = testing::upload({16}, DType::F32, std::vector<double>(16, 1.0), device);
  auto y = normalization::rms_norm(x.value(), g, 1e-5f);
  ASSERT_TRUE(y.ok()) << y.error().message();
  EXPECT_EQ(y->shape(), (Shape{0, 16}));
}

TEST(NormEdgeCases, OneDimensionalInputIsOneRow) {
  const Device device = Device::host();
  auto x = testing::upload({4}, DType::F32, {1, 2, 3, 4}, device);
  auto y = normalization::softmax_last_axis(x);
  ASSERT_TRUE(y.ok()) << y.error().message();
  auto got = to_host(y.value())->to_f64();
  EXPECT_LE(testing::relative_l2(got, reference::softmax({1, 2, 3, 4}, 1, 4)), 1e-6);
}

// --- every contract line: a typed error naming the argument, and nothing compiled or launched ---

class NormContract : public rudnn::testing::ContractTest {};

TEST_F(NormContract, QuantizedInput) {
  expect_rejected(normalization::layer_norm(t({2, 8}, DType::FP8E4M3), t({8}, DType::F32), std::nullopt, 1e-5f),
                  ErrorKind::QuantizedDType, "input");
  expect_rejected(normalization::softmax_last_axis(t({2, 8}, DType::FP8E4M3)), ErrorKind::QuantizedDType, "logits");
}
TEST_F(NormContract, NonFloatInput) {
  expect_rejected(normalization::rms_norm(t({2, 8}, DType::I32), t({8}, DType::F32), 1e-5f),
                  ErrorKind::UnsupportedDType, "input");
}
TEST_F(NormContract, EmptyLastDim) {
  expect_rejected(normalization::rms_norm(t({2, 0}, DType::F32), t({0}, DType::F32), 1e-5f), ErrorKind::EmptyDimension,
                  "input");
  expect_rejected(normalization::softmax_last_axis(t({3, 0}, DType::BF16)), ErrorKind::EmptyDimension, "logits");
}
TEST_F(NormContract, RankZeroInput) {
  expect_rejected(normalization::softmax_last_axis(t({}, DType::F32)), ErrorKind::ShapeMismatch, "logits");
}
TEST_F(NormContract, GammaShape) {
  expect_rejected(normalization::rms_norm(t({2, 8}, DType::F32), t({7}, DType::F32), 1e-5f), ErrorKind::ShapeMismatch,
                  "gamma");
  expect_rejected(normalization::rms_norm(t({2, 8}, DType::F32), t({1, 8}, DType::F32), 1e-5f),
                  ErrorKind::ShapeMismatch, "gamma");
}
TEST_F(NormContract, GammaDtype) {
  expect_rejected(normalization::layer_norm(t({2, 8}, DType::BF16), t({8}, DType::BF16), std::nullopt, 1e-5f),
                  ErrorKind::UnsupportedDType, "gamma");
  expect_rejected(normalization::layer_norm(t({2, 8}, DType::BF16), t({8}, DType::FP8E4M3), std::nullopt, 1e-5f),
                  ErrorKind::QuantizedDType, "gamma");
}
TEST_F(NormContract, BetaShapeAndDtype) {
  expect_rejected(normalization::layer_norm(t({2, 8}, DType::F16), t({8}, DType::F32), t({9}, DType::F32), 1e-5f),
                  ErrorKind::ShapeMismatch, "beta");
  expect_rejected(normalization::layer_norm(t({2, 8}, DType::F16), t({8}, DType::F32), t({8}, DType::F16), 1e-5f),
                  ErrorKind::UnsupportedDType, "beta");
}
TEST_F(NormContract, Epsilon) {
  for (float eps : {0.0f, -1e-5f, INFINITY, -INFINITY, NAN}) {
    expect_rejected(normalization::rms_norm(t({2, 8}, DType::F32), t({8}, DType::F32), eps), ErrorKind::InvalidValue,
                    "epsilon");
    expect_rejected(normalization::layer_norm(t({2, 8}, DType::F32), t({8}, DType::F32), std::nullopt, eps),
                    ErrorKind::InvalidValue, "epsilon");
  }
}
TEST_F(NormContract, GammaOnAnotherDevice) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "SKIP: needs a CUDA device to place gamma elsewhere";
  auto gpu = Device::cuda(0);
  ASSERT_TRUE(gpu.ok());
  auto g = Tensor::empty({8}, DType::F32, gpu.value());
  expect_rejected(normalization::rms_norm(t({2, 8}, DType::F32), g.value(), 1e-5f), ErrorKind::DeviceMismatch, "gamma");
}

}  // namespace
}  // namespace rudnn
