// rudnn-bench moe: the MoE forward step by step (SPEC §3, issue 4 item 8) on warm plans.
// CSV: step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops
//   step      route (softmax top-k) | dispatch | experts | combine | forward (route → dispatch →
//             experts → combine, as one chain of the public calls)
//   strategy  scalar | tensorcore for experts and forward (GroupedStrategy), empty otherwise
//   tflops    the expert GEMMs' 3·2·T·top_k·H·I flops over the time, for experts and forward rows
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "benchmarks.h"
#include "rudnn/moe.h"

namespace rudnn::bench {
namespace {

constexpr const char* kUsage = R"(usage: rudnn-bench moe [options]

Times the MoE forward's steps on one device: route (softmax top-k, renormalized), dispatch,
experts (SwiGLU, per strategy, via forward_dispatched_with_strategy), combine, and the whole
forward (the four public calls in a chain), each on fixed warm inputs.
CSV: step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops
(tflops: 3·2·T·top_k·H·I expert-GEMM flops per second, on experts and forward rows; else empty)

options:
  --tokens T                 repeatable (default 16, 512, 4096)
  --experts E                repeatable (default 64, 256)
  --hidden H                 (default 4096)
  --inter I                  (default 1408)
  --top-k K                  (default 8)
  --dtype f32|f16|bf16       (default bf16; TensorCore needs f16/bf16)
  --steps a,b,...            subset of route,dispatch,experts,combine,forward (default all)
  --strategies a,b           subset of scalar,tensorcore (default both)
)";

constexpr const char* kExample = R"(
Inputs: logits ~ N(0, 1); input ~ U(−1, 1); gate/up ~ U(±1.5/√H), down ~ U(±1.5/√I).

example:
  rudnn-bench moe --device cuda:0 --tokens 4096 --experts 256 --strategies tensorcore --iters 10
)";

std::optional<std::vector<std::string>> split_subset(const std::string& v, const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) {
    bool known = false;
    for (const auto& a : allowed) known = known || a == s;
    if (!known) return std::nullopt;
    out.push_back(s);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

}  // namespace

