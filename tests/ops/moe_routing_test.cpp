// MoE routing through the public entries (rudnn::moe::route, route_sigmoid_grouped) on the host
// emulation device: indices exact against the oracles (tests/reference/moe.h) including ties and
// NaN/+inf/all −inf rows, weights within the dtype's bound, T = 1, E = 1, top_k = E, the
// DeepSeek-V3 grouped shape; both thread orders, poisoned outputs; every contract line rejected
// with nothing compiled or launched.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <limits>
#include <set>

#include "host/emulator.h"
#include "jit.h"
#include "reference/moe.h"
#include "contract_fixture.h"
#include "op_test_util.h"
#include "rudnn/moe.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using runtime::host::Schedule;
using testing::fresh_seed;

// Logits on a coarse grid (exact in every dtype) so that exact ties occur.
std::vector<double> grid_logits(std::size_t n, std::mt19937_64& rng, double step = 0.125) {
  std::uniform_int_distribution<int> u(-24, 24);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng) * step;
  return v;
}

// The weight dtype's smallest normal: the floor of the relative weight bound (reference::RoutingTolerance).
double smallest_normal(DType dtype) { return dtype == DType::F16 ? 6.103515625e-05 : 1.1754943508222875e-38; }

// Shapes and dtypes, then indices exact (the inputs have no near ties: grid logits or deep
// underflow) and weights within the dtype's relative bound.
void expect_routing(const moe::RoutingPlan& plan, const reference::Routing& want, DType dtype, std::int64_t t,
                    std::int64_t e, std::int64_t k) {
  EXPECT_EQ(plan.expert_indices().shape(), (Shape{t, k}));
  EXPECT_EQ(plan.expert_indices().dtype(), DType::U32);
  EXPECT_EQ(plan.weights().shape(), (Shape{t, k}));
  EXPECT_EQ(plan.weights().dtype(), dtype);
  std::vector<std::uint32_t> idx;
  for (double v : testing::host_values(plan.expert_indices())) idx.push_back(static_cast<std::uint32_t>(v));
  EXPECT_EQ(reference::routing_mismatch(want, e, k, idx, testing::host_values(plan.weights()),
                                        {testing::tolerance(dtype), smallest_normal(dtype)}),
            "");
}

class MoeRouting : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

TEST_P(MoeRouting, SoftmaxTopKMatchesReference) {
  const DType dtype = GetParam();
  struct Shape3 {
    std::int64_t t, e, k;
  };
  for (Shape3 s : {Shape3{1, 1, 1}, Shape3{1, 8, 8}, Shape3{7, 64, 8}, Shape3{33, 160, 6}, Shape3{2, 1000, 40}}) {
    for (bool renorm : {true, false}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(fmt::format("T={} E={} k={} renorm={} seed={}", s.t, s.e, s.k, renorm, seed));
      std::mt19937_64 rng(seed);
      auto x = grid_logits(static_cast<std::size_t>(s.t * s.e), rng);
      Tensor tx = testing::upload({s.t, s.e}, dtype, x, Device::host());
      auto want = reference::route_softmax_topk(x, s.t, s.e, s.k, renorm);
      for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
        runtime::host::set_default_schedule({order, seed});
        auto plan = moe::route(tx, {s.k, renorm});
        ASSERT_TRUE(plan.ok()) << plan.error().message();
        expect_routing(plan.value(), want, dtype, s.t, s.e, s.k);
      }
    }
  }
}

TEST_P(MoeRouting, SoftmaxSpecialRows) {
  const DType dtype = GetParam();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> x = {
      1,    2,    nan,  0,    0,    0,     // NaN → NaN weights, indices 0..k−1
      1,    inf,  0,    0,    0,    0,     // +inf → same
      -inf, -inf, -inf, -inf, -inf, -inf,  // all −inf → same
      -inf, 1,    -inf, 1,    0.5,  -inf,  // −inf entries in a good row, ties
      3,    3,    3,    3,    3,    3,     // all tied → 0, 1, 2, 3
  };
  Tensor tx = testing::upload({5, 6}, dtype, x, Device::host());
  for (bool renorm : {true, false}) {
    auto plan = moe::route(tx, {4, renorm});
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    expect_routing(plan.value(), reference::route_softmax_topk(x, 5, 6, 4, renorm), dtype, 5, 6, 4);
  }
}

