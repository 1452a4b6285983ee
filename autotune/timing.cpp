#include "rudnn/autotune/timing.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "device_backend.h"

namespace rudnn::autotune {

Result<std::unique_ptr<EventTimer>, RuntimeError> EventTimer::create(runtime::DeviceBackend& backend, void* stream) {
  auto start = backend.create_event();
  if (!start.ok()) return start.error();
  auto end = backend.create_event();
  if (!end.ok()) {
    backend.destroy_event(start.value());
    return end.error();
  }
  return std::unique_ptr<EventTimer>(new EventTimer(backend, stream, start.value(), end.value()));
}

EventTimer::~EventTimer() {
  backend_.destroy_event(start_);
  backend_.destroy_event(end_);
}

Result<double, RuntimeError> EventTimer::time_ms(const std::function<Status<RuntimeError>()>& enqueue) {
  if (auto s = backend_.record_event(start_, stream_); !s.ok()) return s.error();
  if (auto s = enqueue(); !s.ok()) return s.error();
  if (auto s = backend_.record_event(end_, stream_); !s.ok()) return s.error();
  auto ms = backend_.elapsed_ms(start_, end_);
  if (!ms.ok()) return ms.error();
  return static_cast<double>(ms.value());
}

int input_sets_for(std::size_t bytes_per_set, std::size_t l2_bytes) {
  if (bytes_per_set == 0 || bytes_per_set > l2_bytes) return 1;
  const std::size_t sets = (2 * l2_bytes + bytes_per_set - 1) / bytes_per_set;
  return static_cast<int>(std::clamp<std::size_t>(sets, 2, 8));
}

double median(std::vector<double> s) {
  if (s.empty()) return 0.0;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double relative_spread(std::vector<double> s) {
  if (s.size() < 2) return 0.0;
  std::sort(s.begin(), s.end());
  // Nearest-rank quartiles: simple, and robust to the odd outlier a preempted launch produces.
  const std::size_t n = s.size();
  const double q1 = s[(n - 1) / 4], q3 = s[(3 * (n - 1) + 3) / 4];
  const double m = median(s);
  return m > 0 ? (q3 - q1) / m : 0.0;
}

namespace {

// One timed sample of `c`: `batch` launches between one pair of events, per launch.
Result<double, RuntimeError> sample(TimedCandidate& c, LaunchTimer& timer, int batch, int& next_set,
                                    const TimingPolicy& policy) {
  const int first = next_set;
  // Outputs are restored before the timed region; with a batch, every launch of the batch reads
  // its own input set, so in-place kernels need input_sets >= batch (none exists yet).
  for (int i = 0; i < batch; ++i)
    if (auto s = c.restore_outputs((first + i) % policy.input_sets); !s.ok()) return s.error();
  auto ms = timer.time_ms([&]() -> Status<RuntimeError> {
    for (int i = 0; i < batch; ++i)
      if (auto s = c.launch((first + i) % policy.input_sets); !s.ok()) return s;
    return {};
  });
  next_set = (first + batch) % policy.input_sets;
  if (!ms.ok()) return ms.error();
  return ms.value() / batch;
}

void summarize(CandidateTiming& t) {
  t.median_ms = median(t.samples_ms);
  t.spread = relative_spread(t.samples_ms);
}

// Warm-up, batch calibration and `repeats` samples of one candidate.
void measure(TimedCandidate& c, LaunchTimer& timer, const TimingPolicy& policy, CandidateTiming& out) {
  int next_set = 0;
  for (int i = 0; i < policy.warmup; ++i) {
    if (auto s = c.restore_outputs(next_set); !s.ok()) return void(out.error = s.error().message());
    if (auto s = c.launch(next_set); !s.ok()) return void(out.error = s.error().message());
    next_set = (next_set + 1) % policy.input_sets;
  }
  if (policy.min_sample_ms > 0) {
    auto first = sample(c, timer, 1, next_set, policy);
    if (!first.ok()) return void(out.error = first.error().message());
    if (first.value() > 0 && first.value() < policy.min_sample_ms)
      out.batch = std::clamp(static_cast<int>(std::ceil(policy.min_sample_ms / first.value())), 1, policy.max_batch);
  }
  for (int r = 0; r < policy.repeats; ++r) {
    auto ms = sample(c, timer, out.batch, next_set, policy);
    if (!ms.ok()) return void(out.error = ms.error().message());
    out.samples_ms.push_back(ms.value());
  }
  summarize(out);
}

// The fastest valid candidate; equal medians resolve by name.
std::size_t fastest(const std::vector<CandidateTiming>& t, const std::vector<std::size_t>& among) {
  std::size_t best = among.front();
  for (std::size_t i : among)
    if (t[i].median_ms < t[best].median_ms || (t[i].median_ms == t[best].median_ms && t[i].name < t[best].name))
      best = i;
  return best;
}

// Candidates whose median is within max(floor, spread of either) of the best's.
std::vector<std::size_t> within_noise(const std::vector<CandidateTiming>& t, const std::vector<std::size_t>& among,
                                      std::size_t best, double floor, bool use_spread) {
  std::vector<std::size_t> out;
  for (std::size_t i : among) {
    const double tolerance = use_spread ? std::max({floor, t[best].spread, t[i].spread}) : floor;
    if (t[i].median_ms <= t[best].median_ms * (1.0 + tolerance)) out.push_back(i);
  }
  return out;
}

}  // namespace

Result<TimingOutcome, RuntimeError> time_candidates(std::span<TimedCandidate* const> candidates, LaunchTimer& timer,
                                                    const TimingPolicy& given) {
  if (candidates.empty())
    return RuntimeError(ErrorKind::InvalidValue, "candidates", "at least one candidate to time", "none");
  TimingPolicy policy = given;
  policy.input_sets = std::max(1, policy.input_sets);
  policy.repeats = std::max(1, policy.repeats);
  policy.warmup = std::max(0, policy.warmup);

  TimingOutcome out;
  out.timings.resize(candidates.size());
  std::vector<std::size_t> valid;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    out.timings[i].name = candidates[i]->name();
    measure(*candidates[i], timer, policy, out.timings[i]);
    if (out.timings[i].error.empty()) valid.push_back(i);
  }
  if (valid.empty())
    return RuntimeError(ErrorKind::LaunchFailure, "candidates", "at least one candidate that runs",
                        fmt::format("all {} failed; first: {}", candidates.size(), out.timings.front().error));

  // Stability: the contenders (within the measured noise of the best) are re-timed side by side,
  // interleaved so drifting clocks or a busy neighbour affect them alike; their samples pool.
  std::vector<std::size_t> contenders =
      within_noise(out.timings, valid, fastest(out.timings, valid), policy.noise_floor, true);
  for (int round = 0; round < policy.retime_rounds && contenders.size() > 1; ++round) {
    out.retime_rounds_used++;
    std::vector<int> next_set(candidates.size(), 0);
    for (int r = 0; r < policy.repeats; ++r)
      for (std::size_t i : contenders) {
        auto& t = out.timings[i];
        if (!t.error.empty()) continue;
        auto ms = sample(*candidates[i], timer, t.batch, next_set[i], policy);
        if (!ms.ok())
          t.error = ms.error().message();
        else
          t.samples_ms.push_back(ms.value());
      }
    std::erase_if(contenders, [&](std::size_t i) { return !out.timings[i].error.empty(); });
    std::erase_if(valid, [&](std::size_t i) { return !out.timings[i].error.empty(); });
    if (contenders.empty()) break;
    for (std::size_t i : contenders) summarize(out.timings[i]);
    contenders = within_noise(out.timings, contenders, fastest(out.timings, contenders), policy.noise_floor, true);
  }
  if (valid.empty())
    return RuntimeError(ErrorKind::LaunchFailure, "candidates", "at least one candidate that runs", "all failed");
  if (contenders.empty()) contenders = valid;

  // Near-ties left after re-timing (within the fixed floor) are not a measured difference: the
  // smallest config string among them wins, so repeated tunings agree.
  const std::size_t best = fastest(out.timings, contenders);
  out.tied = within_noise(out.timings, contenders, best, policy.noise_floor, false);
  out.winner = *std::min_element(out.tied.begin(), out.tied.end(), [&](std::size_t a, std::size_t b) {
    return out.timings[a].name < out.timings[b].name;
  });
  std::size_t runner = out.timings.size();
  for (std::size_t i : valid)
    if (i != out.winner && (runner == out.timings.size() || out.timings[i].median_ms < out.timings[runner].median_ms))
      runner = i;
  if (runner != out.timings.size() && out.timings[out.winner].median_ms > 0)
    out.runner_up_ratio = out.timings[runner].median_ms / out.timings[out.winner].median_ms;
  return out;
}

}  // namespace rudnn::autotune
