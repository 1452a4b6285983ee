#pragma once
// Tuning one key end to end: the family's candidates → lowered (compiler) → pruned from static
// facts → built and loaded (in parallel, `jobs` at a time) → timed → a winner and a report. How a
// candidate is built and launched belongs to the layer above (ops): each family registers a
// ProblemFactory that makes a TuningProblem for a key.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rudnn/autotune/search_space.h"
#include "rudnn/autotune/timing.h"
#include "rudnn/autotune/tuning_cache.h"
#include "rudnn/compiler/pipeline.h"
#include "rudnn/device.h"

namespace rudnn::autotune {

// One key's tuning inputs on one device, made by the family's factory.
class TuningProblem {
 public:
  virtual ~TuningProblem() = default;
  virtual const Device& device() const = 0;
  virtual const Queue& queue() const = 0;  // candidates are timed on it
  virtual compiler::Target target() const = 0;
  // The candidate lowered with `config` forced. Called from several threads at once.
  virtual Result<compiler::LoweredOp, RuntimeError> lower(const compiler::KernelConfig& config) const = 0;
  // Builds (caches or compiler) and loads the candidate's kernels. Called from several threads.
  virtual Result<std::unique_ptr<TimedCandidate>, RuntimeError> prepare(const compiler::KernelConfig& config,
                                                                        const compiler::LoweredOp& lowered) = 0;
  // Bytes of one set of inputs (decides the L2 rotation), and making `sets` copies of them;
  // called once, before any prepare().
  virtual std::size_t input_bytes() const = 0;
  virtual Status<RuntimeError> make_input_sets(int sets) = 0;
};

using ProblemFactory =
    std::function<Result<std::unique_ptr<TuningProblem>, RuntimeError>(const Device& device, const TuningKey& key)>;
// `family` is SearchSpace::family(). A later registration replaces an earlier one.
void register_problem_factory(std::string family, ProblemFactory factory);
std::optional<ProblemFactory> problem_factory(std::string_view family);

struct TuneOptions {
  TimingPolicy policy;  // policy.input_sets <= 0: chosen from the input size and the device's L2
  int jobs = 1;         // candidates lowered, checked and built at once
  // Called (under a lock) for each finished unit of work: two per candidate (built or dropped;
  // timed or skipped). See progress_units().
  std::function<void(const std::string& item)> on_progress;
  LaunchTimer* timer = nullptr;  // tests inject one; else device events on the problem's queue
};

// The policy tune() uses by default on `device`: GPUs time 10 warm-up launches and 30 samples of
// at least 20 µs; the host emulation device (slow, and only exercising the machinery) 1 and 5.
TimingPolicy default_policy(const Device& device);

struct CandidateReport {
  compiler::KernelConfig config;
  std::string status;  // "timed", "pruned: <why>", "failed: <why>"
  std::optional<double> median_ms;
};

struct TuneReport {
  TuningKey key;
  DeviceFingerprint device;
  compiler::KernelConfig winner;
  double time_ms = 0.0;
  double runner_up_ratio = 1.0;
  std::vector<CandidateReport> candidates;  // in search-space order
  std::size_t timed = 0, pruned = 0, failed = 0;
  double seconds = 0.0;  // wall time of the whole tuning
  CacheRecord record() const;
};

// Units of progress tune() reports for `key` (2 per candidate).
std::size_t progress_units(const TuningKey& key);

// Tunes `key` on `device` (counts one autotune run). Errors: no search space or problem factory
// for the op, no candidates, none that survives pruning and runs.
Result<TuneReport, RuntimeError> tune(const Device& device, const TuningKey& key, const TuneOptions& options);

}  // namespace rudnn::autotune
