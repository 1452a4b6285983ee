// rudnn-bench gated-delta: the gated delta rule (SPEC §7, issue 6 item 7) on warm plans.
// CSV: mode,batch,heads,seq,key_dim,value_dim,chunk,dtype,device,median_us,tokens_per_s,gb_per_s,kernel
//   mode          prefill (chunk_gated_delta_rule, no initial state) | decode (gated_delta_rule, T
//                 steps from a given state) | recurrent (gated_delta_rule over the prefill shape)
//   chunk         C for prefill, empty otherwise
//   tokens_per_s  B·T over the time
//   gb_per_s      the op's memory-traffic floor over the time: q, k, v read once, o written once,
//                 beta and log_decay read once, the initial state read once (when given), the final
//                 state written once
//   kernel        the kernel entry the timed calls ran (names the tile: rudnn::autotune::last_choice(),
//                 so under RUDNN_AUTOTUNE=full the tile Autotune picked); empty without the autotune
//                 component
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "benchmarks.h"
#include "rudnn/gated_delta.h"
#if RUDNN_BENCH_HAS_AUTOTUNE
#include "rudnn/autotune.h"
#endif

namespace rudnn::bench {
namespace {

constexpr const char* kUsage = R"(usage: rudnn-bench gated-delta [options]

Times chunk_gated_delta_rule (prefill, no initial state) and gated_delta_rule decode steps (from
a state) on one device, on fixed warm inputs.
CSV: mode,batch,heads,seq,key_dim,value_dim,chunk,dtype,device,median_us,tokens_per_s,gb_per_s,kernel
(kernel: the entry that ran, naming its tile; with RUDNN_AUTOTUNE=full the tile Autotune picked)
(gb_per_s: the memory-traffic floor — q, k, v, beta, log_decay read once, o written once, the
state read once when given and written once — over the time)

options:
  --batch B                  prefill batch (default 8)
  --seq T                    prefill length (default 4096: B·T = 32k tokens)
  --heads H                  (default 16)
  --key-dim K                (default 128)
  --value-dim V              (default 128)
  --chunk C                  prefill chunk size (default 64)
  --decode-batch B           decode batch (default 64)
  --decode-seq T             decode steps per call (default 1)
  --dtype f32|f16|bf16       q, k, v, beta, log_decay (default bf16)
  --modes a,b                subset of prefill,decode,recurrent (default prefill,decode;
                             recurrent = gated_delta_rule over the prefill shape)
)";

constexpr const char* kExample = R"(
Inputs: q, k ~ U(±√(3/K)) (about unit norm), v ~ U(−1, 1), log_decay ~ U(−0.5, 0), beta ~ U(0, 1),
query_scale = 1/√K; decode state ~ U(−0.1, 0.1).

example:
  rudnn-bench gated-delta --device cuda:0 --modes decode --decode-batch 64 --iters 50
)";

struct Shape5 {
  std::int64_t b, h, t, k, v;
};

}  // namespace

