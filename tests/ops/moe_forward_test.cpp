// The MoE forward through the public entries (RoutingPlan::dispatch, SwiGluExperts, Dispatched::combine,
// forward, forward_sigmoid_grouped) on the host emulation device: dispatch invariants (each
// (token, k) exactly once, offsets = the histogram's prefix sum, rows equal their token's input),
// skewed and empty expert loads, T = 1, E = 1, top_k = E; outputs within DESIGN §5 bounds of the FP64
// oracle (tests/reference/moe.h); Scalar ≡ TensorCore ≡ Auto; the wgmma tiles under the opt-in;
// both thread orders, poisoned outputs; every contract line of SPEC §3–§4 rejected with nothing compiled or launched.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "host/emulator.h"
#include "jit.h"
#include "contract_fixture.h"
#include "contracts/arch.h"
#include "device_limits.h"
#include "op_test_util.h"
#include "reference/moe.h"
#include "rudnn/compiler/pipeline.h"
#include "rudnn/moe.h"
#include "rudnn/stats.h"
#include "wgmma_opt_in.h"

namespace rudnn {
namespace {

using runtime::host::Schedule;
using testing::fresh_seed;

using testing::host_values;

// The experts' weights, drawn so that activations stay O(1): entries ~ U(−a, a), a = 1/√fan_in.
struct Weights {
  std::int64_t e, i, h;
  std::vector<double> gate, up, down;
  Weights(std::int64_t e, std::int64_t i, std::int64_t h, DType dtype, std::mt19937_64& rng) : e(e), i(i), h(h) {
    const double a = 1.5 / std::sqrt(static_cast<double>(h)), b = 1.5 / std::sqrt(static_cast<double>(i));
    gate = testing::random_values(static_cast<std::size_t>(e * i * h), dtype, rng, -a, a);
    up = testing::random_values(static_cast<std::size_t>(e * i * h), dtype, rng, -a, a);
    down = testing::random_values(static_cast<std::size_t>(e * h * i), dtype, rng, -b, b);
  }
  moe::SwiGluExperts upload(DType dtype, const Device& device = Device::host()) const {
    auto experts = moe::SwiGluExperts::create(testing::upload({e, i, h}, dtype, gate, device),
                                              testing::upload({e, i, h}, dtype, up, device),
                                              testing::upload({e, h, i}, dtype, down, device));
    EXPECT_TRUE(experts.ok()) << experts.error().message();
    return std::move(experts.value());
  }
};

// Dispatch invariants against the routing that produced it.
void expect_dispatch(const moe::Dispatched& d, const std::vector<double>& input, std::int64_t h) {
  const auto idx = host_values(d.routing().expert_indices());
  const auto offsets = host_values(d.expert_offsets());
  const auto slots = host_values(d.slots());
  const auto rows = host_values(d.rows());
  const std::int64_t t = d.tokens(), k = d.top_k(), e = d.experts();
  ASSERT_EQ(static_cast<std::int64_t>(offsets.size()), e + 1);
  ASSERT_EQ(d.rows().shape(), (Shape{t * k, h}));
  std::vector<double> count(static_cast<std::size_t>(e), 0);
  for (double x : idx) count[static_cast<std::size_t>(x)] += 1;
  EXPECT_EQ(offsets[0], 0);
  for (std::int64_t x = 0; x < e; ++x)
    ASSERT_EQ(offsets[static_cast<std::size_t>(x + 1)] - offsets[static_cast<std::size_t>(x)],
              count[static_cast<std::size_t>(x)])
        << "expert " << x;
  std::vector<int> seen(static_cast<std::size_t>(t * k), 0);
  for (std::int64_t a = 0; a < t * k; ++a) {
    const auto slot = static_cast<std::int64_t>(slots[static_cast<std::size_t>(a)]);
    ASSERT_GE(slot, 0);
    ASSERT_LT(slot, t * k);
    ++seen[static_cast<std::size_t>(slot)];
    const auto x = static_cast<std::size_t>(idx[static_cast<std::size_t>(a)]);
    ASSERT_GE(slot, offsets[x]) << "assignment " << a << " outside its expert's rows";
    ASSERT_LT(slot, offsets[x + 1]) << "assignment " << a << " outside its expert's rows";
    const std::int64_t token = a / k;
    for (std::int64_t c = 0; c < h; ++c)
      ASSERT_EQ(rows[static_cast<std::size_t>(slot * h + c)], input[static_cast<std::size_t>(token * h + c)])
          << "row " << slot << " col " << c;
  }
  for (int s : seen) ASSERT_EQ(s, 1) << "a compact row used twice or never";
}

// Expert GEMM accumulation in FP32 over T-rounded inputs, the intermediate and the output rounded
// to T: the relative L2 bound is a small multiple of the dtype's (DESIGN §5).
double forward_bound(DType dtype) { return 3 * testing::tolerance(dtype); }

class MoeForward : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

struct Case {
  std::int64_t t, e, k, h, i;
  double skew;  // > 0: this logit bonus for expert 0 (every token picks it)
};

TEST_P(MoeForward, DispatchExpertsCombineMatchReference) {
  const DType dtype = GetParam();
  for (Case c : {Case{13, 8, 2, 24, 40, 0}, Case{1, 1, 1, 16, 8, 0}, Case{5, 4, 4, 8, 16, 0},
                 Case{9, 6, 2, 16, 24, 50.0}, Case{3, 64, 2, 16, 8, 0}}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("T={} E={} k={} H={} I={} skew={} seed={}", c.t, c.e, c.k, c.h, c.i, c.skew, seed));
    std::mt19937_64 rng(seed);
    Weights w(c.e, c.i, c.h, dtype, rng);
    auto experts = w.upload(dtype);
    auto x = testing::random_values(static_cast<std::size_t>(c.t * c.h), dtype, rng);
    auto logits = testing::random_values(static_cast<std::size_t>(c.t * c.e), dtype, rng);
    for (std::int64_t r = 0; r < c.t; ++r) logits[static_cast<std::size_t>(r * c.e)] += c.skew;
    Tensor tx = testing::upload({c.t, c.h}, dtype, x, Device::host());
    Tensor tl = testing::upload({c.t, c.e}, dtype, logits, Device::host());
    for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
      runtime::host::set_default_schedule({order, seed});
      auto routing = moe::route(tl, {c.k, true});
      ASSERT_TRUE(routing.ok()) << routing.error().message();
      auto dispatched = routing->dispatch(tx);
      ASSERT_TRUE(dispatched.ok()) << dispatched.error().message();
      expect_dispatch(*dispatched, x, c.h);
      auto rows = experts.forward_dispatched(*dispatched);
      ASSERT_TRUE(rows.ok()) << rows.error().message();
      auto out = dispatched->combine(*rows);
      ASSERT_TRUE(out.ok()) << out.error().message();
      ASSERT_EQ(out->shape(), (Shape{c.t, c.h}));
      reference::Routing used{{}, host_values(routing->weights())};
      for (double v : host_values(routing->expert_indices())) used.indices.push_back(static_cast<std::uint32_t>(v));
      auto want = reference::moe_forward(x, used, c.k, w.gate, w.up, w.down, c.e, c.h, c.i);
      EXPECT_LE(testing::relative_l2(host_values(*out), want), forward_bound(dtype));
      // forward() is the same chain in one call.
      auto one = experts.forward(tx, tl, {c.k, true});
      ASSERT_TRUE(one.ok()) << one.error().message();
      EXPECT_LE(testing::relative_l2(host_values(*one), want), forward_bound(dtype));
    }
  }
}

