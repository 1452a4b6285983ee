// rudnn-bench paged-backward: the paged attention and MLA backward (SPEC §9, issue 15 item 6) on warm
// plans: prefill (every position of each sequence a query row, causal: a training step's attention)
// and decode (one row per sequence at its last position), attention or MLA (the mla-* sets), through
// the atomic path
// (attention_backward_selected_into, every output) and the ordered path
// (attention_backward_ordered_into with a warm OrderedBackwardWorkspace, optionally with its row
// caching and history compaction switched on), each into preallocated gradients.
// CSV:
// set,batch,seq_len,page_size,q_heads,kv_heads,head_dim,rows,dtype,path,device,median_us,tflops,vs_atomic,max_err,check
//   set       prefill | decode | mla-prefill | mla-decode (MLA: head_dim is R, kv_heads 1, the rope
//             dim --rope-dim)
//   path      atomic | ordered | ordered-rows | ordered-compact | ordered-rows-compact
//   tflops    backward FLOPs / time, backward FLOPs = 2.5 × forward FLOPs (FlashAttention's count:
//             five products against the forward's two), forward = 4 · Hq · D · Σ_rows keys seen;
//             MLA: 2 · H · (3 (R + Pr) + 2 R) · Σ_rows keys seen (S, dQ and the key gradient over
//             R + Pr columns, dP and the value part over R)
//   vs_atomic this row's time / the atomic path's on the same inputs (the ordered path's cost; empty
//             when the atomic path was not run)
//   max_err   the largest |dq − FP64 reference| / max |reference| over the checked rows (the first
//             and last row of the first and last sequence, several heads; MLA: dq's latent part);
//             every other gradient also finite and not all zero; check = ok | FAIL (and the run
//             exits 1)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "benchmarks.h"
#include "paged_inputs.h"

