// rudnn-bench conv: convolution forward, data backward and weight backward (SPEC §6, issue 12 item 6)
// on warm plans, channels-last, over named layer sets.
// CSV: set,layer,direction,n,d,h,w,c,o,k,stride,groups,dtype,strategy,algorithm,device,median_us,tflops,gb_per_s
//   layer      "DxHxWxC->O kK sS" (D = 1 for 2-D layers)
//   algorithm  what ran (ConvInfo), e.g. implicit_gemm_tensor_core, depthwise
//   tflops     2·N·outputs·O·taps·C/groups over the time (the same count for every direction)
//   gb_per_s   the memory floor (input, weight and output each touched once) over the time
#include <cstdio>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "benchmarks.h"
#include "rudnn/convolution.h"

namespace rudnn::bench {
namespace {

constexpr const char* kUsage = R"(usage: rudnn-bench conv [options]

Times conv_forward_nhwc, conv_data_backward and conv_weight_backward (channels-last) on the layers
of the named sets, on fixed warm inputs.
CSV: set,layer,direction,n,d,h,w,c,o,k,stride,groups,dtype,strategy,algorithm,device,median_us,tflops,gb_per_s

options:
  --sets a,b              subset of resnet50,unet,depthwise,video (default all)
  --directions a,b        subset of fprop,dgrad,wgrad (default all)
  --batch N               override every set's batch (resnet50 32, unet 2, depthwise 32, video 2)
  --dtype f32|f16|bf16    (default bf16)
  --strategy direct|implicit_gemm|autotune
                          (default implicit_gemm; the depthwise set always runs direct)
)";

constexpr const char* kExample = R"(
Layers (issue 12): resnet50 — 56²×64 3×3, 28²×128 3×3 stride 1 and 2, 14²×256 3×3, 7²×512 3×3 and
the 1×1 layers 56²×64→256, 56²×256→64, 28²×512→128, 14²×1024→256; unet (Stable Diffusion) —
64²×320, 32²×640, 16²×1280 3×3; depthwise — 56²×512 3×3, groups 512; video — 8×56²×64 3×3×3.

example:
  rudnn-bench conv --device cuda:0 --sets resnet50 --directions fprop --iters 20
)";

struct Layer {
  std::string set;
  std::int64_t n, d, h, w, c, o, k, stride, groups;
  bool three_d = false;
};

std::vector<Layer> layers_of(const std::string& set) {
  if (set == "resnet50")
    return {{set, 32, 1, 56, 56, 64, 64, 3, 1, 1},   {set, 32, 1, 28, 28, 128, 128, 3, 1, 1},
            {set, 32, 1, 28, 28, 128, 128, 3, 2, 1}, {set, 32, 1, 14, 14, 256, 256, 3, 1, 1},
            {set, 32, 1, 7, 7, 512, 512, 3, 1, 1},   {set, 32, 1, 56, 56, 64, 256, 1, 1, 1},
            {set, 32, 1, 56, 56, 256, 64, 1, 1, 1},  {set, 32, 1, 28, 28, 512, 128, 1, 1, 1},
            {set, 32, 1, 14, 14, 1024, 256, 1, 1, 1}};
  if (set == "unet")
    return {{set, 2, 1, 64, 64, 320, 320, 3, 1, 1},
            {set, 2, 1, 32, 32, 640, 640, 3, 1, 1},
            {set, 2, 1, 16, 16, 1280, 1280, 3, 1, 1}};
  if (set == "depthwise") return {{set, 32, 1, 56, 56, 512, 512, 3, 1, 512}};
  if (set == "video") return {{set, 2, 8, 56, 56, 64, 64, 3, 1, 1, true}};
  return {};
}

std::vector<std::string> split(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) out.push_back(s);
  return out;
}

}  // namespace