TEST_P(MoeForward, CombineIsTheWeightedSumInTokenOrder) {
  const DType dtype = GetParam();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const std::int64_t t = 7, e = 5, k = 3, h = 12;
  Tensor tl = testing::upload({t, e}, dtype, testing::random_values(static_cast<std::size_t>(t * e), dtype, rng),
                              Device::host());
  Tensor tx = testing::upload({t, h}, dtype, testing::random_values(static_cast<std::size_t>(t * h), dtype, rng),
                              Device::host());
  auto routing = moe::route(tl, {k, false});
  ASSERT_TRUE(routing.ok());
  auto d = routing->dispatch(tx);
  ASSERT_TRUE(d.ok()) << d.error().message();
  const auto y = testing::random_values(static_cast<std::size_t>(t * k * h), dtype, rng);
  auto out = d->combine(testing::upload({t * k, h}, dtype, y, Device::host()));
  ASSERT_TRUE(out.ok()) << out.error().message();
  const auto slots = host_values(d->slots()), weights = host_values(routing->weights());
  std::vector<double> want(static_cast<std::size_t>(t * h), 0.0);
  for (std::int64_t r = 0; r < t; ++r)
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t c = 0; c < h; ++c)
        want[static_cast<std::size_t>(r * h + c)] +=
            weights[static_cast<std::size_t>(r * k + j)] *
            y[static_cast<std::size_t>(static_cast<std::int64_t>(slots[static_cast<std::size_t>(r * k + j)]) * h + c)];
  EXPECT_LE(testing::relative_l2(host_values(*out), want), testing::tolerance(dtype));
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, MoeForward, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// TensorCore and Auto against the oracle and against Scalar (an equivalence test, DESIGN §5).
class MoeStrategies : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

