// The Autotune strategy of the MoE experts' tile through the public API on the host emulation
// device: in full mode the first call of a (weights, strategy, rows-per-expert bucket) key tunes
// among the registered tiles of the resolved strategy, later calls and plans reuse the result, a
// new bucket is a new key, and the output stays within the FP64 oracle's bound; off mode uses the
// heuristic. The space is the built-in one (two or three tiles per strategy: quick on the emulator).
#include <gtest/gtest.h>

#include <random>

#include "jit.h"
#include "op_test_util.h"
#include "plan_cache.h"
#include "reference/moe.h"
#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/search_space.h"
#include "rudnn/moe.h"
#include "rudnn/stats.h"
#include "wgmma_opt_in.h"

namespace rudnn {
namespace {

using autotune::Mode;
using autotune::Source;

class MoeExpertsAutotune : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = autotune::mode();
    autotune::TuningStore::instance().forget();
    ops::PlanCache::instance().clear();
    ops::set_poison_outputs(true);
  }
  void TearDown() override {
    autotune::set_mode(saved_);
    autotune::TuningStore::instance().forget();
    ops::PlanCache::instance().clear();
  }

  // Experts over `tokens` tokens (top-2 of 4 experts, H = 32, I = 16) with `strategy`; checks the
  // output against the oracle and returns the choice the call made.
  autotune::Choice run(std::int64_t tokens, moe::GroupedStrategy strategy) {
    const DType dtype = DType::BF16;
    const std::int64_t e = 4, i = 16, h = 32, k = 2;
    std::mt19937_64 rng(testing::fresh_seed());
    auto gate = testing::random_values(static_cast<std::size_t>(e * i * h), dtype, rng, -0.2, 0.2);
    auto up = testing::random_values(static_cast<std::size_t>(e * i * h), dtype, rng, -0.2, 0.2);
    auto down = testing::random_values(static_cast<std::size_t>(e * h * i), dtype, rng, -0.3, 0.3);
    const Device host = Device::host();
    auto experts = moe::SwiGluExperts::create(testing::upload({e, i, h}, dtype, gate, host),
                                              testing::upload({e, i, h}, dtype, up, host),
                                              testing::upload({e, h, i}, dtype, down, host));
    EXPECT_TRUE(experts.ok());
    auto x = testing::random_values(static_cast<std::size_t>(tokens * h), dtype, rng);
    auto logits = testing::random_values(static_cast<std::size_t>(tokens * e), dtype, rng);
    auto routing = moe::route(testing::upload({tokens, e}, dtype, logits, host), {k, true});
    EXPECT_TRUE(routing.ok());
    auto d = routing->dispatch(testing::upload({tokens, h}, dtype, x, host));
    EXPECT_TRUE(d.ok());
    // Routing and dispatch are tunable too: count only the experts' tunings.
    const auto runs = stats().autotune_runs;
    auto out = experts->forward_dispatched_with_strategy(*d, strategy);
    experts_runs_ += stats().autotune_runs - runs;
    EXPECT_TRUE(out.ok()) << out.error().message();
    if (!out.ok()) return {};
    const auto rows = to_host(d->rows())->to_f64(), off = to_host(d->expert_offsets())->to_f64();
    const std::vector<std::uint32_t> offsets(off.begin(), off.end());
    auto want = reference::expert_down(reference::swiglu_act(rows, offsets, gate, up, h, i), offsets, down, h, i);
    EXPECT_LE(testing::relative_l2(to_host(*out)->to_f64(), want), 3 * testing::tolerance(dtype));
    auto choice = autotune::last_choice();
    EXPECT_TRUE(choice.has_value());
    return choice.value_or(autotune::Choice{});
  }

  static bool registered(const std::string& config, bool tensor_core) {
    for (const auto& c : compiler::expert_variants(tensor_core))
      if (c.to_string() == config) return true;
    return false;
  }

  Mode saved_ = Mode::Cached;
  std::uint64_t experts_runs_ = 0;  // tunings the experts calls of this test made
};

TEST_F(MoeExpertsAutotune, FullTunesTheTileOncePerBucket) {
  autotune::set_mode(Mode::Full);
  auto tuned = run(6, moe::GroupedStrategy::TensorCore);  // 12 rows over 4 experts: bucket 4
  EXPECT_EQ(tuned.op, "rudnn.swiglu_experts");
  EXPECT_EQ(tuned.source, Source::Tuned);
  EXPECT_TRUE(registered(tuned.config, true)) << tuned.config;
  EXPECT_NE(tuned.key.find("rudnn.swiglu_experts bf16 [4, 16, 32, 1] buckets [4]"), std::string::npos) << tuned.key;
  EXPECT_EQ(experts_runs_, 1u);

  // The same bucket from a new plan: the process's result, no second tuning.
  ops::PlanCache::instance().clear();
  auto hit = run(7, moe::GroupedStrategy::TensorCore);
  EXPECT_EQ(hit.source, Source::Cache);
  EXPECT_EQ(hit.config, tuned.config);
  EXPECT_EQ(experts_runs_, 1u);

  // Scalar is another key (its own tiles); Auto resolves to TensorCore here and shares its key.
  auto scalar = run(6, moe::GroupedStrategy::Scalar);
  EXPECT_EQ(scalar.source, Source::Tuned);
  EXPECT_TRUE(registered(scalar.config, false)) << scalar.config;
  ops::PlanCache::instance().clear();
  auto autos = run(6, moe::GroupedStrategy::Auto);
  EXPECT_EQ(autos.source, Source::Cache);
  EXPECT_EQ(autos.config, tuned.config);
  EXPECT_EQ(experts_runs_, 2u);
}

TEST_F(MoeExpertsAutotune, OffUsesTheHeuristic) {
  autotune::set_mode(Mode::Off);
  const Stats before = stats();
  auto c = run(6, moe::GroupedStrategy::TensorCore);
  EXPECT_EQ(c.source, Source::Heuristic);
  EXPECT_TRUE(c.key.empty());
  EXPECT_EQ(stats().autotune_runs, before.autotune_runs);
}

// The experts' candidates include the wgmma tiles. A cache tuned under RUDNN_WGMMA=1 may hold one; a
// GPU process without the opt-in must not take it from the cache (its lowering would refuse it; the
// heuristic decides instead), while the host device, which emulates wgmma, always may.
TEST(AutotuneWgmmaConfigs, RunOnlyWhereTheTargetHasWgmma) {
  const compiler::KernelConfig wgmma{{{"tensor_core", 1}, {"block_m", 64}, {"wgmma", 1}}};
  const compiler::KernelConfig mma{{{"tensor_core", 1}, {"block_m", 64}}};
  const compiler::KernelConfig zero{{{"tensor_core", 1}, {"wgmma", 0}}};
  EXPECT_TRUE(autotune::config_runs_here(mma, "sm_80", false));
  EXPECT_TRUE(autotune::config_runs_here(zero, "sm_90a", false));
  EXPECT_TRUE(autotune::config_runs_here(wgmma, "sm_90a", true)) << "the host device emulates wgmma";
  EXPECT_FALSE(autotune::config_runs_here(wgmma, "sm_80", false));
  {
    const testing::WgmmaOptIn opt_in;
    EXPECT_TRUE(autotune::config_runs_here(wgmma, "sm_90a", false));
    EXPECT_FALSE(autotune::config_runs_here(wgmma, "sm_90", false)) << "the opt-in does not give sm_90 wgmma";
  }
  if (!testing::wgmma_opted_in()) EXPECT_FALSE(autotune::config_runs_here(wgmma, "sm_90a", false));
}

}  // namespace
}  // namespace rudnn
