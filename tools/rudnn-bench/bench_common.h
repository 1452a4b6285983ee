#pragma once
// What the rudnn-bench subcommands share: option parsing, warm-plan timing (median of runs, each
// run = iters calls between two queue synchronizations), random device tensors, CSV number output.
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "rudnn/device.h"
#include "rudnn/tensor.h"

namespace rudnn::bench {

// Prints "rudnn-bench: error: <s>" to stderr; returns the exit code 1.
int fail(const std::string& s);

// `--name N` with N in [lo, hi] into *into, through the tools' one strict parser
// (tools/common/numbers.h); the error message ("--tokens: expected an integer >= 1, got \"12x\"")
// or nullopt.
std::optional<std::string> int_option(const std::string& name, const std::string& value, std::int64_t lo,
                                      std::int64_t hi, std::int64_t* into);

// Walks argv[first..] as "--name value" pairs, calling on(name, value), which returns an error
// message (or nullopt). A missing value or an error → the message, else nullopt.
using OptionHandler = std::function<std::optional<std::string>(const std::string&, const std::string&)>;
std::optional<std::string> parse_options(int argc, char** argv, int first, const OptionHandler& on);

// --help / -h anywhere after the subcommand.
bool wants_help(int argc, char** argv, int first);

struct Timing {
  int iters = 20;  // calls per timed run
  int runs = 15;   // timed runs; the median is reported
  // > 0: after the warm call, one more call is timed alone and runs, then iters, are lowered so
  // that all timed calls together take about this long (at least one). Keeps slow steps (Scalar
  // experts at large T) inside the GPU check's time.
  double budget_ms = 0;
};

// One call of the op under test; returns an error message or nullopt.
using Call = std::function<std::optional<std::string>()>;

// Warm call (compiles, loads, warms caches), then `timing.runs` runs of `timing.iters` calls (fewer
// under a budget), each run closed by queue.synchronize(). Returns the median microseconds per call
// (host wall clock, so per-call host overhead counts, as it does for a caller), or the error.
struct Measured {
  double median_us = 0;
  std::string error;  // non-empty: the call failed
  bool ok() const { return error.empty(); }
};
Measured time_call(const Queue& queue, const Timing& timing, const Call& call);

// Options shared by the subcommands: --device, --iters, --runs, --budget-ms. Returns true (and sets
// *error on a bad value) if `name` was one of them.
bool common_option(const std::string& name, const std::string& value, std::optional<Device>* device, Timing* timing,
                   std::optional<std::string>* error);
extern const char* const kCommonOptionsHelp;

// A device tensor of `shape` filled with values of `dtype` drawn from `draw` (already rounded to
// the dtype). A shape whose size overflows is an InvalidValue, a host allocation failure an
// OutOfMemory naming the bytes (tools/common/host_data.h), never a wrap or an exception. Large tensors repeat a pool of
// ~1M drawn values (timing does not depend on the values; drawing billions of numbers for expert weights would take the
// GPU check's minutes).
Result<Tensor, RuntimeError> random_tensor(const Shape& shape, DType dtype, const Device& device,
                                           const std::function<double()>& draw);
Result<Tensor, RuntimeError> uniform_tensor(const Shape& shape, DType dtype, const Device& device, double lo, double hi,
                                            std::mt19937_64& rng);
Result<Tensor, RuntimeError> normal_tensor(const Shape& shape, DType dtype, const Device& device, double mean,
                                           double stddev, std::mt19937_64& rng);

// "%.2f" of a number, or "" for nullopt (CSV's empty field).
std::string csv_number(std::optional<double> v, int decimals);

// "%.2e" of a number (the max_err columns).
std::string scientific(double v);

// The comma-separated items of an option value ("a,b" → {"a", "b"}).
std::vector<std::string> split_list(const std::string& v);

}  // namespace rudnn::bench
