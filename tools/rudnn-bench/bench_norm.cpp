// rudnn-bench norm: layer_norm, rms_norm and softmax_last_axis throughput.
// CSV: op,shape,dtype,device,median_us,gb_per_s (scripts/bench_norm_torch.py parses it).
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "benchmarks.h"
#include "common/numbers.h"
#include "rudnn/normalization.h"

namespace rudnn::bench {
namespace {

constexpr const char* kUsage = R"(usage: rudnn-bench norm [options]

Times layer_norm, rms_norm and softmax_last_axis on one device (warm plans; median of runs,
each run = --iters launches between two queue synchronizations).
CSV: op,shape,dtype,device,median_us,gb_per_s

options:
  --shape RxH                rows x last dim, repeatable (default 16384x4096 and 4096x8192)
  --dtype f32|f16|bf16       repeatable (default bf16 and f32)
  --ops a,b,c                subset of layer_norm,rms_norm,softmax (default all)
)";

constexpr const char* kExample = R"(
example:
  rudnn-bench norm --device cuda:0 --shape 16384x4096 --dtype bf16 --iters 50
)";

}  // namespace

int run_norm(int argc, char** argv) {
  if (wants_help(argc, argv, 2)) {
    std::printf("%s%s%s", kUsage, kCommonOptionsHelp, kExample);
    return 0;
  }
  std::optional<Device> chosen;  // --device; else Device::default_device(), resolved after the options
  Timing timing;                 // 20 iters, 15 runs
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  std::vector<DType> dtypes;
  std::vector<std::string> ops = {"layer_norm", "rms_norm", "softmax"};
  auto bad =
      parse_options(argc, argv, 2, [&](const std::string& a, const std::string& v) -> std::optional<std::string> {
        std::optional<std::string> error;
        if (common_option(a, v, &chosen, &timing, &error)) return error;
        if (a == "--shape") {
          // R·H must fit in 64 bits (with the bytes): a wrapped product would size a tiny tensor.
          const auto x = v.find('x');
          auto r = tools::parse_int(a, x == std::string::npos ? "" : v.substr(0, x), 1);
          auto h = tools::parse_int(a, x == std::string::npos ? "" : v.substr(x + 1), 1);
          if (!r.ok() || !h.ok() || !checked_byte_count({*r, *h}, DType::F32))
            return tools::bad_option(a, "RxH, integers >= 1 whose product's f32 bytes fit in 64 bits", v).message();
          shapes.emplace_back(*r, *h);
        } else if (a == "--dtype") {
          auto t = parse_dtype(v);
          if (!t || !is_float(*t)) return "--dtype wants f32, f16 or bf16";
          dtypes.push_back(*t);
        } else if (a == "--ops") {
          ops.clear();
          std::stringstream ss(v);
          for (std::string op; std::getline(ss, op, ',');) {
            if (op != "layer_norm" && op != "rms_norm" && op != "softmax") return "unknown op " + op;
            ops.push_back(op);
          }
        } else {
          return "unknown option " + a;
        }
        return std::nullopt;
      });
  if (bad) return fail(*bad);
  auto resolved = chosen ? Result<Device, RuntimeError>(*chosen) : Device::default_device();
  if (!resolved.ok()) return fail(resolved.error().message());
  const Device device = resolved.value();
  if (shapes.empty()) shapes = {{16384, 4096}, {4096, 8192}};
  if (dtypes.empty()) dtypes = {DType::BF16, DType::F32};

  std::printf("op,shape,dtype,device,median_us,gb_per_s\n");
  std::mt19937_64 rng(1);
  for (auto [rows, h] : shapes)
    for (DType dtype : dtypes) {
      auto x = uniform_tensor({rows, h}, dtype, device, -1, 1, rng);
      auto g = uniform_tensor({h}, DType::F32, device, 0.9, 1.1, rng);
      if (!x.ok() || !g.ok()) return fail(!x.ok() ? x.error().message() : g.error().message());
      for (const auto& op : ops) {
        auto call = [&]() -> std::optional<std::string> {
          auto y = op == "layer_norm" ? normalization::layer_norm(*x, *g, *g, 1e-5f)
                   : op == "rms_norm" ? normalization::rms_norm(*x, *g, 1e-5f)
                                      : normalization::softmax_last_axis(*x);
          if (!y.ok()) return y.error().message();
          return std::nullopt;
        };
        const Measured m = time_call(x->queue(), timing, call);
        if (!m.ok()) return fail(m.error);
        // Bytes that must move: input read + output written (+ gamma/beta, negligible but counted).
        const double bytes =
            2.0 * static_cast<double>(rows) * static_cast<double>(h) * static_cast<double>(dtype_size(dtype)) +
            (op == "softmax" ? 0 : (op == "layer_norm" ? 2 : 1) * 4.0 * static_cast<double>(h));
        std::printf("%s,%lldx%lld,%s,%s,%.2f,%.1f\n", op.c_str(), static_cast<long long>(rows),
                    static_cast<long long>(h), std::string(dtype_name(dtype)).c_str(), device.to_string().c_str(),
                    m.median_us, bytes / (m.median_us * 1e-6) / 1e9);
        std::fflush(stdout);
      }
    }
  return 0;
}

}  // namespace rudnn::bench
