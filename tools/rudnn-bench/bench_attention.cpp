// rudnn-bench attention: rudnn::attention::attention per strategy (SPEC §5, issue 5 item 5) on warm
// plans, at the issue's shapes: B·T tokens in all (B = tokens / T), Tq = Tk = T, no mask, no bias.
// CSV: strategy,batch,q_heads,kv_heads,seq,head_dim,causal,dtype,device,median_us,tflops
//   strategy  flash_mma (FlashBlackboxAccelerated) | flash_unit | fallback | autotune
//   tflops    4·B·Hq·Tq·Tk·D flops (QKᵀ and PV), halved for causal, over the time
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "benchmarks.h"
#include "rudnn/attention.h"
#if RUDNN_BENCH_HAS_AUTOTUNE
#include "rudnn/autotune.h"
#endif

namespace rudnn::bench {
namespace {

constexpr const char* kUsage = R"(usage: rudnn-bench attention [options]

Times rudnn::attention::attention per strategy on one device, on fixed warm inputs: query
[B, Hq, T, D], key and value [B, Hkv, T, D] with B = tokens / T (Tq = Tk = T), no mask, no bias,
scale 1/√D. Every combination of the repeatable options is measured; a strategy that does not fit a
shape (e.g. flash_mma with f32) is skipped with a note on stderr.
CSV: strategy,batch,q_heads,kv_heads,seq,head_dim,causal,dtype,device,median_us,tflops
(tflops: 4·B·Hq·T·T·D flops, halved for causal, per second)

options:
  --tokens N                 B·T (default 16384); a multiple of every --seq
  --seq T                    repeatable (default 512, 1024, 2048, 4096, 8192, 16384)
  --q-heads H                (default 32)
  --kv-heads H               repeatable; divides --q-heads (default 32, 8)
  --head-dim D               repeatable (default 64, 128)
  --causal 0|1               repeatable (default 0, 1)
  --dtype f32|f16|bf16       (default bf16; flash_mma needs f16/bf16)
  --strategies a,b,...       subset of flash_mma,flash_unit,fallback,autotune (default all)
)";

constexpr const char* kExample = R"(
Inputs: q, k, v ~ N(0, 1). The autotune row runs AttentionStrategy::Autotune as configured by
RUDNN_AUTOTUNE (default cached: the cache, else the heuristic); a note on stderr names the kernel it
ran. Fallback's scores workspace is B·Hq·T·T·4 bytes (16 GiB at 16k tokens, Hq = 32, T = 8k).

example:
  rudnn-bench attention --device cuda:0 --seq 8192 --head-dim 128 --kv-heads 8 --causal 0 --iters 10
)";

struct StrategyName {
  const char* name;
  attention::AttentionStrategy strategy;
};
constexpr StrategyName kStrategies[] = {
    {"flash_mma", attention::AttentionStrategy::FlashBlackboxAccelerated},
    {"flash_unit", attention::AttentionStrategy::FlashUnit},
    {"fallback", attention::AttentionStrategy::Fallback},
    {"autotune", attention::AttentionStrategy::Autotune},
};

