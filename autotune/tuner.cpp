#include "rudnn/autotune/tuner.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "queue_impl.h"
#include "rudnn/autotune/pruning.h"
#include "stats_counters.h"

namespace rudnn::autotune {

namespace {

struct Factories {
  std::mutex mutex;
  std::map<std::string, ProblemFactory, std::less<>> by_family;
};

Factories& factories() {
  static Factories f;
  return f;
}

// One candidate's way through lowering, pruning and building.
struct Slot {
  compiler::KernelConfig config;
  std::string status;
  std::unique_ptr<TimedCandidate> built;
};

// Runs body(i) for i in [0, n) on up to `jobs` threads.
void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& body) {
  const std::size_t threads = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, jobs)));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < n;) body(i);
    });
  for (auto& th : pool) th.join();
}

}  // namespace

void register_problem_factory(std::string family, ProblemFactory factory) {
  auto& f = factories();
  std::lock_guard lock(f.mutex);
  f.by_family[std::move(family)] = std::move(factory);
}

std::optional<ProblemFactory> problem_factory(std::string_view family) {
  auto& f = factories();
  std::lock_guard lock(f.mutex);
  auto it = f.by_family.find(family);
  if (it == f.by_family.end()) return std::nullopt;
  return it->second;
}

TimingPolicy default_policy(const Device& device) {
  TimingPolicy p;
  if (device.kind() == DeviceKind::Host) {
    p.warmup = 1;
    p.repeats = 5;
    p.retime_rounds = 1;
  } else {
    p.warmup = 10;
    p.repeats = 30;
    p.min_sample_ms = 0.02;
  }
  return p;
}

CacheRecord TuneReport::record() const {
  CacheRecord r;
  r.key = key;
  r.device = device;
  r.config = winner;
  r.time_ms = time_ms;
  r.runner_up_ratio = runner_up_ratio;
  r.candidates = static_cast<int>(timed);
  r.tuned_unix = static_cast<std::int64_t>(std::time(nullptr));
  return r;
}

std::size_t progress_units(const TuningKey& key) {
  auto space = search_space_for(key.op);
  return space ? 2 * space->candidates(key).size() : 0;
}

Result<TuneReport, RuntimeError> tune(const Device& device, const TuningKey& key, const TuneOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto space = search_space_for(key.op);
  if (!space) return RuntimeError(ErrorKind::Unsupported, key.op, "an op with an autotune search space", "none");
  auto factory = problem_factory(space->family());
  if (!factory)
    return RuntimeError(ErrorKind::Unsupported, key.op,
                        fmt::format("a tuning problem factory for the {} family", space->family()), "none registered");
  std::vector<compiler::KernelConfig> configs = space->candidates(key);
  if (configs.empty())
    return RuntimeError(ErrorKind::Unsupported, key.to_string(), "at least one candidate config", "none");

  // Declared before the slots: built candidates launch on the problem's inputs, so they go first.
  auto problem = (*factory)(device, key);
  if (!problem.ok()) return problem.error();
  TuningProblem& p = *problem.value();
  std::vector<Slot> slots;
  for (auto& c : configs) slots.push_back(Slot{std::move(c), {}, nullptr});
  TimingPolicy policy = options.policy;
  if (policy.input_sets <= 0) policy.input_sets = input_sets_for(p.input_bytes(), device.info().l2_bytes);
  if (auto s = p.make_input_sets(policy.input_sets); !s.ok()) return s.error();

  std::mutex progress_mutex;
  auto progress = [&](const std::string& item) {
    if (!options.on_progress) return;
    std::lock_guard lock(progress_mutex);
    options.on_progress(item);
  };

  // Lower, prune and build every candidate, `jobs` at a time (NVRTC and the host compiler
  // dominate; each worker thread lowers in its own MLIR context).
  const compiler::Target target = p.target();
  parallel_for(slots.size(), options.jobs, [&](std::size_t i) {
    Slot& slot = slots[i];
    const std::string name = slot.config.to_string();
    auto lowered = p.lower(slot.config);
    if (!lowered.ok()) {
      slot.status = "failed: " + lowered.error().message();
      return progress(name);
    }
    auto facts = static_facts(lowered.value(), target);
    if (!facts.ok()) {
      slot.status = "failed: " + facts.error().message();
      return progress(name);
    }
    for (const StaticFacts& f : facts.value())
      if (auto why = prune_reason(f, device.info())) {
        slot.status = "pruned: " + *why;
        return progress(name);
      }
    auto built = p.prepare(slot.config, lowered.value());
    if (!built.ok())
      slot.status = "failed: " + built.error().message();
    else
      slot.built = std::move(built.value());
    progress(name);
  });

  std::vector<TimedCandidate*> racing;
  std::vector<std::size_t> racing_slot;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].built) {
      racing.push_back(slots[i].built.get());
      racing_slot.push_back(i);
    } else {
      progress(slots[i].config.to_string());  // its timing unit: skipped
    }
  TuneReport report;
  report.key = key;
  report.device = fingerprint_of(device);
  auto finish_reports = [&] {
    for (const Slot& s : slots) {
      report.candidates.push_back(CandidateReport{s.config, s.status, std::nullopt});
      if (s.status.starts_with("pruned"))
        report.pruned++;
      else if (s.status.starts_with("failed"))
        report.failed++;
    }
  };
  if (racing.empty()) {
    finish_reports();
    std::string why = report.candidates.front().status;
    return RuntimeError(
        ErrorKind::Unsupported, key.to_string(), "a candidate that survives pruning and builds",
        fmt::format("none of {} ({} pruned, {} failed; first: {})", slots.size(), report.pruned, report.failed, why));
  }

  std::unique_ptr<EventTimer> events;
  LaunchTimer* timer = options.timer;
  if (!timer) {
    auto made = EventTimer::create(device.backend(), p.queue().impl().stream());
    if (!made.ok()) return made.error();
    events = std::move(made.value());
    timer = events.get();
  }
  runtime::count(&runtime::StatCounters::autotune_runs);
  auto outcome = time_candidates(racing, *timer, policy);
  for (std::size_t r = 0; r < racing.size(); ++r) progress(racing[r]->name());
  if (!outcome.ok()) return outcome.error();

  for (std::size_t r = 0; r < racing.size(); ++r) {
    Slot& s = slots[racing_slot[r]];
    const CandidateTiming& t = outcome->timings[r];
    s.status = t.error.empty() ? "timed" : "failed: " + t.error;
  }
  finish_reports();
  for (std::size_t r = 0; r < racing.size(); ++r) {
    const CandidateTiming& t = outcome->timings[r];
    if (t.error.empty()) {
      report.candidates[racing_slot[r]].median_ms = t.median_ms;
      report.timed++;
    }
  }
  const std::size_t w = racing_slot[outcome->winner];
  report.winner = slots[w].config;
  report.time_ms = outcome->timings[outcome->winner].median_ms;
  report.runner_up_ratio = outcome->runner_up_ratio;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace rudnn::autotune
