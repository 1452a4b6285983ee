// rudnn-bench moe-backward: the MoE first-order backward (SPEC §10, issue 14 item 7) step by step on
// warm plans, over a fixed training forward (route → into_training → dispatch → experts' training
// forward).
// CSV: step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops,overhead_pct,max_err,check
//   step          router (selected_router_backward) | combine (Dispatched::combine_backward) |
//                 experts (SwiGluTrainingCache::backward_with_strategy) | dispatch (dispatch_backward) |
//                 backward (the whole step: combine → experts → dispatch → router, the public calls)
//   strategy      combine: serial | plane (CombineGradientStrategy); experts, backward: scalar |
//                 tensorcore (GroupedStrategy); empty otherwise
//   tflops        experts, backward: the experts backward's GEMM flops 16·N·H·I (N = T·top_k: recomputed
//                 gate/up 2·2NHI, dHh 2NHI, dX 2·2NHI, dgate/dup/ddown 3·2NHI) over the time
//   overhead_pct  backward: router + combine (serial) + dispatch backward as a % of the step's time
//   max_err       the largest |got − FP64| / max |FP64| of the row's checked values; check = ok | FAIL |
//                 unsupported (a strategy this build or device cannot serve: no time, the run goes on)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "benchmarks.h"
#include "device_copy.h"
#include "rudnn/moe.h"