std::optional<std::vector<StrategyName>> parse_strategies(const std::string& v) {
  std::vector<StrategyName> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) {
    const StrategyName* found = nullptr;
    for (const auto& k : kStrategies)
      if (s == k.name) found = &k;
    if (!found) return std::nullopt;
    out.push_back(*found);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

int run_attention(int argc, char** argv) {
  if (wants_help(argc, argv, 2)) {
    std::printf("%s%s%s", kUsage, kCommonOptionsHelp, kExample);
    return 0;
  }
  std::optional<Device> chosen;  // --device; else Device::default_device(), resolved after the options
  Timing timing;
  std::int64_t tokens = 16384, q_heads = 32;
  std::vector<std::int64_t> seqs, kv_heads_list, head_dims, causals;
  DType dtype = DType::BF16;
  std::vector<StrategyName> strategies(std::begin(kStrategies), std::end(kStrategies));
  auto bad =
      parse_options(argc, argv, 2, [&](const std::string& a, const std::string& v) -> std::optional<std::string> {
        std::optional<std::string> error;
        if (common_option(a, v, &chosen, &timing, &error)) return error;
        std::vector<std::int64_t>* list = a == "--seq"        ? &seqs
                                          : a == "--kv-heads" ? &kv_heads_list
                                          : a == "--head-dim" ? &head_dims
                                                              : nullptr;
        if (list || a == "--tokens" || a == "--q-heads") {
          std::int64_t n = 0;
          if (auto e = int_option(a, v, 1, INT64_MAX, &n)) return e;
          if (list)
            list->push_back(n);
          else
            (a == "--tokens" ? tokens : q_heads) = n;
        } else if (a == "--causal") {
          std::int64_t n = 0;
          if (auto e = int_option(a, v, 0, 1, &n)) return e;
          causals.push_back(n);
        } else if (a == "--dtype") {
          auto t = parse_dtype(v);
          if (!t || !is_float(*t)) return "--dtype wants f32, f16 or bf16, got " + v;
          dtype = *t;
        } else if (a == "--strategies") {
          auto s = parse_strategies(v);
          if (!s) return "--strategies wants a subset of flash_mma,flash_unit,fallback,autotune, got " + v;
          strategies = *s;
        } else {
          return "unknown option " + a;
        }
        return std::nullopt;
      });
  if (bad) return fail(*bad);
  auto resolved = chosen ? Result<Device, RuntimeError>(*chosen) : Device::default_device();
  if (!resolved.ok()) return fail(resolved.error().message());
  const Device device = resolved.value();
  if (seqs.empty()) seqs = {512, 1024, 2048, 4096, 8192, 16384};
  if (kv_heads_list.empty()) kv_heads_list = {32, 8};
  if (head_dims.empty()) head_dims = {64, 128};
  if (causals.empty()) causals = {0, 1};
  // Every shape is checked before the header, so a bad combination prints no CSV at all.
  for (std::int64_t t : seqs)
    if (tokens % t != 0)
      return fail("--tokens " + std::to_string(tokens) + " is not a multiple of --seq " + std::to_string(t));
  for (std::int64_t h : kv_heads_list)
    if (q_heads % h != 0)
      return fail("--kv-heads " + std::to_string(h) + " does not divide --q-heads " + std::to_string(q_heads));

  const std::string dname(dtype_name(dtype)), dev = device.to_string();
  std::printf("strategy,batch,q_heads,kv_heads,seq,head_dim,causal,dtype,device,median_us,tflops\n");
  std::fflush(stdout);
  std::mt19937_64 rng(1);
  for (std::int64_t d : head_dims) {
    for (std::int64_t t : seqs) {
      const std::int64_t b = tokens / t;
      auto q = normal_tensor({b, q_heads, t, d}, dtype, device, 0, 1, rng);
      if (!q.ok()) return fail(q.error().message());
      for (std::int64_t hkv : kv_heads_list) {
        auto k = normal_tensor({b, hkv, t, d}, dtype, device, 0, 1, rng);
        auto v = normal_tensor({b, hkv, t, d}, dtype, device, 0, 1, rng);
        if (!k.ok() || !v.ok()) return fail(!k.ok() ? k.error().message() : v.error().message());
        for (std::int64_t causal : causals) {
          const double flops = 4.0 * static_cast<double>(b) * static_cast<double>(q_heads) * static_cast<double>(t) *
                               static_cast<double>(t) * static_cast<double>(d) * (causal ? 0.5 : 1.0);
          const std::string shape = "B=" + std::to_string(b) + " Hq=" + std::to_string(q_heads) +
                                    " Hkv=" + std::to_string(hkv) + " T=" + std::to_string(t) +
                                    " D=" + std::to_string(d) + " causal=" + std::to_string(causal);
          for (const auto& s : strategies) {
            // An unfit strategy (Unsupported: the contract check launches nothing) and a workspace
            // the device cannot hold (Fallback's scores at long T) are skipped with a note; every
            // other failure ends the run.
            ErrorKind kind = ErrorKind::Internal;
            const Measured m = time_call(q->queue(), timing, [&]() -> std::optional<std::string> {
              auto o =
                  attention::attention(*q, *k, *v, std::nullopt, std::nullopt, {std::nullopt, causal != 0}, s.strategy);
              if (o.ok()) return std::nullopt;
              kind = o.error().kind();
              return o.error().message();
            });
            if (!m.ok() && (kind == ErrorKind::Unsupported || kind == ErrorKind::OutOfMemory)) {
              std::fprintf(stderr, "rudnn-bench: note: %s skipped at %s: %s\n", s.name, shape.c_str(), m.error.c_str());
              continue;
            }
            if (!m.ok()) return fail(std::string(s.name) + " at " + shape + ": " + m.error);
#if RUDNN_BENCH_HAS_AUTOTUNE
            if (s.strategy == attention::AttentionStrategy::Autotune)
              if (auto c = autotune::last_choice())
                std::fprintf(stderr, "rudnn-bench: note: autotune at %s ran %s [%s] (%s)\n", shape.c_str(),
                             c->kernel.c_str(), c->config.c_str(),
                             std::string(autotune::source_name(c->source)).c_str());
#endif
            std::printf("%s,%lld,%lld,%lld,%lld,%lld,%lld,%s,%s,%.2f,%s\n", s.name, static_cast<long long>(b),
                        static_cast<long long>(q_heads), static_cast<long long>(hkv), static_cast<long long>(t),
                        static_cast<long long>(d), static_cast<long long>(causal), dname.c_str(), dev.c_str(),
                        m.median_us, csv_number(flops / (m.median_us * 1e-6) / 1e12, 3).c_str());
            std::fflush(stdout);
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace rudnn::bench
