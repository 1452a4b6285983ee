// rudnn-bench conv: convolution forward, data backward and weight backward (SPEC §6, issue 12 item 6)
// on warm plans, channels-last, over named layer sets.
// CSV: set,layer,direction,n,d,h,w,c,o,k,stride,groups,dtype,strategy,algorithm,device,median_us,tflops,gb_per_s
//   layer      "DxHxWxC->O kK sS" (D = 1 for 2-D layers)
//   algorithm  what ran (ConvInfo), e.g. implicit_gemm_tensor_core 128x128x32 w2x4, depthwise; the
//              implicit GEMM's tile (BM x BN x BK, warps); " split S" when the reduction ran in S
//              ordered split sums (split-K forward / data backward, weight backward)
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
  --sets a,b              subset of resnet50,unet,depthwise,video,stem (default all)
  --directions a,b        subset of fprop,dgrad,wgrad (default all)
  --batch N               override every set's batch (resnet50 32, unet 2, depthwise 32, video 2, stem 32)
  --dtype f32|f16|bf16    (default bf16)
  --strategy direct|implicit_gemm|autotune
                          (default implicit_gemm; the depthwise set always runs direct)
  --emit-mlir 1           print the layers as one rudnn graph (batch dynamic) instead of timing
                          them: `rudnn-precompile` it with --jobs to compile every kernel in
                          parallel before a timed run (scripts/gpu-check does)
)";

constexpr const char* kExample = R"(
Layers (issue 12): resnet50 — 56²×64 3×3, 28²×128 3×3 stride 1 and 2, 14²×256 3×3, 7²×512 3×3 and
the 1×1 layers 56²×64→256, 56²×256→64, 28²×512→128, 14²×1024→256; unet (Stable Diffusion) —
64²×320, 32²×640, 16²×1280 3×3; depthwise — 56²×512 3×3, groups 512; video — 8×56²×64 3×3×3;
stem — ResNet's 224²×3→64 7×7 stride 2 (C = 3: the implicit GEMM on channel-padded copies).

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
  if (set == "stem") return {{set, 32, 1, 224, 224, 3, 64, 7, 2, 1}};
  return {};
}

std::vector<std::string> split(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) out.push_back(s);
  return out;
}

// "tensor<?x56x56x64xbf16>" (batch dynamic) / "tensor<64x3x3x64xbf16>".
// The algorithm column: ConvInfo's algorithm; an implicit GEMM's tile " BMxBNxBK wMxN" (so a GPU run
// shows which tile Autotune took), " wgmma" after a warpgroup-MMA tile's; " split S" when the tile's
// config has splits > 1.
std::string algorithm_label(const convolution::ConvInfo& info) {
  auto value = [&](const char* key) -> std::string {
    const std::string k = std::string(key) + "=";
    const auto at = info.tile.find(k);
    if (at == std::string::npos || (at > 0 && info.tile[at - 1] != ',')) return "";
    return info.tile.substr(at + k.size(), info.tile.find(',', at) - (at + k.size()));
  };
  std::string label = convolution::algorithm_name(info.algorithm);
  if (!value("bm").empty())
    label +=
        " " + value("bm") + "x" + value("bn") + "x" + value("bk") + " w" + value("warps_m") + "x" + value("warps_n");
  if (value("wgmma") == "1") label += " wgmma";
  const std::string splits = value("splits");
  if (!splits.empty() && splits != "1") label += " split " + splits;
  return label;
}

std::string tensor_type(const Shape& shape, DType dtype, bool dynamic_batch) {
  std::string s = "tensor<";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i == 0 && dynamic_batch ? "?" : std::to_string(shape[i])) + "x";
  return s + std::string(dtype_name(dtype)) + ">";
}

// The shapes of one layer, channels-last: x, w, y.
struct LayerShapes {
  Shape x, w, y;
  int dims;
};
LayerShapes shapes_of(const Layer& l) {
  const int dims = l.three_d ? 3 : 2;
  auto out = [&](std::int64_t in) { return (in + 2 * (l.k / 2) - l.k) / l.stride + 1; };
  LayerShapes s{{l.n}, {l.o}, {l.n}, dims};
  if (l.three_d) {
    s.x.push_back(l.d);
    s.w.push_back(l.k);
    s.y.push_back(out(l.d));
  }
  s.x.insert(s.x.end(), {l.h, l.w, l.c});
  s.w.insert(s.w.end(), {l.k, l.k, l.c / l.groups});
  s.y.insert(s.y.end(), {out(l.h), out(l.w), l.o});
  return s;
}