int run_moe(int argc, char** argv) {
  if (wants_help(argc, argv, 2)) {
    std::printf("%s%s%s", kUsage, kCommonOptionsHelp, kExample);
    return 0;
  }
  std::optional<Device> chosen;  // --device; else Device::default_device(), resolved after the options
  Timing timing;
  std::vector<std::int64_t> tokens, experts_list;
  std::int64_t hidden = 4096, inter = 1408, top_k = 8;
  DType dtype = DType::BF16;
  const std::vector<std::string> all_steps = {"route", "dispatch", "experts", "combine", "forward"};
  std::vector<std::string> steps = all_steps, strategies = {"scalar", "tensorcore"};
  auto bad =
      parse_options(argc, argv, 2, [&](const std::string& a, const std::string& v) -> std::optional<std::string> {
        std::optional<std::string> error;
        if (common_option(a, v, &chosen, &timing, &error)) return error;
        auto positive = [&](std::int64_t* into) { return int_option(a, v, 1, INT64_MAX, into); };
        std::int64_t n = 0;
        if (a == "--tokens" || a == "--experts") {
          if (auto e = positive(&n)) return e;
          (a == "--tokens" ? tokens : experts_list).push_back(n);
        } else if (a == "--hidden") {
          return positive(&hidden);
        } else if (a == "--inter") {
          return positive(&inter);
        } else if (a == "--top-k") {
          return positive(&top_k);
        } else if (a == "--dtype") {
          auto t = parse_dtype(v);
          if (!t || !is_float(*t)) return "--dtype wants f32, f16 or bf16, got " + v;
          dtype = *t;
        } else if (a == "--steps") {
          auto s = split_subset(v, all_steps);
          if (!s) return "--steps wants a subset of route,dispatch,experts,combine,forward, got " + v;
          steps = *s;
        } else if (a == "--strategies") {
          auto s = split_subset(v, {"scalar", "tensorcore"});
          if (!s) return "--strategies wants a subset of scalar,tensorcore, got " + v;
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
  if (tokens.empty()) tokens = {16, 512, 4096};
  if (experts_list.empty()) experts_list = {64, 256};
  for (std::int64_t e : experts_list)
    if (top_k > e) return fail("--top-k " + std::to_string(top_k) + " exceeds --experts " + std::to_string(e));

  const std::string dname(dtype_name(dtype)), dev = device.to_string();
  std::printf("step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops\n");
  std::fflush(stdout);
  std::mt19937_64 rng(1);
  for (std::int64_t e : experts_list) {
    const double a = 1.5 / std::sqrt(static_cast<double>(hidden)), b = 1.5 / std::sqrt(static_cast<double>(inter));
    auto gate = uniform_tensor({e, inter, hidden}, dtype, device, -a, a, rng);
    auto up = uniform_tensor({e, inter, hidden}, dtype, device, -a, a, rng);
    auto down = uniform_tensor({e, hidden, inter}, dtype, device, -b, b, rng);
    for (auto* t : {&gate, &up, &down})
      if (!t->ok()) return fail(t->error().message());
    auto experts = moe::SwiGluExperts::create(*gate, *up, *down);
    if (!experts.ok()) return fail(experts.error().message());
    for (std::int64_t t : tokens) {
      auto logits = normal_tensor({t, e}, dtype, device, 0, 1, rng);
      auto x = uniform_tensor({t, hidden}, dtype, device, -1, 1, rng);
      if (!logits.ok() || !x.ok()) return fail(!logits.ok() ? logits.error().message() : x.error().message());
      const moe::RoutingOptions options{top_k, true};
      // Fixed inputs of each step: the routing, its dispatch, and expert rows.
      auto routing = moe::route(*logits, options);
      if (!routing.ok()) return fail(routing.error().message());
      auto dispatched = routing->dispatch(*x);
      if (!dispatched.ok()) return fail(dispatched.error().message());
      auto rows = experts->forward_dispatched_with_strategy(*dispatched, moe::GroupedStrategy::Auto);
      if (!rows.ok()) return fail(rows.error().message());
      const Queue& queue = x->queue();
      const double flops = 6.0 * static_cast<double>(t) * static_cast<double>(top_k) * static_cast<double>(hidden) *
                           static_cast<double>(inter);
      auto line = [&](const std::string& step, const std::string& strategy, const Measured& m, bool gemm) {
        std::printf(
            "%s,%lld,%lld,%lld,%lld,%lld,%s,%s,%s,%.2f,%s\n", step.c_str(), static_cast<long long>(t),
            static_cast<long long>(e), static_cast<long long>(hidden), static_cast<long long>(inter),
            static_cast<long long>(top_k), dname.c_str(), strategy.c_str(), dev.c_str(), m.median_us,
            csv_number(gemm ? std::optional<double>(flops / (m.median_us * 1e-6) / 1e12) : std::nullopt, 3).c_str());
        std::fflush(stdout);
      };
      auto ok_or = [](const auto& r) -> std::optional<std::string> {
        if (!r.ok()) return r.error().message();
        return std::nullopt;
      };
      auto strategy_of = [](const std::string& s) {
        return s == "scalar" ? moe::GroupedStrategy::Scalar : moe::GroupedStrategy::TensorCore;
      };
      std::vector<std::string> unsupported;
      std::string last_error;
      for (const auto& step : steps) {
        if (step == "route" || step == "dispatch" || step == "combine") {
          const Measured m = time_call(queue, timing, [&]() -> std::optional<std::string> {
            if (step == "route") return ok_or(moe::route(*logits, options));
            if (step == "dispatch") return ok_or(routing->dispatch(*x));
            return ok_or(dispatched->combine(*rows));
          });
          if (!m.ok()) return fail(step + ": " + m.error);
          line(step, "", m, false);
          continue;
        }
        for (const auto& s : strategies) {
          // TensorCore on an unsupported configuration (f32, H or I not a multiple of 8) is skipped
          // with a note (the contract check launches nothing); every other failure ends the run.
          if (has(unsupported, s)) continue;
          const auto strategy = strategy_of(s);
          bool rejected = false;
          auto experts_call = [&](const moe::Dispatched& d) -> std::optional<Tensor> {
            auto y = experts->forward_dispatched_with_strategy(d, strategy);
            if (y.ok()) return std::move(y.value());
            rejected = y.error().kind() == ErrorKind::Unsupported;
            last_error = y.error().message();
            return std::nullopt;
          };
          const Measured m = time_call(queue, timing, [&]() -> std::optional<std::string> {
            if (step == "experts") {
              if (!experts_call(*dispatched)) return last_error;
              return std::nullopt;
            }
            auto r = moe::route(*logits, options);
            if (!r.ok()) return r.error().message();
            auto d = r->dispatch(*x);
            if (!d.ok()) return d.error().message();
            auto y = experts_call(*d);
            if (!y) return last_error;
            return ok_or(d->combine(*y));
          });
          if (rejected) {
            std::fprintf(stderr, "rudnn-bench: note: %s skipped: %s\n", s.c_str(), m.error.c_str());
            unsupported.push_back(s);
            continue;
          }
          if (!m.ok()) return fail(step + " (" + s + "): " + m.error);
          line(step, s, m, true);
        }
      }
    }
  }
  return 0;
}

}  // namespace rudnn::bench
