// Normalization on a real GPU against the FP64 references; every test prints SKIP without one.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "../ops/op_test_util.h"
#include "normalization.h"
#include "rudnn/normalization.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

class NormOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Device::cuda_device_count() == 0) GTEST_SKIP() << "SKIP: no CUDA device";
    auto d = Device::cuda(0);
    ASSERT_TRUE(d.ok()) << d.error().message();
    device_ = d.value();
  }
  Device device_ = Device::host();
};

TEST_F(NormOnGpu, AllOpsDtypesAndWidths) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (std::int64_t h : {1, 3, 33, 1024, 4096, 4097, 65536})
      for (std::int64_t rows : {1, 7, 300}) {
        const std::uint64_t seed = testing::fresh_seed();
        SCOPED_TRACE(fmt::format("{} h={} rows={} seed={}", dtype_name(dtype), h, rows, seed));
        std::mt19937_64 rng(seed);
        const auto n = static_cast<std::size_t>(rows * h);
        auto x = testing::random_values(n, dtype, rng);
        auto gamma = testing::random_values(static_cast<std::size_t>(h), DType::F32, rng, 0.5, 1.5);
        auto beta = testing::random_values(static_cast<std::size_t>(h), DType::F32, rng);
        Tensor tx = testing::upload({rows, h}, dtype, x, device_);
        Tensor tg = testing::upload({h}, DType::F32, gamma, device_);
        Tensor tb = testing::upload({h}, DType::F32, beta, device_);
        auto check = [&](Result<Tensor, NormalizationError> y, const std::vector<double>& want, const char* op) {
          ASSERT_TRUE(y.ok()) << op << ": " << y.error().message();
          auto got = to_host(y.value());
          ASSERT_TRUE(got.ok()) << got.error().message();
          EXPECT_LE(testing::relative_l2(got->to_f64(), want), testing::tolerance(dtype)) << op;
        };
        check(normalization::layer_norm(tx, tg, tb, 1e-5f), reference::layer_norm(x, rows, h, gamma, beta, 1e-5),
              "layer_norm");
        check(normalization::rms_norm(tx, tg, 1e-5f), reference::rms_norm(x, rows, h, gamma, 1e-5), "rms_norm");
        check(normalization::softmax_last_axis(tx), reference::softmax(x, rows, h), "softmax");
      }
}

TEST_F(NormOnGpu, ManyRowsBeyondOneGridRow) {
  const std::int64_t rows = 200000, h = 8;
  std::mt19937_64 rng(testing::fresh_seed());
  auto x = testing::random_values(static_cast<std::size_t>(rows * h), DType::BF16, rng);
  auto y = normalization::softmax_last_axis(testing::upload({rows, h}, DType::BF16, x, device_));
  ASSERT_TRUE(y.ok()) << y.error().message();
  EXPECT_LE(testing::relative_l2(to_host(y.value())->to_f64(), reference::softmax(x, rows, h)), 1e-2);
}

TEST_F(NormOnGpu, WarmCallsCompileNothing) {
  std::mt19937_64 rng(testing::fresh_seed());
  auto x = testing::upload({64, 4096}, DType::BF16, testing::random_values(64 * 4096, DType::BF16, rng), device_);
  auto g = testing::upload({4096}, DType::F32, testing::random_values(4096, DType::F32, rng), device_);
  ASSERT_TRUE(normalization::rms_norm(x, g, 1e-6f).ok());
  const Stats before = stats();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(normalization::rms_norm(x, g, 1e-6f).ok());
  EXPECT_EQ(stats().jit_compiles, before.jit_compiles);
  EXPECT_EQ(stats().plan_cache_misses, before.plan_cache_misses);
}

}  // namespace
}  // namespace rudnn