int run_gated_delta(int argc, char** argv) {
  if (wants_help(argc, argv, 2)) {
    std::printf("%s%s%s", kUsage, kCommonOptionsHelp, kExample);
    return 0;
  }
  std::optional<Device> chosen;  // --device; else Device::default_device(), resolved after the options
  Timing timing;
  std::int64_t batch = 8, heads = 16, seq = 4096, key_dim = 128, value_dim = 128, chunk = 64;
  std::int64_t decode_batch = 64, decode_seq = 1;
  DType dtype = DType::BF16;
  std::vector<std::string> modes = {"prefill", "decode"};
  auto bad =
      parse_options(argc, argv, 2, [&](const std::string& a, const std::string& v) -> std::optional<std::string> {
        std::optional<std::string> error;
        if (common_option(a, v, &chosen, &timing, &error)) return error;
        std::int64_t* into = a == "--batch"          ? &batch
                             : a == "--heads"        ? &heads
                             : a == "--seq"          ? &seq
                             : a == "--key-dim"      ? &key_dim
                             : a == "--value-dim"    ? &value_dim
                             : a == "--chunk"        ? &chunk
                             : a == "--decode-batch" ? &decode_batch
                             : a == "--decode-seq"   ? &decode_seq
                                                     : nullptr;
        if (into) {
          return int_option(a, v, 1, INT64_MAX, into);
        } else if (a == "--dtype") {
          auto t = parse_dtype(v);
          if (!t || !is_float(*t)) return "--dtype wants f32, f16 or bf16, got " + v;
          dtype = *t;
        } else if (a == "--modes") {
          modes.clear();
          std::stringstream ss(v);
          for (std::string m; std::getline(ss, m, ',');) {
            if (m != "prefill" && m != "decode" && m != "recurrent")
              return "--modes wants a subset of prefill,decode,recurrent, got " + v;
            modes.push_back(m);
          }
          if (modes.empty()) return "--modes is empty";
        } else {
          return "unknown option " + a;
        }
        return std::nullopt;
      });
  if (bad) return fail(*bad);
  auto resolved = chosen ? Result<Device, RuntimeError>(*chosen) : Device::default_device();
  if (!resolved.ok()) return fail(resolved.error().message());
  const Device device = resolved.value();

  const std::string dname(dtype_name(dtype)), dev = device.to_string();
  const float query_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(key_dim)));
  std::printf("mode,batch,heads,seq,key_dim,value_dim,chunk,dtype,device,median_us,tokens_per_s,gb_per_s,kernel\n");
  std::fflush(stdout);
  std::mt19937_64 rng(1);
  for (const auto& mode : modes) {
    const bool decode = mode == "decode";
    const Shape5 s{decode ? decode_batch : batch, heads, decode ? decode_seq : seq, key_dim, value_dim};
    const double a = std::sqrt(3.0 / static_cast<double>(s.k));
    auto q = uniform_tensor({s.b, s.h, s.t, s.k}, dtype, device, -a, a, rng);
    auto k = uniform_tensor({s.b, s.h, s.t, s.k}, dtype, device, -a, a, rng);
    auto v = uniform_tensor({s.b, s.h, s.t, s.v}, dtype, device, -1, 1, rng);
    auto beta = uniform_tensor({s.b, s.h, s.t}, dtype, device, 0, 1, rng);
    auto g = uniform_tensor({s.b, s.h, s.t}, dtype, device, -0.5, 0, rng);
    for (auto* t : {&q, &k, &v, &beta, &g})
      if (!t->ok()) return fail(t->error().message());
    gated_delta::GatedDeltaInput input{*q, *k, *v, *beta, *g, std::nullopt, query_scale};
    if (decode) {
      auto state = uniform_tensor({s.b, s.h, s.k, s.v}, DType::F32, device, -0.1, 0.1, rng);
      if (!state.ok()) return fail(state.error().message());
      input.initial_state = *state;
    }
    const Measured m = time_call(q->queue(), timing, [&]() -> std::optional<std::string> {
      auto r =
          mode == "prefill" ? gated_delta::chunk_gated_delta_rule(input, chunk) : gated_delta::gated_delta_rule(input);
      if (!r.ok()) return r.error().message();
      return std::nullopt;
    });
    if (!m.ok()) return fail(mode + ": " + m.error);
    const double ds = static_cast<double>(dtype_size(dtype));
    const double tokens = static_cast<double>(s.b) * static_cast<double>(s.t);
    const double state_bytes =
        4.0 * static_cast<double>(s.b) * static_cast<double>(s.h) * static_cast<double>(s.k) * static_cast<double>(s.v);
    const double bytes = tokens * static_cast<double>(s.h) * ds * static_cast<double>(2 * s.k + 2 * s.v + 2) +
                         state_bytes * (input.initial_state ? 2 : 1);
    std::string kernel;
#if RUDNN_BENCH_HAS_AUTOTUNE
    if (auto c = autotune::last_choice()) kernel = c->kernel;
#endif
    std::printf("%s,%lld,%lld,%lld,%lld,%lld,%s,%s,%s,%.2f,%.0f,%.1f,%s\n", mode.c_str(), static_cast<long long>(s.b),
                static_cast<long long>(s.h), static_cast<long long>(s.t), static_cast<long long>(s.k),
                static_cast<long long>(s.v), mode == "prefill" ? std::to_string(chunk).c_str() : "", dname.c_str(),
                dev.c_str(), m.median_us, tokens / (m.median_us * 1e-6), bytes / (m.median_us * 1e-6) / 1e9,
                kernel.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace rudnn::bench
