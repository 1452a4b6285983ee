// The MoE experts backward on a real GPU against the FP64 oracle of
// tests/reference/moe_experts_backward.h: route → dispatch → training cache → backward with Scalar
// and TensorCore, at moderate shapes (uneven tiles, a skewed load with most experts empty, T = 1,
// E = 1, a wide H), plus the same bits on a second run (no atomics in either strategy). Every test
// prints SKIP without a CUDA device (RUDNN_GPU_TESTS_ON_HOST=1 runs them on the host device).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../ops/op_test_util.h"
#include "gpu_test_util.h"
#include "reference/moe_experts_backward.h"
#include "rudnn/moe.h"

namespace rudnn {
namespace {

using testing::host_values;

class MoeTrainingOnGpu : public testing::GpuTest {};

struct Case {
  std::int64_t t, e, k, h, i;
  double skew;  // > 0: this logit bonus for expert 0 (every token picks it; most experts get nothing)
};

std::vector<std::byte> bytes_of(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->bytes : std::vector<std::byte>{};
}

void check_case(const Case& c, DType dtype, const Device& device) {
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE(fmt::format("{} T={} E={} k={} H={} I={} skew={} seed={}", dtype_name(dtype), c.t, c.e, c.k, c.h, c.i,
                           c.skew, seed));
  std::mt19937_64 rng(seed);
  const double a = 1.5 / std::sqrt(static_cast<double>(c.h)), b = 1.5 / std::sqrt(static_cast<double>(c.i));
  const auto n_w = static_cast<std::size_t>(c.e * c.i * c.h);
  const auto gate = testing::random_values(n_w, dtype, rng, -a, a);
  const auto up = testing::random_values(n_w, dtype, rng, -a, a);
  const auto down = testing::random_values(n_w, dtype, rng, -b, b);
  const auto x = testing::random_values(static_cast<std::size_t>(c.t * c.h), dtype, rng);
  auto logits = testing::random_values(static_cast<std::size_t>(c.t * c.e), dtype, rng);
  for (std::int64_t r = 0; r < c.t; ++r) logits[static_cast<std::size_t>(r * c.e)] += c.skew;
  auto experts = moe::SwiGluExperts::create(testing::upload({c.e, c.i, c.h}, dtype, gate, device),
                                            testing::upload({c.e, c.i, c.h}, dtype, up, device),
                                            testing::upload({c.e, c.h, c.i}, dtype, down, device));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  auto routing = moe::route(testing::upload({c.t, c.e}, dtype, logits, device), {c.k, true});
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  auto dispatched = routing->dispatch(testing::upload({c.t, c.h}, dtype, x, device));
  ASSERT_TRUE(dispatched.ok()) << dispatched.error().message();
  // The oracle on the device's own dispatch (rows and offsets read back).
  const auto rows = host_values(dispatched->rows());
  std::vector<std::uint32_t> offsets;
  for (double v : host_values(dispatched->expert_offsets())) offsets.push_back(static_cast<std::uint32_t>(v));
  const std::int64_t n = c.t * c.k;
  const auto dy = testing::random_values(static_cast<std::size_t>(n * c.h), dtype, rng);
  const auto want = reference::swiglu_experts_backward(rows, dy, offsets, gate, up, down, c.h, c.i);
  const Tensor tdy = testing::upload({n, c.h}, dtype, dy, device);
  auto cache = experts->training_cache(*dispatched);
  ASSERT_TRUE(cache.ok()) << cache.error().message();
  for (auto strategy : {moe::GroupedStrategy::Scalar, moe::GroupedStrategy::TensorCore}) {
    const bool tc = strategy == moe::GroupedStrategy::TensorCore;
    SCOPED_TRACE(tc ? "TensorCore" : "Scalar");
    auto g = cache->backward_with_strategy(tdy, strategy);
    ASSERT_TRUE(g.ok()) << g.error().message();
    // dinput: FP32 sums of dtype-rounded values, rounded once; the weight gradients are FP32-accurate
    // for Scalar (FP32 dA, dB, Hh) and dtype-accurate for TensorCore (they are rounded to the dtype).
    const double bound = 3 * testing::tolerance(dtype);
    const double weights = tc ? bound : 3 * testing::tolerance(DType::F32);
    EXPECT_LE(testing::relative_l2(host_values(g->dinput), want.dinput), bound) << "dinput";
    EXPECT_LE(testing::relative_l2(host_values(g->dgate), want.dgate), weights) << "dgate";
    EXPECT_LE(testing::relative_l2(host_values(g->dup), want.dup), weights) << "dup";
    EXPECT_LE(testing::relative_l2(host_values(g->ddown), want.ddown), weights) << "ddown";
    auto again = cache->backward_with_strategy(tdy, strategy);
    ASSERT_TRUE(again.ok()) << again.error().message();
    EXPECT_TRUE(bytes_of(again->dinput) == bytes_of(g->dinput)) << "dinput bits";
    EXPECT_TRUE(bytes_of(again->dgate) == bytes_of(g->dgate)) << "dgate bits";
    EXPECT_TRUE(bytes_of(again->ddown) == bytes_of(g->ddown)) << "ddown bits";
  }
}

TEST_F(MoeTrainingOnGpu, ExpertsBackwardScalarAndTensorCoreMatchReference) {
  for (DType dtype : {DType::BF16, DType::F16}) {
    check_case({33, 8, 2, 64, 48, 0}, dtype, device_);
    check_case({1, 1, 1, 16, 8, 0}, dtype, device_);
    check_case({40, 16, 2, 72, 40, 40}, dtype, device_);  // every token picks expert 0
  }
}

TEST_F(MoeTrainingOnGpu, ExpertsBackwardWide) { check_case({64, 4, 2, 1024, 704, 0}, DType::BF16, device_); }

}  // namespace
}  // namespace rudnn