TEST_P(MoeStrategies, TensorCoreAutoAndScalarAgree) {
  const DType dtype = GetParam();
  for (Case c : {Case{11, 4, 2, 32, 24, 0}, Case{1, 2, 1, 16, 8, 0}, Case{20, 8, 2, 48, 16, 30.0}}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("T={} E={} k={} H={} I={} seed={}", c.t, c.e, c.k, c.h, c.i, seed));
    std::mt19937_64 rng(seed);
    Weights w(c.e, c.i, c.h, dtype, rng);
    auto experts = w.upload(dtype);
    auto x = testing::random_values(static_cast<std::size_t>(c.t * c.h), dtype, rng);
    auto logits = testing::random_values(static_cast<std::size_t>(c.t * c.e), dtype, rng);
    for (std::int64_t r = 0; r < c.t; ++r) logits[static_cast<std::size_t>(r * c.e)] += c.skew;
    Tensor tx = testing::upload({c.t, c.h}, dtype, x, Device::host());
    auto routing = moe::route(testing::upload({c.t, c.e}, dtype, logits, Device::host()), {c.k, true});
    ASSERT_TRUE(routing.ok());
    auto d = routing->dispatch(tx);
    ASSERT_TRUE(d.ok());
    const auto rows = host_values(d->rows()), offsets_f = host_values(d->expert_offsets());
    std::vector<std::uint32_t> offsets(offsets_f.begin(), offsets_f.end());
    auto act = reference::swiglu_act(rows, offsets, w.gate, w.up, c.h, c.i);
    auto want = reference::expert_down(act, offsets, w.down, c.h, c.i);
    std::vector<std::vector<double>> got;
    for (auto strategy : {moe::GroupedStrategy::Scalar, moe::GroupedStrategy::TensorCore, moe::GroupedStrategy::Auto}) {
      for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
        runtime::host::set_default_schedule({order, seed});
        auto out = experts.forward_dispatched_with_strategy(*d, strategy);
        ASSERT_TRUE(out.ok()) << out.error().message();
        got.push_back(host_values(*out));
        EXPECT_LE(testing::relative_l2(got.back(), want), forward_bound(dtype)) << "strategy " << int(strategy);
      }
    }
    // Both schedules of one kernel: bit-identical (no order-dependent sums). Auto picked TensorCore.
    EXPECT_EQ(got[0], got[1]);
    EXPECT_EQ(got[2], got[3]);
    EXPECT_EQ(got[2], got[4]) << "Auto did not run the TensorCore kernels for a supported configuration";
    // Scalar vs TensorCore: the same math, different summation order.
    EXPECT_LE(testing::relative_l2(got[2], got[0]), forward_bound(dtype));
  }
}

