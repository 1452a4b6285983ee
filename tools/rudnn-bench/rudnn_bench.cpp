// rudnn-bench: device throughput of rudnn ops, for the GPU check and quick comparisons.
// Prints one CSV line per (op, shape, dtype): op,shape,dtype,device,median_us,gb_per_s
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "rudnn/normalization.h"

namespace {

constexpr const char* kUsage = R"(usage: rudnn-bench norm [options]

Times layer_norm, rms_norm and softmax_last_axis on one device (warm plans; median of runs,
each run = --iters launches between two queue synchronizations).

options:
  --device host|cuda:N       (default: RUDNN_DEVICE, else the first GPU, else host)
  --shape RxH                rows x last dim, repeatable (default 16384x4096 and 4096x8192)
  --dtype f32|f16|bf16       repeatable (default bf16 and f32)
  --ops a,b,c                subset of layer_norm,rms_norm,softmax (default all)
  --iters N                  launches per timed run (default 20)
  --runs N                   timed runs (default 15)

example:
  rudnn-bench norm --device cuda:0 --shape 16384x4096 --dtype bf16 --iters 50
)";

int fail(const std::string& s) {
  std::fprintf(stderr, "rudnn-bench: error: %s\n", s.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rudnn;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  if (std::strcmp(argv[1], "norm") != 0) return fail(std::string("unknown benchmark ") + argv[1]);
  Device device = Device::default_device();
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  std::vector<DType> dtypes;
  std::vector<std::string> ops = {"layer_norm", "rms_norm", "softmax"};
  int iters = 20, runs = 15;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return fail(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--device") {
      auto d = Device::parse(v);
      if (!d.ok()) return fail(d.error().message());
      device = d.value();
    } else if (a == "--shape") {
      auto x = v.find('x');
      if (x == std::string::npos) return fail("--shape wants RxH");
      shapes.emplace_back(std::stoll(v.substr(0, x)), std::stoll(v.substr(x + 1)));
    } else if (a == "--dtype") {
      auto t = parse_dtype(v);
      if (!t || !is_float(*t)) return fail("--dtype wants f32, f16 or bf16");
      dtypes.push_back(*t);
    } else if (a == "--ops") {
      ops.clear();
      std::stringstream ss(v);
      for (std::string op; std::getline(ss, op, ',');) ops.push_back(op);
    } else if (a == "--iters") {
      iters = std::max(1, std::stoi(v));
    } else if (a == "--runs") {
      runs = std::max(1, std::stoi(v));
    } else {
      return fail("unknown option " + a);
    }
  }
  if (shapes.empty()) shapes = {{16384, 4096}, {4096, 8192}};
  if (dtypes.empty()) dtypes = {DType::BF16, DType::F32};

  std::printf("op,shape,dtype,device,median_us,gb_per_s\n");
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto [rows, h] : shapes)
    for (DType dtype : dtypes) {
      std::vector<double> xv(static_cast<std::size_t>(rows * h)), gv(static_cast<std::size_t>(h));
      for (auto& e : xv) e = u(rng);
      for (auto& e : gv) e = 1 + 0.1 * u(rng);
      auto x = Tensor::upload(HostData::from_f64({rows, h}, dtype, xv), device);
      auto g = Tensor::upload(HostData::from_f64({h}, DType::F32, gv), device);
      if (!x.ok() || !g.ok()) return fail(!x.ok() ? x.error().message() : g.error().message());
      for (const auto& op : ops) {
        auto call = [&]() -> Result<Tensor, NormalizationError> {
          if (op == "layer_norm") return normalization::layer_norm(*x, *g, *g, 1e-5f);
          if (op == "rms_norm") return normalization::rms_norm(*x, *g, 1e-5f);
          return normalization::softmax_last_axis(*x);
        };
        if (op != "layer_norm" && op != "rms_norm" && op != "softmax") return fail("unknown op " + op);
        auto warm = call();  // compiles, loads, warms the caches
        if (!warm.ok()) return fail(warm.error().message());
        (void)x->queue().synchronize();
        std::vector<double> us;
        for (int r = 0; r < runs; ++r) {
          auto t0 = std::chrono::steady_clock::now();
          for (int k = 0; k < iters; ++k)
            if (auto y = call(); !y.ok()) return fail(y.error().message());
          if (auto s = x->queue().synchronize(); !s.ok()) return fail(s.error().message());
          us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters);
        }
        std::sort(us.begin(), us.end());
        const double median = us[us.size() / 2];
        // Bytes that must move: input read + output written (+ gamma/beta, negligible but counted).
        const double bytes = 2.0 * static_cast<double>(rows * h) * static_cast<double>(dtype_size(dtype)) +
                             (op == "softmax" ? 0 : (op == "layer_norm" ? 2 : 1) * 4.0 * static_cast<double>(h));
        std::printf("%s,%lldx%lld,%s,%s,%.2f,%.1f\n", op.c_str(), static_cast<long long>(rows),
                    static_cast<long long>(h), std::string(dtype_name(dtype)).c_str(), device.to_string().c_str(),
                    median, bytes / (median * 1e-6) / 1e9);
        std::fflush(stdout);
      }
    }
  return 0;
}
