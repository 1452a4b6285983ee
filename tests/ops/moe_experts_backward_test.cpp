// The SwiGLU experts' training path of SPEC §10 through the public entries on the host emulation
// device: SwiGluExperts::forward_dispatched_training / training_cache, SwiGluTrainingCache::backward
// (and backward_with_strategy) against the FP64 oracle (tests/reference/moe_experts_backward.h, itself
// checked once against central differences); odd sizes, skewed loads, experts without rows (exact
// zeros over poisoned outputs), T = 1, E = 1, top_k = E, no tokens; the whole chain route →
// into_training → dispatch → experts → combine → Σ out² and back to the logits, input and weights;
// bitwise reproducibility over runs and the emulator's thread orders; the strategies (Auto's rule,
// TensorCore against the oracle and Scalar); the dexpert contract (a typed error naming it, nothing
// compiled or launched).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "contract_fixture.h"
#include "contracts/arch.h"
#include "host/emulator.h"
#include "jit.h"
#include "op_test_util.h"
#include "plan_cache.h"
#include "reference/moe.h"
#include "reference/moe_experts_backward.h"
#include "wgmma_opt_in.h"
#include "rudnn/compiler/moe_training.h"
#include "rudnn/moe.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using runtime::host::Schedule;
using testing::fresh_seed;
using testing::host_values;

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// Values rounded to `dtype` (after a host-side edit such as a skew).
std::vector<double> rounded(const std::vector<double>& v, DType dtype) {
  return HostData::from_f64({static_cast<std::int64_t>(v.size())}, dtype, v).to_f64();
}

std::vector<std::byte> host_bytes(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->bytes : std::vector<std::byte>{};
}

// The experts' weights, drawn so that activations stay O(1): entries ~ U(−a, a), a ≈ 1/√fan_in.
struct ExpertWeights {
  std::int64_t e, i, h;
  std::vector<double> gate, up, down;
  ExpertWeights(std::int64_t e, std::int64_t i, std::int64_t h, DType dtype, std::mt19937_64& rng) : e(e), i(i), h(h) {
    const double a = 1.5 / std::sqrt(static_cast<double>(h)), b = 1.5 / std::sqrt(static_cast<double>(i));
    gate = testing::random_values(at(e * i * h), dtype, rng, -a, a);
    up = testing::random_values(at(e * i * h), dtype, rng, -a, a);
    down = testing::random_values(at(e * h * i), dtype, rng, -b, b);
  }
  moe::SwiGluExperts upload(DType dtype, const Device& device = Device::host()) const {
    auto experts = moe::SwiGluExperts::create(testing::upload({e, i, h}, dtype, gate, device),
                                              testing::upload({e, i, h}, dtype, up, device),
                                              testing::upload({e, h, i}, dtype, down, device));
    EXPECT_TRUE(experts.ok()) << experts.error().message();
    return std::move(experts.value());
  }
};

struct Case {
  std::int64_t t, e, k, h, i;
  double skew;  // > 0: this logit bonus for expert 0 (every token ranks it first)
};

std::string describe(const Case& c) {
  return fmt::format("T={} E={} k={} H={} I={} skew={}", c.t, c.e, c.k, c.h, c.i, c.skew);
}

// One routed and dispatched problem on `device` (the host by default; the library's own row layout).
struct Problem {
  Problem(DType dtype, const Case& c, std::mt19937_64& rng, const Device& device = Device::host())
      : dtype(dtype),
        c(c),
        w(c.e, c.i, c.h, dtype, rng),
        experts(w.upload(dtype, device)),
        x(testing::random_values(at(c.t * c.h), dtype, rng)),
        logits(testing::random_values(at(c.t * c.e), dtype, rng)) {
    for (std::int64_t r = 0; r < c.t; ++r) logits[at(r * c.e)] += c.skew;
    logits = rounded(logits, dtype);
    tx = testing::upload({c.t, c.h}, dtype, x, device);
    tl = testing::upload({c.t, c.e}, dtype, logits, device);
  }
  // route → dispatch; the rows and offsets read back.
  void dispatch() {
    auto routing = moe::route(*tl, {c.k, true});
    ASSERT_TRUE(routing.ok()) << routing.error().message();
    auto dispatched = routing->dispatch(*tx);
    ASSERT_TRUE(dispatched.ok()) << dispatched.error().message();
    d.emplace(std::move(dispatched.value()));
    rows = host_values(d->rows());
    offsets.clear();
    for (double v : host_values(d->expert_offsets())) offsets.push_back(static_cast<std::uint32_t>(v));
    ASSERT_EQ(offsets.size(), at(c.e + 1));
    ASSERT_EQ(offsets.back(), static_cast<std::uint32_t>(c.t * c.k));
  }
  DType dtype;
  Case c;
  ExpertWeights w;
  moe::SwiGluExperts experts;
  std::vector<double> x, logits;
  std::optional<Tensor> tx, tl;
  std::optional<moe::Dispatched> d;
  std::vector<double> rows;
  std::vector<std::uint32_t> offsets;
};

struct HostGrads {
  std::vector<double> dinput, dgate, dup, ddown;
};

// The gradients read back, after checking their shapes and dtypes (SPEC §10: dinput in the weights'
// dtype, the weight gradients FP32).
HostGrads read_back(const moe::ExpertGradients& g, std::int64_t n, const Case& c, DType dtype) {
  EXPECT_EQ(g.dinput.shape(), (Shape{n, c.h}));
  EXPECT_EQ(g.dinput.dtype(), dtype);
  EXPECT_EQ(g.dgate.shape(), (Shape{c.e, c.i, c.h}));
  EXPECT_EQ(g.dup.shape(), (Shape{c.e, c.i, c.h}));
  EXPECT_EQ(g.ddown.shape(), (Shape{c.e, c.h, c.i}));
  for (const Tensor* t : {&g.dgate, &g.dup, &g.ddown}) EXPECT_EQ(t->dtype(), DType::F32);
  return {host_values(g.dinput), host_values(g.dgate), host_values(g.dup), host_values(g.ddown)};
}

// Every weight gradient of an expert without rows is exactly 0 (the outputs were poisoned).
void expect_empty_experts_zero(const HostGrads& g, const std::vector<std::uint32_t>& offsets, const Case& c) {
  for (std::int64_t e = 0; e < c.e; ++e) {
    if (offsets[at(e)] != offsets[at(e + 1)]) continue;
    const std::int64_t n = c.i * c.h;
    for (const std::vector<double>* v : {&g.dgate, &g.dup, &g.ddown})
      for (std::int64_t q = 0; q < n; ++q)
        ASSERT_EQ((*v)[at(e * n + q)], 0.0) << "expert " << e << " has no rows, element " << q;
  }
}

