// Attention through the public entry (rudnn::attention::attention) on the host emulation device, for
// every strategy against the FP64 oracle (tests/reference/attention.h): decode (Tq = 1), Tq = Tk,
// Tq < Tk and Tq > Tk with causal, odd lengths, GQA 1/4/8, masks with fully masked rows, bias
// broadcasts, ±1e4 logits; equivalence between strategies; Autotune's choice; every contract line of
// SPEC §5 and every unfit strategy rejected with nothing launched. Both thread orders, poisoned outputs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "contract_fixture.h"
#include "host/emulator.h"
#include "host/host_device.h"
#include "jit.h"
#include "op_test_util.h"
#include "reference/attention.h"
#include "rudnn/attention.h"
#include "rudnn/autotune.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using attention::AttentionStrategy;
using runtime::host::Schedule;
using testing::fresh_seed;

struct Case {
  std::int64_t b, hq, hkv, tq, tk, d, dv;
  bool causal, mask, bias;
  int bias_broadcast;  // 0 full, 1 over batch, 2 over heads, 3 both
  double logit_scale = 1.0;
};

using testing::host_values;

// Runs `c` with `strategy` (both schedules) and checks against the oracle; returns the output.
std::vector<double> run_case(const Case& c, DType dtype, AttentionStrategy strategy, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Device host = Device::host();
  auto q = testing::random_values(static_cast<std::size_t>(c.b * c.hq * c.tq * c.d), dtype, rng, -c.logit_scale,
                                  c.logit_scale);
  auto k = testing::random_values(static_cast<std::size_t>(c.b * c.hkv * c.tk * c.d), dtype, rng);
  auto v = testing::random_values(static_cast<std::size_t>(c.b * c.hkv * c.tk * c.dv), dtype, rng);
  reference::AttentionExtra mask, bias;
  std::optional<Tensor> tm, tb;
  if (c.mask) {
    mask.batch = c.b, mask.heads = c.hq;
    std::uniform_real_distribution<double> u(0, 1);
    mask.values.resize(static_cast<std::size_t>(c.b * c.hq * c.tq * c.tk));
    for (std::size_t i = 0; i < mask.values.size(); ++i) mask.values[i] = u(rng) < 0.3 ? 1 : 0;
    // Row 0 of every (b, h) fully masked: zeros out.
    for (std::int64_t bh = 0; bh < c.b * c.hq; ++bh)
      for (std::int64_t j = 0; j < c.tk; ++j) mask.values[static_cast<std::size_t>(bh * c.tq * c.tk + j)] = 1;
    tm = testing::upload({c.b, c.hq, c.tq, c.tk}, DType::U8, mask.values, host);
  }
  if (c.bias) {
    bias.batch = (c.bias_broadcast & 1) ? 1 : c.b;
    bias.heads = (c.bias_broadcast & 2) ? 1 : c.hq;
    bias.values =
        testing::random_values(static_cast<std::size_t>(bias.batch * bias.heads * c.tq * c.tk), DType::F32, rng);
    tb = testing::upload({bias.batch, bias.heads, c.tq, c.tk}, DType::F32, bias.values, host);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  auto want = reference::attention(q, k, v, {c.b, c.hq, c.hkv, c.tq, c.tk, c.d, c.dv}, mask, bias, scale, c.causal);
  Tensor tq = testing::upload({c.b, c.hq, c.tq, c.d}, dtype, q, host);
  Tensor tk = testing::upload({c.b, c.hkv, c.tk, c.d}, dtype, k, host);
  Tensor tv = testing::upload({c.b, c.hkv, c.tk, c.dv}, dtype, v, host);
  std::vector<double> got;
  for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
    runtime::host::set_default_schedule({order, seed});
    auto out = attention::attention(tq, tk, tv, tm, tb, {std::nullopt, c.causal}, strategy);
    EXPECT_TRUE(out.ok()) << out.error().message();
    if (!out.ok()) return {};
    EXPECT_EQ(out->shape(), (Shape{c.b, c.hq, c.tq, c.dv}));
    got = host_values(*out);
    // ±1e4 logits: an FP32 score carries an absolute error of about |q|·|k|·√D·eps whatever the
    // kernel's summation order, and near-tied top scores turn it into that much relative error in
    // their weights (seen: 1.3e-4 for f32 Fallback, seed 6630764551493150214 of the 1e4 case). The
    // bound grows with √logit_scale; a wrong softmax (or an overflow) is still off by O(1).
    const double conditioning = std::max(1.0, std::sqrt(c.logit_scale));
    EXPECT_LE(testing::relative_l2(got, want), 2 * testing::tolerance(dtype) * conditioning);
    if (c.mask)  // the fully masked rows are exactly zero
      for (std::int64_t bh = 0; bh < c.b * c.hq; ++bh)
        for (std::int64_t e = 0; e < c.dv; ++e) EXPECT_EQ(got[static_cast<std::size_t>(bh * c.tq * c.dv + e)], 0.0);
  }
  runtime::host::set_default_schedule({});
  return got;
}

