#pragma once
// Timing candidates: device events around the launches, warm-up, the median of repeats, inputs
// rotated among several copies when one set fits in L2 (so a candidate is not flattered by a warm
// cache), and a stable winner: candidates within the measured noise of the best are re-timed
// side by side before one is chosen, and near-ties resolve by config string, never by noise.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rudnn/error.h"

namespace rudnn::runtime {
class DeviceBackend;
}

namespace rudnn::autotune {

// Measures the device time of what `enqueue` queues. Tests inject a scripted fake.
class LaunchTimer {
 public:
  virtual ~LaunchTimer() = default;
  virtual Result<double, RuntimeError> time_ms(const std::function<Status<RuntimeError>()>& enqueue) = 0;
};

// Device events recorded on `stream` around the work (CUDA: cuEventRecord/ElapsedTime; the host
// device: a steady clock around its synchronous execution).
class EventTimer final : public LaunchTimer {
 public:
  static Result<std::unique_ptr<EventTimer>, RuntimeError> create(runtime::DeviceBackend& backend, void* stream);
  ~EventTimer() override;
  Result<double, RuntimeError> time_ms(const std::function<Status<RuntimeError>()>& enqueue) override;

 private:
  EventTimer(runtime::DeviceBackend& backend, void* stream, void* start, void* end)
      : backend_(backend), stream_(stream), start_(start), end_(end) {}
  runtime::DeviceBackend& backend_;
  void* stream_;
  void* start_;
  void* end_;
};

// One candidate, built and ready to launch on the problem's inputs.
class TimedCandidate {
 public:
  virtual ~TimedCandidate() = default;
  // The config string: also the deterministic tie-break order.
  virtual const std::string& name() const = 0;
  // Queues the candidate's kernels reading input copy `input_set`.
  virtual Status<RuntimeError> launch(int input_set) = 0;
  // A kernel that writes its input in place must get the original back before every timed
  // launch (queued outside the timed region). The default does nothing: right for kernels that
  // write only their outputs, as every normalization kernel does.
  virtual Status<RuntimeError> restore_outputs(int /*input_set*/) { return {}; }
};

struct TimingPolicy {
  int warmup = 3;             // untimed launches first (module load, clocks, caches)
  int repeats = 21;           // timed samples per candidate; the median is kept
  int input_sets = 1;         // rotated copies of the inputs (see input_sets_for)
  double noise_floor = 0.02;  // "within noise" = within max(noise_floor, measured spread) of the best
  int retime_rounds = 2;      // at most this many side-by-side re-timings of the contenders
  // A sample shorter than this (first measurement) is replaced by a batch of launches timed
  // together and divided, so event resolution does not dominate tiny kernels. 0: one launch.
  double min_sample_ms = 0.0;
  int max_batch = 64;
};

// Copies of the inputs to rotate among: 1 when one set does not fit in L2, else enough sets to
// cover twice the L2 size (at least 2, at most 8).
int input_sets_for(std::size_t bytes_per_set, std::size_t l2_bytes);

double median(std::vector<double> samples);
// Relative spread of samples: interquartile range / median (0 for fewer than 2 samples).
double relative_spread(std::vector<double> samples);

struct CandidateTiming {
  std::string name;
  std::vector<double> samples_ms;
  double median_ms = 0.0;
  double spread = 0.0;
  int batch = 1;
  std::string error;  // non-empty: it failed to run and is out of the race
};

struct TimingOutcome {
  std::vector<CandidateTiming> timings;  // in the order given
  std::size_t winner = 0;
  // The fastest other candidate and its median / the winner's (1.0 when there is none; below
  // 1.0 only when a near-tie was resolved by name toward the slower median).
  double runner_up_ratio = 1.0;
  int retime_rounds_used = 0;
  std::vector<std::size_t> tied;  // contenders within noise_floor of the best at the end
};

// Times every candidate and chooses one. Errors: no candidate, or none that ran.
Result<TimingOutcome, RuntimeError> time_candidates(std::span<TimedCandidate* const> candidates, LaunchTimer& timer,
                                                    const TimingPolicy& policy);

}  // namespace rudnn::autotune