// dinput: FP32 accumulation over dtype-rounded inputs, rounded to the dtype once (DESIGN §5
// multiple). The weight gradients are FP32 results of FP32 intermediates (the Scalar backward keeps
// dA, dB and Hh in FP32: experts_backward_scalar.cuh), so their bound is FP32's whatever the dtype.
double backward_bound(DType dtype) { return 3 * testing::tolerance(dtype); }
double weight_grad_bound() { return 3 * testing::tolerance(DType::F32); }

void expect_grads_near(const HostGrads& got, const reference::ExpertsGrads& want, DType dtype) {
  EXPECT_LE(testing::relative_l2(got.dinput, want.dinput), backward_bound(dtype)) << "dinput";
  EXPECT_LE(testing::relative_l2(got.dgate, want.dgate), weight_grad_bound()) << "dgate";
  EXPECT_LE(testing::relative_l2(got.dup, want.dup), weight_grad_bound()) << "dup";
  EXPECT_LE(testing::relative_l2(got.ddown, want.ddown), weight_grad_bound()) << "ddown";
}

// Central differences of f() over every entry of v (each entry restored after).
std::vector<double> central_differences(std::vector<double>& v, const std::function<double()>& f, double step) {
  std::vector<double> g(v.size());
  for (std::size_t q = 0; q < v.size(); ++q) {
    const double keep = v[q];
    v[q] = keep + step;
    const double plus = f();
    v[q] = keep - step;
    const double minus = f();
    v[q] = keep;
    g[q] = (plus - minus) / (2 * step);
  }
  return g;
}

// ---- the oracles against finite differences

TEST(MoeExpertsBackwardOracle, MatchesFiniteDifferences) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const std::int64_t e = 3, h = 6, i = 5;
  const std::vector<std::uint32_t> offsets = {0, 3, 3, 7};  // expert 1 has no rows
  const std::int64_t n = offsets.back();
  ExpertWeights w(e, i, h, DType::F32, rng);
  auto rows = testing::random_values(at(n * h), DType::F32, rng);
  const auto dy = testing::random_values(at(n * h), DType::F32, rng);
  // L = Σ dY ⊙ Y through the forward oracle (tests/reference/moe.h): its gradients are the backward.
  auto loss = [&] {
    const auto y =
        reference::expert_down(reference::swiglu_act(rows, offsets, w.gate, w.up, h, i), offsets, w.down, h, i);
    double l = 0;
    for (std::size_t q = 0; q < y.size(); ++q) l += dy[q] * y[q];
    return l;
  };
  const auto want = reference::swiglu_experts_backward(rows, dy, offsets, w.gate, w.up, w.down, h, i);
  const double step = 1e-5, bound = 1e-8;
  EXPECT_LE(testing::relative_l2(want.dinput, central_differences(rows, loss, step)), bound) << "dinput";
  EXPECT_LE(testing::relative_l2(want.dgate, central_differences(w.gate, loss, step)), bound) << "dgate";
  EXPECT_LE(testing::relative_l2(want.dup, central_differences(w.up, loss, step)), bound) << "dup";
  EXPECT_LE(testing::relative_l2(want.ddown, central_differences(w.down, loss, step)), bound) << "ddown";
  for (std::int64_t q = 0; q < i * h; ++q) {
    ASSERT_EQ(want.dgate[at(i * h + q)], 0.0);
    ASSERT_EQ(want.ddown[at(i * h + q)], 0.0);
  }
}

TEST(MoeExpertsBackwardOracle, ChainMatchesFiniteDifferences) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  for (reference::ChainRouter router :
       {reference::ChainRouter{false, true, 1.0}, reference::ChainRouter{false, false, 2.5},
        reference::ChainRouter{true, true, 1.0}, reference::ChainRouter{true, false, 0.5}}) {
    SCOPED_TRACE(fmt::format("sigmoid={} renormalize={} scale={}", router.sigmoid, router.renormalize, router.scale));
    reference::MoeChain c;
    c.tokens = 3, c.experts = 4, c.top_k = 2, c.hidden = 5, c.inter = 3;
    c.router = router;
    ExpertWeights w(c.experts, c.inter, c.hidden, DType::F32, rng);
    c.gate = w.gate, c.up = w.up, c.down = w.down;
    c.input = testing::random_values(at(c.tokens * c.hidden), DType::F32, rng);
    c.logits = testing::random_values(at(c.tokens * c.experts), DType::F32, rng);
    c.indices = {2, 0, 1, 3, 3, 2};  // any fixed selection: the weights are differentiated, not the choice
    const auto want = reference::moe_chain_backward(c);
    auto loss = [&] { return reference::moe_chain_loss(c); };
    const double step = 1e-5, bound = 1e-8;
    EXPECT_LE(testing::relative_l2(want.dlogits, central_differences(c.logits, loss, step)), bound) << "dlogits";
    EXPECT_LE(testing::relative_l2(want.dinput, central_differences(c.input, loss, step)), bound) << "dinput";
    EXPECT_LE(testing::relative_l2(want.dgate, central_differences(c.gate, loss, step)), bound) << "dgate";
    EXPECT_LE(testing::relative_l2(want.dup, central_differences(c.up, loss, step)), bound) << "dup";
    EXPECT_LE(testing::relative_l2(want.ddown, central_differences(c.down, loss, step)), bound) << "ddown";
    // The chain's output is the one its loss squares.
    double loss0 = 0;
    for (double v : want.output) loss0 += v * v;
    EXPECT_NEAR(loss0, reference::moe_chain_loss(c), 1e-12 * (1 + loss0));
  }
}

// ---- the experts backward against the oracle

class MoeExpertsBackward : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