const Case kCases[] = {
    {2, 8, 2, 1, 37, 64, 64, false, false, false, 0},       // decode, GQA 4
    {1, 8, 1, 17, 17, 64, 64, true, false, true, 1},        // Tq = Tk causal, GQA 8, bias broadcast over batch
    {1, 4, 4, 5, 40, 64, 64, true, true, false, 0},         // Tq < Tk causal, mask with fully masked rows
    {1, 2, 1, 40, 17, 64, 64, true, false, true, 2},        // Tq > Tk causal (early rows see nothing)
    {1, 2, 2, 1, 1, 64, 64, false, true, true, 3},          // Tq = Tk = 1, mask + bias over both
    {1, 2, 1, 9, 23, 64, 64, false, false, false, 0, 1e4},  // ±1e4 logits before scale
};

class AttentionStrategies : public ::testing::TestWithParam<std::tuple<DType, AttentionStrategy>> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
};

TEST_P(AttentionStrategies, MatchTheReference) {
  const auto [dtype, strategy] = GetParam();
  for (const Case& c : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("B={} Hq={} Hkv={} Tq={} Tk={} D={} causal={} mask={} bias={} seed={}", c.b, c.hq, c.hkv,
                             c.tq, c.tk, c.d, c.causal, c.mask, c.bias, seed));
    run_case(c, dtype, strategy, seed);
  }
}

