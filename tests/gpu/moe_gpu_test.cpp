// The MoE forward on a real GPU against the FP64 oracle of tests/reference/moe.h: route → dispatch →
// experts (Scalar and TensorCore) → combine, and forward(), at moderate shapes (uneven tiles, skewed
// and empty expert loads, T = 1, E = 1, top_k = E, the benchmark's H = 4096 width). Every test prints
// SKIP without a CUDA device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>

#include "../ops/op_test_util.h"
#include "gpu_test_util.h"
#include "reference/moe.h"
#include "rudnn/moe.h"

namespace rudnn {
namespace {

using testing::host_values;

class MoeOnGpu : public testing::GpuTest {};

struct Case {
  std::int64_t t, e, k, h, i;
  double skew;  // > 0: this logit bonus for expert 0 (every token picks it; most experts get nothing)
};

// The expert GEMMs accumulate in FP32 over dtype-rounded inputs; the intermediate and the output are
// rounded to the dtype: a small multiple of the DESIGN §5 bound (as tests/ops/moe_forward_test.cpp).
double forward_bound(DType dtype) { return 3 * testing::tolerance(dtype); }

// Runs the chain with every strategy the dtype allows (and forward()) and checks each against the
// oracle evaluated on the device's own routing (the selection itself is tested exactly elsewhere).
void check_case(const Case& c, DType dtype, const Device& device) {
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE(fmt::format("{} T={} E={} k={} H={} I={} skew={} seed={}", dtype_name(dtype), c.t, c.e, c.k, c.h, c.i,
                           c.skew, seed));
  std::mt19937_64 rng(seed);
  const double a = 1.5 / std::sqrt(static_cast<double>(c.h)), b = 1.5 / std::sqrt(static_cast<double>(c.i));
  const auto n_w = static_cast<std::size_t>(c.e * c.i * c.h);
  auto gate = testing::random_values(n_w, dtype, rng, -a, a);
  auto up = testing::random_values(n_w, dtype, rng, -a, a);
  auto down = testing::random_values(n_w, dtype, rng, -b, b);
  auto x = testing::random_values(static_cast<std::size_t>(c.t * c.h), dtype, rng);
  auto logits = testing::random_values(static_cast<std::size_t>(c.t * c.e), dtype, rng);
  for (std::int64_t r = 0; r < c.t; ++r) logits[static_cast<std::size_t>(r * c.e)] += c.skew;
  auto experts = moe::SwiGluExperts::create(testing::upload({c.e, c.i, c.h}, dtype, gate, device),
                                            testing::upload({c.e, c.i, c.h}, dtype, up, device),
                                            testing::upload({c.e, c.h, c.i}, dtype, down, device));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  Tensor tx = testing::upload({c.t, c.h}, dtype, x, device);
  Tensor tl = testing::upload({c.t, c.e}, dtype, logits, device);

  auto routing = moe::route(tl, {c.k, true});
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  reference::Routing used{{}, host_values(routing->weights())};
  for (double v : host_values(routing->expert_indices())) used.indices.push_back(static_cast<std::uint32_t>(v));
  ASSERT_EQ(static_cast<std::int64_t>(used.indices.size()), c.t * c.k);
  for (std::uint32_t e : used.indices) ASSERT_LT(e, static_cast<std::uint32_t>(c.e));
  const auto want = reference::moe_forward(x, used, c.k, gate, up, down, c.e, c.h, c.i);

  auto dispatched = routing->dispatch(tx);
  ASSERT_TRUE(dispatched.ok()) << dispatched.error().message();
  const auto offsets = host_values(dispatched->expert_offsets());
  ASSERT_EQ(offsets.front(), 0);
  ASSERT_EQ(offsets.back(), static_cast<double>(c.t * c.k));
  std::vector<moe::GroupedStrategy> strategies = {moe::GroupedStrategy::Scalar};
  if (dtype != DType::F32) strategies.push_back(moe::GroupedStrategy::TensorCore);
  for (auto strategy : strategies) {
    SCOPED_TRACE(strategy == moe::GroupedStrategy::Scalar ? "Scalar" : "TensorCore");
    auto rows = experts->forward_dispatched_with_strategy(*dispatched, strategy);
    ASSERT_TRUE(rows.ok()) << rows.error().message();
    auto out = dispatched->combine(*rows);
    ASSERT_TRUE(out.ok()) << out.error().message();
    ASSERT_EQ(out->shape(), (Shape{c.t, c.h}));
    EXPECT_LE(testing::relative_l2(host_values(*out), want), forward_bound(dtype));
  }
  auto one = experts->forward(tx, tl, {c.k, true});
  ASSERT_TRUE(one.ok()) << one.error().message();
  EXPECT_LE(testing::relative_l2(host_values(*one), want), forward_bound(dtype)) << "forward()";
}

TEST_F(MoeOnGpu, ForwardScalarAndTensorCoreMatchReference) {
  const Case cases[] = {
      {300, 64, 8, 264, 200, 0},   // rows per expert ~ 37: partial tiles; H, I not multiples of 16/32
      {64, 16, 4, 512, 128, 0},
      {96, 8, 2, 128, 64, 40.0},   // every token picks expert 0; most experts empty
      {1, 1, 1, 64, 32, 0},        // T = 1, E = 1
      {5, 4, 4, 32, 16, 0},        // top_k = E
  };
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (const Case& c : cases) check_case(c, dtype, device_);
}

// The benchmark's width (H = 4096, I = 1408) with 64 rows per expert (the larger tiles); the FP64
// oracle costs ~4.4 G multiply-adds here, a few seconds.
TEST_F(MoeOnGpu, BenchmarkWidthLargeTiles) { check_case({128, 4, 2, 4096, 1408, 0}, DType::BF16, device_); }

// Small, for compute-sanitizer (scripts/gpu-check runs *Sanitized* under memcheck and racecheck).
TEST_F(MoeOnGpu, SanitizedSmallForward) { check_case({37, 8, 2, 64, 48, 0}, DType::BF16, device_); }

}  // namespace
}  // namespace rudnn