// Every layer and direction as one graph for rudnn-precompile (the same ops the timed calls make).
int emit_graph(const std::vector<std::string>& sets, const std::vector<std::string>& directions, std::int64_t batch,
               DType dtype, const std::string& strategy) {
  std::string args, results, body, returns, return_types;
  int next = 0;
  auto arg = [&](const Shape& shape, bool dynamic) {
    const std::string name = "%a" + std::to_string(next++);
    args += (args.empty() ? "" : ", ") + name + ": " + tensor_type(shape, dtype, dynamic);
    return name;
  };
  for (const auto& set : sets)
    for (Layer l : layers_of(set)) {
      if (batch > 0) l.n = batch;
      const LayerShapes s = shapes_of(l);
      const std::string opts = "{stride = array<i64: " + std::string(s.dims == 3 ? "S, S, S" : "S, S") +
                               ">, padding = array<i64: " + std::string(s.dims == 3 ? "P, P, P" : "P, P") +
                               ">, dilation = array<i64: " + std::string(s.dims == 3 ? "1, 1, 1" : "1, 1") +
                               ">, groups = " + std::to_string(l.groups) + ", channels_last = true, strategy = \"" +
                               (l.groups > 1 ? std::string("direct") : strategy) + "\"}";
      std::string o = opts;
      for (std::size_t at; (at = o.find('S')) != std::string::npos;) o.replace(at, 1, std::to_string(l.stride));
      for (std::size_t at; (at = o.find('P')) != std::string::npos;) o.replace(at, 1, std::to_string(l.k / 2));
      const std::string tx = tensor_type(s.x, dtype, true), tw = tensor_type(s.w, dtype, false),
                        ty = tensor_type(s.y, dtype, true);
      for (const auto& dir : directions) {
        const std::string r = "%r" + std::to_string(next++);
        std::string type;
        if (dir == "fprop") {
          const std::string x = arg(s.x, true), w = arg(s.w, false);
          body += "  " + r + " = rudnn.conv_forward " + x + ", " + w + " " + o + " : " + tx + ", " + tw + " -> " + ty +
                  "\n";
          type = ty;
        } else if (dir == "dgrad") {
          const std::string dy = arg(s.y, true), w = arg(s.w, false);
          body += "  " + r + " = rudnn.conv_data_backward " + dy + ", " + w + " " + o + " : " + ty + ", " + tw +
                  " -> " + tx + "\n";
          type = tx;
        } else {
          const std::string x = arg(s.x, true), dy = arg(s.y, true);
          body += "  " + r + " = rudnn.conv_weight_backward " + x + ", " + dy + " " + o + " : " + tx + ", " + ty +
                  " -> " + tw + "\n";
          type = tw;
        }
        returns += (returns.empty() ? "" : ", ") + r;
        return_types += (return_types.empty() ? "" : ", ") + type;
      }
    }
  std::printf("// rudnn-bench conv --emit-mlir: the benchmark's layers as one graph.\n");
  std::printf("func.func @main(%s) -> (%s) {\n%s  return %s : %s\n}\n", args.c_str(), return_types.c_str(),
              body.c_str(), returns.c_str(), return_types.c_str());
  return 0;
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
  bool emit_mlir = false;
  std::vector<std::string> sets = {"resnet50", "unet", "depthwise", "video", "stem"},
                           directions = {"fprop", "dgrad", "wgrad"};
  auto bad =
      parse_options(argc, argv, 2, [&](const std::string& a, const std::string& v) -> std::optional<std::string> {
        std::optional<std::string> error;
        if (common_option(a, v, &chosen, &timing, &error)) return error;
        if (a == "--emit-mlir") {
          if (v != "1" && v != "0") return "--emit-mlir wants 1 or 0, got " + v;
          emit_mlir = v == "1";
          return std::nullopt;
        }
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
            if (layers_of(s).empty()) return "--sets wants a subset of resnet50,unet,depthwise,video,stem, got " + v;
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

  if (emit_mlir)
    return emit_graph(sets, directions, batch, dtype,
                      requested == ConvStrategy::Direct     ? "direct"
                      : requested == ConvStrategy::Autotune ? "autotune"
                                                            : "implicit_gemm");
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
      const LayerShapes shapes = shapes_of(l);
      const Shape &xs = shapes.x, &ws = shapes.w, &ys = shapes.y;
      const std::int64_t od = l.three_d ? ys[1] : 1, oh = ys[ys.size() - 3], ow = ys[ys.size() - 2];
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
                    l.groups > 1 ? "direct" : strategy_name.c_str(), algorithm_label(info).c_str(),
                    device.to_string().c_str(), m.median_us, flops / (m.median_us * 1e-6) / 1e12,
                    bytes / (m.median_us * 1e-6) / 1e9);
        std::fflush(stdout);
      }
    }
  return 0;
}

}  // namespace rudnn::bench