// Issue 10 item 12: the FP32 probabilities are ranked (SPEC §3), so probabilities that underflow
// to 0 tie and go to the smaller index, whatever the order of their logits.
TEST_P(MoeRouting, SoftmaxUnderflowTies) {
  const DType dtype = GetParam();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const std::int64_t e = 5, t = 24;
  std::vector<double> x = {0, -150, -120, -300, -200};  // the row, extended: → 0, 1, 2, 3
  std::uniform_int_distribution<int> deep(110, 250), pos(0, e - 1);
  for (std::int64_t r = 1; r < t; ++r) {
    std::vector<double> row(static_cast<std::size_t>(e));
    for (double& v : row) v = -deep(rng);
    row[static_cast<std::size_t>(pos(rng))] = 0.5;
    x.insert(x.end(), row.begin(), row.end());
  }
  Tensor tx = testing::upload({t, e}, dtype, x, Device::host());
  for (bool renorm : {true, false})
    for (std::int64_t k : {2, 4}) {
      auto plan = moe::route(tx, {k, renorm});
      ASSERT_TRUE(plan.ok()) << plan.error().message();
      expect_routing(plan.value(), reference::route_softmax_topk(x, t, e, k, renorm), dtype, t, e, k);
      const auto idx = testing::host_values(plan->expert_indices());
      ASSERT_GE(idx.size(), 2u);
      EXPECT_EQ(idx[1], 1.0) << "row [0, −150, −120, ...]: the underflowed probabilities tie";
    }
}

TEST_P(MoeRouting, GroupedDeepSeekV3) {
  const DType dtype = GetParam();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const std::int64_t t = 19, e = 256;
  auto x = grid_logits(static_cast<std::size_t>(t * e), rng);
  std::vector<double> bias(static_cast<std::size_t>(e));
  std::uniform_int_distribution<int> ub(-4, 4);
  for (double& b : bias) b = ub(rng) * 0.25;
  std::vector<float> bias32(bias.begin(), bias.end());
  Tensor tx = testing::upload({t, e}, dtype, x, Device::host());
  Tensor tb = testing::upload({e}, DType::F32, bias, Device::host());
  moe::GroupRoutingOptions o{8, 8, 4, true, true, 2.5f};
  auto want = reference::route_sigmoid_grouped(x, bias32, t, e, 8, 8, 4, true, true, 2.5);
  for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
    runtime::host::set_default_schedule({order, seed});
    auto plan = moe::route_sigmoid_grouped(tx, tb, o);
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    expect_routing(plan.value(), want, dtype, t, e, 8);
  }
  // Without bias, group max, no renormalize.
  moe::GroupRoutingOptions o2{6, 8, 3, false, false, 1.0f};
  auto plan = moe::route_sigmoid_grouped(tx, std::nullopt, o2);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  expect_routing(plan.value(), reference::route_sigmoid_grouped(x, {}, t, e, 6, 8, 3, false, false, 1.0), dtype, t, e,
                 6);
}

TEST_P(MoeRouting, GroupedEdges) {
  const DType dtype = GetParam();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  // E = 1; E = 1024 with 128 groups and top_k 64; T = 1.
  {
    std::vector<double> x = {0.5};
    auto plan = moe::route_sigmoid_grouped(testing::upload({1, 1}, dtype, x, Device::host()), std::nullopt,
                                           {1, 1, 1, false, true, 1.0f});
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    expect_routing(plan.value(), reference::route_sigmoid_grouped(x, {}, 1, 1, 1, 1, 1, false, true, 1.0), dtype, 1, 1,
                   1);
  }
  {
    auto x = grid_logits(3 * 1024, rng);
    auto plan = moe::route_sigmoid_grouped(testing::upload({3, 1024}, dtype, x, Device::host()), std::nullopt,
                                           {64, 128, 128, true, false, 1.0f});
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    expect_routing(plan.value(), reference::route_sigmoid_grouped(x, {}, 3, 1024, 64, 128, 128, true, false, 1.0),
                   dtype, 3, 1024, 64);
  }
}