namespace rudnn::bench {
namespace {

constexpr const char* kUsage = R"(usage: rudnn-bench paged-backward [options]

Times rudnn::paged_attention's backward on warm plans over a paged cache whose physical pages are a
random permutation: prefill (every position of --batch sequences of --seq-len keys is a query row,
causal) and decode (one row per sequence at its last position), attention or (sets mla-prefill,
mla-decode) MLA over a latent cache, through the atomic path (FP32
atomics) and the ordered one (no atomics; its workspace made once, outside the timing). Each row's
gradients are checked once: every value finite, every gradient but dq not all zero, and dq of the
first and last rows of the first and last sequence at up to 4 heads against an FP64 computation
over the same inputs (max_err within the dtype's tolerance: bf16 3e-2, f16 8e-3, f32 1e-4); a
failed check prints
check=FAIL and the run exits 1. vs_atomic is the row's time over the atomic path's.
CSV: set,batch,seq_len,page_size,q_heads,kv_heads,head_dim,rows,dtype,path,device,median_us,tflops,vs_atomic,max_err,check

options (host emulation device defaults in brackets: a smoke test of seconds):
  --sets a,b              subset of prefill,decode,mla-prefill,mla-decode (default prefill,decode)
  --batch N               repeatable: sequences (default 4, 16 [2])
  --seq-len N             repeatable: their length (default 1024, 4096 [24])
  --page-size N           repeatable (default 16)
  --q-heads H             (default 32 [4])
  --kv-heads H            divides --q-heads (default 8 [2])
  --head-dim D            D = Dv (default 128 [32])
  --latent-dim R          MLA's latent dim (default 512 [128]); its rows print it as head_dim
  --rope-dim P            MLA's rope dim (default 64 [16])
  --dtype f32|f16|bf16    (default bf16)
  --paths a,b             subset of atomic,ordered,ordered-rows,ordered-compact,ordered-rows-compact
                          (default atomic,ordered; the ordered ones with row caching and/or history
                          compaction switched on)
  --check 0|1             check each row's gradients (default 1)
)";

constexpr const char* kExample = R"(
On the host emulation device --iters 1 --runs 2 unless given. Inputs are replicated on the device
from uploaded pools of ~1M values (odd lengths, so rows and pages hold different values).

example:
  rudnn-bench paged-backward --device cuda:0 --sets prefill --batch 16 --seq-len 4096
)";

constexpr const char* kSets[] = {"prefill", "decode", "mla-prefill", "mla-decode"};
constexpr const char* kPaths[] = {"atomic", "ordered", "ordered-rows", "ordered-compact", "ordered-rows-compact"};

struct Options {
  std::vector<std::string> sets{"prefill", "decode"};
  std::vector<std::string> paths{"atomic", "ordered"};
  std::vector<std::int64_t> batches, seq_lens, page_sizes;
  std::int64_t q_heads = 0, kv_heads = 0, head_dim = 0, latent_dim = 0, rope_dim = 0;  // 0: the device's default
  bool want(const std::string& s) const { return std::find(sets.begin(), sets.end(), s) != sets.end(); }
};

double tolerance(DType dtype) { return dtype == DType::BF16 ? 3e-2 : dtype == DType::F16 ? 8e-3 : 1e-4; }

// The inputs of one row, as the check reads them. MLA: d = R, the rope parts set, v null (the values
// are the latent rows, k).
struct Inputs {
  const Layout* layout;
  std::int64_t hq, hkv, d, rope;
  float scale;
  const Cycled *q, *k, *v, *go, *q_rope, *k_rope;
};

// dq of query row r, head h in FP64 (MLA: its latent part): p = softmax(scale·(q·k + q_rope·k_rope))
// over the keys 0..position, dp = dO·v, ds = p (dp − Σ p dp), dq = scale · Σ ds k.
std::vector<double> reference_dq(const Inputs& in, std::int64_t r, std::int64_t h) {
  const Layout& l = *in.layout;
  const std::int64_t d = in.d, seq = l.sequence_ids[sz(r)], keys = l.positions[sz(r)] + 1;
  const std::int64_t kvh = h / (in.hq / in.hkv);
  const std::int64_t rope = in.rope;
  std::vector<double> q(sz(d)), go(sz(d)), k(sz(d)), v(sz(d)), qr(sz(rope)), kr(sz(rope)), s(sz(keys)), dp(sz(keys));
  in.q->row((r * in.hq + h) * d, d, q.data());
  in.go->row((r * in.hq + h) * d, d, go.data());
  if (rope > 0) in.q_rope->row((r * in.hq + h) * rope, rope, qr.data());
  auto cache_row = [&](std::int64_t j) {
    const auto& table = l.tables[sz(seq)];
    return (static_cast<std::int64_t>(table[sz(j / l.page_size)]) * l.page_size + j % l.page_size) * in.hkv + kvh;
  };
  double m = -INFINITY;
  for (std::int64_t j = 0; j < keys; ++j) {
    in.k->row(cache_row(j) * d, d, k.data());
    (in.v ? in.v : in.k)->row(cache_row(j) * d, d, v.data());
    double dot = 0, dv = 0;
    for (std::int64_t c = 0; c < d; ++c) dot += q[sz(c)] * k[sz(c)], dv += go[sz(c)] * v[sz(c)];
    if (rope > 0) {
      in.k_rope->row(cache_row(j) * rope, rope, kr.data());
      for (std::int64_t c = 0; c < rope; ++c) dot += qr[sz(c)] * kr[sz(c)];
    }
    s[sz(j)] = in.scale * dot;
    dp[sz(j)] = dv;
    m = std::max(m, s[sz(j)]);
  }
  double sum = 0, delta = 0;
  for (std::int64_t j = 0; j < keys; ++j) sum += std::exp(s[sz(j)] - m);
  for (std::int64_t j = 0; j < keys; ++j) delta += std::exp(s[sz(j)] - m) / sum * dp[sz(j)];
  std::vector<double> dq(sz(d), 0.0);
  for (std::int64_t j = 0; j < keys; ++j) {
    const double p = std::exp(s[sz(j)] - m) / sum, ds = p * (dp[sz(j)] - delta);
    in.k->row(cache_row(j) * d, d, k.data());
    for (std::int64_t c = 0; c < d; ++c) dq[sz(c)] += in.scale * ds * k[sz(c)];
  }
  return dq;
}

struct Check {
  double max_err = 0;
  std::string problem;  // empty: passed
};

// grads: dq first, then the others (attention dk, dv; MLA dqp, dlatent, dkp).
Check check_gradients(const Inputs& in, const std::vector<const Tensor*>& grads) {
  Check c;
  std::vector<double> dq;
  for (const Tensor* t : grads) {
    auto host = to_host(*t);
    if (!host.ok()) {
      c.problem = "reading a gradient back: " + host.error().message();
      return c;
    }
    const std::vector<double> values = host->to_f64();
    bool nonzero = false;
    for (double x : values) {
      if (!std::isfinite(x)) {
        c.problem = "a non-finite gradient value";
        c.max_err = INFINITY;
        return c;
      }
      nonzero = nonzero || x != 0;
    }
    if (!nonzero && t != grads[0]) c.problem = "a gradient other than dq that is all zero";
    if (t == grads[0]) dq = values;
  }
  const Layout& l = *in.layout;
  std::vector<std::int64_t> rows;
  for (std::int64_t r = 0; r < l.queries(); ++r) {
    const bool edge = r == 0 || r + 1 == l.queries() || l.sequence_ids[sz(r)] != l.sequence_ids[sz(r - 1)] ||
                      l.sequence_ids[sz(r)] != l.sequence_ids[sz(std::min(r + 1, l.queries() - 1))];
    if (edge && (l.sequence_ids[sz(r)] == 0 || l.sequence_ids[sz(r)] + 1 == std::ssize(l.lengths))) rows.push_back(r);
  }
  double err = 0, scale = 0;
  for (std::int64_t r : rows)
    for (std::int64_t h : {std::int64_t{0}, in.hq - 1, in.hq / 2, in.hq / 3}) {
      const std::vector<double> want = reference_dq(in, r, h);
      for (std::int64_t c2 = 0; c2 < in.d; ++c2) {
        err = std::max(err, std::abs(dq[sz((r * in.hq + h) * in.d + c2)] - want[sz(c2)]));
        scale = std::max(scale, std::abs(want[sz(c2)]));
      }
    }
  c.max_err = scale > 0 ? err / scale : err;
  return c;
}

// One (set, batch, length, page size) row: inputs, plan, timing, check, CSV line. Returns an error
// that ends the run; a failed check sets *failed.
std::optional<std::string> run_row(const std::string& set, const Options& opt, const Device& device, DType dtype,
                                   const Timing& timing, bool verify, std::int64_t batch, std::int64_t len,
                                   std::int64_t ps, std::mt19937_64& rng, bool* failed) {
  const bool mla = set.starts_with("mla-"), prefill = set.ends_with("prefill");
  const std::int64_t hq = opt.q_heads, hkv = mla ? 1 : opt.kv_heads, d = mla ? opt.latent_dim : opt.head_dim,
                     rope = mla ? opt.rope_dim : 0;
  const std::string what =
      set + " batch " + std::to_string(batch) + " seq_len " + std::to_string(len) + " page_size " + std::to_string(ps);
  const Layout l = make_layout(ps, std::vector<std::int64_t>(sz(batch), len),
                               std::vector<std::int64_t>(sz(batch), prefill ? len : 1), rng);
  const std::int64_t n = l.queries();
  auto q = cycled_tensor({n, hq, d}, dtype, device, (1 << 20) + 3, rng);
  if (!q.ok()) return what + ": " + q.error().message();
  auto go = cycled_tensor({n, hq, d}, dtype, device, (1 << 20) + 11, rng);
  if (!go.ok()) return what + ": " + go.error().message();
  auto k = cycled_tensor({l.pages, ps, hkv, d}, dtype, device, (1 << 20) + 7, rng);
  if (!k.ok()) return what + ": " + k.error().message();
  // Attention: v; MLA: the query's and the cache's rope parts (the values are the latent rows, k).
  auto v = cycled_tensor(mla ? Shape{n, hq, rope} : Shape{l.pages, ps, hkv, d}, dtype, device, (1 << 20) + 37, rng);
  if (!v.ok()) return what + ": " + v.error().message();
  std::optional<Cycled> k_rope;
  if (mla) {
    auto made = cycled_tensor({l.pages, ps, 1, rope}, dtype, device, (1 << 20) + 41, rng);
    if (!made.ok()) return what + ": " + made.error().message();
    k_rope = std::move(made.value());
  }
  auto plan = device_plan(l, q->tensor);
  if (!plan.ok()) return what + ": " + plan.error().message();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d + rope));
  // The gradients, allocated once: every path writes them in place (attention dq, dk, dv; MLA dq,
  // dqp, dlatent, dkp).
  std::vector<const Tensor*> likes{&q->tensor, &k->tensor, &v->tensor};
  if (mla) likes = {&q->tensor, &v->tensor, &k->tensor, &k_rope->tensor};
  std::vector<Tensor> buffers;
  for (const Tensor* like : likes) {
    auto buffer = Tensor::empty(like->shape(), dtype, q->tensor.queue());
    if (!buffer.ok()) return what + ": " + buffer.error().message();
    buffers.push_back(std::move(buffer.value()));
  }
  std::vector<const Tensor*> grads;
  for (const Tensor& b : buffers) grads.push_back(&b);
  double seen = 0;
  for (std::int64_t r = 0; r < n; ++r) seen += static_cast<double>(l.positions[sz(r)] + 1);
  const double flops = mla ? 2.0 * static_cast<double>(hq * (3 * (d + rope) + 2 * d)) * seen
                           : 2.5 * 4.0 * static_cast<double>(hq * d) * seen;
  std::optional<double> atomic_us;
  for (const std::string& path : opt.paths) {
    std::optional<paged_attention::OrderedBackwardWorkspace> ws;
    if (path != "atomic") {
      auto made = paged_attention::OrderedBackwardWorkspace::create(*plan, q->tensor);
      if (!made.ok()) return what + " " + path + ": " + made.error().message();
      ws = std::move(made.value());
      if (auto st = ws->set_cache_rows(path.find("rows") != std::string::npos); !st.ok())
        return what + " " + path + ": " + st.error().message();
      if (auto st = ws->set_compact_history(path.find("compact") != std::string::npos); !st.ok())
        return what + " " + path + ": " + st.error().message();
    }
    const Measured m = time_call(q->tensor.queue(), timing, [&]() -> std::optional<std::string> {
      Status<PagedAttentionError> st;
      if (mla) {
        const paged_attention::MlaBackwardOutputs out{&buffers[0], &buffers[1], &buffers[2], &buffers[3]};
        const Tensor &qp = v->tensor, &kp = k_rope->tensor;
        st = ws ? plan->mla_backward_ordered_into(q->tensor, qp, k->tensor, kp, go->tensor, scale, true, *ws, out)
                : plan->mla_backward_selected_into(q->tensor, qp, k->tensor, kp, go->tensor, scale, true, out);
      } else {
        const paged_attention::AttentionBackwardOutputs out{&buffers[0], &buffers[1], &buffers[2]};
        st = ws ? plan->attention_backward_ordered_into(q->tensor, k->tensor, v->tensor, go->tensor, scale, true, *ws,
                                                        out)
                : plan->attention_backward_selected_into(q->tensor, k->tensor, v->tensor, go->tensor, scale, true, out);
      }
      if (!st.ok()) return st.error().message();
      return std::nullopt;
    });
    if (!m.ok()) return what + " " + path + ": " + m.error;
    if (path == "atomic") atomic_us = m.median_us;
    Check check;
    if (verify)
      check = check_gradients({&l, hq, hkv, d, rope, scale, &*q, &*k, mla ? nullptr : &*v, &*go, mla ? &*v : nullptr,
                               mla ? &*k_rope : nullptr},
                              grads);
    const bool ok = check.problem.empty() && check.max_err <= tolerance(dtype);
    std::printf("%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%s,%s,%s,%s,%s,%s,%s\n", set.c_str(),
                static_cast<long long>(batch), static_cast<long long>(len), static_cast<long long>(ps),
                static_cast<long long>(hq), static_cast<long long>(hkv), static_cast<long long>(d),
                static_cast<long long>(n), std::string(dtype_name(dtype)).c_str(), path.c_str(),
                device.to_string().c_str(), csv_number(m.median_us, 2).c_str(),
                csv_number(flops / (m.median_us * 1e6), 3).c_str(),
                atomic_us ? csv_number(m.median_us / *atomic_us, 3).c_str() : "",
                verify ? scientific(check.max_err).c_str() : "", verify ? (ok ? "ok" : "FAIL") : "");
    std::fflush(stdout);
    if (verify && !ok) {
      std::fprintf(stderr, "rudnn-bench: check FAILED: %s %s: %s\n", what.c_str(), path.c_str(),
                   check.problem.empty() ? ("max_err " + scientific(check.max_err)).c_str() : check.problem.c_str());
      *failed = true;
    }
  }
  return std::nullopt;
}

}  // namespace