TEST_P(MoeExpertsBackward, MatchesReference) {
  const DType dtype = GetParam();
  for (Case c : {Case{13, 8, 2, 24, 40, 0},      // a few rows per expert
                 Case{1, 1, 1, 16, 8, 0},        // T = 1, E = 1
                 Case{5, 4, 4, 8, 16, 0},        // top_k = E
                 Case{9, 6, 2, 16, 24, 50},      // skewed: every token picks expert 0
                 Case{6, 5, 3, 13, 7, 0},        // H, I not multiples of 4
                 Case{3, 16, 1, 37, 19, 0},      // most experts without rows, odd sizes
                 Case{1, 7, 3, 5, 3, 0},         // T = 1 over several experts, tiny odd sizes
                 Case{40, 3, 1, 70, 35, 30}}) {  // one expert gets 40 rows: several row, column and K tiles
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(describe(c) + fmt::format(" seed={}", seed));
    std::mt19937_64 rng(seed);
    Problem p(dtype, c, rng);
    p.dispatch();
    ASSERT_FALSE(HasFatalFailure());
    const std::int64_t n = c.t * c.k;
    const auto dy = testing::random_values(at(n * c.h), dtype, rng);
    auto training = p.experts.forward_dispatched_training(*p.d, moe::GroupedStrategy::Scalar);
    ASSERT_TRUE(training.ok()) << training.error().message();
    auto grads = training->cache.backward(testing::upload({n, c.h}, dtype, dy, Device::host()));
    ASSERT_TRUE(grads.ok()) << grads.error().message();
    const HostGrads got = read_back(*grads, n, c, dtype);
    const auto want = reference::swiglu_experts_backward(p.rows, dy, p.offsets, p.w.gate, p.w.up, p.w.down, c.h, c.i);
    expect_grads_near(got, want, dtype);
    expect_empty_experts_zero(got, p.offsets, c);
    if (c.skew > 0) EXPECT_EQ(p.offsets[1], static_cast<std::uint32_t>(c.t)) << "the skew did not route every token";
    // The training forward's output is the forward's (SPEC §10: as forward_dispatched_with_strategy).
    auto plain = p.experts.forward_dispatched(*p.d);
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    EXPECT_EQ(host_bytes(training->output), host_bytes(*plain));
  }
}

