// rudnn-run: runs the func.func @main of an MLIR file of `rudnn` ops on a device (DESIGN §6).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/host_data.h"
#include "common/npy.h"
#include "common/numbers.h"
#include "common/output_files.h"
#include "rudnn/graph.h"
#include "rudnn/stats.h"

namespace {

using namespace rudnn;

constexpr const char* kUsage = R"(usage: rudnn-run FILE.mlir [options]

Runs the func.func @main of FILE.mlir (a module of rudnn ops) on one device. FILE.mlir is a regular
file of at most 64 MiB nested at most 64 deep; a .npy input is read strictly (docs/input-limits.md).

options:
  --device host|cuda:N      device (default: RUDNN_DEVICE, else the first GPU, else host)
  --input NAME=file.npy     an argument of @main (NAME = its rudnn.name attribute or argI);
                            values are cast to the argument's element type (bf16 included); an
                            integer argument takes only integral values inside its type's range
  --output NAME=file.npy    a result of @main (NAME = rudnn.name or resultI), written as f32
                            (integer results as their type); all outputs are written or none
  --random-inputs[=SEED]    fill every argument not given by --input with uniform [-1, 1) values
                            (integer arguments: uniform integers in [0, 2), i.e. 0 or 1)
  --random-range NAME=LO,HI draw that argument's random values from [LO, HI) instead (repeatable;
                            e.g. log_decay=-1,0 for a decay; integers k with LO <= k < HI for an
                            integer argument)
  --dynamic-dim N           extent used for `?` dims of random inputs (default 8)
  --time N                  after one warm-up run, time N runs and print the median
  --quiet                   print no summary of the outputs

example:
  rudnn-run examples/norm.mlir --device host --random-inputs --output result0=y.npy --time 10
)";

struct Options {
  std::string file;
  std::optional<std::string> device;  // given (even as ""), or the default device
  std::map<std::string, std::string> inputs, outputs;
  std::map<std::string, std::pair<double, double>> random_ranges;
  bool random_inputs = false;
  std::uint64_t seed = 0;
  std::int64_t dynamic_dim = 8;
  int time_runs = 0;
  bool quiet = false;
};

int fail(const std::string& text) {
  std::fprintf(stderr, "rudnn-run: error: %s\n", text.c_str());
  return 1;
}

// NAME=VALUE into `into`; an error message for a malformed or repeated NAME (a second value would
// silently replace the first).
std::optional<std::string> split_assignment(const std::string& option, const std::string& arg, const char* form,
                                            std::map<std::string, std::string>& into) {
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    return fmt::format("{}: expected {}, got \"{}\"", option, form, arg);
  if (!into.emplace(arg.substr(0, eq), arg.substr(eq + 1)).second)
    return fmt::format("{} {}: expected each NAME once, got it again (\"{}\")", option, arg.substr(0, eq), arg);
  return std::nullopt;
}

