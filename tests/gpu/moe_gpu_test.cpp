// The MoE forward on a real GPU against the FP64 oracles of tests/reference/moe.h: route (checked
// against the routing oracle) → dispatch → experts (Scalar and TensorCore) → combine, and forward(),
// at moderate shapes (uneven tiles, skewed and empty expert loads, T = 1, E = 1, top_k = E, the
// benchmark's H = 4096 width); the grouped sigmoid routing and forward_sigmoid_grouped likewise;
// exact ties, underflowing probabilities and an infinite bias with exact indices. Every test prints
// SKIP without a CUDA device.
//
// Routing comparisons (reference::routing_mismatch): weights relative to the oracle's, with the
// dtype's smallest normal as the floor. On arbitrary logits the GPU's expf may break a near tie
// (keys within FP32 rounding of each other) differently from the oracle's FP64-then-FP32 values, so
// there a slot may hold either expert of such a tie (docs/moe.md); on grid logits and deep underflow
// the indices must be exact.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "../ops/op_test_util.h"
#include "gpu_test_util.h"
#include "reference/moe.h"
#include "rudnn/moe.h"

namespace rudnn {
namespace {

using testing::host_values;

class MoeOnGpu : public testing::GpuTest {};

double smallest_normal(DType dtype) { return dtype == DType::F16 ? 6.103515625e-05 : 1.1754943508222875e-38; }

// Softmax routing on arbitrary logits: near ties in the probabilities (relative 1e-5) may go either way.
reference::RoutingTolerance softmax_tolerance(DType dtype) {
  return {testing::tolerance(dtype), smallest_normal(dtype), 1e-5, 0};
}
// Grouped routing: near ties in the corrected scores c (absolute 1e-6; c is O(1)) may go either way.
reference::RoutingTolerance grouped_tolerance(DType dtype) {
  return {testing::tolerance(dtype), smallest_normal(dtype), 0, 1e-6};
}
reference::RoutingTolerance exact_tolerance(DType dtype) {
  return {testing::tolerance(dtype), smallest_normal(dtype), 0, 0};
}

// The plan's indices and weights, and "" if they match `want` within `tol`.
std::string routing_check(const moe::RoutingPlan& plan, const reference::Routing& want, std::int64_t experts,
                          std::int64_t top_k, const reference::RoutingTolerance& tol,
                          reference::Routing* got = nullptr) {
  reference::Routing r{{}, host_values(plan.weights()), {}};
  for (double v : host_values(plan.expert_indices())) r.indices.push_back(static_cast<std::uint32_t>(v));
  std::string m = reference::routing_mismatch(want, experts, top_k, r.indices, r.weights, tol);
  if (got) *got = std::move(r);
  return m;
}

// Logits on a coarse grid (exact in every dtype): exact ties, and no near ties.
std::vector<double> grid_logits(std::size_t n, std::mt19937_64& rng, double step = 0.125) {
  std::uniform_int_distribution<int> u(-24, 24);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng) * step;
  return v;
}

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
  logits = HostData::from_f64({c.t * c.e}, dtype, logits).to_f64();  // what the device reads
  auto experts = moe::SwiGluExperts::create(testing::upload({c.e, c.i, c.h}, dtype, gate, device),
                                            testing::upload({c.e, c.i, c.h}, dtype, up, device),
                                            testing::upload({c.e, c.h, c.i}, dtype, down, device));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  Tensor tx = testing::upload({c.t, c.h}, dtype, x, device);
  Tensor tl = testing::upload({c.t, c.e}, dtype, logits, device);

  auto routing = moe::route(tl, {c.k, true});
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  reference::Routing used;
  ASSERT_EQ(routing_check(*routing, reference::route_softmax_topk(logits, c.t, c.e, c.k, true), c.e, c.k,
                          softmax_tolerance(dtype), &used),
            "");
  // The rest against the oracle on the device's own routing (it may break near ties its own way).
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
      {300, 64, 8, 264, 200, 0},  // rows per expert ~ 37: partial tiles; H, I not multiples of 16/32
      {64, 16, 4, 512, 128, 0},  {96, 8, 2, 128, 64, 40.0},  // every token picks expert 0; most experts empty
      {1, 1, 1, 64, 32, 0},                                  // T = 1, E = 1
      {5, 4, 4, 32, 16, 0},                                  // top_k = E
  };
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (const Case& c : cases) check_case(c, dtype, device_);
}