INSTANTIATE_TEST_SUITE_P(HalfTypes, MoeStrategies, ::testing::Values(DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(MoeStrategyFallback, AutoTakesScalarOnlyWhereTensorCoreCannot) {
  ops::set_poison_outputs(true);
  std::mt19937_64 rng(fresh_seed());
  for (auto [dtype, h, i] :
       {std::tuple{DType::F32, 16, 8}, std::tuple{DType::BF16, 12, 8}, std::tuple{DType::F16, 16, 20}}) {
    SCOPED_TRACE(fmt::format("{} H={} I={}", dtype_name(dtype), h, i));
    Weights w(3, i, h, dtype, rng);
    auto experts = w.upload(dtype);
    const std::int64_t t = 4;
    Tensor tx = testing::upload({t, h}, dtype, testing::random_values(static_cast<std::size_t>(t * h), dtype, rng),
                                Device::host());
    auto routing = moe::route(testing::upload({t, 3}, dtype, testing::random_values(t * 3, dtype, rng), Device::host()),
                              {2, true});
    ASSERT_TRUE(routing.ok());
    auto d = routing->dispatch(tx);
    ASSERT_TRUE(d.ok());
    const Stats before = stats();
    auto tc = experts.forward_dispatched_with_strategy(*d, moe::GroupedStrategy::TensorCore);
    ASSERT_FALSE(tc.ok());
    EXPECT_EQ(tc.error().kind(), ErrorKind::Unsupported) << tc.error().message();
    EXPECT_EQ(tc.error().argument(), "strategy");
    EXPECT_EQ(stats().kernel_launches, before.kernel_launches);
    auto scalar = experts.forward_dispatched(*d);
    auto autos = experts.forward_dispatched_with_strategy(*d, moe::GroupedStrategy::Auto);
    ASSERT_TRUE(scalar.ok() && autos.ok());
    EXPECT_EQ(host_values(*scalar), host_values(*autos));
  }
}

// ---- Hopper's warpgroup MMA (MoEConfig.cpp tensorCoreTiles(): 64 x 128 x 64 and 128 x 128 x 64): the
// heuristic's tensor-core tiles where the target has wgmma (sm_90a with the RUDNN_WGMMA=1 opt-in) and
// the load is over 16 rows per expert, and Autotune candidates there. The host emulation device
// reports sm_90a and emulates wgmma; on a GPU the same check runs as *OnGpu (scripts/gpu-check).

// The public call under the opt-in runs the wgmma tile of its load (the cached plan's kernels say so),
// against the oracle and against Scalar.
void check_wgmma_experts(const Device& device, DType dtype) {
  const testing::WgmmaOptIn opt_in;
  struct WgmmaCase {
    Case c;
    const char* tile;  // the heuristic's tile for the load
  };
  for (auto [c, tile] : {WgmmaCase{{40, 4, 2, 72, 40, 0}, "wgmma_64x128x64_s4"},      // 20 rows per expert
                         WgmmaCase{{300, 2, 1, 136, 264, 0}, "wgmma_128x128x64_s4"},  // 150: row, column, K tiles
                         WgmmaCase{{8, 4, 2, 72, 40, 0}, "16x64x64_w1x4_s3"}}) {      // 4: decode keeps mma.sync
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("T={} E={} k={} H={} I={} seed={}", c.t, c.e, c.k, c.h, c.i, seed));
    std::mt19937_64 rng(seed);
    Weights w(c.e, c.i, c.h, dtype, rng);
    auto experts = w.upload(dtype, device);
    auto x = testing::random_values(static_cast<std::size_t>(c.t * c.h), dtype, rng);
    auto logits = testing::random_values(static_cast<std::size_t>(c.t * c.e), dtype, rng);
    auto routing = moe::route(testing::upload({c.t, c.e}, dtype, logits, device), {c.k, true});
    ASSERT_TRUE(routing.ok()) << routing.error().message();
    auto d = routing->dispatch(testing::upload({c.t, c.h}, dtype, x, device));
    ASSERT_TRUE(d.ok()) << d.error().message();
    const auto rows = host_values(d->rows()), offsets_f = host_values(d->expert_offsets());
    std::vector<std::uint32_t> offsets(offsets_f.begin(), offsets_f.end());
    const auto want =
        reference::expert_down(reference::swiglu_act(rows, offsets, w.gate, w.up, c.h, c.i), offsets, w.down, c.h, c.i);
    auto tc = experts.forward_dispatched_with_strategy(*d, moe::GroupedStrategy::TensorCore);
    ASSERT_TRUE(tc.ok()) << tc.error().message();
    std::string entries;
    for (const std::string& entry : ops::PlanCache::instance().kernel_entries("rudnn.swiglu_experts"))
      entries += entry + " ";
    for (const char* kernel : {"gate_up", "down"})
      EXPECT_NE(entries.find(fmt::format("{}_mma_{}_{}", kernel, dtype_name(dtype), tile)), std::string::npos)
          << entries;
    auto scalar = experts.forward_dispatched_with_strategy(*d, moe::GroupedStrategy::Scalar);
    ASSERT_TRUE(scalar.ok()) << scalar.error().message();
    const auto got = host_values(*tc);
    EXPECT_LE(testing::relative_l2(got, want), forward_bound(dtype));
    EXPECT_LE(testing::relative_l2(got, host_values(*scalar)), forward_bound(dtype));
  }
}

TEST(MoeExpertsWgmma, OptInRunsTheWgmmaTilesOnHost) {
  ops::set_poison_outputs(true);
  check_wgmma_experts(Device::host(), DType::BF16);
  check_wgmma_experts(Device::host(), DType::F16);
}

TEST(MoeExpertsWgmma, OptInRunsTheWgmmaTilesOnGpu) {
  std::string why;
  const auto device = testing::wgmma_gpu(why);
  if (!device) GTEST_SKIP() << "SKIP: " << why;
  check_wgmma_experts(*device, DType::BF16);
}

// Without the opt-in the heuristic keeps the mma.sync tiles for every load, on the host emulation
// device too.
TEST(MoeExpertsWgmma, WithoutTheOptInTheMmaTiles) {
  if (testing::wgmma_opted_in()) GTEST_SKIP() << "SKIP: RUDNN_WGMMA=1 in the environment";
  const std::int64_t e = 4, h = 72, i = 40;
  contracts::ExpertsSignature sig{
      {{{e, i, h}, DType::BF16, 0}, {{e, i, h}, DType::BF16, 0}, {{e, h, i}, DType::BF16, 0}},
      {{600, h}, DType::BF16, 0},
      {{e + 1}, DType::U32, 0}};
  for (std::int64_t bucket : {-1, 1, 32, 256}) {
    auto lowered = compiler::lower_experts({sig, contracts::ExpertsStrategy::TensorCore, std::nullopt, bucket},
                                           ops::target_for(Device::host()));
    ASSERT_TRUE(lowered.ok()) << lowered.error().message();
    for (const auto& l : lowered->launches) EXPECT_EQ(l.entry.find("wgmma"), std::string::npos) << l.entry;
  }
}

// The DeepSeek-V3 routing shape (256 experts, 8 groups, 4 selected, top-8, scale 2.5) with small
// H and I, through forward_sigmoid_grouped.
TEST(MoeForwardGrouped, DeepSeekV3Shape) {
  ops::set_poison_outputs(true);
  const DType dtype = DType::BF16;
  const std::int64_t t = 6, e = 256, k = 8, h = 16, i = 8;
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Weights w(e, i, h, dtype, rng);
  auto experts = w.upload(dtype);
  auto x = testing::random_values(static_cast<std::size_t>(t * h), dtype, rng);
  auto logits = testing::random_values(static_cast<std::size_t>(t * e), dtype, rng, -4, 4);
  std::uniform_real_distribution<float> ub(-0.1f, 0.1f);
  std::vector<float> bias(static_cast<std::size_t>(e));
  for (float& b : bias) b = ub(rng);
  std::vector<double> bias_d(bias.begin(), bias.end());
  const moe::GroupRoutingOptions options{k, 8, 4, true, true, 2.5f};
  Tensor tx = testing::upload({t, h}, dtype, x, Device::host());
  Tensor tl = testing::upload({t, e}, dtype, logits, Device::host());
  Tensor tb = testing::upload({e}, DType::F32, bias_d, Device::host());
  auto want_routing = reference::route_sigmoid_grouped(logits, bias, t, e, k, 8, 4, true, true, 2.5);
  auto want = reference::moe_forward(x, want_routing, k, w.gate, w.up, w.down, e, h, i);
  for (auto strategy : {moe::GroupedStrategy::Scalar, moe::GroupedStrategy::TensorCore, moe::GroupedStrategy::Auto}) {
    auto out = experts.forward_sigmoid_grouped(tx, tl, tb, options, strategy);
    ASSERT_TRUE(out.ok()) << out.error().message();
    // Weights are rounded to bf16 by the routing (SPEC §3: converted to the logits' dtype).
    EXPECT_LE(testing::relative_l2(host_values(*out), want), 2 * forward_bound(dtype)) << int(strategy);
  }
}

TEST(MoeForwardEmpty, ZeroTokens) {
  std::mt19937_64 rng(fresh_seed());
  Weights w(4, 8, 16, DType::F32, rng);
  auto experts = w.upload(DType::F32);
  auto tx = Tensor::empty({0, 16}, DType::F32, Device::host());
  auto tl = Tensor::empty({0, 4}, DType::F32, Device::host());
  ASSERT_TRUE(tx.ok() && tl.ok());
  auto out = experts.forward(*tx, *tl, {2, true});
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(out->shape(), (Shape{0, 16}));
}

// --- every contract line: a typed error naming the argument, nothing compiled or launched ---

class MoeForwardContract : public rudnn::testing::ContractTest {
 protected:
  void SetUp() override {
    ContractTest::SetUp();
    plans_untouched_ = false;  // tests rebase after valid routing/dispatch calls
  }
  static moe::SwiGluExperts experts(DType d, std::int64_t e = 4, std::int64_t i = 8, std::int64_t h = 16) {
    auto x = moe::SwiGluExperts::create(t({e, i, h}, d), t({e, i, h}, d), t({e, h, i}, d));
    EXPECT_TRUE(x.ok());
    return std::move(x.value());
  }
};

TEST_F(MoeForwardContract, ExpertWeights) {
  using moe::SwiGluExperts;
  const DType f = DType::BF16;
  expect_rejected(SwiGluExperts::create(t({4, 8, 16}, DType::FP8E4M3), t({4, 8, 16}, f), t({4, 16, 8}, f)),
                  ErrorKind::QuantizedDType, "gate");
  expect_rejected(SwiGluExperts::create(t({4, 8, 16}, DType::I32), t({4, 8, 16}, f), t({4, 16, 8}, f)),
                  ErrorKind::UnsupportedDType, "gate");
  expect_rejected(SwiGluExperts::create(t({8, 16}, f), t({8, 16}, f), t({16, 8}, f)), ErrorKind::ShapeMismatch, "gate");
  expect_rejected(SwiGluExperts::create(t({4, 0, 16}, f), t({4, 0, 16}, f), t({4, 16, 0}, f)),
                  ErrorKind::EmptyDimension, "gate");
  expect_rejected(SwiGluExperts::create(t({4, 8, 16}, f), t({4, 8, 16}, DType::F16), t({4, 16, 8}, f)),
                  ErrorKind::UnsupportedDType, "up");
  expect_rejected(SwiGluExperts::create(t({4, 8, 16}, f), t({4, 8, 16}, f), t({4, 16, 8}, DType::F32)),
                  ErrorKind::UnsupportedDType, "down");
  expect_rejected(SwiGluExperts::create(t({4, 8, 16}, f), t({4, 8, 12}, f), t({4, 16, 8}, f)), ErrorKind::ShapeMismatch,
                  "up");
  expect_rejected(SwiGluExperts::create(t({4, 8, 16}, f), t({4, 8, 16}, f), t({4, 8, 16}, f)), ErrorKind::ShapeMismatch,
                  "down");
}

TEST_F(MoeForwardContract, DispatchAndCombine) {
  auto routing = moe::route(t({3, 4}, DType::F32), {2, true});
  ASSERT_TRUE(routing.ok());
  rebase();
  expect_rejected(routing->dispatch(t({3, 16}, DType::FP8E4M3)), ErrorKind::QuantizedDType, "input");
  expect_rejected(routing->dispatch(t({3, 16}, DType::U32)), ErrorKind::UnsupportedDType, "input");
  expect_rejected(routing->dispatch(t({48}, DType::F32)), ErrorKind::ShapeMismatch, "input");
  expect_rejected(routing->dispatch(t({3, 0}, DType::F32)), ErrorKind::EmptyDimension, "input");
  expect_rejected(routing->dispatch(t({5, 16}, DType::F32)), ErrorKind::ShapeMismatch, "input");
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  expect_rejected(routing->dispatch(t({3, 16}, DType::F32, &q2.value())), ErrorKind::QueueMismatch, "input");

  auto d = routing->dispatch(t({3, 16}, DType::F32));
  ASSERT_TRUE(d.ok()) << d.error().message();
  rebase();
  expect_rejected(d->combine(t({6, 16}, DType::FP8E4M3)), ErrorKind::QuantizedDType, "expert_output");
  expect_rejected(d->combine(t({6, 16}, DType::I64)), ErrorKind::UnsupportedDType, "expert_output");
  expect_rejected(d->combine(t({96}, DType::F32)), ErrorKind::ShapeMismatch, "expert_output");
  expect_rejected(d->combine(t({5, 16}, DType::F32)), ErrorKind::ShapeMismatch, "expert_output");
  expect_rejected(d->combine(t({6, 8}, DType::F32)), ErrorKind::ShapeMismatch, "expert_output");
  expect_rejected(d->combine(t({6, 16}, DType::F32, &q2.value())), ErrorKind::QueueMismatch, "expert_output");
}

TEST_F(MoeForwardContract, ExpertsAndForward) {
  auto bf = experts(DType::BF16);
  auto routing = moe::route(t({3, 4}, DType::BF16), {2, true});
  auto routing5 = moe::route(t({3, 5}, DType::BF16), {2, true});
  ASSERT_TRUE(routing.ok() && routing5.ok());
  auto d = routing->dispatch(t({3, 16}, DType::BF16));
  auto d_f32 = routing->dispatch(t({3, 16}, DType::F32));
  auto d_h8 = routing->dispatch(t({3, 8}, DType::BF16));
  auto d_e5 = routing5->dispatch(t({3, 16}, DType::BF16));
  ASSERT_TRUE(d.ok() && d_f32.ok() && d_h8.ok() && d_e5.ok());
  rebase();
  expect_rejected(bf.forward_dispatched(*d_f32), ErrorKind::UnsupportedDType, "rows");
  expect_rejected(bf.forward_dispatched(*d_h8), ErrorKind::ShapeMismatch, "rows");
  expect_rejected(bf.forward_dispatched(*d_e5), ErrorKind::ShapeMismatch, "offsets");
  expect_rejected(experts(DType::F32).forward_dispatched_with_strategy(*d_f32, moe::GroupedStrategy::TensorCore),
                  ErrorKind::Unsupported, "strategy");

  const Tensor x = t({3, 16}, DType::BF16), logits = t({3, 4}, DType::BF16);
  expect_rejected(bf.forward(x, t({3, 4}, DType::FP8E4M3), {2, true}), ErrorKind::QuantizedDType, "logits");
  expect_rejected(bf.forward(x, logits, {5, true}), ErrorKind::InvalidValue, "top_k");
  expect_rejected(bf.forward(x, t({3, 6}, DType::BF16), {2, true}), ErrorKind::ShapeMismatch, "logits");
  expect_rejected(bf.forward(t({3, 8}, DType::BF16), logits, {2, true}), ErrorKind::ShapeMismatch, "input");
  expect_rejected(bf.forward(t({4, 16}, DType::BF16), logits, {2, true}), ErrorKind::ShapeMismatch, "input");
  expect_rejected(bf.forward(t({3, 16}, DType::F16), logits, {2, true}), ErrorKind::UnsupportedDType, "input");
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  expect_rejected(bf.forward(t({3, 16}, DType::BF16, &q2.value()), logits, {2, true}), ErrorKind::QueueMismatch,
                  "input");

  auto wide = experts(DType::BF16, 16, 8, 16);
  const Tensor lg = t({3, 16}, DType::BF16);
  const moe::GroupRoutingOptions ok{4, 4, 2, true, true, 1.0f};
  expect_rejected(
      wide.forward_sigmoid_grouped(x, lg, std::nullopt, {4, 3, 2, true, true, 1.0f}, moe::GroupedStrategy::Auto),
      ErrorKind::InvalidValue, "groups");
  expect_rejected(wide.forward_sigmoid_grouped(x, lg, t({8}, DType::F32), ok, moe::GroupedStrategy::Auto),
                  ErrorKind::ShapeMismatch, "bias");
  expect_rejected(wide.forward_sigmoid_grouped(x, t({3, 8}, DType::BF16), std::nullopt, ok, moe::GroupedStrategy::Auto),
                  ErrorKind::ShapeMismatch, "logits");
  auto wide_f32 = experts(DType::F32, 16, 8, 16);
  expect_rejected(
      wide_f32.forward_sigmoid_grouped(t({3, 16}, DType::F32), lg, std::nullopt, ok, moe::GroupedStrategy::TensorCore),
      ErrorKind::Unsupported, "strategy");
}

// Issue 10 item 17: a forward whose input sits on another queue than the experts is rejected before
// routing runs (nothing compiled or launched); a routing made by hand is validated, its indices
// included (an out-of-range index would be a dropped token); combine checks the weights' queue.
TEST_F(MoeForwardContract, QueuesAndHandMadeRoutings) {
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  auto bf = experts(DType::BF16);
  const Tensor x2 = t({3, 16}, DType::BF16, &q2.value()), logits2 = t({3, 4}, DType::BF16, &q2.value());
  expect_rejected(bf.forward(x2, logits2, {2, true}), ErrorKind::QueueMismatch, "input");
  auto wide = experts(DType::BF16, 16, 8, 16);
  expect_rejected(wide.forward_sigmoid_grouped(x2, t({3, 16}, DType::BF16, &q2.value()), std::nullopt,
                                               {4, 4, 2, true, true, 1.0f}, moe::GroupedStrategy::Auto),
                  ErrorKind::QueueMismatch, "input");

  const Device host = Device::host();
  auto indices = [&](std::vector<double> v, const Queue* q = nullptr) {
    auto r = Tensor::upload(HostData::from_f64({3, 2}, DType::U32, v), q ? *q : Queue::default_queue(host));
    EXPECT_TRUE(r.ok());
    return std::move(r.value());
  };
  const Tensor w = t({3, 2}, DType::F32);
  expect_rejected(moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 4}), w, 4), ErrorKind::InvalidValue,
                  "expert_indices");
  expect_rejected(moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 0}), w, 0), ErrorKind::InvalidValue, "experts");
  expect_rejected(moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 0}), w, std::numeric_limits<std::int64_t>::max()),
                  ErrorKind::InvalidValue, "experts");
  expect_rejected(moe::RoutingPlan::create(t({3, 2}, DType::I32), w, 4), ErrorKind::UnsupportedDType, "expert_indices");
  expect_rejected(moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 0}), w, 1), ErrorKind::ShapeMismatch,
                  "expert_indices");
  expect_rejected(moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 0}), t({3, 3}, DType::F32), 4),
                  ErrorKind::ShapeMismatch, "weights");
  expect_rejected(moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 0}), t({3, 2}, DType::U32), 4),
                  ErrorKind::UnsupportedDType, "weights");
  expect_rejected(moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 0}), t({3, 2}, DType::F32, &q2.value()), 4),
                  ErrorKind::QueueMismatch, "weights");
  auto bad = moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 9}), w, 4);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("9 at [2, 1]"), std::string::npos) << bad.error().message();

  // A dispatch's ranking counts each expert in shared memory: more experts than kMaxDispatchExperts
  // are refused before anything runs.
  auto many = moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 0}), w, moe::kMaxDispatchExperts + 1);
  ASSERT_TRUE(many.ok()) << many.error().message();
  rebase();
  expect_rejected(many->dispatch(t({3, 16}, DType::F32)), ErrorKind::InvalidValue, "experts");
  // Exactly kMaxDispatchExperts: the counters fit the least shared memory of any supported GPU
  // (sm_86/sm_89's 99 KiB, which 32768 experts' 128 KiB did not).
  {
    testing::ScopedSharedMemory sm86(testing::kSm86SharedBytes);
    auto most = moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 0}), w, moe::kMaxDispatchExperts);
    ASSERT_TRUE(most.ok()) << most.error().message();
    auto dispatched = most->dispatch(t({3, 16}, DType::F32));
    ASSERT_TRUE(dispatched.ok()) << dispatched.error().message();
    const auto offsets = testing::host_values(dispatched->expert_offsets());
    ASSERT_EQ(std::ssize(offsets), moe::kMaxDispatchExperts + 1);
    EXPECT_EQ(offsets[4], 6);
    EXPECT_EQ(offsets.back(), 6);
  }
  rebase();

  // A valid hand-made routing dispatches like route()'s: offsets end at T·top_k.
  auto good = moe::RoutingPlan::create(indices({0, 1, 2, 3, 1, 0}), w, 4);
  ASSERT_TRUE(good.ok()) << good.error().message();
  auto d = good->dispatch(t({3, 16}, DType::F32));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(testing::host_values(d->expert_offsets()), (std::vector<double>{0, 2, 4, 5, 6}));
}

}  // namespace
}  // namespace rudnn
