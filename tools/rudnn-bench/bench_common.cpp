#include "bench_common.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/host_data.h"
#include "common/numbers.h"

namespace rudnn::bench {

int fail(const std::string& s) {
  std::fprintf(stderr, "rudnn-bench: error: %s\n", s.c_str());
  return 1;
}

std::optional<std::string> int_option(const std::string& name, const std::string& value, std::int64_t lo,
                                      std::int64_t hi, std::int64_t* into) {
  auto n = tools::parse_int(name, value, lo, hi);
  if (!n.ok()) return n.error().message();
  *into = n.value();
  return std::nullopt;
}

std::optional<std::string> parse_options(int argc, char** argv, int first, const OptionHandler& on) {
  for (int i = first; i < argc; ++i) {
    const std::string name = argv[i];
    if (name.rfind("--", 0) != 0) return "unexpected argument " + name;
    if (i + 1 >= argc) return name + " needs a value";
    if (auto e = on(name, argv[++i])) return e;
  }
  return std::nullopt;
}

bool wants_help(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  return false;
}

const char* const kCommonOptionsHelp =
    R"(  --device host|cuda:N       (default: RUDNN_DEVICE, else the first GPU, else host)
  --iters N                  calls per timed run (default 20)
  --runs N                   timed runs, the median is printed (default 15)
  --budget-ms MS             for slow steps, fewer runs and iters so that the timed calls of one
                             step take about MS (at least one call; default 0 = never)
)";

bool common_option(const std::string& name, const std::string& value, std::optional<Device>* device, Timing* timing,
                   std::optional<std::string>* error) {
  if (name == "--device") {
    auto d = Device::parse(value);
    if (!d.ok())
      *error = d.error().message();
    else
      *device = d.value();
  } else if (name == "--iters" || name == "--runs") {
    std::int64_t n = 0;
    *error = int_option(name, value, 1, 1000000, &n);
    if (!*error) (name == "--iters" ? timing->iters : timing->runs) = static_cast<int>(n);
  } else if (name == "--budget-ms") {
    std::int64_t n = 0;
    *error = int_option(name, value, 0, 100000000, &n);
    if (!*error) timing->budget_ms = static_cast<double>(n);
  } else {
    return false;
  }
  return true;
}

Measured time_call(const Queue& queue, const Timing& timing, const Call& call) {
  using clock = std::chrono::steady_clock;
  auto sync = [&]() -> std::optional<std::string> {
    if (auto s = queue.synchronize(); !s.ok()) return s.error().message();
    return std::nullopt;
  };
  auto ms_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  // Warm call: compiles, loads, warms the caches.
  auto t0 = clock::now();
  if (auto e = call()) return {0, *e};
  if (auto e = sync()) return {0, *e};
  int iters = timing.iters, runs = timing.runs;
  if (timing.budget_ms > 0) {
    // A warm call alone over the budget (compilation takes well under a second): one timed call.
    double one_ms = ms_since(t0);
    if (one_ms < timing.budget_ms) {
      t0 = clock::now();
      if (auto e = call()) return {0, *e};
      if (auto e = sync()) return {0, *e};
      one_ms = std::max(ms_since(t0), 1e-3);
    }
    const double calls = timing.budget_ms / one_ms;
    runs = std::clamp(static_cast<int>(calls), 1, timing.runs);
    iters = std::clamp(static_cast<int>(calls / runs), 1, timing.iters);
  }
  std::vector<double> us;
  for (int r = 0; r < runs; ++r) {
    t0 = clock::now();
    for (int k = 0; k < iters; ++k)
      if (auto e = call()) return {0, *e};
    if (auto e = sync()) return {0, *e};
    us.push_back(ms_since(t0) * 1000.0 / iters);
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], {}};
}

Result<Tensor, RuntimeError> random_tensor(const Shape& shape, DType dtype, const Device& device,
                                           const std::function<double()>& draw) {
  // An odd pool length, so a repeated pool does not line up with power-of-two rows.
  constexpr std::int64_t kPool = (1 << 20) + 7;
  auto allocated = tools::allocate_host("tensor " + shape_to_string(shape), shape, dtype);
  if (!allocated.ok()) return allocated.error();
  HostData& data = allocated.value();
  const std::size_t total = data.bytes.size();
  const std::int64_t n = static_cast<std::int64_t>(total / dtype_size(dtype));
  std::vector<double> pool(static_cast<std::size_t>(std::min(n, kPool)));
  for (auto& v : pool) v = draw();
  HostData part = HostData::from_f64({static_cast<std::int64_t>(pool.size())}, dtype, pool);
  for (std::size_t at = 0; at < total; at += part.bytes.size())
    std::memcpy(data.bytes.data() + at, part.bytes.data(), std::min(part.bytes.size(), total - at));
  return Tensor::upload(data, device);
}

Result<Tensor, RuntimeError> uniform_tensor(const Shape& shape, DType dtype, const Device& device, double lo, double hi,
                                            std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  return random_tensor(shape, dtype, device, [&] { return u(rng); });
}

Result<Tensor, RuntimeError> normal_tensor(const Shape& shape, DType dtype, const Device& device, double mean,
                                           double stddev, std::mt19937_64& rng) {
  std::normal_distribution<double> g(mean, stddev);
  return random_tensor(shape, dtype, device, [&] { return g(rng); });
}

std::string csv_number(std::optional<double> v, int decimals) {
  if (!v) return {};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, *v);
  return buf;
}

std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) out.push_back(s);
  return out;
}

}  // namespace rudnn::bench