namespace rudnn::bench {
namespace {

constexpr const char* kUsage = R"(usage: rudnn-bench moe-backward [options]

Times the MoE layer's first-order backward on one device, over one training forward per shape
(softmax top-k routing, RoutingPlan::into_training with Softmax renormalized weights, dispatch,
SwiGluExperts::forward_dispatched_training) and a random output gradient: router backward
(selected_router_backward), combine backward (Serial, Plane), the experts backward (per strategy),
dispatch backward, and the whole backward step (the four public calls in a chain), each on fixed warm
inputs. Each row's result is checked once: every output finite and not all zero, and a slice against
an FP64 computation over the same inputs (router and combine: 3 tokens; experts: the dgate and dup
rows and the ddown column of one intermediate unit of the busiest expert, and that expert's first
dinput row; dispatch: 3 tokens; the step: dx and dlogits bitwise equal to the parts'). A failed check
prints check=FAIL and the run exits 1 after the remaining rows; an unsupported strategy (TensorCore
for F32 weights, H or I not a multiple of 8, or a device without mma.sync) prints a row with
check=unsupported and no time.
CSV: step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops,overhead_pct,max_err,check

options (host emulation device defaults in brackets: a smoke test of seconds):
  --tokens T                 repeatable (default 512, 4096 [16])
  --experts E                repeatable (default 64 [8])
  --hidden H                 (default 4096 [64])
  --inter I                  (default 1408 [32])
  --top-k K                  (default 8 [2])
  --dtype f32|f16|bf16       (default bf16)
  --steps a,b,...            subset of router,combine,experts,dispatch,backward (default all)
  --strategies a,b           experts and backward: subset of scalar,tensorcore (default both)
  --combine a,b              combine rows: subset of serial,plane (default both; the step uses serial)
  --check 0|1                check each row's result (default 1)
)";

constexpr const char* kExample = R"(
Inputs: logits ~ N(0, 1); input ~ U(−1, 1); gate/up ~ U(±1.5/√H), down ~ U(±1.5/√I); grad_output ~
U(−1, 1). On the host emulation device --iters 1 --runs 2 unless given. No dense GEMM rate is
measured here (scripts/bench_moe_backward_torch.py measures torch's for the Targets).

example:
  rudnn-bench moe-backward --device cuda:0 --tokens 4096 --strategies scalar --budget-ms 1000
)";

std::optional<std::vector<std::string>> split_subset(const std::string& v, const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) {
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) return std::nullopt;
    out.push_back(s);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::size_t sz(std::int64_t n) { return static_cast<std::size_t>(n); }

double tolerance(DType dtype) { return dtype == DType::BF16 ? 2e-2 : dtype == DType::F16 ? 5e-3 : 1e-4; }

// ---- reading results back

// Elements [first, first + count) of a contiguous tensor as doubles: the whole tensor through
// to_host, else through a staging tensor on its queue (copy_bytes), so a slice of a GB-sized
// gradient costs only its own bytes.
Result<std::vector<double>, RuntimeError> read_range(const Tensor& t, std::int64_t first, std::int64_t count) {
  if (first == 0 && count == t.numel()) {
    auto h = to_host(t);
    if (!h.ok()) return h.error();
    return h->to_f64();
  }
  auto staging = Tensor::empty({count}, t.dtype(), t.queue());
  if (!staging.ok()) return staging.error();
  const std::size_t es = dtype_size(t.dtype());
  if (auto s = copy_bytes(*staging, 0, t, sz(first) * es, sz(count) * es); !s.ok()) return s.error();
  auto h = to_host(*staging);
  if (!h.ok()) return h.error();
  return h->to_f64();
}

float element(const std::byte* p, DType dtype) {
  if (dtype == DType::F32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t b;
  std::memcpy(&b, p, 2);
  return dtype == DType::BF16 ? bf16_bits_to_float(b) : half_bits_to_float(b);
}

// Every element of a float tensor finite, and (unless `zeros_allowed`) not all zero: an error
// message or nullopt. Read in chunks of 8M elements (the weight gradients are GBs at the GPU shapes).
std::optional<std::string> scan(const Tensor& t, const char* name, bool zeros_allowed = false) {
  constexpr std::int64_t kChunk = 8 << 20;
  const std::int64_t n = t.numel();
  const std::size_t es = dtype_size(t.dtype());
  std::optional<Tensor> staging;
  auto read_chunk = [&](std::int64_t first, std::int64_t count) -> Result<HostData, RuntimeError> {
    if (count == n) return to_host(t);
    if (!staging) {
      auto s = Tensor::empty({kChunk}, t.dtype(), t.queue());
      if (!s.ok()) return s.error();
      staging = std::move(s.value());
    }
    if (auto s = copy_bytes(*staging, 0, t, sz(first) * es, sz(count) * es); !s.ok()) return s.error();
    return to_host(*staging);
  };
  bool nonzero = false;
  for (std::int64_t first = 0; first < n; first += kChunk) {
    const std::int64_t count = std::min(kChunk, n - first);
    auto h = read_chunk(first, count);
    if (!h.ok()) return std::string(name) + ": reading back: " + h.error().message();
    const std::byte* p = h->bytes.data();
    for (std::int64_t i = 0; i < count; ++i) {
      const float v = element(p + sz(i) * es, t.dtype());
      if (!std::isfinite(v)) return std::string(name) + ": a non-finite value at element " + std::to_string(first + i);
      nonzero = nonzero || v != 0.0f;
    }
  }
  if (!nonzero && !zeros_allowed) return std::string(name) + ": every value is zero";
  return std::nullopt;
}

// ---- the checks

struct Check {
  double max_err = 0;
  std::string problem;  // empty: passed
  bool ran = false;
  // got against want: max |got − want| / max |want| into max_err.
  void compare(const std::vector<double>& got, const std::vector<double>& want) {
    double err = 0, scale = 1e-30;
    for (std::size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, std::abs(want[i]));
      const double d = std::abs(got[i] - want[i]);
      err = std::isnan(d) ? INFINITY : std::max(err, d);
    }
    max_err = std::max(max_err, err / scale);
  }
  void fail(const std::string& p) {
    if (problem.empty()) problem = p;
  }
  void finish(DType dtype) {
    ran = true;
    if (problem.empty() && !(max_err <= tolerance(dtype)))
      problem = "max_err " + scientific(max_err) + " over the tolerance " + scientific(tolerance(dtype));
  }
};

// The checked tokens: first, middle, last.
std::vector<std::int64_t> check_tokens(std::int64_t t) {
  std::vector<std::int64_t> v{0, t / 2, t - 1};
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

#define TRY_READ(var, expr)            \
  auto var##_r = (expr);               \
  if (!var##_r.ok()) {                 \
    c.fail(var##_r.error().message()); \
    return c;                          \
  }                                    \
  const std::vector<double>& var = var##_r.value()

// Everything one shape's checks read: the forward's tensors and the options.
struct Inputs {
  const Tensor* logits;
  const Tensor* grad_output;
  const moe::RouterTrainingPlan* training;
  const moe::Dispatched* dispatched;
  const moe::SwiGluExperts* experts;
  const Tensor* expert_output;
  std::int64_t tokens, experts_n, hidden, inter, top_k;
  DType dtype;
};

// Router backward, Softmax renormalized, scale 1: w_j = exp(x_{i_j}) / Σ_m exp(x_{i_m}), so
// dx_e = Σ_{j: i_j = e} g_j w_j − (Σ_j g_j w_j) · Σ_{m: i_m = e} w_m (0 off the selection; all 0
// at top_k = 1, where the one weight is 1).
Check check_router(const Inputs& in, const Tensor& dweights, const Tensor& dlogits) {
  Check c;
  if (auto e = scan(dlogits, "dlogits", in.top_k == 1)) c.fail(*e);
  const std::int64_t E = in.experts_n, K = in.top_k;
  for (std::int64_t t : check_tokens(in.tokens)) {
    TRY_READ(x, read_range(*in.logits, t * E, E));
    TRY_READ(idx, read_range(in.training->routing().expert_indices(), t * K, K));
    TRY_READ(g, read_range(dweights, t * K, K));
    TRY_READ(got, read_range(dlogits, t * E, E));
    double top = -INFINITY, total = 0, gw = 0;
    for (std::int64_t j = 0; j < K; ++j) top = std::max(top, x[sz(static_cast<std::int64_t>(idx[sz(j)]))]);
    std::vector<double> w(sz(K)), want(sz(E), 0.0);
    for (std::int64_t j = 0; j < K; ++j)
      total += w[sz(j)] = std::exp(x[sz(static_cast<std::int64_t>(idx[sz(j)]))] - top);
    for (std::int64_t j = 0; j < K; ++j) gw += g[sz(j)] * (w[sz(j)] /= total);
    for (std::int64_t j = 0; j < K; ++j) want[sz(static_cast<std::int64_t>(idx[sz(j)]))] += w[sz(j)] * (g[sz(j)] - gw);
    c.compare(got, want);
  }
  c.finish(in.dtype);
  return c;
}

// combine backward: dexpert[slots[t, j]] = w[t, j] · gy[t]; dweights[t, j] = Σ_h gy[t, h] · y[slots[t, j], h].
Check check_combine(const Inputs& in, const moe::CombineGradients& cg) {
  Check c;
  if (auto e = scan(cg.dexpert, "dexpert")) c.fail(*e);
  if (auto e = scan(cg.dweights, "dweights")) c.fail(*e);
  const std::int64_t H = in.hidden, K = in.top_k;
  for (std::int64_t t : check_tokens(in.tokens)) {
    TRY_READ(slots, read_range(in.dispatched->slots(), t * K, K));
    TRY_READ(w, read_range(in.training->routing().weights(), t * K, K));
    TRY_READ(gy, read_range(*in.grad_output, t * H, H));
    TRY_READ(dw, read_range(cg.dweights, t * K, K));
    std::vector<double> want_dw(sz(K));
    for (std::int64_t j = 0; j < K; ++j) {
      const auto s = static_cast<std::int64_t>(slots[sz(j)]);
      TRY_READ(y, read_range(*in.expert_output, s * H, H));
      TRY_READ(dy, read_range(cg.dexpert, s * H, H));
      std::vector<double> want(sz(H));
      for (std::int64_t h = 0; h < H; ++h) {
        want[sz(h)] = w[sz(j)] * gy[sz(h)];
        want_dw[sz(j)] += gy[sz(h)] * y[sz(h)];
      }
      c.compare(dy, want);
    }
    c.compare(dw, want_dw);
  }
  c.finish(in.dtype);
  return c;
}

// dispatch backward: dx[t] = Σ_j dinput[slots[t, j]].
Check check_dispatch(const Inputs& in, const Tensor& dinput, const Tensor& dx) {
  Check c;
  if (auto e = scan(dx, "dx")) c.fail(*e);
  const std::int64_t H = in.hidden, K = in.top_k;
  for (std::int64_t t : check_tokens(in.tokens)) {
    TRY_READ(slots, read_range(in.dispatched->slots(), t * K, K));
    TRY_READ(got, read_range(dx, t * H, H));
    std::vector<double> want(sz(H), 0.0);
    for (std::int64_t j = 0; j < K; ++j) {
      TRY_READ(row, read_range(dinput, static_cast<std::int64_t>(slots[sz(j)]) * H, H));
      for (std::int64_t h = 0; h < H; ++h) want[sz(h)] += row[sz(h)];
    }
    c.compare(got, want);
  }
  c.finish(in.dtype);
  return c;
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// The experts backward for the busiest expert e and one intermediate unit i (docs/moe.md): with
// A = X·gate_eᵀ, B = X·up_eᵀ over e's rows X and their gradient dY, dHh = dY·down_e,
// dA = dHh ⊙ B ⊙ silu'(A), dB = dHh ⊙ silu(A), Hh = silu(A) ⊙ B: dgate[e, i, :] = Σ_r dA[r, i] X[r],
// dup[e, i, :] = Σ_r dB[r, i] X[r], ddown[e, :, i] = Σ_r dY[r] Hh[r, i]; and e's first row of dinput,
// dX[r] = Σ_i dA[r, i] gate_e[i] + dB[r, i] up_e[i].
Check check_experts(const Inputs& in, const Tensor& dexpert, const moe::ExpertGradients& g) {
  Check c;
  const std::pair<const Tensor*, const char*> all[] = {
      {&g.dinput, "dinput"}, {&g.dgate, "dgate"}, {&g.dup, "dup"}, {&g.ddown, "ddown"}};
  for (auto [t, name] : all)
    if (auto e = scan(*t, name)) c.fail(*e);
  const std::int64_t E = in.experts_n, H = in.hidden, I = in.inter;
  TRY_READ(offsets, read_range(in.dispatched->expert_offsets(), 0, E + 1));
  std::int64_t e = 0;
  for (std::int64_t k = 1; k < E; ++k)
    if (offsets[sz(k + 1)] - offsets[sz(k)] > offsets[sz(e + 1)] - offsets[sz(e)]) e = k;
  const auto r0 = static_cast<std::int64_t>(offsets[sz(e)]);
  const std::int64_t n = static_cast<std::int64_t>(offsets[sz(e + 1)]) - r0, i = I / 3;
  TRY_READ(x, read_range(in.dispatched->rows(), r0 * H, n * H));
  TRY_READ(dy, read_range(dexpert, r0 * H, n * H));
  TRY_READ(gate, read_range(in.experts->gate(), e * I * H, I * H));
  TRY_READ(up, read_range(in.experts->up(), e * I * H, I * H));
  TRY_READ(down, read_range(in.experts->down(), e * H * I, H * I));
  TRY_READ(dgate, read_range(g.dgate, (e * I + i) * H, H));
  TRY_READ(dup, read_range(g.dup, (e * I + i) * H, H));
  TRY_READ(ddown_e, read_range(g.ddown, e * H * I, H * I));
  TRY_READ(dx0, read_range(g.dinput, r0 * H, H));
  // One row r, unit u: (dA, dB, Hh).
  auto unit = [&](std::int64_t r, std::int64_t u, double* da, double* db, double* hh) {
    double a = 0, b = 0, dh = 0;
    for (std::int64_t h = 0; h < H; ++h) {
      const double xv = x[sz(r * H + h)];
      a += xv * gate[sz(u * H + h)];
      b += xv * up[sz(u * H + h)];
      dh += dy[sz(r * H + h)] * down[sz(h * I + u)];
    }
    const double s = sigmoid(a), silu = a * s;
    *da = dh * b * s * (1.0 + a * (1.0 - s));
    *db = dh * silu;
    *hh = silu * b;
  };
  std::vector<double> want_gate(sz(H), 0.0), want_up(sz(H), 0.0), want_down(sz(H), 0.0), got_down(sz(H));
  for (std::int64_t r = 0; r < n; ++r) {
    double da, db, hh;
    unit(r, i, &da, &db, &hh);
    for (std::int64_t h = 0; h < H; ++h) {
      want_gate[sz(h)] += da * x[sz(r * H + h)];
      want_up[sz(h)] += db * x[sz(r * H + h)];
      want_down[sz(h)] += dy[sz(r * H + h)] * hh;
    }
  }
  for (std::int64_t h = 0; h < H; ++h) got_down[sz(h)] = ddown_e[sz(h * I + i)];
  c.compare(dgate, want_gate);
  c.compare(dup, want_up);
  c.compare(got_down, want_down);
  if (n > 0) {
    std::vector<double> want_dx(sz(H), 0.0);
    for (std::int64_t u = 0; u < I; ++u) {
      double da, db, hh;
      unit(0, u, &da, &db, &hh);
      for (std::int64_t h = 0; h < H; ++h) want_dx[sz(h)] += da * gate[sz(u * H + h)] + db * up[sz(u * H + h)];
    }
    c.compare(dx0, want_dx);
  }
  c.finish(in.dtype);
  return c;
}

// The step's dx and dlogits: finite, not all zero (dlogits_zero: dlogits may be), and (when `parts` is given) bitwise
// equal to the results of the separately timed parts (every reduction runs in a fixed order: the same bits).
Check check_step(const Tensor& dx, const Tensor& dlogits, const Tensor* parts_dx, const Tensor* parts_dlogits,
                 DType dtype, bool dlogits_zero) {
  Check c;
  if (auto e = scan(dx, "dx")) c.fail(*e);
  if (auto e = scan(dlogits, "dlogits", dlogits_zero)) c.fail(*e);
  if (parts_dx && parts_dlogits) {
    const std::pair<const Tensor*, const Tensor*> pairs[] = {{&dx, parts_dx}, {&dlogits, parts_dlogits}};
    for (auto [a, b] : pairs) {
      auto ha = to_host(*a), hb = to_host(*b);
      if (!ha.ok() || !hb.ok()) {
        c.fail("reading back: " + (!ha.ok() ? ha.error().message() : hb.error().message()));
        break;
      }
      if (ha->bytes != hb->bytes) c.fail(std::string(a == &dx ? "dx" : "dlogits") + " differs from the parts' bits");
    }
  }
  c.finish(dtype);
  return c;
}

#undef TRY_READ

}  // namespace

int run_moe_backward(int argc, char** argv) {
  if (wants_help(argc, argv, 2)) {
    std::printf("%s%s%s", kUsage, kCommonOptionsHelp, kExample);
    return 0;
  }
  std::optional<Device> chosen;
  Timing timing;
  bool timing_given = false, verify = true;
  std::vector<std::int64_t> tokens, experts_list;
  std::int64_t hidden = 0, inter = 0, top_k = 0;  // 0: the device's default
  DType dtype = DType::BF16;
  const std::vector<std::string> all_steps = {"router", "combine", "experts", "dispatch", "backward"};
  std::vector<std::string> steps = all_steps, strategies = {"scalar", "tensorcore"}, combines = {"serial", "plane"};
  auto bad =
      parse_options(argc, argv, 2, [&](const std::string& a, const std::string& v) -> std::optional<std::string> {
        std::optional<std::string> error;
        if (common_option(a, v, &chosen, &timing, &error)) {
          timing_given = timing_given || a == "--iters" || a == "--runs";
          return error;
        }
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
          return int_option(a, v, 1, 64, &top_k);
        } else if (a == "--dtype") {
          auto t = parse_dtype(v);
          if (!t || !is_float(*t)) return "--dtype wants f32, f16 or bf16, got " + v;
          dtype = *t;
        } else if (a == "--steps") {
          auto s = split_subset(v, all_steps);
          if (!s) return "--steps wants a subset of router,combine,experts,dispatch,backward, got " + v;
          steps = *s;
        } else if (a == "--strategies") {
          auto s = split_subset(v, {"scalar", "tensorcore"});
          if (!s) return "--strategies wants a subset of scalar,tensorcore, got " + v;
          strategies = *s;
        } else if (a == "--combine") {
          auto s = split_subset(v, {"serial", "plane"});
          if (!s) return "--combine wants a subset of serial,plane, got " + v;
          combines = *s;
        } else if (a == "--check") {
          if (v != "1" && v != "0") return "--check wants 1 or 0, got " + v;
          verify = v == "1";
        } else {
          return "unknown option " + a;
        }
        return std::nullopt;
      });
  if (bad) return fail(*bad);
  auto resolved = chosen ? Result<Device, RuntimeError>(*chosen) : Device::default_device();
  if (!resolved.ok()) return fail(resolved.error().message());
  const Device device = resolved.value();
  const bool host = device.kind() == DeviceKind::Host;
  if (tokens.empty()) tokens = host ? std::vector<std::int64_t>{16} : std::vector<std::int64_t>{512, 4096};
  if (experts_list.empty()) experts_list = {host ? 8 : 64};
  if (hidden == 0) hidden = host ? 64 : 4096;
  if (inter == 0) inter = host ? 32 : 1408;
  if (top_k == 0) top_k = host ? 2 : 8;
  for (std::int64_t e : experts_list)
    if (top_k > e) return fail("--top-k " + std::to_string(top_k) + " exceeds --experts " + std::to_string(e));
  if (host && !timing_given) {
    timing.iters = 1;
    timing.runs = 2;
  }

  const std::string dname(dtype_name(dtype)), dev = device.to_string();
  std::printf(
      "step,tokens,experts,hidden,inter,top_k,dtype,strategy,device,median_us,tflops,overhead_pct,max_err,check\n");
  std::fflush(stdout);
  bool any_failed = false;
  std::mt19937_64 rng(1);
  const moe::RouterWeightOptions router_options{moe::RouterScoring::Softmax, true, 1.0f};
  for (std::int64_t e : experts_list) {
    const double a = 1.5 / std::sqrt(static_cast<double>(hidden)), b = 1.5 / std::sqrt(static_cast<double>(inter));
    auto gate = uniform_tensor({e, inter, hidden}, dtype, device, -a, a, rng);
    auto up = gate.ok() ? uniform_tensor({e, inter, hidden}, dtype, device, -a, a, rng) : gate;
    auto down = up.ok() ? uniform_tensor({e, hidden, inter}, dtype, device, -b, b, rng) : up;
    if (!down.ok()) return fail(down.error().message());
    auto experts = moe::SwiGluExperts::create(*gate, *up, *down);
    if (!experts.ok()) return fail(experts.error().message());
    for (std::int64_t t : tokens) {
      const std::string what = "T=" + std::to_string(t) + " E=" + std::to_string(e);
      auto logits = normal_tensor({t, e}, dtype, device, 0, 1, rng);
      auto x = logits.ok() ? uniform_tensor({t, hidden}, dtype, device, -1, 1, rng) : logits;
      auto gy = x.ok() ? uniform_tensor({t, hidden}, dtype, device, -1, 1, rng) : x;
      if (!gy.ok()) return fail(what + ": " + gy.error().message());
      // The training forward, then the backward chain once (untimed): the fixed inputs of each part.
      auto routing = moe::route(*logits, {top_k, true});
      if (!routing.ok()) return fail(what + ": route: " + routing.error().message());
      auto training = routing->into_training(*logits, router_options);
      if (!training.ok()) return fail(what + ": into_training: " + training.error().message());
      auto dispatched = training->routing().dispatch(*x);
      if (!dispatched.ok()) return fail(what + ": dispatch: " + dispatched.error().message());
      auto fwd = experts->forward_dispatched_training(*dispatched, moe::GroupedStrategy::Auto);
      if (!fwd.ok()) return fail(what + ": forward_dispatched_training: " + fwd.error().message());
      auto cg0 = dispatched->combine_backward(fwd->output, *gy);
      if (!cg0.ok()) return fail(what + ": combine_backward: " + cg0.error().message());
      auto eg0 = fwd->cache.backward(cg0->dexpert);
      if (!eg0.ok()) return fail(what + ": experts backward: " + eg0.error().message());
      auto dx0 = dispatched->dispatch_backward(eg0->dinput);
      if (!dx0.ok()) return fail(what + ": dispatch_backward: " + dx0.error().message());
      auto dl0 = training->backward(cg0->dweights);
      if (!dl0.ok()) return fail(what + ": router backward: " + dl0.error().message());
      const Inputs in{&*logits, &*gy, &*training, &*dispatched, &*experts, &fwd->output,
                      t,        e,    hidden,     inter,        top_k,     dtype};

      const Queue& queue = x->queue();
      const double n_rows = static_cast<double>(t) * static_cast<double>(top_k);
      const double flops = 16.0 * n_rows * static_cast<double>(hidden) * static_cast<double>(inter);
      auto line = [&](const std::string& step, const std::string& strategy, std::optional<double> us, bool gemm,
                      std::optional<double> overhead, const Check& c, bool unsupported) {
        const bool ok = c.problem.empty();
        const std::string check = unsupported ? "unsupported" : verify && c.ran ? (ok ? "ok" : "FAIL") : "";
        std::printf(
            "%s,%lld,%lld,%lld,%lld,%lld,%s,%s,%s,%s,%s,%s,%s,%s\n", step.c_str(), static_cast<long long>(t),
            static_cast<long long>(e), static_cast<long long>(hidden), static_cast<long long>(inter),
            static_cast<long long>(top_k), dname.c_str(), strategy.c_str(), dev.c_str(), csv_number(us, 2).c_str(),
            csv_number(gemm && us ? std::optional<double>(flops / (*us * 1e-6) / 1e12) : std::nullopt, 3).c_str(),
            csv_number(overhead, 1).c_str(), verify && c.ran ? scientific(c.max_err).c_str() : "", check.c_str());
        std::fflush(stdout);
        if (!unsupported && verify && c.ran && !ok) {
          std::fprintf(stderr, "rudnn-bench: check FAILED: %s %s %s: %s\n", step.c_str(), strategy.c_str(),
                       what.c_str(), c.problem.c_str());
          any_failed = true;
        }
      };
      auto strategy_of = [](const std::string& s) {
        return s == "scalar" ? moe::GroupedStrategy::Scalar : moe::GroupedStrategy::TensorCore;
      };
      std::optional<double> router_us, combine_us, dispatch_us;  // the step's overhead parts
      std::vector<std::string> unsupported;
      for (const auto& step : steps) {
        if (step == "router") {
          std::optional<Tensor> last;
          const Measured m = time_call(queue, timing, [&]() -> std::optional<std::string> {
            auto r = moe::selected_router_backward(*logits, training->routing().expert_indices(), cg0->dweights,
                                                   router_options);
            if (!r.ok()) return r.error().message();
            last = std::move(r.value());
            return std::nullopt;
          });
          if (!m.ok()) return fail(what + ": router: " + m.error);
          router_us = m.median_us;
          line(step, "", m.median_us, false, std::nullopt, verify ? check_router(in, cg0->dweights, *last) : Check{},
               false);
        } else if (step == "combine") {
          for (const auto& s : combines) {
            const auto strategy =
                s == "plane" ? moe::CombineGradientStrategy::Plane : moe::CombineGradientStrategy::Serial;
            std::optional<moe::CombineGradients> last;
            const Measured m = time_call(queue, timing, [&]() -> std::optional<std::string> {
              auto r = dispatched->combine_backward_with_strategy(fwd->output, *gy, strategy);
              if (!r.ok()) return r.error().message();
              last = std::move(r.value());
              return std::nullopt;
            });
            if (!m.ok()) return fail(what + ": combine (" + s + "): " + m.error);
            if (s == "serial") combine_us = m.median_us;
            line(step, s, m.median_us, false, std::nullopt, verify ? check_combine(in, *last) : Check{}, false);
          }
        } else if (step == "dispatch") {
          std::optional<Tensor> last;
          const Measured m = time_call(queue, timing, [&]() -> std::optional<std::string> {
            auto r = dispatched->dispatch_backward(eg0->dinput);
            if (!r.ok()) return r.error().message();
            last = std::move(r.value());
            return std::nullopt;
          });
          if (!m.ok()) return fail(what + ": dispatch: " + m.error);
          dispatch_us = m.median_us;
          line(step, "", m.median_us, false, std::nullopt, verify ? check_dispatch(in, eg0->dinput, *last) : Check{},
               false);
        } else {  // experts, backward: per strategy
          for (const auto& s : strategies) {
            if (has(unsupported, s)) {
              line(step, s, std::nullopt, false, std::nullopt, Check{}, true);
              continue;
            }
            const auto strategy = strategy_of(s);
            bool rejected = false;
            std::string last_error;
            auto experts_call = [&](const Tensor& dexpert) -> std::optional<moe::ExpertGradients> {
              auto g = fwd->cache.backward_with_strategy(dexpert, strategy);
              if (g.ok()) return std::move(g.value());
              rejected = g.error().kind() == ErrorKind::Unsupported;
              last_error = g.error().message();
              return std::nullopt;
            };
            std::optional<moe::ExpertGradients> last_g;
            std::optional<Tensor> last_dx, last_dl;
            const Measured m = time_call(queue, timing, [&]() -> std::optional<std::string> {
              if (step == "experts") {
                last_g = experts_call(cg0->dexpert);
                if (!last_g) return last_error;
                return std::nullopt;
              }
              auto cg = dispatched->combine_backward(fwd->output, *gy);
              if (!cg.ok()) return cg.error().message();
              auto g = experts_call(cg->dexpert);
              if (!g) return last_error;
              auto dx = dispatched->dispatch_backward(g->dinput);
              if (!dx.ok()) return dx.error().message();
              auto dl = training->backward(cg->dweights);
              if (!dl.ok()) return dl.error().message();
              last_dx = std::move(dx.value());
              last_dl = std::move(dl.value());
              return std::nullopt;
            });
            if (rejected) {
              // The contract check launches nothing: a row saying so, then the run goes on.
              std::fprintf(stderr, "rudnn-bench: note: %s %s unsupported: %s\n", step.c_str(), s.c_str(),
                           m.error.c_str());
              unsupported.push_back(s);
              line(step, s, std::nullopt, false, std::nullopt, Check{}, true);
              continue;
            }
            if (!m.ok()) return fail(what + ": " + step + " (" + s + "): " + m.error);
            if (step == "experts") {
              line(step, s, m.median_us, true, std::nullopt,
                   verify ? check_experts(in, cg0->dexpert, *last_g) : Check{}, false);
              continue;
            }
            // The overhead share needs each part; a part left out of --steps is timed here, unprinted.
            auto part = [&](std::optional<double>& into, const Call& call) -> std::optional<std::string> {
              if (into) return std::nullopt;
              const Measured pm = time_call(queue, timing, call);
              if (!pm.ok()) return pm.error;
              into = pm.median_us;
              return std::nullopt;
            };
            auto ok_or = [](const auto& r) -> std::optional<std::string> {
              return r.ok() ? std::nullopt : std::optional<std::string>(r.error().message());
            };
            std::optional<std::string> perr = part(router_us, [&] { return ok_or(training->backward(cg0->dweights)); });
            if (!perr) perr = part(combine_us, [&] { return ok_or(dispatched->combine_backward(fwd->output, *gy)); });
            if (!perr) perr = part(dispatch_us, [&] { return ok_or(dispatched->dispatch_backward(eg0->dinput)); });
            if (perr) return fail(what + ": backward parts: " + *perr);
            const double overhead = 100.0 * (*router_us + *combine_us + *dispatch_us) / m.median_us;
            const bool same_parts = s == "scalar";  // the parts above ran the Scalar experts backward
            line(step, s, m.median_us, true, overhead,
                 verify ? check_step(*last_dx, *last_dl, same_parts ? &*dx0 : nullptr, same_parts ? &*dl0 : nullptr,
                                     dtype, top_k == 1)
                        : Check{},
                 false);
          }
        }
      }
    }
  }
  if (any_failed) return fail("an output check failed (check=FAIL rows above)");
  return 0;
}

}  // namespace rudnn::bench