int run_conv(int argc, char** argv) {
  if (wants_help(argc, argv, 2)) {
    std::printf("%s%s%s", kUsage, kCommonOptionsHelp, kExample);
    return 0;
  }
  std::optional<Device> chosen;
  Timing timing;
  std::int64_t batch = 0;
  DType dtype = DType::BF16;
  std::string strategy_name = "implicit_gemm";
  std::vector<std::string> sets = {"resnet50", "unet", "depthwise", "video"}, directions = {"fprop", "dgrad", "wgrad"};
  auto bad =
      parse_options(argc, argv, 2, [&](const std::string& a, const std::string& v) -> std::optional<std::string> {
        std::optional<std::string> error;
        if (common_option(a, v, &chosen, &timing, &error)) return error;
        if (a == "--batch") return int_option(a, v, 1, 1 << 20, &batch);
        if (a == "--dtype") {
          auto t = parse_dtype(v);
          if (!t || !is_float(*t)) return "--dtype wants f32, f16 or bf16, got " + v;
          dtype = *t;
        } else if (a == "--strategy") {
          if (v != "direct" && v != "implicit_gemm" && v != "autotune")
            return "--strategy wants direct, implicit_gemm or autotune, got " + v;
          strategy_name = v;
        } else if (a == "--sets") {
          sets = split(v);
          for (auto& s : sets)
            if (layers_of(s).empty()) return "--sets wants a subset of resnet50,unet,depthwise,video, got " + v;
          if (sets.empty()) return "--sets is empty";
        } else if (a == "--directions") {
          directions = split(v);
          for (auto& d : directions)
            if (d != "fprop" && d != "dgrad" && d != "wgrad")
              return "--directions wants a subset of fprop,dgrad,wgrad, got " + v;
          if (directions.empty()) return "--directions is empty";
        } else {
          return "unknown option " + a;
        }
        return std::nullopt;
      });
  if (bad) return fail(*bad);
  auto resolved = chosen ? Result<Device, RuntimeError>(*chosen) : Device::default_device();
  if (!resolved.ok()) return fail(resolved.error().message());
  const Device device = resolved.value();
  using convolution::ConvStrategy;
  const ConvStrategy requested = strategy_name == "direct"     ? ConvStrategy::Direct
                                 : strategy_name == "autotune" ? ConvStrategy::Autotune
                                                               : ConvStrategy::ImplicitGemm;

  std::printf(
      "set,layer,direction,n,d,h,w,c,o,k,stride,groups,dtype,strategy,algorithm,device,median_us,tflops,gb_per_s\n");
  std::fflush(stdout);
  std::mt19937_64 rng(1);
  for (const auto& set : sets)
    for (Layer l : layers_of(set)) {
      if (batch > 0) l.n = batch;
      const ConvStrategy strategy = l.groups > 1 ? ConvStrategy::Direct : requested;
      convolution::ConvOptions options;
      const int dims = l.three_d ? 3 : 2;
      options.stride.assign(dims, l.stride);
      options.padding.assign(dims, l.k / 2);
      options.dilation.assign(dims, 1);
      options.groups = l.groups;
      auto spatial = [&](std::int64_t d, std::int64_t h, std::int64_t w) {
        return l.three_d ? Shape{d, h, w} : Shape{h, w};
      };
      const std::int64_t oh = (l.h + 2 * (l.k / 2) - l.k) / l.stride + 1,
                         ow = (l.w + 2 * (l.k / 2) - l.k) / l.stride + 1,
                         od = l.three_d ? (l.d + 2 * (l.k / 2) - l.k) / l.stride + 1 : 1;
      Shape xs = {l.n}, ws = {l.o}, ys = {l.n};
      for (auto e : spatial(l.d, l.h, l.w)) xs.push_back(e);
      for (auto e : spatial(l.k, l.k, l.k)) ws.push_back(e);
      for (auto e : spatial(od, oh, ow)) ys.push_back(e);
      xs.push_back(l.c);
      ws.push_back(l.c / l.groups);
      ys.push_back(l.o);
      auto x = uniform_tensor(xs, dtype, device, -1, 1, rng);
      auto w = uniform_tensor(ws, dtype, device, -0.1, 0.1, rng);
      auto dy = uniform_tensor(ys, dtype, device, -1, 1, rng);
      for (auto* t : {&x, &w, &dy})
        if (!t->ok()) return fail(t->error().message());
      const double taps = static_cast<double>(l.k * l.k * (l.three_d ? l.k : 1));
      const double outputs = static_cast<double>(l.n * od * oh * ow);
      const double flops = 2.0 * outputs * static_cast<double>(l.o) * taps * static_cast<double>(l.c / l.groups);
      const double bytes =
          static_cast<double>(dtype_size(dtype)) * static_cast<double>(x->numel() + w->numel() + dy->numel());
      const std::string name = std::to_string(l.d) + "x" + std::to_string(l.h) + "x" + std::to_string(l.w) + "x" +
                               std::to_string(l.c) + "->" + std::to_string(l.o) + " k" + std::to_string(l.k) + " s" +
                               std::to_string(l.stride);
      for (const auto& dir : directions) {
        convolution::ConvInfo info;
        const Measured m = time_call(x->queue(), timing, [&]() -> std::optional<std::string> {
          if (dir == "fprop") {
            auto r = convolution::conv_forward_nhwc(*x, *w, std::nullopt, options, strategy, &info);
            return r.ok() ? std::nullopt : std::optional<std::string>(r.error().message());
          }
          if (dir == "dgrad") {
            auto r = convolution::conv_data_backward(*dy, *w, xs, options, strategy,
                                                     convolution::ConvLayout::ChannelsLast, &info);
            return r.ok() ? std::nullopt : std::optional<std::string>(r.error().message());
          }
          auto r = convolution::conv_weight_backward(*x, *dy, ws, options, false, strategy,
                                                     convolution::ConvLayout::ChannelsLast, &info);
          return r.ok() ? std::nullopt : std::optional<std::string>(r.error().message());
        });
        if (!m.ok()) return fail(set + " " + name + " " + dir + ": " + m.error);
        std::printf("%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%s,%s,%s,%.2f,%.2f,%.1f\n", set.c_str(),
                    name.c_str(), dir.c_str(), static_cast<long long>(l.n), static_cast<long long>(l.d),
                    static_cast<long long>(l.h), static_cast<long long>(l.w), static_cast<long long>(l.c),
                    static_cast<long long>(l.o), static_cast<long long>(l.k), static_cast<long long>(l.stride),
                    static_cast<long long>(l.groups), std::string(dtype_name(dtype)).c_str(),
                    l.groups > 1 ? "direct" : strategy_name.c_str(), convolution::algorithm_name(info.algorithm),
                    device.to_string().c_str(), m.median_us, flops / (m.median_us * 1e-6) / 1e12,
                    bytes / (m.median_us * 1e-6) / 1e9);
        std::fflush(stdout);
      }
    }
  return 0;
}

}  // namespace rudnn::bench