// The benchmark's width (H = 4096, I = 1408) with 64 rows per expert (the larger tiles); the FP64
// oracle costs ~4.4 G multiply-adds here, a few seconds.
TEST_F(MoeOnGpu, BenchmarkWidthLargeTiles) { check_case({128, 4, 2, 4096, 1408, 0}, DType::BF16, device_); }

// Exact indices where the selection is exact on any hardware: grid logits (exact ties, no near ties),
// probabilities that underflow to 0 (tied: index order, issue 10 item 12), and the grouped routing's
// infinite bias (a NaN group score ranks first, issue 10 item 13).
TEST_F(MoeOnGpu, RoutingTiesUnderflowAndInfiniteBiasExact) {
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const std::int64_t t = 67, e = 64, k = 8;
  auto x = grid_logits(static_cast<std::size_t>(t * e), rng);
  std::uniform_int_distribution<int> deep(110, 400), pos(0, static_cast<int>(e) - 1);
  for (std::int64_t r = t - 16; r < t; ++r) {  // the last rows: one or two experts, the rest underflow
    for (std::int64_t j = 0; j < e; ++j) x[static_cast<std::size_t>(r * e + j)] = -deep(rng);
    x[static_cast<std::size_t>(r * e + pos(rng))] = 0;
    x[static_cast<std::size_t>(r * e + pos(rng))] = -1;
  }
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor tx = testing::upload({t, e}, dtype, x, device_);
    for (bool renorm : {true, false}) {
      auto plan = moe::route(tx, {k, renorm});
      ASSERT_TRUE(plan.ok()) << plan.error().message();
      EXPECT_EQ(routing_check(*plan, reference::route_softmax_topk(x, t, e, k, renorm), e, k, exact_tolerance(dtype)),
                "");
    }
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> lx = {0.5, -0.25, 1, 2}, bias = {inf, -inf, 0, 0};
    auto grouped =
        moe::route_sigmoid_grouped(testing::upload({1, 4}, dtype, lx, device_),
                                   testing::upload({4}, DType::F32, bias, device_), {2, 2, 1, true, true, 1.0f});
    ASSERT_TRUE(grouped.ok()) << grouped.error().message();
    EXPECT_EQ(
        routing_check(*grouped,
                      reference::route_sigmoid_grouped(lx, {INFINITY, -INFINITY, 0, 0}, 1, 4, 2, 2, 1, true, true, 1.0),
                      4, 2, exact_tolerance(dtype)),
        "");
  }
}

