// MoE first-order training (SPEC §10, this slice) through the public entries on the host emulation
// device: selected_router_weights / selected_router_backward against the FP64 oracle
// (tests/reference/moe_training.h, whose analytic gradient is checked once against central finite
// differences), Softmax and Sigmoid scoring with and without renormalization, scale ≠ 1, U32/I32/I64
// indices, repeated indices (gather semantics, gradients add up), illegal indices (that row NaN,
// the others unaffected), T = 1, E = 1, top_k = E, top_k = 64; RoutingPlan::into_training →
// RouterTrainingPlan; Dispatched::combine_backward (Serial and Plane) and dispatch_backward; the
// whole chain route → into_training → dispatch → a fixed per-expert scaling → combine → loss = Σ out²
// against the oracle's logits and input gradients; bitwise-identical results over repeated runs and
// thread orders; poisoned outputs; every contract line rejected with nothing compiled or launched.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <optional>

#include "contract_fixture.h"
#include "host/emulator.h"
#include "jit.h"
#include "op_test_util.h"
#include "reference/moe_training.h"
#include "rudnn/moe.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using runtime::host::Schedule;
using testing::fresh_seed;
using testing::host_values;

constexpr Schedule kOrders[] = {Schedule::Forward, Schedule::Reverse, Schedule::Random};

const char* order_name(Schedule s) {
  return s == Schedule::Forward ? "forward" : s == Schedule::Reverse ? "reverse" : "random";
}

reference::RouterSpec spec_of(const moe::RouterWeightOptions& o) {
  return {o.scoring == moe::RouterScoring::Sigmoid, o.renormalize, static_cast<double>(o.scale)};
}

std::string describe(const moe::RouterWeightOptions& o) {
  return fmt::format("{}{} scale={}", o.scoring == moe::RouterScoring::Sigmoid ? "sigmoid" : "softmax",
                     o.renormalize ? " renormalized" : "", o.scale);
}

// The four scoring × renormalization combinations, two of them with scale ≠ 1.
const moe::RouterWeightOptions kOptions[] = {
    {moe::RouterScoring::Softmax, true, 1.0f},
    {moe::RouterScoring::Softmax, false, 2.5f},
    {moe::RouterScoring::Sigmoid, true, 2.5f},
    {moe::RouterScoring::Sigmoid, false, 1.0f},
};

// The raw bytes of a tensor (bitwise comparisons that NaN does not defeat).
std::vector<std::byte> raw(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->bytes : std::vector<std::byte>{};
}

Tensor index_tensor(const Shape& shape, DType dtype, const std::vector<std::int64_t>& v) {
  return testing::upload(shape, dtype, std::vector<double>(v.begin(), v.end()), Device::host());
}

std::vector<std::int64_t> host_indices(const Tensor& t) {
  std::vector<std::int64_t> r;
  for (double v : host_values(t)) r.push_back(static_cast<std::int64_t>(v));
  return r;
}

std::vector<std::uint32_t> host_u32(const Tensor& t) {
  std::vector<std::uint32_t> r;
  for (double v : host_values(t)) r.push_back(static_cast<std::uint32_t>(v));
  return r;
}

// Uniform indices in [0, experts): repeats happen (gather semantics).
std::vector<std::int64_t> random_indices(std::size_t n, std::int64_t experts, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int64_t> u(0, experts - 1);
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Rows of a [rows, width] result: `bad` rows all NaN, the others all finite.
void expect_nan_rows(const std::vector<double>& v, std::int64_t width, const std::vector<bool>& bad, const char* what) {
  ASSERT_EQ(v.size(), bad.size() * static_cast<std::size_t>(width)) << what;
  for (std::size_t r = 0; r < bad.size(); ++r)
    for (std::int64_t c = 0; c < width; ++c) {
      const double x = v[r * static_cast<std::size_t>(width) + static_cast<std::size_t>(c)];
      if (bad[r])
        ASSERT_TRUE(std::isnan(x)) << what << " row " << r << " col " << c << " = " << x;
      else
        ASSERT_TRUE(std::isfinite(x)) << what << " row " << r << " col " << c << " = " << x;
    }
}

// Rows `keep` of a [rows, width] vector.
std::vector<double> rows_of(const std::vector<double>& v, std::int64_t width, const std::vector<bool>& keep) {
  std::vector<double> r;
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (keep[i])
      r.insert(r.end(), v.begin() + static_cast<std::ptrdiff_t>(i * static_cast<std::size_t>(width)),
               v.begin() + static_cast<std::ptrdiff_t>((i + 1) * static_cast<std::size_t>(width)));
  return r;
}

// ‖got − want‖₂ ≤ tol·‖want‖₂ + floor: the relative bound of DESIGN §5 plus an absolute floor for
// gradients that are exactly 0 (constant weights: renormalized over one expert) where FP32 leaves a
// rounding residual and FP64 another.
::testing::AssertionResult near(const std::vector<double>& got, const std::vector<double>& want, double tol,
                                double floor) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i])) return ::testing::AssertionFailure() << "NaN at " << i;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  const double err = std::sqrt(num), bound = tol * std::sqrt(den) + floor;
  if (err <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "‖got − want‖ = " << err << " > " << bound << " (relative "
                                       << err / std::sqrt(den) << ", tolerance " << tol << ", floor " << floor << ")";
}

// The floor of a logits gradient: a few FP32 roundings of scale·‖grad_weights‖.
double gradient_floor(const std::vector<double>& grad_weights, double scale) {
  double n = 0;
  for (double v : grad_weights)
    if (!std::isnan(v)) n += v * v;
  return 16 * 0x1p-24 * scale * std::sqrt(n);
}

// --- the oracle itself ------------------------------------------------------------------------