std::string strategy_case_name(const ::testing::TestParamInfo<std::tuple<DType, AttentionStrategy>>& info) {
  static const char* const kNames[] = {"FlashMma", "FlashUnit", "Fallback", "Autotune"};
  return std::string(dtype_name(std::get<0>(info.param))) + kNames[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(Fitting, AttentionStrategies,
                         ::testing::Values(std::make_tuple(DType::F32, AttentionStrategy::Fallback),
                                           std::make_tuple(DType::BF16, AttentionStrategy::Fallback),
                                           std::make_tuple(DType::F32, AttentionStrategy::FlashUnit),
                                           std::make_tuple(DType::F16, AttentionStrategy::FlashUnit),
                                           std::make_tuple(DType::F16, AttentionStrategy::FlashBlackboxAccelerated),
                                           std::make_tuple(DType::BF16, AttentionStrategy::FlashBlackboxAccelerated)),
                         strategy_case_name);

TEST(AttentionEquivalence, StrategiesAgreeAndFallbackTakesLargeHeadDims) {
  ops::set_poison_outputs(true);
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  const Case c{1, 4, 2, 13, 29, 128, 128, true, true, true, 0};
  auto mma = run_case(c, DType::BF16, AttentionStrategy::FlashBlackboxAccelerated, seed);
  auto unit = run_case(c, DType::BF16, AttentionStrategy::FlashUnit, seed);
  auto fallback = run_case(c, DType::BF16, AttentionStrategy::Fallback, seed);
  EXPECT_LE(testing::relative_l2(unit, fallback), 2 * testing::tolerance(DType::BF16));
  EXPECT_LE(testing::relative_l2(mma, fallback), 2 * testing::tolerance(DType::BF16));
  // Head dims beyond the fused kernels: only Fallback serves D = 512, Dv = 300.
  run_case({1, 2, 1, 3, 5, 512, 300, false, false, false, 0}, DType::F32, AttentionStrategy::Fallback, seed);
}

// The long odd length: Tq = Tk = 1000, causal, one head (kept small for the emulator).
TEST(AttentionLong, Length1000EveryStrategy) {
  ops::set_poison_outputs(true);
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  const Case c{1, 1, 1, 1000, 1000, 64, 64, true, false, false, 0};
  for (AttentionStrategy s :
       {AttentionStrategy::FlashBlackboxAccelerated, AttentionStrategy::FlashUnit, AttentionStrategy::Fallback})
    run_case(c, DType::BF16, s, seed);
}

TEST(AttentionAutotune, PicksAFittingStrategy) {
  ops::set_poison_outputs(true);
  const auto saved = autotune::mode();
  autotune::set_mode(autotune::Mode::Off);
  run_case(kCases[0], DType::BF16, AttentionStrategy::Autotune, fresh_seed());
  auto choice = autotune::last_choice();
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->op, "rudnn.attention");
  // The heuristic: tensor cores (the wgmma kernel where RUDNN_WGMMA=1 is in the environment).
  EXPECT_TRUE(choice->kernel.find("flash_mma") != std::string::npos ||
              choice->kernel.find("flash_wgmma") != std::string::npos)
      << choice->kernel;
  run_case(kCases[0], DType::F32, AttentionStrategy::Autotune, fresh_seed());
  EXPECT_NE(autotune::last_choice()->kernel.find("flash_unit"), std::string::npos) << autotune::last_choice()->kernel;
  autotune::set_mode(autotune::Mode::Full);
  const Stats before = stats();
  run_case({1, 2, 2, 3, 7, 64, 64, false, false, false, 0}, DType::F16, AttentionStrategy::Autotune, fresh_seed());
  EXPECT_EQ(stats().autotune_runs, before.autotune_runs + 1);
  EXPECT_EQ(autotune::last_choice()->source, autotune::Source::Tuned);
  autotune::set_mode(saved);
}

class AttentionContract : public testing::ContractTest {};

TEST_F(AttentionContract, EachLineAndUnfitStrategyRejected) {
  const DType f = DType::BF16;
  const Tensor q = t({1, 4, 3, 64}, f), k = t({1, 2, 5, 64}, f), v = t({1, 2, 5, 64}, f);
  auto expect = [&](const Result<Tensor, AttentionSetupError>& r, ErrorKind kind, const char* argument) {
    SCOPED_TRACE(argument);
    expect_rejected(r, kind, argument);
  };
  using attention::attention;
  const auto F = AttentionStrategy::Fallback;
  expect(attention(t({1, 4, 3, 64}, DType::FP8E4M3), k, v, {}, {}, {}, F), ErrorKind::QuantizedDType, "query");
  expect(attention(t({1, 4, 3, 64}, DType::I32), k, v, {}, {}, {}, F), ErrorKind::UnsupportedDType, "query");
  expect(attention(t({4, 3, 64}, f), k, v, {}, {}, {}, F), ErrorKind::ShapeMismatch, "query");
  expect(attention(t({1, 4, 3, 0}, f), k, v, {}, {}, {}, F), ErrorKind::EmptyDimension, "query");
  expect(attention(q, t({1, 2, 5, 64}, DType::F16), v, {}, {}, {}, F), ErrorKind::UnsupportedDType, "key");
  expect(attention(q, t({1, 2, 5, 32}, f), v, {}, {}, {}, F), ErrorKind::ShapeMismatch, "key");
  expect(attention(q, t({1, 3, 5, 64}, f), t({1, 3, 5, 64}, f), {}, {}, {}, F), ErrorKind::ShapeMismatch, "key");
  expect(attention(q, k, t({1, 2, 6, 64}, f), {}, {}, {}, F), ErrorKind::ShapeMismatch, "value");
  expect(attention(q, k, t({1, 2, 5, 0}, f), {}, {}, {}, F), ErrorKind::EmptyDimension, "value");
  expect(attention(q, k, v, t({1, 4, 3, 5}, DType::F32), {}, {}, F), ErrorKind::UnsupportedDType, "mask");
  expect(attention(q, k, v, t({1, 2, 3, 5}, DType::U8), {}, {}, F), ErrorKind::ShapeMismatch, "mask");
  expect(attention(q, k, v, {}, t({1, 4, 3, 5}, DType::F16), {}, F), ErrorKind::UnsupportedDType, "attn_bias");
  expect(attention(q, k, v, {}, t({1, 4, 4, 5}, DType::F32), {}, F), ErrorKind::ShapeMismatch, "attn_bias");
  expect(attention(q, k, v, {}, {}, {std::numeric_limits<float>::quiet_NaN(), false}, F), ErrorKind::InvalidValue,
         "scale");
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  expect(attention(q, k, t({1, 2, 5, 64}, f, &q2.value()), {}, {}, {}, F), ErrorKind::QueueMismatch, "value");
  // Unfit strategies name the requirement; never a silent substitution.
  const Tensor q32 = t({1, 4, 3, 64}, DType::F32), k32 = t({1, 2, 5, 64}, DType::F32),
               v32 = t({1, 2, 5, 64}, DType::F32);
  expect(attention(q32, k32, v32, {}, {}, {}, AttentionStrategy::FlashBlackboxAccelerated), ErrorKind::Unsupported,
         "strategy");
  expect(attention(t({1, 4, 3, 80}, f), t({1, 2, 5, 80}, f), t({1, 2, 5, 80}, f), {}, {}, {},
                   AttentionStrategy::FlashBlackboxAccelerated),
         ErrorKind::Unsupported, "strategy");
  expect(attention(t({1, 4, 3, 300}, f), t({1, 2, 5, 300}, f), t({1, 2, 5, 300}, f), {}, {}, {},
                   AttentionStrategy::FlashUnit),
         ErrorKind::Unsupported, "strategy");
  expect(attention(t({1, 4, 3, 2000}, f), t({1, 2, 5, 2000}, f), t({1, 2, 5, 2000}, f), {}, {}, {}, F),
         ErrorKind::Unsupported, "strategy");
  const Stats after = stats();
  EXPECT_EQ(after.kernel_launches, before_.kernel_launches) << "a rejected call launched a kernel";
  EXPECT_EQ(after.jit_compiles, before_.jit_compiles);
}

// A device without mma.sync m16n8k16 (sm_75, a T4; the emulator made to report it): the tensor-core
// strategy is an Unsupported error naming the requirement, with nothing compiled, and Autotune's
// heuristic runs the plain-core flash kernel instead of handing NVRTC a kernel it cannot compile.
TEST(AttentionArch, NoTensorCoresBeforeSm80) {
  ops::set_poison_outputs(true);
  auto& info = runtime::host_device_info();
  const std::string saved_arch = info.arch;
  const auto saved_mode = autotune::mode();
  info.arch = "sm_75";
  autotune::set_mode(autotune::Mode::Off);
  const Device host = Device::host();
  std::mt19937_64 rng(fresh_seed());
  // Heads 5/5 and D 96: a plan key no other test builds (the plan cache does not key on the arch).
  const Shape qs{1, 5, 9, 96}, ks{1, 5, 11, 96};
  Tensor q = testing::upload(qs, DType::BF16, testing::random_values(5 * 9 * 96, DType::BF16, rng), host);
  Tensor k = testing::upload(ks, DType::BF16, testing::random_values(5 * 11 * 96, DType::BF16, rng), host);
  Tensor v = testing::upload(ks, DType::BF16, testing::random_values(5 * 11 * 96, DType::BF16, rng), host);
  const Stats before = stats();
  auto flash = attention::attention(q, k, v, {}, {}, {}, AttentionStrategy::FlashBlackboxAccelerated);
  const Stats rejected = stats();
  auto tuned = attention::attention(q, k, v, {}, {}, {}, AttentionStrategy::Autotune);
  const auto choice = autotune::last_choice();
  info.arch = saved_arch;
  autotune::set_mode(saved_mode);
  ASSERT_FALSE(flash.ok());
  EXPECT_EQ(flash.error().kind(), ErrorKind::Unsupported) << flash.error().message();
  EXPECT_EQ(flash.error().argument(), "strategy");
  EXPECT_NE(flash.error().message().find("sm_80"), std::string::npos) << flash.error().message();
  EXPECT_NE(flash.error().message().find("sm_75"), std::string::npos) << flash.error().message();
  EXPECT_EQ(rejected.jit_compiles, before.jit_compiles);
  EXPECT_EQ(rejected.kernel_launches, before.kernel_launches);
  ASSERT_TRUE(tuned.ok()) << tuned.error().message();
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->kernel.find("flash_mma"), std::string::npos) << choice->kernel;
}

}  // namespace
}  // namespace rudnn
