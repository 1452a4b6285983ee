// Issue target: a warm lookup of an autotuned plan <= 1 us. Measures (host device, so no launch
// cost): the whole warm call up to its launch for a plan whose config came from the autotune
// cache, the same with RUDNN_AUTOTUNE=off for comparison, and the lookup alone (mode, rows
// bucket, plan-cache find, last-choice bookkeeping).
#include <benchmark/benchmark.h>

#include "plan_cache.h"
#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/search_space.h"
#include "rudnn/autotune/tuning_cache.h"
#include "rudnn/normalization.h"

namespace {

using namespace rudnn;

constexpr std::int64_t kH = 4096;

// A cached winner for rms_norm bf16 [0 rows → bucket 1, 4096] on the host, so the plan's source
// is the autotune cache without tuning in the benchmark.
void seed_cache() {
  autotune::CacheRecord r;
  r.key = autotune::TuningKey{"rudnn.rms_norm", {DType::BF16, DType::F32}, {kH}, {1}};
  r.device = autotune::fingerprint_of(Device::host());
  r.config = compiler::KernelConfig{{{"threads_per_row", 256}, {"rows_per_block", 1}, {"vector_width", 8}}};
  r.time_ms = 0.01;
  autotune::TuningStore::instance().remember(r);
}

void warm_call(benchmark::State& state, autotune::Mode mode, autotune::Source expected) {
  autotune::set_mode(mode);
  if (mode != autotune::Mode::Off) seed_cache();
  Device host = Device::host();
  auto x = Tensor::empty({0, kH}, DType::BF16, host).value();  // zero rows: the launch is skipped
  auto g = Tensor::empty({kH}, DType::F32, host).value();
  if (auto y = normalization::rms_norm(x, g, 1e-5f); !y.ok()) return state.SkipWithError(y.error().message().c_str());
  auto choice = autotune::last_choice();
  if (!choice || choice->source != expected)
    return state.SkipWithError("the plan did not come from the expected source");
  for (auto _ : state) {
    auto y = normalization::rms_norm(x, g, 1e-5f);
    benchmark::DoNotOptimize(y);
  }
  state.SetLabel(std::string(autotune::source_name(choice->source)) + " " + choice->config);
}

void BM_WarmCallAutotunedPlan(benchmark::State& state) {
  warm_call(state, autotune::Mode::Cached, autotune::Source::Cache);
}
BENCHMARK(BM_WarmCallAutotunedPlan)->Unit(benchmark::kNanosecond);

void BM_WarmCallHeuristicPlan(benchmark::State& state) {
  warm_call(state, autotune::Mode::Off, autotune::Source::Heuristic);
}
BENCHMARK(BM_WarmCallHeuristicPlan)->Unit(benchmark::kNanosecond);

// What the Autotune strategy adds to a warm call's plan lookup, with the find itself: the mode,
// the rows bucket, PlanCache::find over a cache of 64 plans, and the last-choice bookkeeping.
void BM_AutotunedPlanLookup(benchmark::State& state) {
  autotune::set_mode(autotune::Mode::Cached);
  auto& cache = ops::PlanCache::instance();
  cache.clear();
  auto choice = std::make_shared<const autotune::Choice>();
  for (std::int64_t b = 0; b < 64; ++b) {
    ops::PlanKey k;
    // Word 0 is no NormKind: these bare plans must never be taken for normalization plans.
    k.words = {99, 2, kH, 0, 0, 0, 1, 0, 2, std::int64_t{1} << (b % 16)};
    k.words[3] = b / 16;
    cache.insert(k, std::make_shared<ops::Plan>());
  }
  const Shape shape{7, 73, kH};
  for (auto _ : state) {
    std::int64_t rows = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
    ops::PlanKey k;
    k.words = {
        99, 2, shape.back(), 0, 0, 0, 1, 0, 1 + static_cast<std::int64_t>(autotune::mode()), autotune::anchor(rows)};
    auto plan = cache.find(k);
    autotune::note_choice(choice);
    benchmark::DoNotOptimize(plan);
  }
  cache.clear();
}
BENCHMARK(BM_AutotunedPlanLookup)->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
