// RUDNN_AUTOTUNE=off|cached|full through the public normalization API on the host emulation
// device: which variant ran (rudnn::autotune::last_choice), whether tuning happened (Stats),
// results against the FP64 reference, host results kept in memory only, a shipped host cache read
// in cached mode, and a corrupt cache bypassed. The search space is narrowed to three candidates
// so that tuning on the emulator stays quick.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "normalization.h"
#include "op_test_util.h"
#include "plan_cache.h"
#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/search_space.h"
#include "rudnn/autotune/spaces/normalization.h"
#include "rudnn/autotune/tuning_cache.h"
#include "rudnn/normalization.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

namespace fs = std::filesystem;
using autotune::Mode;
using autotune::Source;

compiler::KernelConfig config(std::int64_t threads, std::int64_t rows, std::int64_t width) {
  return compiler::KernelConfig{{{"threads_per_row", threads}, {"rows_per_block", rows}, {"vector_width", width}}};
}

// The normalization space with its key, but only three candidates.
class NarrowNormSpace final : public autotune::SearchSpace {
 public:
  std::string_view family() const override { return "normalization"; }
  bool covers(std::string_view op) const override { return autotune::normalization_search_space()->covers(op); }
  std::optional<autotune::TuningKey> key(const compiler::ConfigQuery& q) const override {
    return autotune::normalization_search_space()->key(q);
  }
  std::vector<compiler::KernelConfig> candidates(const autotune::TuningKey&) const override {
    return {config(32, 4, 4), config(64, 1, 4), config(64, 2, 2)};
  }
};

