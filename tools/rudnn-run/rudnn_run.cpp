// rudnn-run: runs the func.func @main of an MLIR file of `rudnn` ops on a device (DESIGN §6).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/npy.h"
#include "rudnn/graph.h"
#include "rudnn/stats.h"

namespace {

constexpr const char* kUsage = R"(usage: rudnn-run FILE.mlir [options]

Runs the func.func @main of FILE.mlir (a module of rudnn ops) on one device. FILE.mlir is a regular
file of at most 64 MiB nested at most 64 deep; a .npy input is read strictly (docs/input-limits.md).

options:
  --device host|cuda:N      device (default: RUDNN_DEVICE, else the first GPU, else host)
  --input NAME=file.npy     an argument of @main (NAME = its rudnn.name attribute or argI);
                            values are cast to the argument's element type (bf16 included)
  --output NAME=file.npy    a result of @main (NAME = rudnn.name or resultI), written as f32
  --random-inputs[=SEED]    fill every argument not given by --input with uniform [-1, 1) values
  --random-range NAME=LO,HI draw that argument's random values from [LO, HI) instead (repeatable;
                            e.g. log_decay=-1,0 for a decay)
  --dynamic-dim N           extent used for `?` dims of random inputs (default 8)
  --time N                  after one warm-up run, time N runs and print the median
  --quiet                   print no summary of the outputs

example:
  rudnn-run examples/norm.mlir --device host --random-inputs --output result0=y.npy --time 10
)";

struct Options {
  std::string file;
  std::string device;
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

bool split_assignment(const std::string& arg, std::map<std::string, std::string>& into) {
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) return false;
  into[arg.substr(0, eq)] = arg.substr(eq + 1);
  return true;
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
      if (!v) return "--device needs a value";
      o.device = *v;
    } else if (a == "--input" || a == "--output") {
      auto v = next();
      if (!v || !split_assignment(*v, a == "--input" ? o.inputs : o.outputs)) return a + " needs NAME=file.npy";
    } else if (a.rfind("--random-inputs", 0) == 0) {
      o.random_inputs = true;
      o.seed = std::random_device{}();
      if (a.size() > 15) {
        if (a[15] != '=') return "unknown option " + a;
        o.seed = std::stoull(a.substr(16));
      }
    } else if (a == "--random-range") {
      auto v = next();
      std::map<std::string, std::string> one;
      if (!v || !split_assignment(*v, one)) return "--random-range needs NAME=LO,HI";
      const std::string& range = one.begin()->second;
      const auto comma = range.find(',');
      char* end = nullptr;
      const double lo = std::strtod(range.c_str(), &end);
      const bool lo_ok = comma != std::string::npos && end == range.c_str() + comma;
      const double hi = lo_ok ? std::strtod(range.c_str() + comma + 1, &end) : 0.0;
      if (!lo_ok || *end != '\0' || !(lo < hi)) return "--random-range " + *v + ": expected NAME=LO,HI with LO < HI";
      o.random_ranges[one.begin()->first] = {lo, hi};
    } else if (a == "--dynamic-dim") {
      auto v = next();
      if (!v) return "--dynamic-dim needs a value";
      o.dynamic_dim = std::stoll(*v);
      if (o.dynamic_dim < 0) return "--dynamic-dim must be >= 0";
    } else if (a == "--time") {
      auto v = next();
      if (!v) return "--time needs a value";
      o.time_runs = std::stoi(*v);
      if (o.time_runs < 1) return "--time must be >= 1";
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

int run(const Options& o) {
  using namespace rudnn;
  Device device = Device::default_device();
  if (!o.device.empty()) {
    auto d = Device::parse(o.device);
    if (!d.ok()) return fail(d.error().message());
    device = d.value();
  }
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

  std::mt19937_64 rng(o.seed);
  std::vector<Tensor> inputs;
  for (const auto& arg : graph->inputs()) {
    HostData data;
    if (auto it = o.inputs.find(arg.name); it != o.inputs.end()) {
      auto r = tools::read_npy(it->second, arg.dtype);
      if (!r.ok()) return fail(r.error().message());
      data = std::move(r.value());
    } else if (o.random_inputs) {
      Shape shape = arg.shape;
      for (auto& d : shape)
        if (d < 0) d = o.dynamic_dim;
      std::vector<double> v(static_cast<std::size_t>(element_count(shape)));
      auto range = o.random_ranges.find(arg.name);
      std::uniform_real_distribution<double> in_range(range == o.random_ranges.end() ? -1.0 : range->second.first,
                                                      range == o.random_ranges.end() ? 1.0 : range->second.second);
      for (auto& x : v) x = in_range(rng);
      data = HostData::from_f64(shape, arg.dtype, v);
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

  for (std::size_t i = 0; i < host.size(); ++i) {
    const auto& out = graph->outputs()[i];
    if (auto it = o.outputs.find(out.name); it != o.outputs.end())
      if (auto s = tools::write_npy(it->second, host[i]); !s.ok()) return fail(s.error().message());
    if (!o.quiet) {
      auto v = host[i].to_f64();
      double sum = 0;
      for (double x : v) sum += x;
      std::string head;
      for (std::size_t k = 0; k < std::min<std::size_t>(v.size(), 4); ++k) head += fmt::format("{:.5g} ", v[k]);
      std::printf("%s: %s %s on %s  sum=%.6g  first: %s\n", out.name.c_str(), shape_to_string(host[i].shape).c_str(),
                  std::string(dtype_name(host[i].dtype)).c_str(), device.to_string().c_str(), sum, head.c_str());
    }
  }
  if (!o.quiet) std::printf("stats: %s\n", stats_to_string(stats()).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    if (auto e = parse_args(argc, argv, o)) return fail(*e);
  } catch (const std::exception&) {
    return fail("a numeric option has a bad value (see --help)");
  }
  return run(o);
}