int run_paged_backward(int argc, char** argv) {
  if (wants_help(argc, argv, 2)) {
    std::printf("%s%s%s", kUsage, kCommonOptionsHelp, kExample);
    return 0;
  }
  std::optional<Device> chosen;
  Timing timing;
  bool timing_given = false, verify = true;
  DType dtype = DType::BF16;
  Options opt;
  auto bad =
      parse_options(argc, argv, 2, [&](const std::string& a, const std::string& v) -> std::optional<std::string> {
        std::optional<std::string> error;
        if (common_option(a, v, &chosen, &timing, &error)) {
          timing_given = timing_given || a == "--iters" || a == "--runs";
          return error;
        }
        std::vector<std::int64_t>* list = a == "--batch"       ? &opt.batches
                                          : a == "--seq-len"   ? &opt.seq_lens
                                          : a == "--page-size" ? &opt.page_sizes
                                                               : nullptr;
        if (list) {
          std::int64_t n = 0;
          const std::int64_t hi = a == "--page-size" ? paged_attention::kMaxPageSize : 1 << 20;
          if (auto e = int_option(a, v, 1, hi, &n)) return e;
          list->push_back(n);
          return std::nullopt;
        }
        if (a == "--q-heads") return int_option(a, v, 1, 1024, &opt.q_heads);
        if (a == "--kv-heads") return int_option(a, v, 1, 1024, &opt.kv_heads);
        if (a == "--head-dim") return int_option(a, v, 1, paged_attention::kMaxHeadDim, &opt.head_dim);
        if (a == "--latent-dim") return int_option(a, v, 1, paged_attention::kMaxHeadDim, &opt.latent_dim);
        if (a == "--rope-dim") return int_option(a, v, 1, paged_attention::kMaxRopeDim, &opt.rope_dim);
        if (a == "--check") {
          if (v != "1" && v != "0") return "--check wants 1 or 0, got " + v;
          verify = v == "1";
        } else if (a == "--dtype") {
          auto t = parse_dtype(v);
          if (!t || !is_float(*t)) return "--dtype wants f32, f16 or bf16, got " + v;
          dtype = *t;
        } else if (a == "--paths") {
          opt.paths = split_list(v);
          if (opt.paths.empty()) return "--paths is empty";
          for (const auto& p : opt.paths)
            if (std::find(std::begin(kPaths), std::end(kPaths), p) == std::end(kPaths))
              return "--paths wants a subset of atomic,ordered,ordered-rows,ordered-compact,ordered-rows-compact, "
                     "got " +
                     v;
        } else if (a == "--sets") {
          opt.sets = split_list(v);
          if (opt.sets.empty()) return "--sets is empty";
          for (const auto& s : opt.sets)
            if (std::find(std::begin(kSets), std::end(kSets), s) == std::end(kSets))
              return "--sets wants a subset of prefill,decode,mla-prefill,mla-decode, got " + v;
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
  auto or_default = [&](std::int64_t& v, std::int64_t gpu, std::int64_t emulator) {
    if (v == 0) v = host ? emulator : gpu;
  };
  or_default(opt.q_heads, 32, 4);
  or_default(opt.kv_heads, 8, 2);
  or_default(opt.head_dim, 128, 32);
  or_default(opt.latent_dim, 512, 128);
  or_default(opt.rope_dim, 64, 16);
  const bool attention = opt.want("prefill") || opt.want("decode");  // MLA has one kv head
  if (attention && opt.q_heads % opt.kv_heads != 0)
    return fail("--kv-heads " + std::to_string(opt.kv_heads) + " does not divide --q-heads " +
                std::to_string(opt.q_heads));
  if (opt.batches.empty()) opt.batches = host ? std::vector<std::int64_t>{2} : std::vector<std::int64_t>{4, 16};
  if (opt.seq_lens.empty()) opt.seq_lens = host ? std::vector<std::int64_t>{24} : std::vector<std::int64_t>{1024, 4096};
  if (opt.page_sizes.empty()) opt.page_sizes = {16};
  if (host && !timing_given) {
    timing.iters = 1;
    timing.runs = 2;
  }
  std::printf(
      "set,batch,seq_len,page_size,q_heads,kv_heads,head_dim,rows,dtype,path,device,median_us,tflops,vs_atomic,max_err,"
      "check\n");
  std::mt19937_64 rng(20261205);
  bool failed = false;
  for (const std::string& set : kSets) {
    if (!opt.want(set)) continue;
    for (std::int64_t batch : opt.batches)
      for (std::int64_t len : opt.seq_lens)
        for (std::int64_t ps : opt.page_sizes)
          if (auto e = run_row(set, opt, device, dtype, timing, verify, batch, len, ps, rng, &failed)) return fail(*e);
  }
  return failed ? 1 : 0;
}

}  // namespace rudnn::bench