std::optional<std::string> parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--device") {
      auto v = next();
      if (!v) return "--device: expected host or cuda:N, got nothing";
      o.device = *v;
    } else if (a == "--input" || a == "--output") {
      auto v = next();
      if (!v) return a + ": expected NAME=file.npy, got nothing";
      if (auto e = split_assignment(a, *v, "NAME=file.npy", a == "--input" ? o.inputs : o.outputs)) return e;
    } else if (a.rfind("--random-inputs", 0) == 0) {
      o.random_inputs = true;
      o.seed = std::random_device{}();
      if (a.size() > 15) {
        if (a[15] != '=') return "unknown option " + a;
        auto seed = tools::parse_uint64("--random-inputs", a.substr(16));
        if (!seed.ok()) return seed.error().message();
        o.seed = seed.value();
      }
    } else if (a == "--random-range") {
      auto v = next();
      if (!v) return "--random-range: expected NAME=LO,HI, got nothing";
      std::map<std::string, std::string> one;
      if (auto e = split_assignment(a, *v, "NAME=LO,HI", one)) return e;
      const auto& [name, range] = *one.begin();
      const auto comma = range.find(',');
      if (comma == std::string::npos) return fmt::format("--random-range {}: expected LO,HI, got \"{}\"", name, range);
      auto lo = tools::parse_double("--random-range " + name + " LO", range.substr(0, comma));
      auto hi = tools::parse_double("--random-range " + name + " HI", range.substr(comma + 1));
      if (!lo.ok()) return lo.error().message();
      if (!hi.ok()) return hi.error().message();
      if (!(*lo < *hi)) return fmt::format("--random-range {}: expected LO < HI, got \"{}\"", name, range);
      if (!o.random_ranges.emplace(name, std::pair{*lo, *hi}).second)
        return fmt::format("--random-range {}: expected each NAME once, got it again (\"{}\")", name, *v);
    } else if (a == "--dynamic-dim") {
      auto v = next();
      if (!v) return "--dynamic-dim: expected an integer >= 0, got nothing";
      auto n = tools::parse_int(a, *v, 0);
      if (!n.ok()) return n.error().message();
      o.dynamic_dim = n.value();
    } else if (a == "--time") {
      auto v = next();
      if (!v) return "--time: expected an integer >= 1, got nothing";
      auto n = tools::parse_int(a, *v, 1, 1000000);
      if (!n.ok()) return n.error().message();
      o.time_runs = static_cast<int>(n.value());
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      return "unknown option " + a;
    } else if (o.file.empty()) {
      o.file = a;
    } else {
      return "more than one input file: " + a;
    }
  }
  if (o.file.empty()) return "no input file (see --help)";
  return std::nullopt;
}

// Random values for an argument not given by --input (tools/common/host_data.h).
Result<HostData, RuntimeError> random_input(const graph::Value& arg, const Options& o, std::mt19937_64& rng) {
  Shape shape = arg.shape;
  for (auto& d : shape)
    if (d < 0) d = o.dynamic_dim;
  const auto given = o.random_ranges.find(arg.name);
  return tools::random_host_data(arg.name, shape, arg.dtype,
                                 given != o.random_ranges.end() ? std::optional(given->second) : std::nullopt, rng);
}

// "<name>: [6, 8] ui32 on host  sum=...  first: ..." without converting the whole output to
// doubles at once (a large output would need 8 bytes per element more).
void print_summary(const std::string& name, const HostData& h, const Device& device) {
  constexpr std::size_t kChunk = 1 << 20;
  const std::size_t size = dtype_size(h.dtype), n = h.bytes.size() / size;
  double sum = 0;
  std::string head;
  for (std::size_t at = 0; at < n; at += kChunk) {
    const std::size_t k = std::min(kChunk, n - at);
    HostData part{{static_cast<std::int64_t>(k)}, h.dtype, {}};
    part.bytes.assign(h.bytes.begin() + static_cast<std::ptrdiff_t>(at * size),
                      h.bytes.begin() + static_cast<std::ptrdiff_t>((at + k) * size));
    const auto v = part.to_f64();
    for (double x : v) sum += x;
    for (std::size_t j = 0; at == 0 && j < std::min<std::size_t>(v.size(), 4); ++j)
      head += fmt::format("{:.5g} ", v[j]);
  }
  std::printf("%s: %s %s on %s  sum=%.6g  first: %s\n", name.c_str(), shape_to_string(h.shape).c_str(),
              std::string(dtype_name(h.dtype)).c_str(), device.to_string().c_str(), sum, head.c_str());
}