TEST_P(MoeExpertsBackward, ExpertsWithoutRowsGetExactZeros) {
  const DType dtype = GetParam();
  // E > T·top_k (at least E − T·top_k experts idle), and a skew that sends every token to expert 0.
  for (Case c : {Case{2, 8, 1, 16, 8, 0}, Case{6, 5, 1, 12, 20, 50}, Case{3, 6, 2, 9, 5, 50}}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(describe(c) + fmt::format(" seed={}", seed));
    std::mt19937_64 rng(seed);
    Problem p(dtype, c, rng);
    p.dispatch();
    ASSERT_FALSE(HasFatalFailure());
    std::int64_t idle = 0;
    for (std::int64_t e = 0; e < c.e; ++e) idle += p.offsets[at(e)] == p.offsets[at(e + 1)];
    ASSERT_GE(idle, c.e - c.t * c.k);
    if (c.skew > 0) ASSERT_EQ(p.offsets[1], static_cast<std::uint32_t>(c.t));
    const std::int64_t n = c.t * c.k;
    const auto dy = testing::random_values(at(n * c.h), dtype, rng);
    auto cache = p.experts.training_cache(*p.d);
    ASSERT_TRUE(cache.ok()) << cache.error().message();
    auto grads = cache->backward(testing::upload({n, c.h}, dtype, dy, Device::host()));
    ASSERT_TRUE(grads.ok()) << grads.error().message();
    const HostGrads got = read_back(*grads, n, c, dtype);
    expect_empty_experts_zero(got, p.offsets, c);
    expect_grads_near(
        got, reference::swiglu_experts_backward(p.rows, dy, p.offsets, p.w.gate, p.w.up, p.w.down, c.h, c.i), dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(MoeExpertsBackward, MoeExpertsBackward, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// No tokens: no rows, every weight gradient 0 (nothing to sum), dinput [0, H].
TEST(MoeExpertsBackwardEmpty, ZeroTokens) {
  ops::set_poison_outputs(true);
  std::mt19937_64 rng(fresh_seed());
  const Case c{0, 4, 2, 16, 8, 0};
  ExpertWeights w(c.e, c.i, c.h, DType::F32, rng);
  auto experts = w.upload(DType::F32);
  auto tx = Tensor::empty({0, c.h}, DType::F32, Device::host());
  auto tl = Tensor::empty({0, c.e}, DType::F32, Device::host());
  ASSERT_TRUE(tx.ok() && tl.ok());
  auto routing = moe::route(*tl, {c.k, true});
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  auto d = routing->dispatch(*tx);
  ASSERT_TRUE(d.ok()) << d.error().message();
  auto training = experts.forward_dispatched_training(*d, moe::GroupedStrategy::Scalar);
  ASSERT_TRUE(training.ok()) << training.error().message();
  EXPECT_EQ(training->output.shape(), (Shape{0, c.h}));
  auto dexpert = Tensor::empty({0, c.h}, DType::F32, Device::host());
  ASSERT_TRUE(dexpert.ok());
  auto grads = training->cache.backward(*dexpert);
  ASSERT_TRUE(grads.ok()) << grads.error().message();
  const HostGrads got = read_back(*grads, 0, c, DType::F32);
  EXPECT_TRUE(got.dinput.empty());
  for (const std::vector<double>* v : {&got.dgate, &got.dup, &got.ddown}) {
    ASSERT_EQ(v->size(), at(c.e * c.i * c.h));
    for (double x : *v) ASSERT_EQ(x, 0.0);
  }
}

// ---- the whole chain: route → into_training → dispatch → experts → combine → loss = Σ out²

struct ChainRun {
  std::vector<double> out, dlogits, dinput, dgate, dup, ddown;
  std::vector<std::vector<std::byte>> bytes;  // every result above, and the expert rows, as stored
};

// One training step after the dispatch (d from train.routing()): forward, combine, the backward in
// SPEC §10's order.
void run_chain_after_dispatch(const moe::SwiGluExperts& experts, const moe::RouterTrainingPlan& train,
                              const moe::Dispatched& d, DType dtype, ChainRun& run) {
  auto fw = experts.forward_dispatched_training(d, moe::GroupedStrategy::Scalar);
  ASSERT_TRUE(fw.ok()) << fw.error().message();
  auto out = d.combine(fw->output);
  ASSERT_TRUE(out.ok()) << out.error().message();
  run.out = host_values(*out);
  std::vector<double> grad_out(run.out.size());
  for (std::size_t q = 0; q < grad_out.size(); ++q) grad_out[q] = 2 * run.out[q];
  auto cg = d.combine_backward(fw->output, testing::upload(out->shape(), dtype, grad_out, Device::host()));
  ASSERT_TRUE(cg.ok()) << cg.error().message();
  auto eg = fw->cache.backward(cg->dexpert);
  ASSERT_TRUE(eg.ok()) << eg.error().message();
  auto dinput = d.dispatch_backward(eg->dinput);
  ASSERT_TRUE(dinput.ok()) << dinput.error().message();
  auto dlogits = train.backward(cg->dweights);
  ASSERT_TRUE(dlogits.ok()) << dlogits.error().message();
  EXPECT_EQ(dinput->shape(), (Shape{d.tokens(), d.hidden()}));
  EXPECT_EQ(dinput->dtype(), dtype);
  EXPECT_EQ(dlogits->shape(), (Shape{d.tokens(), d.experts()}));
  run.dlogits = host_values(*dlogits);
  run.dinput = host_values(*dinput);
  run.dgate = host_values(eg->dgate);
  run.dup = host_values(eg->dup);
  run.ddown = host_values(eg->ddown);
  run.bytes.clear();
  for (const Tensor* t : {&fw->output, &*out, &cg->dexpert, &cg->dweights, &eg->dinput, &eg->dgate, &eg->dup,
                          &eg->ddown, &*dinput, &*dlogits})
    run.bytes.push_back(host_bytes(*t));
}

moe::RouterWeightOptions options_of(const reference::ChainRouter& r) {
  return {r.sigmoid ? moe::RouterScoring::Sigmoid : moe::RouterScoring::Softmax, r.renormalize,
          static_cast<float>(r.scale)};
}

class MoeExpertsBackwardChain : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

// The chain's results against the FP64 chain: each step rounds to the dtype (the expert rows, the
// combine, 2·out, dexpert, dinput), and the softmax gradient cancels (Σ_k dlogits = 0), so the
// bound is a larger multiple than a single op's (measured worst over 120 runs: 0.35 of it for BF16
// dlogits, under 0.2 elsewhere).
double chain_bound(DType dtype) { return 4 * testing::tolerance(dtype); }

TEST_P(MoeExpertsBackwardChain, GradientsMatchReference) {
  const DType dtype = GetParam();
  struct ChainCase {
    Case c;
    reference::ChainRouter router;
  };
  for (ChainCase cc : {ChainCase{{9, 4, 2, 20, 12, 0}, {false, true, 1.0}},
                       ChainCase{{6, 5, 3, 13, 7, 4}, {false, false, 2.5}},  // expert 0 first everywhere
                       ChainCase{{7, 6, 2, 9, 11, 0}, {true, true, 1.0}},
                       ChainCase{{1, 3, 3, 16, 8, 0}, {true, false, 1.0}}}) {  // T = 1, top_k = E
    const Case& c = cc.c;
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(describe(c) + fmt::format(" sigmoid={} renormalize={} scale={} seed={}", cc.router.sigmoid,
                                           cc.router.renormalize, cc.router.scale, seed));
    std::mt19937_64 rng(seed);
    Problem p(dtype, c, rng);
    auto routing = moe::route(*p.tl, {c.k, true});
    ASSERT_TRUE(routing.ok()) << routing.error().message();
    auto train = routing->into_training(*p.tl, options_of(cc.router));
    ASSERT_TRUE(train.ok()) << train.error().message();
    auto d = train->routing().dispatch(*p.tx);
    ASSERT_TRUE(d.ok()) << d.error().message();
    ChainRun run;
    run_chain_after_dispatch(p.experts, *train, *d, dtype, run);
    ASSERT_FALSE(HasFatalFailure());

    reference::MoeChain chain;
    chain.tokens = c.t, chain.experts = c.e, chain.top_k = c.k, chain.hidden = c.h, chain.inter = c.i;
    chain.input = p.x;
    chain.logits = p.logits;
    for (double v : host_values(train->routing().expert_indices()))
      chain.indices.push_back(static_cast<std::uint32_t>(v));
    chain.gate = p.w.gate, chain.up = p.w.up, chain.down = p.w.down;
    chain.router = cc.router;
    const auto want = reference::moe_chain_backward(chain);
    const double bound = chain_bound(dtype);
    EXPECT_LE(testing::relative_l2(run.out, want.output), bound) << "output";
    EXPECT_LE(testing::relative_l2(run.dlogits, want.dlogits), bound) << "dlogits";
    EXPECT_LE(testing::relative_l2(run.dinput, want.dinput), bound) << "dinput";
    EXPECT_LE(testing::relative_l2(run.dgate, want.dgate), bound) << "dgate";
    EXPECT_LE(testing::relative_l2(run.dup, want.dup), bound) << "dup";
    EXPECT_LE(testing::relative_l2(run.ddown, want.ddown), bound) << "ddown";
  }
}

INSTANTIATE_TEST_SUITE_P(MoeExpertsBackward, MoeExpertsBackwardChain,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// ---- determinism: the same bits over repeated runs and under every emulator thread order

class MoeExpertsBackwardDeterminism : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

TEST_P(MoeExpertsBackwardDeterminism, BitwiseAcrossRunsAndThreadOrders) {
  const DType dtype = GetParam();
  // Expert 0 gets 20 rows (two K slices of the weight-gradient reduction); others share the rest.
  const Case c{20, 4, 2, 19, 37, 30};
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(describe(c) + fmt::format(" seed={}", seed));
  std::mt19937_64 rng(seed);
  Problem p(dtype, c, rng);
  auto routing = moe::route(*p.tl, {c.k, true});
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  auto train = routing->into_training(*p.tl, {});
  ASSERT_TRUE(train.ok()) << train.error().message();
  // One dispatch: the order of rows inside an expert is not fixed (atomic ranking), and the weight
  // gradients sum each expert's rows in that order.
  auto d = train->routing().dispatch(*p.tx);
  ASSERT_TRUE(d.ok()) << d.error().message();
  ChainRun first;
  run_chain_after_dispatch(p.experts, *train, *d, dtype, first);
  ASSERT_FALSE(HasFatalFailure());
  // Direct backward on random dexpert too (not only combine's).
  const auto dy = testing::random_values(at(c.t * c.k * c.h), dtype, rng);
  const Tensor tdy = testing::upload({c.t * c.k, c.h}, dtype, dy, Device::host());
  auto cache = p.experts.training_cache(*d);
  ASSERT_TRUE(cache.ok()) << cache.error().message();
  auto direct = [&] {
    std::vector<std::vector<std::byte>> b;
    auto g = cache->backward(tdy);
    EXPECT_TRUE(g.ok()) << g.error().message();
    if (g.ok())
      for (const Tensor* t : {&g->dinput, &g->dgate, &g->dup, &g->ddown}) b.push_back(host_bytes(*t));
    return b;
  };
  const auto direct_first = direct();
  const char* names[] = {"expert rows", "out", "dexpert", "dweights", "dinput rows",
                         "dgate",       "dup", "ddown",   "dinput",   "dlogits"};
  struct Order {
    Schedule schedule;
    const char* name;
  };
  for (Order o : {Order{Schedule::Forward, "forward again"}, Order{Schedule::Reverse, "reverse"},
                  Order{Schedule::Random, "random"}, Order{Schedule::Random, "random, another seed"}}) {
    SCOPED_TRACE(o.name);
    runtime::host::set_default_schedule({o.schedule, fresh_seed()});
    ChainRun again;
    run_chain_after_dispatch(p.experts, *train, *d, dtype, again);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(again.bytes.size(), first.bytes.size());
    for (std::size_t q = 0; q < first.bytes.size(); ++q) EXPECT_TRUE(again.bytes[q] == first.bytes[q]) << names[q];
    EXPECT_TRUE(direct() == direct_first) << "backward on a fixed dexpert";
  }
}

// A fresh dispatch under another thread order may rank an expert's rows differently: nothing that
// comes back may change — the output, dinput and dlogits are in token order, and the weight
// gradients sum each expert's rows in token order (expert_row_order), not in the dispatched order.
TEST_P(MoeExpertsBackwardDeterminism, TokenOrderResultsIgnoreTheDispatchOrder) {
  const DType dtype = GetParam();
  const Case c{20, 4, 2, 19, 37, 30};
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(describe(c) + fmt::format(" seed={}", seed));
  std::mt19937_64 rng(seed);
  Problem p(dtype, c, rng);
  auto chain = [&](ChainRun& run) {
    auto routing = moe::route(*p.tl, {c.k, true});
    ASSERT_TRUE(routing.ok()) << routing.error().message();
    auto train = routing->into_training(*p.tl, {});
    ASSERT_TRUE(train.ok()) << train.error().message();
    auto d = train->routing().dispatch(*p.tx);
    ASSERT_TRUE(d.ok()) << d.error().message();
    run_chain_after_dispatch(p.experts, *train, *d, dtype, run);
  };
  ChainRun first;
  chain(first);
  ASSERT_FALSE(HasFatalFailure());
  for (Schedule order : {Schedule::Reverse, Schedule::Random}) {
    SCOPED_TRACE(order == Schedule::Reverse ? "reverse" : "random");
    runtime::host::set_default_schedule({order, fresh_seed()});
    ChainRun again;
    chain(again);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(again.out, first.out);
    EXPECT_EQ(again.dinput, first.dinput);
    EXPECT_EQ(again.dlogits, first.dlogits);
    EXPECT_EQ(again.dgate, first.dgate);
    EXPECT_EQ(again.dup, first.dup);
    EXPECT_EQ(again.ddown, first.ddown);
  }
}

INSTANTIATE_TEST_SUITE_P(MoeExpertsBackward, MoeExpertsBackwardDeterminism, ::testing::Values(DType::F32, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// ---- strategies

class MoeExpertsBackwardStrategies : public ::testing::Test {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
};

using GradBytes = std::vector<std::vector<std::byte>>;

GradBytes grad_bytes(const Result<moe::ExpertGradients, MoeError>& g) {
  GradBytes b;
  EXPECT_TRUE(g.ok()) << g.error().message();
  if (g.ok())
    for (const Tensor* t : {&g->dinput, &g->dgate, &g->dup, &g->ddown}) b.push_back(host_bytes(*t));
  return b;
}

// The forward's Auto rule: tensor cores where the contract allows them (F16/BF16, H and I multiples
// of 8), so Auto gives TensorCore's bits there and Scalar's (= backward()'s) elsewhere.
TEST_F(MoeExpertsBackwardStrategies, AutoFollowsTheForwardRule) {
  struct Config {
    DType dtype;
    Case c;
    bool tensor_core;
  };
  for (auto [dtype, c, tensor_core] :
       {Config{DType::BF16, Case{11, 4, 2, 32, 24, 0}, true}, Config{DType::F16, Case{7, 3, 2, 16, 8, 0}, true},
        Config{DType::BF16, Case{7, 3, 2, 12, 8, 0}, false},  // H % 8 ≠ 0
        Config{DType::F32, Case{7, 5, 2, 13, 9, 0}, false}}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("{} {} seed={}", dtype_name(dtype), describe(c), seed));
    std::mt19937_64 rng(seed);
    Problem p(dtype, c, rng);
    p.dispatch();
    ASSERT_FALSE(HasFatalFailure());
    const std::int64_t n = c.t * c.k;
    const Tensor dy = testing::upload({n, c.h}, dtype, testing::random_values(at(n * c.h), dtype, rng), Device::host());
    auto cache = p.experts.training_cache(*p.d);
    ASSERT_TRUE(cache.ok()) << cache.error().message();
    const auto base = grad_bytes(cache->backward(dy));
    ASSERT_EQ(base.size(), 4u);
    EXPECT_TRUE(grad_bytes(cache->backward_with_strategy(dy, moe::GroupedStrategy::Scalar)) == base) << "Scalar";
    const auto autos = grad_bytes(cache->backward_with_strategy(dy, moe::GroupedStrategy::Auto));
    if (tensor_core)
      EXPECT_TRUE(autos == grad_bytes(cache->backward_with_strategy(dy, moe::GroupedStrategy::TensorCore)))
          << "Auto took TensorCore";
    else
      EXPECT_TRUE(autos == base) << "Auto took Scalar";
  }
}

// TensorCore where the contract does not allow it (F32 weights, H or I not a multiple of 8) is the
// caller's error: Unsupported naming "strategy", before anything is compiled or launched.
TEST_F(MoeExpertsBackwardStrategies, TensorCoreWhereUnsupportedIsAnError) {
  for (auto [dtype, c] :
       {std::pair{DType::F32, Case{6, 4, 2, 32, 16, 0}}, std::pair{DType::BF16, Case{6, 4, 2, 12, 16, 0}},
        std::pair{DType::F16, Case{6, 4, 2, 16, 12, 0}}}) {
    SCOPED_TRACE(fmt::format("{} {}", dtype_name(dtype), describe(c)));
    std::mt19937_64 rng(fresh_seed());
    Problem p(dtype, c, rng);
    p.dispatch();
    ASSERT_FALSE(HasFatalFailure());
    auto cache = p.experts.training_cache(*p.d);
    ASSERT_TRUE(cache.ok()) << cache.error().message();
    const Tensor dy = testing::upload({c.t * c.k, c.h}, dtype, testing::random_values(at(c.t * c.k * c.h), dtype, rng),
                                      Device::host());
    const Stats before = stats();
    auto tc = cache->backward_with_strategy(dy, moe::GroupedStrategy::TensorCore);
    ASSERT_FALSE(tc.ok());
    EXPECT_EQ(tc.error().kind(), ErrorKind::Unsupported) << tc.error().message();
    EXPECT_EQ(tc.error().argument(), "strategy") << tc.error().message();
    const Stats after = stats();
    EXPECT_EQ(after.kernel_launches, before.kernel_launches);
    EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses);
    EXPECT_EQ(after.jit_compiles, before.jit_compiles);
  }
}

// ---- the tensor-core backward (moe/experts_backward_mma.cuh; every registered tile is also run by
// tests/templates/moe_experts_backward_mma_test.cpp)

// TensorCore's gradients (got) against the oracle and against Scalar's (plain). TensorCore rounds dA,
// dB and Hh to the dtype between its passes, so every gradient's bound is the dtype's (Scalar's
// weight gradients are FP32-accurate).
void expect_tensor_core_grads(const HostGrads& got, const HostGrads& plain, const Problem& p,
                              const std::vector<double>& dy) {
  const auto want = reference::swiglu_experts_backward(p.rows, dy, p.offsets, p.w.gate, p.w.up, p.w.down, p.c.h, p.c.i);
  const double bound = backward_bound(p.dtype);
  EXPECT_LE(testing::relative_l2(got.dinput, want.dinput), bound) << "dinput";
  EXPECT_LE(testing::relative_l2(got.dgate, want.dgate), bound) << "dgate";
  EXPECT_LE(testing::relative_l2(got.dup, want.dup), bound) << "dup";
  EXPECT_LE(testing::relative_l2(got.ddown, want.ddown), bound) << "ddown";
  EXPECT_LE(testing::relative_l2(got.dinput, plain.dinput), bound) << "dinput vs Scalar";
  EXPECT_LE(testing::relative_l2(got.dgate, plain.dgate), bound) << "dgate vs Scalar";
  EXPECT_LE(testing::relative_l2(got.dup, plain.dup), bound) << "dup vs Scalar";
  EXPECT_LE(testing::relative_l2(got.ddown, plain.ddown), bound) << "ddown vs Scalar";
  expect_empty_experts_zero(got, p.offsets, p.c);
}

class MoeExpertsBackwardTensorCore : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

// Against the oracle and against Scalar (expect_tensor_core_grads).
TEST_P(MoeExpertsBackwardTensorCore, MatchesReferenceAndScalar) {
  const DType dtype = GetParam();
  for (Case c : {Case{13, 8, 2, 24, 40, 0},      // a few rows per expert
                 Case{1, 1, 1, 16, 8, 0},        // T = 1, E = 1
                 Case{5, 4, 4, 8, 16, 0},        // top_k = E
                 Case{9, 6, 2, 16, 24, 50},      // skewed: every token picks expert 0
                 Case{3, 16, 1, 40, 24, 0},      // most experts without rows
                 Case{70, 3, 1, 72, 48, 30}}) {  // one expert gets 70 rows: several row and K tiles
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(describe(c) + fmt::format(" seed={}", seed));
    std::mt19937_64 rng(seed);
    Problem p(dtype, c, rng);
    p.dispatch();
    ASSERT_FALSE(HasFatalFailure());
    const std::int64_t n = c.t * c.k;
    const auto dy = testing::random_values(at(n * c.h), dtype, rng);
    const Tensor tdy = testing::upload({n, c.h}, dtype, dy, Device::host());
    auto training = p.experts.forward_dispatched_training(*p.d, moe::GroupedStrategy::TensorCore);
    ASSERT_TRUE(training.ok()) << training.error().message();
    auto tc = training->cache.backward_with_strategy(tdy, moe::GroupedStrategy::TensorCore);
    ASSERT_TRUE(tc.ok()) << tc.error().message();
    auto scalar = training->cache.backward_with_strategy(tdy, moe::GroupedStrategy::Scalar);
    ASSERT_TRUE(scalar.ok()) << scalar.error().message();
    expect_tensor_core_grads(read_back(*tc, n, c, dtype), read_back(*scalar, n, c, dtype), p, dy);
  }
}

// The same bits over repeated runs and under every emulator thread order (no atomics; fixed K order).
TEST_P(MoeExpertsBackwardTensorCore, BitwiseAcrossRunsAndThreadOrders) {
  const DType dtype = GetParam();
  const Case c{20, 4, 2, 40, 24, 30};
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(describe(c) + fmt::format(" seed={}", seed));
  std::mt19937_64 rng(seed);
  Problem p(dtype, c, rng);
  p.dispatch();
  ASSERT_FALSE(HasFatalFailure());
  const std::int64_t n = c.t * c.k;
  const Tensor dy = testing::upload({n, c.h}, dtype, testing::random_values(at(n * c.h), dtype, rng), Device::host());
  auto cache = p.experts.training_cache(*p.d);
  ASSERT_TRUE(cache.ok()) << cache.error().message();
  const auto first = grad_bytes(cache->backward_with_strategy(dy, moe::GroupedStrategy::TensorCore));
  ASSERT_EQ(first.size(), 4u);
  for (runtime::host::Schedule order :
       {runtime::host::Schedule::Forward, runtime::host::Schedule::Reverse, runtime::host::Schedule::Random}) {
    runtime::host::set_default_schedule({order, fresh_seed()});
    EXPECT_TRUE(grad_bytes(cache->backward_with_strategy(dy, moe::GroupedStrategy::TensorCore)) == first)
        << "schedule " << static_cast<int>(order);
  }
}

INSTANTIATE_TEST_SUITE_P(MoeExpertsBackward, MoeExpertsBackwardTensorCore, ::testing::Values(DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// ---- Hopper's warpgroup MMA ({tile = 5}, gemm::WgmmaPolicy<128, 64, 64, 4>): the heuristic's
// tensor-core tile where the target has wgmma, i.e. with the RUDNN_WGMMA=1 opt-in on sm_90a (the
// experts backward has no Autotune). Here the host emulation device, which reports sm_90a and
// emulates wgmma; on a GPU the same test runs as *OnGpu (scripts/gpu-check).

// The heuristic's tile for a tensor-core backward of `c` on `device` (what the public call lowers).
std::string heuristic_entries(const Case& c, DType dtype, const Device& device) {
  const std::int64_t n = c.t * c.k;
  contracts::ExpertsBackwardSignature sig{
      {{{{c.e, c.i, c.h}, dtype, 0}, {{c.e, c.i, c.h}, dtype, 0}, {{c.e, c.h, c.i}, dtype, 0}},
       {{n, c.h}, dtype, 0},
       {{c.e + 1}, DType::U32, 0}},
      {{c.t, c.k}, DType::U32, 0},
      {{n, c.h}, dtype, 0}};
  auto lowered = compiler::lower_experts_backward({sig, contracts::ExpertsStrategy::TensorCore, std::nullopt},
                                                  ops::target_for(device));
  if (!lowered.ok()) return lowered.error().message();
  std::string entries;
  for (const auto& l : lowered->launches) entries += l.entry + " ";
  return entries;
}

// The public call under the opt-in runs the wgmma tile (the cached plan's kernels say so), against
// the oracle and against Scalar.
void check_wgmma_backward(const Device& device, DType dtype) {
  const testing::WgmmaOptIn opt_in;
  for (Case c : {Case{37, 5, 2, 88, 72, 0},         // every expert with rows; H, I not multiples of 64
                 Case{150, 3, 1, 200, 136, 40}}) {  // one expert with most rows: several row, column, K tiles
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(describe(c) + fmt::format(" seed={}", seed));
    std::mt19937_64 rng(seed);
    Problem p(dtype, c, rng, device);
    p.dispatch();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    const std::int64_t n = c.t * c.k;
    const auto dy = testing::random_values(at(n * c.h), dtype, rng);
    const Tensor tdy = testing::upload({n, c.h}, dtype, dy, device);
    auto cache = p.experts.training_cache(*p.d);
    ASSERT_TRUE(cache.ok()) << cache.error().message();
    auto tc = cache->backward_with_strategy(tdy, moe::GroupedStrategy::TensorCore);
    ASSERT_TRUE(tc.ok()) << tc.error().message();
    // The launches: the row order, then the hidden and input passes and three weight gradients, each
    // on the wgmma tile.
    std::size_t wgmma_launches = 0;
    std::string entries;
    for (const std::string& entry : ops::PlanCache::instance().kernel_entries("rudnn.swiglu_experts_backward")) {
      wgmma_launches += entry.find("wgmma_128x64x64_s4") != std::string::npos;
      entries += entry + " ";
    }
    EXPECT_EQ(wgmma_launches, 5u) << entries;
    auto scalar = cache->backward_with_strategy(tdy, moe::GroupedStrategy::Scalar);
    ASSERT_TRUE(scalar.ok()) << scalar.error().message();
    expect_tensor_core_grads(read_back(*tc, n, c, dtype), read_back(*scalar, n, c, dtype), p, dy);
  }
}

TEST(MoeExpertsBackwardWgmma, OptInRunsTheWgmmaTileOnHost) {
  ops::set_poison_outputs(true);
  check_wgmma_backward(Device::host(), DType::BF16);
}

TEST(MoeExpertsBackwardWgmma, OptInRunsTheWgmmaTileOnGpu) {
  std::string why;
  const auto device = testing::wgmma_gpu(why);
  if (!device) GTEST_SKIP() << "SKIP: " << why;
  check_wgmma_backward(*device, DType::BF16);
}

// Without the opt-in the heuristic keeps the mma.sync tile, on the host emulation device too.
TEST(MoeExpertsBackwardWgmma, WithoutTheOptInTheMmaTile) {
  if (testing::wgmma_opted_in()) GTEST_SKIP() << "SKIP: RUDNN_WGMMA=1 in the environment";
  const std::string entries = heuristic_entries(Case{37, 5, 2, 88, 72, 0}, DType::BF16, Device::host());
  EXPECT_EQ(entries.find("wgmma"), std::string::npos) << entries;
  EXPECT_NE(entries.find("64x64x32_w2x2_s3"), std::string::npos) << entries;
}

// forward_dispatched_training(TensorCore) is the tensor-core forward, bit for bit; its cache's
// backward does not depend on the forward's strategy.
TEST_F(MoeExpertsBackwardStrategies, TensorCoreTrainingForwardIsTheTensorCoreForward) {
  for (DType dtype : {DType::BF16, DType::F16}) {
    const Case c{11, 4, 2, 32, 24, 0};
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("{} {} seed={}", dtype_name(dtype), describe(c), seed));
    std::mt19937_64 rng(seed);
    Problem p(dtype, c, rng);
    p.dispatch();
    ASSERT_FALSE(HasFatalFailure());
    auto tc_train = p.experts.forward_dispatched_training(*p.d, moe::GroupedStrategy::TensorCore);
    ASSERT_TRUE(tc_train.ok()) << tc_train.error().message();
    auto tc = p.experts.forward_dispatched_with_strategy(*p.d, moe::GroupedStrategy::TensorCore);
    ASSERT_TRUE(tc.ok()) << tc.error().message();
    EXPECT_TRUE(host_bytes(tc_train->output) == host_bytes(*tc));
    auto auto_train = p.experts.forward_dispatched_training(*p.d, moe::GroupedStrategy::Auto);
    ASSERT_TRUE(auto_train.ok()) << auto_train.error().message();
    EXPECT_TRUE(host_bytes(auto_train->output) == host_bytes(*tc)) << "Auto took TensorCore in the forward";
    auto scalar_train = p.experts.forward_dispatched_training(*p.d, moe::GroupedStrategy::Scalar);
    ASSERT_TRUE(scalar_train.ok()) << scalar_train.error().message();

    const std::int64_t n = c.t * c.k;
    const Tensor dy = testing::upload({n, c.h}, dtype, testing::random_values(at(n * c.h), dtype, rng), Device::host());
    auto g_tc = tc_train->cache.backward(dy);
    auto g_scalar = scalar_train->cache.backward(dy);
    ASSERT_TRUE(g_tc.ok() && g_scalar.ok());
    EXPECT_TRUE(host_bytes(g_tc->dinput) == host_bytes(g_scalar->dinput));
    EXPECT_TRUE(host_bytes(g_tc->dgate) == host_bytes(g_scalar->dgate));
    EXPECT_TRUE(host_bytes(g_tc->dup) == host_bytes(g_scalar->dup));
    EXPECT_TRUE(host_bytes(g_tc->ddown) == host_bytes(g_scalar->ddown));
  }
  // F32 has no tensor-core forward: the training forward says so (and Auto runs Scalar).
  const Case c{4, 3, 2, 16, 8, 0};
  std::mt19937_64 rng(fresh_seed());
  Problem p(DType::F32, c, rng);
  p.dispatch();
  ASSERT_FALSE(HasFatalFailure());
  const Stats before = stats();
  auto tc = p.experts.forward_dispatched_training(*p.d, moe::GroupedStrategy::TensorCore);
  ASSERT_FALSE(tc.ok());
  EXPECT_EQ(tc.error().kind(), ErrorKind::Unsupported) << tc.error().message();
  EXPECT_EQ(tc.error().argument(), "strategy");
  EXPECT_EQ(stats().kernel_launches, before.kernel_launches);
  auto autos = p.experts.forward_dispatched_training(*p.d, moe::GroupedStrategy::Auto);
  auto scalar = p.experts.forward_dispatched(*p.d);
  ASSERT_TRUE(autos.ok() && scalar.ok());
  EXPECT_TRUE(host_bytes(autos->output) == host_bytes(*scalar));
}

// The cache holds the rows, offsets and weights it needs (shared storage): it outlives the routing
// and Dispatched it came from, and training_cache() gives the same backward.
TEST_F(MoeExpertsBackwardStrategies, CacheOutlivesTheDispatched) {
  const DType dtype = DType::F32;
  const Case c{8, 4, 2, 12, 10, 0};
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Problem p(dtype, c, rng);
  p.dispatch();
  ASSERT_FALSE(HasFatalFailure());
  const std::int64_t n = c.t * c.k;
  const auto dy_values = testing::random_values(at(n * c.h), dtype, rng);
  const Tensor dy = testing::upload({n, c.h}, dtype, dy_values, Device::host());
  auto from_training = p.experts.forward_dispatched_training(*p.d, moe::GroupedStrategy::Scalar);
  auto from_cache = p.experts.training_cache(*p.d);
  ASSERT_TRUE(from_training.ok() && from_cache.ok());
  p.d.reset();
  auto a = from_training->cache.backward(dy);
  auto b = from_cache->backward(dy);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(host_bytes(a->dinput) == host_bytes(b->dinput));
  EXPECT_TRUE(host_bytes(a->dgate) == host_bytes(b->dgate));
  EXPECT_TRUE(host_bytes(a->dup) == host_bytes(b->dup));
  EXPECT_TRUE(host_bytes(a->ddown) == host_bytes(b->ddown));
  expect_grads_near(
      read_back(*a, n, c, dtype),
      reference::swiglu_experts_backward(p.rows, dy_values, p.offsets, p.w.gate, p.w.up, p.w.down, c.h, c.i), dtype);
}

// ---- the dexpert contract: a typed error naming it, nothing compiled or launched

class MoeExpertsBackwardContract : public rudnn::testing::ContractTest {};

TEST_F(MoeExpertsBackwardContract, Dexpert) {
  const DType bf = DType::BF16;
  auto experts = moe::SwiGluExperts::create(t({4, 8, 16}, bf), t({4, 8, 16}, bf), t({4, 16, 8}, bf));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  auto routing = moe::route(t({3, 4}, DType::F32), {2, true});
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  auto d = routing->dispatch(t({3, 16}, bf));
  ASSERT_TRUE(d.ok()) << d.error().message();
  auto cache = experts->training_cache(*d);
  ASSERT_TRUE(cache.ok()) << cache.error().message();
  rebase();
  // dtype: quantized, not a float, another float than the experts'.
  expect_rejected(cache->backward(t({6, 16}, DType::FP8E4M3)), ErrorKind::QuantizedDType, "dexpert");
  expect_rejected(cache->backward(t({6, 16}, DType::I32)), ErrorKind::UnsupportedDType, "dexpert");
  expect_rejected(cache->backward(t({6, 16}, DType::F32)), ErrorKind::UnsupportedDType, "dexpert");
  expect_rejected(cache->backward(t({6, 16}, DType::F16)), ErrorKind::UnsupportedDType, "dexpert");
  // shape: [N, H] of the dispatched rows.
  expect_rejected(cache->backward(t({96}, bf)), ErrorKind::ShapeMismatch, "dexpert");
  expect_rejected(cache->backward(t({5, 16}, bf)), ErrorKind::ShapeMismatch, "dexpert");
  expect_rejected(cache->backward(t({6, 8}, bf)), ErrorKind::ShapeMismatch, "dexpert");
  expect_rejected(cache->backward(t({6, 16, 1}, bf)), ErrorKind::ShapeMismatch, "dexpert");
  expect_rejected(cache->backward_with_strategy(t({6, 17}, bf), moe::GroupedStrategy::Auto), ErrorKind::ShapeMismatch,
                  "dexpert");
  // queue: another queue of the same device.
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  expect_rejected(cache->backward(t({6, 16}, bf, &q2.value())), ErrorKind::QueueMismatch, "dexpert");
  expect_rejected(cache->backward_with_strategy(t({6, 16}, bf, &q2.value()), moe::GroupedStrategy::Scalar),
                  ErrorKind::QueueMismatch, "dexpert");
  // The dexpert's own errors come before the strategy's.
  expect_rejected(cache->backward_with_strategy(t({6, 16}, DType::F32), moe::GroupedStrategy::TensorCore),
                  ErrorKind::UnsupportedDType, "dexpert");
}

TEST_F(MoeExpertsBackwardContract, TrainingForwardAndCache) {
  const DType bf = DType::BF16;
  auto experts = moe::SwiGluExperts::create(t({4, 8, 16}, bf), t({4, 8, 16}, bf), t({4, 16, 8}, bf));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  auto routing = moe::route(t({3, 4}, DType::F32), {2, true});
  auto routing5 = moe::route(t({3, 5}, DType::F32), {2, true});
  ASSERT_TRUE(routing.ok() && routing5.ok());
  auto d_f32 = routing->dispatch(t({3, 16}, DType::F32));
  auto d_h8 = routing->dispatch(t({3, 8}, bf));
  auto d_e5 = routing5->dispatch(t({3, 16}, bf));
  ASSERT_TRUE(d_f32.ok() && d_h8.ok() && d_e5.ok());
  rebase();
  for (auto strategy : {moe::GroupedStrategy::Scalar, moe::GroupedStrategy::Auto}) {
    expect_rejected(experts->forward_dispatched_training(*d_f32, strategy), ErrorKind::UnsupportedDType, "rows");
    expect_rejected(experts->forward_dispatched_training(*d_h8, strategy), ErrorKind::ShapeMismatch, "rows");
    expect_rejected(experts->forward_dispatched_training(*d_e5, strategy), ErrorKind::ShapeMismatch, "offsets");
  }
  expect_rejected(experts->training_cache(*d_f32), ErrorKind::UnsupportedDType, "rows");
  expect_rejected(experts->training_cache(*d_h8), ErrorKind::ShapeMismatch, "rows");
  expect_rejected(experts->training_cache(*d_e5), ErrorKind::ShapeMismatch, "offsets");
}

}  // namespace
}  // namespace rudnn