// The analytic gradient of the FP64 oracle against central differences of its forward, every
// scoring/renormalization combination, repeated indices and an illegal row included.
TEST(RouterWeightsOracle, AnalyticGradientMatchesFiniteDifferences) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const std::int64_t t = 6, e = 7, k = 4;
  const auto logits = testing::random_values(static_cast<std::size_t>(t * e), DType::F32, rng, -3, 3);
  auto idx = random_indices(static_cast<std::size_t>(t * k), e, rng);
  idx[0] = idx[1] = idx[2] = 3;                  // repeats in row 0
  idx[static_cast<std::size_t>(2 * k + 1)] = e;  // row 2 illegal
  idx[static_cast<std::size_t>(4 * k)] = -1;     // row 4 illegal
  const auto g = testing::random_values(static_cast<std::size_t>(t * k), DType::F32, rng);
  for (const auto& o : kOptions) {
    for (double scale : {1.0, 0.375}) {
      reference::RouterSpec spec = spec_of(o);
      spec.scale = scale;
      SCOPED_TRACE(describe(o) + fmt::format(" oracle scale={}", scale));
      const auto a = reference::router_backward(logits, idx, g, t, e, k, spec);
      const auto f = reference::router_backward_fd(logits, idx, g, t, e, k, spec);
      ASSERT_EQ(a.size(), f.size());
      double norm = 0;
      for (double x : a)
        if (!std::isnan(x)) norm = std::max(norm, std::abs(x));
      ASSERT_GT(norm, 1e-3);
      for (std::size_t i = 0; i < a.size(); ++i) {
        const bool bad_row = (i / static_cast<std::size_t>(e)) == 2 || (i / static_cast<std::size_t>(e)) == 4;
        if (bad_row) {
          EXPECT_TRUE(std::isnan(a[i]) && std::isnan(f[i])) << i;
          continue;
        }
        EXPECT_NEAR(a[i], f[i], 1e-7 * (1 + norm)) << "entry " << i;
      }
      // Forward: NaN rows, and renormalized weights sum to the scale.
      const auto w = reference::router_weights(logits, idx, t, e, k, spec);
      for (std::int64_t r = 0; r < t; ++r) {
        double sum = 0;
        for (std::int64_t j = 0; j < k; ++j) sum += w[static_cast<std::size_t>(r * k + j)];
        if (r == 2 || r == 4)
          EXPECT_TRUE(std::isnan(sum));
        else if (spec.renormalize)
          EXPECT_NEAR(sum, scale, 1e-12);
      }
    }
  }
}

// --- selected_router_weights / selected_router_backward -------------------------------------------

class RouterWeights : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

struct RouterCase {
  std::int64_t t, e, k;
};

// Weights within FP32 accuracy, the gradient within the logits dtype's bound; both bitwise equal
// over thread orders and repeated runs.
TEST_P(RouterWeights, MatchReference) {
  const DType dtype = GetParam();
  const DType index_dtypes[] = {DType::U32, DType::I32, DType::I64};
  int n = 0;
  for (RouterCase c : {RouterCase{1, 1, 1}, RouterCase{7, 8, 8}, RouterCase{9, 16, 3}, RouterCase{5, 80, 64},
                       RouterCase{3, 64, 64}, RouterCase{33, 40, 6}}) {
    for (const auto& o : kOptions) {
      const DType idt = index_dtypes[n++ % 3];
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(
          fmt::format("T={} E={} k={} {} indices {} seed={}", c.t, c.e, c.k, describe(o), dtype_name(idt), seed));
      std::mt19937_64 rng(seed);
      const auto logits = testing::random_values(static_cast<std::size_t>(c.t * c.e), dtype, rng, -3, 3);
      const auto idx = random_indices(static_cast<std::size_t>(c.t * c.k), c.e, rng);
      const auto g = testing::random_values(static_cast<std::size_t>(c.t * c.k), DType::F32, rng);
      const Tensor tl = testing::upload({c.t, c.e}, dtype, logits, Device::host());
      const Tensor ti = index_tensor({c.t, c.k}, idt, idx);
      const Tensor tg = testing::upload({c.t, c.k}, DType::F32, g, Device::host());
      const auto spec = spec_of(o);
      const auto want_w = reference::router_weights(logits, idx, c.t, c.e, c.k, spec);
      const auto want_d = reference::router_backward(logits, idx, g, c.t, c.e, c.k, spec);
      std::vector<std::byte> first_w, first_d;
      for (Schedule order : kOrders) {
        for (int rep = 0; rep < (order == Schedule::Forward ? 2 : 1); ++rep) {
          SCOPED_TRACE(fmt::format("{} order, run {}", order_name(order), rep));
          runtime::host::set_default_schedule({order, seed});
          auto w = moe::selected_router_weights(tl, ti, o);
          ASSERT_TRUE(w.ok()) << w.error().message();
          EXPECT_EQ(w->shape(), (Shape{c.t, c.k}));
          EXPECT_EQ(w->dtype(), DType::F32);
          auto d = moe::selected_router_backward(tl, ti, tg, o);
          ASSERT_TRUE(d.ok()) << d.error().message();
          EXPECT_EQ(d->shape(), (Shape{c.t, c.e}));
          EXPECT_EQ(d->dtype(), dtype);
          if (first_w.empty()) {
            EXPECT_LE(testing::relative_l2(host_values(*w), want_w), testing::tolerance(DType::F32));
            EXPECT_TRUE(near(host_values(*d), want_d, testing::tolerance(dtype), gradient_floor(g, o.scale)));
            first_w = raw(*w);
            first_d = raw(*d);
          } else {
            EXPECT_EQ(raw(*w), first_w) << "weights not bitwise reproducible";
            EXPECT_EQ(raw(*d), first_d) << "gradient not bitwise reproducible";
          }
        }
      }
    }
  }
}

// Repeated indices gather: each occurrence is a weight (counted in the renormalization) and their
// gradients add up. The same indices in U32, I32 and I64 give bitwise-identical results.
TEST_P(RouterWeights, RepeatedIndices) {
  const DType dtype = GetParam();
  const std::int64_t t = 4, e = 4, k = 4;
  const std::vector<std::int64_t> idx = {2, 2, 2, 2, 0, 1, 0, 1, 3, 3, 1, 0, 0, 1, 2, 3};
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const auto logits = testing::random_values(static_cast<std::size_t>(t * e), dtype, rng, -3, 3);
  const auto g = testing::random_values(static_cast<std::size_t>(t * k), DType::F32, rng);
  const Tensor tl = testing::upload({t, e}, dtype, logits, Device::host());
  const Tensor tg = testing::upload({t, k}, DType::F32, g, Device::host());
  for (const auto& o : kOptions) {
    SCOPED_TRACE(describe(o));
    const auto spec = spec_of(o);
    const auto want_w = reference::router_weights(logits, idx, t, e, k, spec);
    const auto want_d = reference::router_backward(logits, idx, g, t, e, k, spec);
    // Row 0 renormalized: four equal weights scale/4.
    if (o.renormalize)
      for (std::int64_t j = 0; j < k; ++j) EXPECT_NEAR(want_w[static_cast<std::size_t>(j)], o.scale / 4.0, 1e-12);
    std::vector<std::byte> first_w, first_d;
    for (DType idt : {DType::U32, DType::I32, DType::I64}) {
      SCOPED_TRACE(dtype_name(idt));
      const Tensor ti = index_tensor({t, k}, idt, idx);
      auto w = moe::selected_router_weights(tl, ti, o);
      auto d = moe::selected_router_backward(tl, ti, tg, o);
      ASSERT_TRUE(w.ok()) << w.error().message();
      ASSERT_TRUE(d.ok()) << d.error().message();
      const auto gw = host_values(*w), gd = host_values(*d);
      EXPECT_LE(testing::relative_l2(gw, want_w), testing::tolerance(DType::F32));
      EXPECT_TRUE(near(gd, want_d, testing::tolerance(dtype), gradient_floor(g, o.scale)));
      // Repeated occurrences of one expert: equal weights, bit for bit.
      EXPECT_EQ(gw[0], gw[1]);
      EXPECT_EQ(gw[0], gw[3]);
      EXPECT_EQ(gw[4], gw[6]);
      // Experts never selected in a row: a Sigmoid gradient of exactly 0 there (row 1 selects 0, 1).
      if (o.scoring == moe::RouterScoring::Sigmoid) {
        EXPECT_EQ(gd[static_cast<std::size_t>(1 * e + 2)], 0.0);
        EXPECT_EQ(gd[static_cast<std::size_t>(1 * e + 3)], 0.0);
        EXPECT_EQ(gd[0], 0.0);  // row 0 selects only expert 2
      }
      if (first_w.empty()) {
        first_w = raw(*w);
        first_d = raw(*d);
      } else {
        EXPECT_EQ(raw(*w), first_w) << "index dtype changed the weights";
        EXPECT_EQ(raw(*d), first_d) << "index dtype changed the gradient";
      }
    }
  }
}