// Grouped sigmoid routing and forward_sigmoid_grouped (Scalar, and TensorCore for f16/bf16) against
// the oracles, the DeepSeek-V3 routing shape and a smaller one. Rows whose kept groups are decided by
// a margin within FP32 rounding are redrawn: a group flip there is legitimate rounding, but it
// changes whole groups of picks, which a per-slot near-tie rule cannot tell from a bug.
TEST_F(MoeOnGpu, GroupedRoutingAndForwardMatchReference) {
  struct GroupedCase {
    std::int64_t t, e, k, groups, selected;
    bool top_two;
    float scale;
    std::int64_t h, i;
  };
  const GroupedCase cases[] = {{64, 256, 8, 8, 4, true, 2.5f, 128, 64}, {37, 64, 6, 8, 3, false, 1.0f, 96, 40}};
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (const GroupedCase& c : cases) {
      const std::uint64_t seed = testing::fresh_seed();
      SCOPED_TRACE(fmt::format("{} T={} E={} k={} G={} sel={} seed={}", dtype_name(dtype), c.t, c.e, c.k, c.groups,
                               c.selected, seed));
      std::mt19937_64 rng(seed);
      std::vector<double> bias(static_cast<std::size_t>(c.e));
      std::uniform_real_distribution<double> ub(-0.1, 0.1);
      for (double& b : bias) b = static_cast<float>(ub(rng));
      const std::vector<float> bias32(bias.begin(), bias.end());
      const std::int64_t per = c.e / c.groups;
      // Logits row by row, redrawn while the kept groups are decided by less than 1e-4.
      std::vector<double> logits;
      for (std::int64_t r = 0; r < c.t; ++r)
        for (int attempt = 0;; ++attempt) {
          auto row = testing::random_values(static_cast<std::size_t>(c.e), dtype, rng, -4, 4);
          auto one = reference::route_sigmoid_grouped(row, bias32, 1, c.e, c.k, c.groups, c.selected, c.top_two, true,
                                                      c.scale);
          std::vector<double> gs;
          for (std::int64_t g = 0; g < c.groups; ++g) {
            std::vector<double> v(one.keys.begin() + g * per, one.keys.begin() + (g + 1) * per);
            std::sort(v.begin(), v.end(), std::greater<>());
            gs.push_back(c.top_two ? v[0] + v[1] : v[0]);
          }
          std::sort(gs.begin(), gs.end(), std::greater<>());
          if (c.selected == c.groups ||
              gs[static_cast<std::size_t>(c.selected - 1)] - gs[static_cast<std::size_t>(c.selected)] > 1e-4 ||
              attempt == 100) {
            logits.insert(logits.end(), row.begin(), row.end());
            break;
          }
        }
      const moe::GroupRoutingOptions o{c.k, c.groups, c.selected, c.top_two, true, c.scale};
      Tensor tl = testing::upload({c.t, c.e}, dtype, logits, device_);
      Tensor tb = testing::upload({c.e}, DType::F32, bias, device_);
      auto plan = moe::route_sigmoid_grouped(tl, tb, o);
      ASSERT_TRUE(plan.ok()) << plan.error().message();
      reference::Routing used;
      ASSERT_EQ(routing_check(*plan,
                              reference::route_sigmoid_grouped(logits, bias32, c.t, c.e, c.k, c.groups, c.selected,
                                                               c.top_two, true, c.scale),
                              c.e, c.k, grouped_tolerance(dtype), &used),
                "");

      const double a = 1.5 / std::sqrt(static_cast<double>(c.h)), b = 1.5 / std::sqrt(static_cast<double>(c.i));
      const auto n_w = static_cast<std::size_t>(c.e * c.i * c.h);
      auto gate = testing::random_values(n_w, dtype, rng, -a, a);
      auto up = testing::random_values(n_w, dtype, rng, -a, a);
      auto down = testing::random_values(n_w, dtype, rng, -b, b);
      auto x = testing::random_values(static_cast<std::size_t>(c.t * c.h), dtype, rng);
      auto experts = moe::SwiGluExperts::create(testing::upload({c.e, c.i, c.h}, dtype, gate, device_),
                                                testing::upload({c.e, c.i, c.h}, dtype, up, device_),
                                                testing::upload({c.e, c.h, c.i}, dtype, down, device_));
      ASSERT_TRUE(experts.ok()) << experts.error().message();
      const auto want = reference::moe_forward(x, used, c.k, gate, up, down, c.e, c.h, c.i);
      Tensor tx = testing::upload({c.t, c.h}, dtype, x, device_);
      std::vector<moe::GroupedStrategy> strategies = {moe::GroupedStrategy::Scalar};
      if (dtype != DType::F32) strategies.push_back(moe::GroupedStrategy::TensorCore);
      for (auto strategy : strategies) {
        auto out = experts->forward_sigmoid_grouped(tx, tl, tb, o, strategy);
        ASSERT_TRUE(out.ok()) << out.error().message();
        ASSERT_EQ(out->shape(), (Shape{c.t, c.h}));
        EXPECT_LE(testing::relative_l2(host_values(*out), want), forward_bound(dtype))
            << (strategy == moe::GroupedStrategy::Scalar ? "Scalar" : "TensorCore");
      }
    }
}

// Small, for compute-sanitizer (scripts/gpu-check runs *Sanitized* under memcheck and racecheck).
TEST_F(MoeOnGpu, SanitizedSmallForward) { check_case({37, 8, 2, 64, 48, 0}, DType::BF16, device_); }

}  // namespace
}  // namespace rudnn