// Issue 10 item 13: an infinite correction bias. +inf + −inf in one group is a NaN group score,
// ranked above every number (docs/moe.md); exactly selected_groups groups are kept.
TEST_P(MoeRouting, GroupedInfiniteBias) {
  const DType dtype = GetParam();
  const double inf = std::numeric_limits<double>::infinity();
  // The case: E = 4, 2 groups, top-two, bias [+inf, −inf, 0, 0], one group selected.
  std::vector<double> x = {0.5, -0.25, 1, 2};
  std::vector<double> bias = {inf, -inf, 0, 0};
  auto plan =
      moe::route_sigmoid_grouped(testing::upload({1, 4}, dtype, x, Device::host()),
                                 testing::upload({4}, DType::F32, bias, Device::host()), {2, 2, 1, true, true, 1.0f});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  expect_routing(plan.value(), reference::route_sigmoid_grouped(x, {inf, -inf, 0, 0}, 1, 4, 2, 2, 1, true, true, 1.0),
                 dtype, 1, 4, 2);
  EXPECT_EQ(testing::host_values(plan->expert_indices()), (std::vector<double>{0, 1}));

  // Random ±inf/finite biases, DeepSeek-V3's shape with every expert of the kept groups selected:
  // the picks span exactly selected_groups groups.
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const std::int64_t t = 11, e = 256, groups = 32, selected = 2, per = e / groups, k = selected * per;
  auto logits = grid_logits(static_cast<std::size_t>(t * e), rng);
  std::vector<double> b(static_cast<std::size_t>(e));
  std::uniform_int_distribution<int> kind(0, 5);
  for (double& v : b) {
    const int c = kind(rng);
    v = c == 0 ? inf : c == 1 ? -inf : 0.125 * c;
  }
  std::vector<float> b32(b.begin(), b.end());
  auto grouped = moe::route_sigmoid_grouped(testing::upload({t, e}, dtype, logits, Device::host()),
                                            testing::upload({e}, DType::F32, b, Device::host()),
                                            {k, groups, selected, true, false, 1.0f});
  ASSERT_TRUE(grouped.ok()) << grouped.error().message();
  expect_routing(grouped.value(),
                 reference::route_sigmoid_grouped(logits, b32, t, e, k, groups, selected, true, false, 1.0), dtype, t,
                 e, k);
  const auto idx = testing::host_values(grouped->expert_indices());
  for (std::int64_t r = 0; r < t; ++r) {
    std::set<std::int64_t> kept;
    for (std::int64_t j = 0; j < k; ++j)
      kept.insert(static_cast<std::int64_t>(idx[static_cast<std::size_t>(r * k + j)]) / per);
    EXPECT_EQ(static_cast<std::int64_t>(kept.size()), selected) << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, MoeRouting, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(MoeRoutingEmpty, ZeroTokens) {
  auto tx = Tensor::empty({0, 8}, DType::F32, Device::host());
  ASSERT_TRUE(tx.ok());
  auto plan = moe::route(tx.value(), {2, true});
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->expert_indices().shape(), (Shape{0, 2}));
}

// --- every contract line: a typed error naming the argument, nothing compiled or launched ---

class MoeContract : public rudnn::testing::ContractTest {
 protected:
  moe::GroupRoutingOptions ds() { return {8, 8, 4, true, true, 2.5f}; }
};

TEST_F(MoeContract, Route) {
  expect_rejected(moe::route(t({2, 8}, DType::FP8E4M3), {2, true}), ErrorKind::QuantizedDType, "logits");
  expect_rejected(moe::route(t({2, 8}, DType::I32), {2, true}), ErrorKind::UnsupportedDType, "logits");
  expect_rejected(moe::route(t({8}, DType::F32), {2, true}), ErrorKind::ShapeMismatch, "logits");
  expect_rejected(moe::route(t({2, 2, 8}, DType::F32), {2, true}), ErrorKind::ShapeMismatch, "logits");
  expect_rejected(moe::route(t({2, 0}, DType::F32), {1, true}), ErrorKind::EmptyDimension, "logits");
  expect_rejected(moe::route(t({2, 8}, DType::F32), {0, true}), ErrorKind::InvalidValue, "top_k");
  expect_rejected(moe::route(t({2, 8}, DType::F32), {9, true}), ErrorKind::InvalidValue, "top_k");
}

TEST_F(MoeContract, Grouped) {
  const Tensor x = t({2, 256}, DType::BF16);
  const Tensor b = t({256}, DType::F32);
  auto with = [&](auto edit) {
    auto o = ds();
    edit(o);
    return moe::route_sigmoid_grouped(x, b, o);
  };
  using O = moe::GroupRoutingOptions;
  expect_rejected(moe::route_sigmoid_grouped(t({2, 256}, DType::FP8E4M3), b, ds()), ErrorKind::QuantizedDType,
                  "logits");
  expect_rejected(moe::route_sigmoid_grouped(t({2, 256}, DType::U32), b, ds()), ErrorKind::UnsupportedDType, "logits");
  expect_rejected(moe::route_sigmoid_grouped(t({256}, DType::F32), std::nullopt, ds()), ErrorKind::ShapeMismatch,
                  "logits");
  expect_rejected(moe::route_sigmoid_grouped(t({2, 2048}, DType::F32), std::nullopt, ds()), ErrorKind::InvalidValue,
                  "logits");
  expect_rejected(with([](O& o) { o.groups = 0; }), ErrorKind::InvalidValue, "groups");
  expect_rejected(with([](O& o) { o.groups = 129; }), ErrorKind::InvalidValue, "groups");
  expect_rejected(with([](O& o) { o.top_k = 0; }), ErrorKind::InvalidValue, "top_k");
  expect_rejected(with([](O& o) { o.top_k = 65; }), ErrorKind::InvalidValue, "top_k");
  expect_rejected(with([](O& o) { o.groups = 6; }), ErrorKind::InvalidValue, "groups");
  expect_rejected(with([](O& o) { o.selected_groups = 0; }), ErrorKind::InvalidValue, "selected_groups");
  expect_rejected(with([](O& o) { o.selected_groups = 9; }), ErrorKind::InvalidValue, "selected_groups");
  expect_rejected(with([](O& o) {
                    o.selected_groups = 1;
                    o.top_k = 33;
                  }),
                  ErrorKind::InvalidValue, "top_k");
  expect_rejected(moe::route_sigmoid_grouped(t({2, 128}, DType::F32), std::nullopt, {4, 128, 4, true, true, 1.0f}),
                  ErrorKind::InvalidValue, "group_top_two");
  expect_rejected(with([](O& o) { o.scale = 0; }), ErrorKind::InvalidValue, "scale");
  expect_rejected(with([](O& o) { o.scale = std::numeric_limits<float>::infinity(); }), ErrorKind::InvalidValue,
                  "scale");
  expect_rejected(with([](O& o) { o.scale = std::numeric_limits<float>::quiet_NaN(); }), ErrorKind::InvalidValue,
                  "scale");
  expect_rejected(moe::route_sigmoid_grouped(x, t({256}, DType::FP8E4M3), ds()), ErrorKind::QuantizedDType, "bias");
  expect_rejected(moe::route_sigmoid_grouped(x, t({256}, DType::BF16), ds()), ErrorKind::UnsupportedDType, "bias");
  expect_rejected(moe::route_sigmoid_grouped(x, t({128}, DType::F32), ds()), ErrorKind::ShapeMismatch, "bias");
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  auto other = Tensor::empty({256}, DType::F32, q2.value());
  ASSERT_TRUE(other.ok());
  expect_rejected(moe::route_sigmoid_grouped(x, other.value(), ds()), ErrorKind::QueueMismatch, "bias");
}

}  // namespace
}  // namespace rudnn