// An index < 0 or ≥ E poisons its row (every weight, every logit gradient NaN); the other rows are
// bitwise what they are with legal indices in the bad rows.
TEST_P(RouterWeights, IllegalIndicesPoisonOnlyTheirRow) {
  const DType dtype = GetParam();
  const std::int64_t t = 7, e = 5, k = 3;
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const auto logits = testing::random_values(static_cast<std::size_t>(t * e), dtype, rng, -3, 3);
  const auto g = testing::random_values(static_cast<std::size_t>(t * k), DType::F32, rng);
  const Tensor tl = testing::upload({t, e}, dtype, logits, Device::host());
  const Tensor tg = testing::upload({t, k}, DType::F32, g, Device::host());
  const auto legal = random_indices(static_cast<std::size_t>(t * k), e, rng);
  struct Bad {
    DType dtype;
    std::vector<std::pair<std::size_t, std::int64_t>> edits;  // (flat position, illegal value)
  };
  const std::int64_t big = std::int64_t{1} << 40;
  for (const Bad& bad : {Bad{DType::U32, {{1, e}, {9, 4294967295LL}, {20, e + 1}}},
                         Bad{DType::I32, {{0, -1}, {5, e}, {13, -2147483647LL - 1}, {17, 2147483647LL}}},
                         Bad{DType::I64, {{2, -1}, {10, big}, {14, -big}, {18, e}}}}) {
    for (const auto& o : kOptions) {
      SCOPED_TRACE(fmt::format("{} {}", dtype_name(bad.dtype), describe(o)));
      auto idx = legal;
      std::vector<bool> bad_row(static_cast<std::size_t>(t), false), good_row(static_cast<std::size_t>(t), true);
      for (auto [pos, v] : bad.edits) {
        idx[pos] = v;
        bad_row[pos / static_cast<std::size_t>(k)] = true;
        good_row[pos / static_cast<std::size_t>(k)] = false;
      }
      const Tensor ti = index_tensor({t, k}, bad.dtype, idx);
      auto w = moe::selected_router_weights(tl, ti, o);
      auto d = moe::selected_router_backward(tl, ti, tg, o);
      ASSERT_TRUE(w.ok()) << w.error().message();
      ASSERT_TRUE(d.ok()) << d.error().message();
      const auto gw = host_values(*w), gd = host_values(*d);
      expect_nan_rows(gw, k, bad_row, "weights");
      expect_nan_rows(gd, e, bad_row, "logits gradient");
      const auto spec = spec_of(o);
      EXPECT_LE(testing::relative_l2(rows_of(gw, k, good_row),
                                     rows_of(reference::router_weights(logits, idx, t, e, k, spec), k, good_row)),
                testing::tolerance(DType::F32));
      EXPECT_TRUE(near(rows_of(gd, e, good_row),
                       rows_of(reference::router_backward(logits, idx, g, t, e, k, spec), e, good_row),
                       testing::tolerance(dtype), gradient_floor(g, o.scale)));
      // The same call with legal indices everywhere: the good rows are unchanged, bit for bit.
      const Tensor tlegal = index_tensor({t, k}, bad.dtype, legal);
      auto w0 = moe::selected_router_weights(tl, tlegal, o);
      auto d0 = moe::selected_router_backward(tl, tlegal, tg, o);
      ASSERT_TRUE(w0.ok() && d0.ok());
      EXPECT_EQ(rows_of(host_values(*w0), k, good_row), rows_of(gw, k, good_row));
      EXPECT_EQ(rows_of(host_values(*d0), e, good_row), rows_of(gd, e, good_row));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RouterWeightsDTypes, RouterWeights, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(RouterWeightsEmpty, ZeroTokens) {
  auto tl = Tensor::empty({0, 8}, DType::F32, Device::host());
  auto ti = Tensor::empty({0, 2}, DType::U32, Device::host());
  auto tg = Tensor::empty({0, 2}, DType::F32, Device::host());
  ASSERT_TRUE(tl.ok() && ti.ok() && tg.ok());
  auto w = moe::selected_router_weights(*tl, *ti, {});
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(w->shape(), (Shape{0, 2}));
  auto d = moe::selected_router_backward(*tl, *ti, *tg, {});
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->shape(), (Shape{0, 8}));
}

// --- combine_backward and dispatch_backward with a RoutingPlan's own weights ---------------------

class MoeTrainingCombine : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

// route() weights in the logits dtype; expert_output of another dtype too (combine takes any float
// dtype); Serial ≡ Plane: dexpert bitwise, dweights within FP32 summation-order rounding.
TEST_P(MoeTrainingCombine, BackwardMatchesReference) {
  const DType dtype = GetParam();
  struct C {
    std::int64_t t, e, k, h;
    DType logits_dtype;
  };
  for (C c : {C{7, 5, 3, 12, dtype}, C{1, 1, 1, 8, dtype}, C{6, 4, 4, 100, dtype}, C{11, 8, 2, 33, DType::F32},
              C{4, 3, 2, 64, DType::BF16}}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(
        fmt::format("T={} E={} k={} H={} logits {} seed={}", c.t, c.e, c.k, c.h, dtype_name(c.logits_dtype), seed));
    std::mt19937_64 rng(seed);
    const Tensor tl = testing::upload({c.t, c.e}, c.logits_dtype,
                                      testing::random_values(static_cast<std::size_t>(c.t * c.e), c.logits_dtype, rng),
                                      Device::host());
    auto routing = moe::route(tl, {c.k, false});
    ASSERT_TRUE(routing.ok()) << routing.error().message();
    const auto x = testing::random_values(static_cast<std::size_t>(c.t * c.h), dtype, rng);
    auto d = routing->dispatch(testing::upload({c.t, c.h}, dtype, x, Device::host()));
    ASSERT_TRUE(d.ok()) << d.error().message();
    const auto y = testing::random_values(static_cast<std::size_t>(c.t * c.k * c.h), dtype, rng);
    const auto g = testing::random_values(static_cast<std::size_t>(c.t * c.h), dtype, rng);
    const Tensor ty = testing::upload({c.t * c.k, c.h}, dtype, y, Device::host());
    const Tensor tg = testing::upload({c.t, c.h}, dtype, g, Device::host());
    const auto slots = host_u32(d->slots());
    const auto weights = host_values(routing->weights());
    const auto want = reference::combine_backward(y, g, slots, weights, c.t, c.k, c.h);
    std::vector<std::vector<double>> dexpert, dweights;
    for (auto strategy : {moe::CombineGradientStrategy::Serial, moe::CombineGradientStrategy::Plane}) {
      SCOPED_TRACE(strategy == moe::CombineGradientStrategy::Serial ? "serial" : "plane");
      for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
        runtime::host::set_default_schedule({order, seed});
        auto r = strategy == moe::CombineGradientStrategy::Serial ? d->combine_backward(ty, tg)
                                                                  : d->combine_backward_with_strategy(ty, tg, strategy);
        ASSERT_TRUE(r.ok()) << r.error().message();
        EXPECT_EQ(r->dexpert.shape(), (Shape{c.t * c.k, c.h}));
        EXPECT_EQ(r->dexpert.dtype(), dtype);
        EXPECT_EQ(r->dweights.shape(), (Shape{c.t, c.k}));
        EXPECT_EQ(r->dweights.dtype(), DType::F32);
        dexpert.push_back(host_values(r->dexpert));
        dweights.push_back(host_values(r->dweights));
        EXPECT_LE(testing::relative_l2(dexpert.back(), want.dexpert), testing::tolerance(dtype));
        EXPECT_LE(testing::relative_l2(dweights.back(), want.dweights), testing::tolerance(DType::F32));
      }
    }
    // Each strategy bitwise over thread orders; Serial vs Plane: dexpert bitwise (one product), dweights
    // the same sum in another order.
    EXPECT_EQ(dexpert[0], dexpert[1]);
    EXPECT_EQ(dweights[0], dweights[1]);
    EXPECT_EQ(dexpert[2], dexpert[3]);
    EXPECT_EQ(dweights[2], dweights[3]);
    EXPECT_EQ(dexpert[0], dexpert[2]) << "Serial and Plane dexpert differ";
    for (std::size_t a = 0; a < dweights[0].size(); ++a) {
      double s = 0;  // Σ_h |g y|: the bound of an FP32 reordering of the sum
      const std::size_t slot = slots[a];
      const std::size_t tok = a / static_cast<std::size_t>(c.k);
      for (std::int64_t hh = 0; hh < c.h; ++hh)
        s += std::abs(g[tok * static_cast<std::size_t>(c.h) + static_cast<std::size_t>(hh)] *
                      y[slot * static_cast<std::size_t>(c.h) + static_cast<std::size_t>(hh)]);
      EXPECT_LE(std::abs(dweights[0][a] - dweights[2][a]), 2.0 * static_cast<double>(c.h) * 0x1p-24 * s)
          << "dweights " << a;
    }
    // dispatch_backward: the selected rows summed back per token, no weight.
    const auto drows = testing::random_values(static_cast<std::size_t>(c.t * c.k * c.h), dtype, rng);
    auto back = d->dispatch_backward(testing::upload({c.t * c.k, c.h}, dtype, drows, Device::host()));
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->shape(), (Shape{c.t, c.h}));
    EXPECT_EQ(back->dtype(), dtype);
    const auto got = host_values(*back);
    EXPECT_LE(testing::relative_l2(got, reference::dispatch_backward(drows, slots, c.t, c.k, c.h)),
              testing::tolerance(dtype));
    if (c.k == 1) {
      // One row per token: a plain gather, exact.
      for (std::int64_t r = 0; r < c.t; ++r)
        for (std::int64_t hh = 0; hh < c.h; ++hh)
          ASSERT_EQ(got[static_cast<std::size_t>(r * c.h + hh)],
                    drows[static_cast<std::size_t>(static_cast<std::int64_t>(slots[static_cast<std::size_t>(r)]) * c.h +
                                                   hh)]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MoeTrainingDTypes, MoeTrainingCombine, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// --- the whole chain -------------------------------------------------------------------------

enum class Selection { Route, Grouped, Create };

struct ChainCase {
  std::int64_t t, e, k, h;
  moe::RouterWeightOptions options;
  Selection selection;
  bool identity;  // the expert is the identity (else expert e scales its rows by factor(e))
};

double factor(std::int64_t expert) { return 0.5 + 0.25 * static_cast<double>(expert % 7); }

// Everything a chain run produced, in token/choice order (rows() order is not fixed).
struct ChainRun {
  std::vector<double> weights, out, dexpert_tj, dweights, dweights_plane, dlogits, dinput;
  std::vector<std::int64_t> indices;
};

class MoeTrainingChain : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }

  // route (or a hand-made selection) → into_training → dispatch → experts (host) → combine →
  // loss = Σ out² → combine_backward → dispatch_backward, RouterTrainingPlan::backward; with the
  // stage checks against the oracle on the kernels' own intermediate values.
  static void run(const ChainCase& c, DType dtype, const Tensor& tl, const Tensor& tx,
                  const std::vector<std::int64_t>& created, ChainRun& res) {
    const std::int64_t t = c.t, e = c.e, k = c.k, h = c.h;
    Result<moe::RoutingPlan, MoeError> plan = [&]() -> Result<moe::RoutingPlan, MoeError> {
      switch (c.selection) {
        case Selection::Route: return moe::route(tl, {k, c.options.renormalize});
        case Selection::Grouped:
          return moe::route_sigmoid_grouped(tl, std::nullopt, {k, 1, 1, false, c.options.renormalize, c.options.scale});
        case Selection::Create: break;
      }
      return moe::RoutingPlan::create(
          index_tensor({t, k}, DType::U32, created),
          testing::upload({t, k}, DType::F32, std::vector<double>(static_cast<std::size_t>(t * k), 0.5),
                          Device::host()),
          e);
    }();
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    auto tp = plan->into_training(tl, c.options);
    ASSERT_TRUE(tp.ok()) << tp.error().message();
    const moe::RoutingPlan& routing = tp->routing();
    // The selection kept, the weights recomputed in FP32 by selected_router_weights.
    EXPECT_EQ(raw(routing.expert_indices()), raw(plan->expert_indices()));
    EXPECT_EQ(routing.experts(), e);
    EXPECT_EQ(routing.weights().dtype(), DType::F32);
    EXPECT_EQ(routing.weights().shape(), (Shape{t, k}));
    EXPECT_EQ(tp->logits().shape(), tl.shape());
    EXPECT_EQ(tp->options().scoring, c.options.scoring);
    EXPECT_EQ(tp->options().renormalize, c.options.renormalize);
    EXPECT_EQ(tp->options().scale, c.options.scale);
    auto direct = moe::selected_router_weights(tl, plan->expert_indices(), c.options);
    ASSERT_TRUE(direct.ok()) << direct.error().message();
    EXPECT_EQ(raw(routing.weights()), raw(*direct));
    res.indices = host_indices(routing.expert_indices());
    res.weights = host_values(routing.weights());

    auto d = routing.dispatch(tx);
    ASSERT_TRUE(d.ok()) << d.error().message();
    const auto slots = host_u32(d->slots());
    const auto offsets = host_u32(d->expert_offsets());
    const auto rows = host_values(d->rows());
    // The expert of each compact row.
    std::vector<double> row_factor(static_cast<std::size_t>(t * k), 1.0);
    for (std::int64_t x = 0; x < e; ++x)
      for (std::uint32_t r = offsets[static_cast<std::size_t>(x)]; r < offsets[static_cast<std::size_t>(x + 1)]; ++r)
        row_factor[r] = c.identity ? 1.0 : factor(x);
    Tensor ty = d->rows();
    std::vector<double> y = rows;
    if (!c.identity) {
      for (std::size_t r = 0; r < static_cast<std::size_t>(t * k); ++r)
        for (std::int64_t hh = 0; hh < h; ++hh)
          y[r * static_cast<std::size_t>(h) + static_cast<std::size_t>(hh)] *= row_factor[r];
      y = HostData::from_f64({t * k, h}, dtype, y).to_f64();
      ty = testing::upload({t * k, h}, dtype, y, Device::host());
    }
    auto out = d->combine(ty);
    ASSERT_TRUE(out.ok()) << out.error().message();
    res.out = host_values(*out);
    // loss = Σ out²: grad_output = 2·out (exact in every dtype).
    std::vector<double> g(res.out.size());
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = 2 * res.out[i];
    const Tensor tg = testing::upload({t, h}, dtype, g, Device::host());
    auto cb = d->combine_backward(ty, tg);
    ASSERT_TRUE(cb.ok()) << cb.error().message();
    auto cp = d->combine_backward_with_strategy(ty, tg, moe::CombineGradientStrategy::Plane);
    ASSERT_TRUE(cp.ok()) << cp.error().message();
    EXPECT_EQ(raw(cb->dexpert), raw(cp->dexpert)) << "Serial and Plane dexpert differ";
    const auto dexpert = host_values(cb->dexpert);
    res.dweights = host_values(cb->dweights);
    res.dweights_plane = host_values(cp->dweights);
    const auto want_cb = reference::combine_backward(y, g, slots, res.weights, t, k, h);
    EXPECT_LE(testing::relative_l2(dexpert, want_cb.dexpert), testing::tolerance(dtype));
    EXPECT_LE(testing::relative_l2(res.dweights, want_cb.dweights), testing::tolerance(DType::F32));
    EXPECT_LE(testing::relative_l2(res.dweights_plane, want_cb.dweights), testing::tolerance(DType::F32));
    res.dexpert_tj.clear();
    for (std::size_t a = 0; a < slots.size(); ++a)
      res.dexpert_tj.insert(res.dexpert_tj.end(), dexpert.begin() + static_cast<std::ptrdiff_t>(slots[a] * h),
                            dexpert.begin() + static_cast<std::ptrdiff_t>((slots[a] + 1) * h));

    // The experts' backward (host): drows = factor(e) · dexpert; the identity passes dexpert itself.
    Tensor tdrows = cb->dexpert;
    std::vector<double> drows = dexpert;
    if (!c.identity) {
      for (std::size_t r = 0; r < static_cast<std::size_t>(t * k); ++r)
        for (std::int64_t hh = 0; hh < h; ++hh)
          drows[r * static_cast<std::size_t>(h) + static_cast<std::size_t>(hh)] *= row_factor[r];
      drows = HostData::from_f64({t * k, h}, dtype, drows).to_f64();
      tdrows = testing::upload({t * k, h}, dtype, drows, Device::host());
    }
    auto dx = d->dispatch_backward(tdrows);
    ASSERT_TRUE(dx.ok()) << dx.error().message();
    res.dinput = host_values(*dx);
    EXPECT_LE(testing::relative_l2(res.dinput, reference::dispatch_backward(drows, slots, t, k, h)),
              testing::tolerance(dtype));

    auto dl = tp->backward(cb->dweights);
    ASSERT_TRUE(dl.ok()) << dl.error().message();
    EXPECT_EQ(dl->shape(), (Shape{t, e}));
    EXPECT_EQ(dl->dtype(), dtype);
    res.dlogits = host_values(*dl);
    // RouterTrainingPlan::backward is selected_router_backward on the saved logits and selection.
    auto direct_dl = moe::selected_router_backward(tl, plan->expert_indices(), cb->dweights, c.options);
    ASSERT_TRUE(direct_dl.ok()) << direct_dl.error().message();
    EXPECT_EQ(raw(*dl), raw(*direct_dl));
  }
};

TEST_P(MoeTrainingChain, GradientsMatchReference) {
  const DType dtype = GetParam();
  using S = moe::RouterScoring;
  const ChainCase cases[] = {
      {13, 8, 2, 24, {S::Softmax, true, 1.0f}, Selection::Route, false},
      {9, 6, 3, 16, {S::Softmax, false, 2.5f}, Selection::Route, true},
      {7, 16, 4, 32, {S::Sigmoid, true, 2.5f}, Selection::Grouped, false},
      {5, 8, 2, 8, {S::Sigmoid, false, 0.75f}, Selection::Grouped, true},
      {1, 1, 1, 8, {S::Softmax, true, 1.0f}, Selection::Route, false},      // T = 1, E = 1
      {1, 4, 4, 16, {S::Softmax, false, 1.5f}, Selection::Route, false},    // top_k = E
      {3, 70, 64, 8, {S::Sigmoid, true, 1.0f}, Selection::Grouped, false},  // top_k = 64
      {4, 4, 2, 100, {S::Softmax, true, 2.0f}, Selection::Route, false},    // H not a multiple of a warp
      {6, 5, 3, 20, {S::Softmax, true, 2.0f}, Selection::Create, false},    // repeated indices
      {6, 5, 3, 20, {S::Sigmoid, false, 3.0f}, Selection::Create, true},    // repeated indices
  };
  for (const ChainCase& c : cases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("T={} E={} k={} H={} {} selection={} identity={} seed={}", c.t, c.e, c.k, c.h,
                             describe(c.options), static_cast<int>(c.selection), c.identity, seed));
    std::mt19937_64 rng(seed);
    const auto logits = testing::random_values(static_cast<std::size_t>(c.t * c.e), dtype, rng, -3, 3);
    const auto x = testing::random_values(static_cast<std::size_t>(c.t * c.h), dtype, rng);
    std::vector<std::int64_t> created = random_indices(static_cast<std::size_t>(c.t * c.k), c.e, rng);
    if (c.selection == Selection::Create) {
      created[0] = created[1] = created[2];  // row 0: one expert three times
      created[3] = created[4];
    }
    const Tensor tl = testing::upload({c.t, c.e}, dtype, logits, Device::host());
    const Tensor tx = testing::upload({c.t, c.h}, dtype, x, Device::host());
    std::vector<ChainRun> runs;
    for (Schedule order : kOrders) {
      for (int rep = 0; rep < (order == Schedule::Forward ? 2 : 1); ++rep) {
        SCOPED_TRACE(fmt::format("{} order, run {}", order_name(order), rep));
        runtime::host::set_default_schedule({order, seed});
        runs.emplace_back();
        run(c, dtype, tl, tx, created, runs.back());
        if (HasFatalFailure()) return;
      }
    }
    // Bitwise identical over repeated runs and thread orders (in token/choice order).
    for (std::size_t i = 1; i < runs.size(); ++i) {
      SCOPED_TRACE(fmt::format("run {} vs run 0", i));
      EXPECT_EQ(runs[i].indices, runs[0].indices);
      EXPECT_EQ(runs[i].weights, runs[0].weights);
      EXPECT_EQ(runs[i].out, runs[0].out);
      EXPECT_EQ(runs[i].dexpert_tj, runs[0].dexpert_tj);
      EXPECT_EQ(runs[i].dweights, runs[0].dweights);
      EXPECT_EQ(runs[i].dweights_plane, runs[0].dweights_plane);
      EXPECT_EQ(runs[i].dlogits, runs[0].dlogits);
      EXPECT_EQ(runs[i].dinput, runs[0].dinput);
    }
    const ChainRun& r = runs[0];
    if (c.selection == Selection::Create) EXPECT_EQ(r.indices, created);
    // The FP64 chain on the same selection: w(logits) → out = Σ_j w_j f_j x → g = 2 out →
    // dweights_j = g · f_j x, dx = Σ_j w_j f_j g, dlogits = router_backward(dweights).
    const auto spec = spec_of(c.options);
    const auto w = reference::router_weights(logits, r.indices, c.t, c.e, c.k, spec);
    EXPECT_LE(testing::relative_l2(r.weights, w), testing::tolerance(DType::F32));
    std::vector<double> want_dw(static_cast<std::size_t>(c.t * c.k)), want_dx(static_cast<std::size_t>(c.t * c.h));
    for (std::int64_t tok = 0; tok < c.t; ++tok) {
      std::vector<double> out(static_cast<std::size_t>(c.h), 0.0);
      const double* xt = x.data() + tok * c.h;
      double wf = 0;  // Σ_j w_j f_j
      for (std::int64_t j = 0; j < c.k; ++j) {
        const auto a = static_cast<std::size_t>(tok * c.k + j);
        wf += w[a] * (c.identity ? 1.0 : factor(r.indices[a]));
      }
      double gx = 0;  // Σ_h g_h x_h
      for (std::int64_t hh = 0; hh < c.h; ++hh) {
        const double gh = 2 * wf * xt[hh];
        gx += gh * xt[hh];
        want_dx[static_cast<std::size_t>(tok * c.h + hh)] = wf * gh;
      }
      for (std::int64_t j = 0; j < c.k; ++j) {
        const auto a = static_cast<std::size_t>(tok * c.k + j);
        want_dw[a] = (c.identity ? 1.0 : factor(r.indices[a])) * gx;
      }
    }
    const auto want_dl = reference::router_backward(logits, r.indices, want_dw, c.t, c.e, c.k, spec);
    const double bound = 4 * testing::tolerance(dtype);
    EXPECT_LE(testing::relative_l2(r.dweights, want_dw), bound) << "dweights";
    EXPECT_LE(testing::relative_l2(r.dinput, want_dx), bound) << "input gradient";
    EXPECT_TRUE(near(r.dlogits, want_dl, bound, gradient_floor(want_dw, c.options.scale))) << "logits gradient";
    // Stage check: the logits gradient of the kernels' own dweights.
    EXPECT_TRUE(near(r.dlogits, reference::router_backward(logits, r.indices, r.dweights, c.t, c.e, c.k, spec),
                     testing::tolerance(dtype), gradient_floor(r.dweights, c.options.scale)))
        << "logits gradient of the kernel's dweights";
  }
}

INSTANTIATE_TEST_SUITE_P(MoeTrainingDTypes, MoeTrainingChain, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// T = 0 through the whole chain: empty results of the right shapes, nothing fails.
TEST(MoeTrainingEmpty, ZeroTokens) {
  const std::int64_t e = 4, k = 2, h = 16;
  auto tl = Tensor::empty({0, e}, DType::BF16, Device::host());
  auto tx = Tensor::empty({0, h}, DType::BF16, Device::host());
  ASSERT_TRUE(tl.ok() && tx.ok());
  auto routing = moe::route(*tl, {k, true});
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  auto tp = routing->into_training(*tl, {moe::RouterScoring::Softmax, true, 2.0f});
  ASSERT_TRUE(tp.ok()) << tp.error().message();
  EXPECT_EQ(tp->routing().weights().shape(), (Shape{0, k}));
  auto d = tp->routing().dispatch(*tx);
  ASSERT_TRUE(d.ok()) << d.error().message();
  auto g = Tensor::empty({0, h}, DType::BF16, Device::host());
  ASSERT_TRUE(g.ok());
  for (auto strategy : {moe::CombineGradientStrategy::Serial, moe::CombineGradientStrategy::Plane}) {
    auto cb = d->combine_backward_with_strategy(d->rows(), *g, strategy);
    ASSERT_TRUE(cb.ok()) << cb.error().message();
    EXPECT_EQ(cb->dexpert.shape(), (Shape{0, h}));
    EXPECT_EQ(cb->dweights.shape(), (Shape{0, k}));
    auto dx = d->dispatch_backward(cb->dexpert);
    ASSERT_TRUE(dx.ok()) << dx.error().message();
    EXPECT_EQ(dx->shape(), (Shape{0, h}));
    auto dl = tp->backward(cb->dweights);
    ASSERT_TRUE(dl.ok()) << dl.error().message();
    EXPECT_EQ(dl->shape(), (Shape{0, e}));
  }
}

// --- every contract line: a typed error naming the argument, nothing compiled or launched ---

class MoeTrainingContract : public rudnn::testing::ContractTest {
 protected:
  void SetUp() override {
    ContractTest::SetUp();
    plans_untouched_ = false;  // tests rebase after valid routing/dispatch calls
    auto q = Queue::create(Device::host());
    ASSERT_TRUE(q.ok());
    q2_ = std::move(q.value());
  }
  std::optional<Queue> q2_;
};

TEST_F(MoeTrainingContract, SelectedRouterWeights) {
  const moe::RouterWeightOptions ok{};
  const Tensor logits = t({3, 8}, DType::F32), idx = t({3, 2}, DType::U32);
  auto both = [&](const Tensor& l, const Tensor& i, moe::RouterWeightOptions o, ErrorKind kind, const char* arg) {
    SCOPED_TRACE(fmt::format("logits {} {}, indices {} {}", shape_to_string(l.shape()), dtype_name(l.dtype()),
                             shape_to_string(i.shape()), dtype_name(i.dtype())));
    expect_rejected(moe::selected_router_weights(l, i, o), kind, arg);
    expect_rejected(moe::selected_router_backward(l, i, t({i.dim(0), i.rank() == 2 ? i.dim(1) : 1}, DType::F32), o),
                    kind, arg);
  };
  // logits: dtype, quantized, rank, E > 0
  both(t({3, 8}, DType::FP8E4M3), idx, ok, ErrorKind::QuantizedDType, "logits");
  both(t({3, 8}, DType::I32), idx, ok, ErrorKind::UnsupportedDType, "logits");
  both(t({3, 8}, DType::U32), idx, ok, ErrorKind::UnsupportedDType, "logits");
  both(t({24}, DType::F32), idx, ok, ErrorKind::ShapeMismatch, "logits");
  both(t({1, 3, 8}, DType::BF16), idx, ok, ErrorKind::ShapeMismatch, "logits");
  both(t({3, 0}, DType::F32), idx, ok, ErrorKind::EmptyDimension, "logits");
  // indices: dtype, rank, tokens, top_k in 1..=min(E, 64)
  both(logits, t({3, 2}, DType::F32), ok, ErrorKind::UnsupportedDType, "indices");
  both(logits, t({3, 2}, DType::U8), ok, ErrorKind::UnsupportedDType, "indices");
  both(logits, t({3, 2}, DType::F16), ok, ErrorKind::UnsupportedDType, "indices");
  both(logits, t({6}, DType::U32), ok, ErrorKind::ShapeMismatch, "indices");
  both(logits, t({3, 2, 1}, DType::I32), ok, ErrorKind::ShapeMismatch, "indices");
  both(logits, t({4, 2}, DType::I64), ok, ErrorKind::ShapeMismatch, "indices");
  both(logits, t({3, 0}, DType::U32), ok, ErrorKind::InvalidValue, "indices");
  both(logits, t({3, 9}, DType::U32), ok, ErrorKind::InvalidValue, "indices");
  both(t({3, 100}, DType::F32), t({3, 65}, DType::I32), ok, ErrorKind::InvalidValue, "indices");
  // queue
  both(logits, t({3, 2}, DType::U32, &*q2_), ok, ErrorKind::QueueMismatch, "indices");
  // scale: finite and > 0
  for (float s : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()}) {
    SCOPED_TRACE(fmt::format("scale {}", s));
    both(logits, idx, {moe::RouterScoring::Softmax, true, s}, ErrorKind::InvalidValue, "scale");
    both(logits, idx, {moe::RouterScoring::Sigmoid, false, s}, ErrorKind::InvalidValue, "scale");
  }
  // grad_weights: F32 [T, top_k] on the logits' queue
  expect_rejected(moe::selected_router_backward(logits, idx, t({3, 2}, DType::F16), ok), ErrorKind::UnsupportedDType,
                  "grad_weights");
  expect_rejected(moe::selected_router_backward(logits, idx, t({3, 2}, DType::BF16), ok), ErrorKind::UnsupportedDType,
                  "grad_weights");
  expect_rejected(moe::selected_router_backward(logits, idx, t({3, 2}, DType::U32), ok), ErrorKind::UnsupportedDType,
                  "grad_weights");
  expect_rejected(moe::selected_router_backward(logits, idx, t({3, 2}, DType::FP8E4M3), ok), ErrorKind::QuantizedDType,
                  "grad_weights");
  expect_rejected(moe::selected_router_backward(logits, idx, t({3, 3}, DType::F32), ok), ErrorKind::ShapeMismatch,
                  "grad_weights");
  expect_rejected(moe::selected_router_backward(logits, idx, t({2, 2}, DType::F32), ok), ErrorKind::ShapeMismatch,
                  "grad_weights");
  expect_rejected(moe::selected_router_backward(logits, idx, t({6}, DType::F32), ok), ErrorKind::ShapeMismatch,
                  "grad_weights");
  expect_rejected(moe::selected_router_backward(logits, idx, t({3, 2}, DType::F32, &*q2_), ok),
                  ErrorKind::QueueMismatch, "grad_weights");
}

TEST_F(MoeTrainingContract, IntoTrainingAndBackward) {
  auto routing = moe::route(t({3, 4}, DType::BF16), {2, true});
  ASSERT_TRUE(routing.ok());
  rebase();
  const moe::RouterWeightOptions ok{};
  expect_rejected(routing->into_training(t({3, 4}, DType::FP8E4M3), ok), ErrorKind::QuantizedDType, "logits");
  expect_rejected(routing->into_training(t({3, 4}, DType::I32), ok), ErrorKind::UnsupportedDType, "logits");
  expect_rejected(routing->into_training(t({12}, DType::BF16), ok), ErrorKind::ShapeMismatch, "logits");
  expect_rejected(routing->into_training(t({3, 5}, DType::BF16), ok), ErrorKind::ShapeMismatch, "logits");
  expect_rejected(routing->into_training(t({4, 4}, DType::BF16), ok), ErrorKind::ShapeMismatch, "logits");
  expect_rejected(routing->into_training(t({3, 4}, DType::BF16, &*q2_), ok), ErrorKind::QueueMismatch, "logits");
  for (float s : {0.0f, -2.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
    expect_rejected(routing->into_training(t({3, 4}, DType::BF16), {moe::RouterScoring::Sigmoid, true, s}),
                    ErrorKind::InvalidValue, "scale");

  // The training plan may take logits of another float dtype than route's (a recomputation).
  auto tp = routing->into_training(t({3, 4}, DType::F32), ok);
  ASSERT_TRUE(tp.ok()) << tp.error().message();
  rebase();
  expect_rejected(tp->backward(t({3, 2}, DType::F16)), ErrorKind::UnsupportedDType, "grad_weights");
  expect_rejected(tp->backward(t({3, 2}, DType::BF16)), ErrorKind::UnsupportedDType, "grad_weights");
  expect_rejected(tp->backward(t({3, 2}, DType::FP8E4M3)), ErrorKind::QuantizedDType, "grad_weights");
  expect_rejected(tp->backward(t({3, 1}, DType::F32)), ErrorKind::ShapeMismatch, "grad_weights");
  expect_rejected(tp->backward(t({2, 2}, DType::F32)), ErrorKind::ShapeMismatch, "grad_weights");
  expect_rejected(tp->backward(t({3, 2, 1}, DType::F32)), ErrorKind::ShapeMismatch, "grad_weights");
  expect_rejected(tp->backward(t({3, 2}, DType::F32, &*q2_)), ErrorKind::QueueMismatch, "grad_weights");
}

TEST_F(MoeTrainingContract, CombineBackward) {
  auto routing = moe::route(t({3, 4}, DType::F32), {2, true});
  ASSERT_TRUE(routing.ok());
  auto d = routing->dispatch(t({3, 16}, DType::F32));
  ASSERT_TRUE(d.ok()) << d.error().message();
  rebase();
  const Tensor y = t({6, 16}, DType::F32), g = t({3, 16}, DType::F32);
  for (auto strategy : {moe::CombineGradientStrategy::Serial, moe::CombineGradientStrategy::Plane}) {
    SCOPED_TRACE(strategy == moe::CombineGradientStrategy::Serial ? "serial" : "plane");
    auto cb = [&](const Tensor& yy, const Tensor& gg) {
      return strategy == moe::CombineGradientStrategy::Serial ? d->combine_backward(yy, gg)
                                                              : d->combine_backward_with_strategy(yy, gg, strategy);
    };
    // expert_output: as combine's
    expect_rejected(cb(t({6, 16}, DType::FP8E4M3), g), ErrorKind::QuantizedDType, "expert_output");
    expect_rejected(cb(t({6, 16}, DType::I64), g), ErrorKind::UnsupportedDType, "expert_output");
    expect_rejected(cb(t({96}, DType::F32), g), ErrorKind::ShapeMismatch, "expert_output");
    expect_rejected(cb(t({5, 16}, DType::F32), g), ErrorKind::ShapeMismatch, "expert_output");
    expect_rejected(cb(t({6, 8}, DType::F32), t({3, 8}, DType::F32)), ErrorKind::ShapeMismatch, "expert_output");
    expect_rejected(cb(t({6, 16}, DType::F32, &*q2_), g), ErrorKind::QueueMismatch, "expert_output");
    // grad_output: expert_output's dtype, [T, H], its queue
    expect_rejected(cb(y, t({3, 16}, DType::FP8E4M3)), ErrorKind::QuantizedDType, "grad_output");
    expect_rejected(cb(y, t({3, 16}, DType::I32)), ErrorKind::UnsupportedDType, "grad_output");
    expect_rejected(cb(y, t({3, 16}, DType::BF16)), ErrorKind::UnsupportedDType, "grad_output");
    expect_rejected(cb(t({6, 16}, DType::F16), g), ErrorKind::UnsupportedDType, "grad_output");
    expect_rejected(cb(y, t({4, 16}, DType::F32)), ErrorKind::ShapeMismatch, "grad_output");
    expect_rejected(cb(y, t({3, 8}, DType::F32)), ErrorKind::ShapeMismatch, "grad_output");
    expect_rejected(cb(y, t({6, 16}, DType::F32)), ErrorKind::ShapeMismatch, "grad_output");
    expect_rejected(cb(y, t({48}, DType::F32)), ErrorKind::ShapeMismatch, "grad_output");
    expect_rejected(cb(y, t({3, 16}, DType::F32, &*q2_)), ErrorKind::QueueMismatch, "grad_output");
  }
}

TEST_F(MoeTrainingContract, DispatchBackward) {
  auto routing = moe::route(t({3, 4}, DType::F32), {2, true});
  ASSERT_TRUE(routing.ok());
  auto d = routing->dispatch(t({3, 16}, DType::F32));
  ASSERT_TRUE(d.ok()) << d.error().message();
  rebase();
  expect_rejected(d->dispatch_backward(t({6, 16}, DType::FP8E4M3)), ErrorKind::QuantizedDType, "drows");
  expect_rejected(d->dispatch_backward(t({6, 16}, DType::U32)), ErrorKind::UnsupportedDType, "drows");
  expect_rejected(d->dispatch_backward(t({96}, DType::F32)), ErrorKind::ShapeMismatch, "drows");
  expect_rejected(d->dispatch_backward(t({6, 16, 1}, DType::F32)), ErrorKind::ShapeMismatch, "drows");
  expect_rejected(d->dispatch_backward(t({5, 16}, DType::F32)), ErrorKind::ShapeMismatch, "drows");
  expect_rejected(d->dispatch_backward(t({3, 16}, DType::F32)), ErrorKind::ShapeMismatch, "drows");
  expect_rejected(d->dispatch_backward(t({6, 0}, DType::F32)), ErrorKind::EmptyDimension, "drows");
  // The dispatched rows' hidden size (as combine's expert_output): dinput has the input's shape.
  expect_rejected(d->dispatch_backward(t({6, 8}, DType::F32)), ErrorKind::ShapeMismatch, "drows");
  expect_rejected(d->dispatch_backward(t({6, 16}, DType::F32, &*q2_)), ErrorKind::QueueMismatch, "drows");
}

}  // namespace
}  // namespace rudnn