class AutotuneModes : public ::testing::Test {
 protected:
  void SetUp() override {
    space_ = std::make_shared<NarrowNormSpace>();
    autotune::register_search_space(space_);
    dir_ = fs::temp_directory_path() /
           ("rudnn-modes-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    autotune::set_cache_path((dir_ / "autotune.sqlite").string());
    autotune::TuningStore::instance().forget();
    ops::PlanCache::instance().clear();
    saved_mode_ = autotune::mode();
    ops::set_poison_outputs(true);
  }
  void TearDown() override {
    autotune::unregister_search_space(space_.get());
    autotune::set_mode(saved_mode_);
    autotune::set_cache_path("");
    autotune::TuningStore::instance().forget();
    ops::PlanCache::instance().clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // rms_norm of [rows, h] f32 on the host; checks it against the FP64 reference.
  autotune::Choice run_rms(std::int64_t rows, std::int64_t h) {
    std::mt19937_64 rng(testing::fresh_seed());
    auto x = testing::random_values(static_cast<std::size_t>(rows * h), DType::F32, rng);
    auto g = testing::random_values(static_cast<std::size_t>(h), DType::F32, rng, 0.5, 1.5);
    const Device host = Device::host();
    auto y = normalization::rms_norm(testing::upload({rows, h}, DType::F32, x, host),
                                     testing::upload({h}, DType::F32, g, host), 1e-5f);
    EXPECT_TRUE(y.ok()) << y.error().message();
    if (!y.ok()) return {};
    EXPECT_LE(testing::relative_l2(to_host(y.value())->to_f64(), reference::rms_norm(x, rows, h, g, 1e-5)), 1e-5);
    auto choice = autotune::last_choice();
    EXPECT_TRUE(choice.has_value());
    return choice.value_or(autotune::Choice{});
  }

  std::shared_ptr<NarrowNormSpace> space_;
  fs::path dir_;
  Mode saved_mode_ = Mode::Cached;
};

bool in_narrow_space(const std::string& c) {
  for (auto& k : NarrowNormSpace().candidates({}))
    if (k.to_string() == c) return true;
  return false;
}

TEST_F(AutotuneModes, OffUsesTheHeuristicAndNeverLooksUp) {
  autotune::set_mode(Mode::Off);
  const Stats before = stats();
  auto c = run_rms(6, 64);
  EXPECT_EQ(c.source, Source::Heuristic);
  EXPECT_EQ(c.op, "rudnn.rms_norm");
  EXPECT_EQ(c.config, "threads_per_row=32,rows_per_block=4,vector_width=4");  // the heuristic's
  EXPECT_TRUE(c.key.empty());
  EXPECT_EQ(stats().autotune_runs, before.autotune_runs);
  // Off: one plan for every row count.
  const Stats warm = stats();
  run_rms(100, 64);
  EXPECT_EQ(stats().plan_cache_hits, warm.plan_cache_hits + 1);
}

TEST_F(AutotuneModes, CachedNeverTunes) {
  autotune::set_mode(Mode::Cached);
  const Stats before = stats();
  auto c = run_rms(6, 72);
  EXPECT_EQ(c.source, Source::Heuristic);  // nothing cached for this key
  EXPECT_NE(c.key.find("rudnn.rms_norm f32,f32 [72] buckets [8]"), std::string::npos) << c.key;
  EXPECT_EQ(stats().autotune_runs, before.autotune_runs);
  EXPECT_FALSE(fs::exists(dir_ / "autotune.sqlite"));  // a reader creates no file
}

TEST_F(AutotuneModes, FullTunesOnceThenHits) {
  autotune::set_mode(Mode::Full);
  const Stats before = stats();
  auto tuned = run_rms(6, 80);
  EXPECT_EQ(tuned.source, Source::Tuned);
  EXPECT_TRUE(in_narrow_space(tuned.config)) << tuned.config;
  EXPECT_EQ(tuned.kernel.rfind("rudnn_rms_norm_f32_", 0), 0u) << tuned.kernel;
  EXPECT_EQ(stats().autotune_runs, before.autotune_runs + 1);

  // Same bucket (5..8 rows), warm: the same plan.
  const Stats warm = stats();
  auto again = run_rms(7, 80);
  EXPECT_EQ(stats().plan_cache_hits, warm.plan_cache_hits + 1);
  EXPECT_EQ(again.config, tuned.config);

  // A new plan for the key (plan cache cleared) finds the process's result: no second tuning.
  ops::PlanCache::instance().clear();
  auto hit = run_rms(8, 80);
  EXPECT_EQ(hit.source, Source::Cache);
  EXPECT_EQ(hit.config, tuned.config);
  EXPECT_EQ(stats().autotune_runs, before.autotune_runs + 1);

  // Switching to cached applies to new plans and uses the result too.
  autotune::set_mode(Mode::Cached);
  auto cached = run_rms(5, 80);
  EXPECT_EQ(cached.source, Source::Cache);
  EXPECT_EQ(cached.config, tuned.config);

  // Another bucket is another key: tuned again in full mode.
  autotune::set_mode(Mode::Full);
  auto other = run_rms(40, 80);
  EXPECT_EQ(other.source, Source::Tuned);
  EXPECT_EQ(stats().autotune_runs, before.autotune_runs + 2);

  // Host timings were never written anywhere a GPU could read.
  EXPECT_FALSE(fs::exists(dir_ / "autotune.sqlite"));
}

TEST_F(AutotuneModes, CachedReadsAShippedHostCache) {
  const std::string path = (dir_ / "shipped.host.sqlite").string();
  {
    auto file =
        autotune::TuningCache::open(path, {.read_only = false, .create = true, .expected = autotune::CacheClass::Host});
    ASSERT_TRUE(file.ok()) << file.error().message();
    autotune::CacheRecord r;
    r.key = autotune::TuningKey{"rudnn.rms_norm", {DType::F32, DType::F32}, {88}, {16}};
    r.device = autotune::fingerprint_of(Device::host());
    r.config = config(64, 2, 2);
    r.time_ms = 0.5;
    ASSERT_TRUE(file.value()->store(r).ok());
    ASSERT_TRUE(file.value()->compact_for_shipping().ok());
  }
  autotune::set_cache_path(path);
  autotune::set_mode(Mode::Cached);
  const Stats before = stats();
  auto c = run_rms(12, 88);
  EXPECT_EQ(c.source, Source::Cache);
  EXPECT_EQ(c.config, "threads_per_row=64,rows_per_block=2,vector_width=2");
  EXPECT_EQ(c.kernel, "rudnn_rms_norm_f32_t64_r2_v2");
  EXPECT_EQ(stats().autotune_runs, before.autotune_runs);
  // Another bucket of the same op: not in the file, the heuristic.
  EXPECT_EQ(run_rms(100, 88).source, Source::Heuristic);
}

TEST_F(AutotuneModes, AStaleEntryOutsideTheSearchSpaceIsIgnored) {
  autotune::CacheRecord r;
  r.key = autotune::TuningKey{"rudnn.rms_norm", {DType::F32, DType::F32}, {96}, {8}};
  r.device = autotune::fingerprint_of(Device::host());
  r.config = config(1024, 1, 4);  // valid for the op, but not a candidate of this (narrowed) space
  autotune::TuningStore::instance().remember(r);
  autotune::set_mode(Mode::Cached);
  EXPECT_EQ(run_rms(8, 96).source, Source::Heuristic);
}

TEST_F(AutotuneModes, ACorruptCacheIsReportedAndBypassed) {
  const std::string path = (dir_ / "corrupt.host.sqlite").string();
  std::ofstream(path, std::ios::binary) << std::string(4096, '\x7f');
  autotune::set_cache_path(path);
  autotune::set_mode(Mode::Cached);
  auto c = run_rms(3, 104);  // works, on the heuristic
  EXPECT_EQ(c.source, Source::Heuristic);
  auto status = autotune::cache_status();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind(), ErrorKind::CacheFailure);
  EXPECT_EQ(status.error().argument(), path);
}

TEST_F(AutotuneModes, ModeNamesParse) {
  EXPECT_EQ(autotune::parse_mode("full").value(), Mode::Full);
  EXPECT_EQ(autotune::parse_mode("off").value(), Mode::Off);
  auto bad = autotune::parse_mode("always");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::InvalidValue);
  EXPECT_EQ(bad.error().argument(), "RUDNN_AUTOTUNE");
  EXPECT_EQ(bad.error().actual(), "always");
  EXPECT_EQ(autotune::source_name(Source::Tuned), "tuned");
}

}  // namespace
}  // namespace rudnn