int run(const Options& o) {
  // --device when given (an empty value is an error, not the default), else the default device
  // (whose error, e.g. a bad RUDNN_DEVICE, is the run's).
  auto chosen = o.device ? Device::parse(*o.device) : Device::default_device();
  if (!chosen.ok()) {
    if (!o.device) return fail(chosen.error().message());
    // A misspelling is the option's error; a GPU that is absent or fails says why (NoDevice, driver).
    if (chosen.error().kind() != ErrorKind::InvalidValue)
      return fail("--device " + *o.device + ": " + chosen.error().message());
    return fail(tools::bad_option("--device", "host or cuda:N", *o.device).message());
  }
  const Device device = chosen.value();
  auto graph = graph::Graph::parse_file(o.file);
  if (!graph.ok()) return fail(graph.error().message());

  for (auto& [name, _] : o.inputs)
    if (std::none_of(graph->inputs().begin(), graph->inputs().end(), [&](auto& v) { return v.name == name; }))
      return fail(fmt::format("--input {}: @main has no argument of that name", name));
  for (auto& [name, _] : o.random_ranges)
    if (std::none_of(graph->inputs().begin(), graph->inputs().end(), [&](auto& v) { return v.name == name; }))
      return fail(fmt::format("--random-range {}: @main has no argument of that name", name));
  for (auto& [name, _] : o.outputs)
    if (std::none_of(graph->outputs().begin(), graph->outputs().end(), [&](auto& v) { return v.name == name; }))
      return fail(fmt::format("--output {}: @main has no result of that name", name));
  // Every output path is checked before anything runs (and written all or nothing at the end).
  std::vector<tools::OutputFile> files;
  std::vector<std::size_t> file_result;  // the result each file writes
  for (std::size_t i = 0; i < graph->outputs().size(); ++i)
    if (auto it = o.outputs.find(graph->outputs()[i].name); it != o.outputs.end()) {
      files.push_back({"--output " + it->first, it->second});
      file_result.push_back(i);
    }
  if (auto s = tools::check_output_paths(files); !s.ok()) return fail(s.error().message());

  std::mt19937_64 rng(o.seed);
  std::vector<Tensor> inputs;
  for (const auto& arg : graph->inputs()) {
    HostData data;
    if (auto it = o.inputs.find(arg.name); it != o.inputs.end()) {
      auto r = tools::read_npy(it->second, arg.dtype, fmt::format("--input {}={}", arg.name, it->second));
      if (!r.ok()) return fail(r.error().message());
      data = std::move(r.value());
    } else if (o.random_inputs) {
      auto r = random_input(arg, o, rng);
      if (!r.ok()) return fail(r.error().message());
      data = std::move(r.value());
    } else {
      return fail(fmt::format("argument {} has no --input (or use --random-inputs)", arg.name));
    }
    auto t = Tensor::upload(data, device);
    if (!t.ok()) return fail(t.error().message());
    inputs.push_back(std::move(t.value()));
  }

  auto results = graph->run(inputs);
  if (!results.ok()) return fail(results.error().message());
  std::vector<HostData> host;
  for (auto& t : results.value()) {
    auto h = to_host(t);
    if (!h.ok()) return fail(h.error().message());
    host.push_back(std::move(h.value()));
  }

  if (o.time_runs > 0) {
    std::vector<double> ms;
    for (int i = 0; i < o.time_runs; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = graph->run(inputs);
      if (!r.ok()) return fail(r.error().message());
      for (auto& t : r.value())
        if (auto s = t.queue().synchronize(); !s.ok()) return fail(s.error().message());
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("time: median %.3f ms over %d runs on %s (min %.3f, max %.3f)\n", ms[ms.size() / 2], o.time_runs,
                device.to_string().c_str(), ms.front(), ms.back());
  }

  std::vector<const HostData*> written;
  for (std::size_t i : file_result) written.push_back(&host[i]);
  if (auto s = tools::write_npy_files(files, written); !s.ok()) return fail(s.error().message());
  if (!o.quiet) {
    for (std::size_t i = 0; i < host.size(); ++i) print_summary(graph->outputs()[i].name, host[i], device);
    std::printf("stats: %s\n", stats_to_string(stats()).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The last guard: every failure is reported as an error line and exit code 1, never an uncaught
  // exception (the paths above return typed errors; this catches what a library call might throw).
  try {
    Options o;
    if (auto e = parse_args(argc, argv, o)) return fail(*e);
    return run(o);
  } catch (const std::bad_alloc&) {
    return fail(
        rudnn::RuntimeError(rudnn::ErrorKind::OutOfMemory, "rudnn-run", "enough host memory", "an allocation failure")
            .message());
  } catch (const std::exception& e) {
    return fail(rudnn::RuntimeError(rudnn::ErrorKind::Internal, "rudnn-run", "no exception", e.what()).message());
  }
}
