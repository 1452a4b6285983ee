// rudnn-bench paged: paged attention and MLA forward (SPEC §8, issue 13 item 6) on warm plans:
// decode over physical pages, the same split-KV, mixed prefill + decode, MLA decode (and split).
// CSV: set,batch,seq_len,prefill_seqs,prefill_len,page_size,q_heads,kv_heads,head_dim,value_dim,rope_dim,splits,rows,
//      dtype,device,median_us,tflops,gb_per_s,copy_gb_per_s,pct_copy,merge_pct,max_err,check
//   gb_per_s   the K/V (MLA: latent + rope) bytes the rows must read, Σ over sequences of
//              L·Hkv·(D + Dv)·size (MLA L·(R + P)·size), plus q and out, over the time
//   pct_copy   gb_per_s as a % of copy_gb_per_s, a device-to-device copy measured in the same run
//   merge_pct  split sets: the same split call at one key per split (the merge plus the partial
//              pass's fixed cost) as a % of the row's time: an upper bound of the merge's share
//   max_err    the largest |out − FP64 reference| / max |reference| over checked rows (the first and
//              last sequence, several heads); check = ok | FAIL (and the run exits 1)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "benchmarks.h"
#include "device_copy.h"
#include "paged_inputs.h"
#include "rudnn/paged_attention.h"

namespace rudnn::bench {
namespace {

using paged_attention::SplitWorkspace;

constexpr const char* kUsage = R"(usage: rudnn-bench paged [options]

Times rudnn::paged_attention's DevicePlan calls on warm plans (causal, one query row per decode
sequence at its last position; physical pages a random permutation, so every sequence's pages are
scattered): decode over every --batch × --seq-len × --page-size, the same with split-KV, mixed
prefill + decode, and MLA decode unsplit and split. Each row's output is checked once: every value
finite and not all zero, and the rows of the first, middle and last sequence at up to 8 heads (MLA 4)
against an FP64 computation over the same inputs (max_err within the dtype's tolerance: bf16 2e-2,
f16 5e-3, f32 1e-4); a failed check prints check=FAIL and the run exits 1.
CSV: set,batch,seq_len,prefill_seqs,prefill_len,page_size,q_heads,kv_heads,head_dim,value_dim,rope_dim,splits,
     rows,dtype,device,median_us,tflops,gb_per_s,copy_gb_per_s,pct_copy,merge_pct,max_err,check

options (host emulation device defaults in brackets: a smoke test of seconds):
  --sets a,b              subset of decode,split,mixed,mla,mla_split (default all)
  --batch N               repeatable: decode sequences (default 1, 16, 64, 256 [1, 3])
  --seq-len N             repeatable: their KV length (default 1024, 4096, 32768 [100])
  --page-size N           repeatable (default 1, 16, 64); mixed runs each, MLA --mla-page-size
  --q-heads H             (default 32 [8])
  --kv-heads H            divides --q-heads (default 8 [2])
  --head-dim D            D = Dv (default 128 [64])
  --splits auto|N         split sets: N in 2..32, or auto (default): the smallest power of two with
                          batch · Hkv · splits >= 2 · SMs, at most 32 and the length, as many as the
                          64 MiB workspace holds (a row that fits none is skipped with a note) [4]
  --prefill-seqs N        mixed: prefill sequences (default 4)
  --prefill-len N         mixed: the rows (= KV length) of each (default 1024 [20])
  --decode-rows N         mixed: decode sequences, one row each (default 64 [4])
  --decode-len N          mixed: their KV length (default 4096 [100])
  --mla-heads H           (default 128 [16])
  --mla-latent R          (default 512)
  --mla-rope P            (default 64)
  --mla-page-size N       (default 64)
  --dtype f32|f16|bf16    (default bf16)
  --copy-mib N            the reference copy's size (default 1024 [64])
  --check 0|1             check each row's output (default 1)
)";

constexpr const char* kExample = R"(
On the host emulation device --iters 1 --runs 2 unless given. K/V caches are filled on the device by
replicating an uploaded pool of ~1M values (an odd length, so pages hold different values); the
reference copy is cuMemcpyDtoDAsync on a GPU, memcpy on the host device.

example:
  rudnn-bench paged --device cuda:0 --sets decode,split --batch 64 --seq-len 4096 --page-size 16
)";

constexpr const char* kSets[] = {"decode", "split", "mixed", "mla", "mla_split"};

// The merge floor of a one-row-per-sequence layout: every sequence cut to `keys` keys (its first
// pages), its row at the last of them; same pages, rows and queries, so the same workspace fits.
Layout floor_layout(const Layout& l, std::int64_t keys) {
  Layout f;
  f.page_size = l.page_size;
  f.pages = l.pages;
  for (std::size_t s = 0; s < l.lengths.size(); ++s) {
    const std::int64_t len = std::min(keys, l.lengths[s]);
    f.tables.emplace_back(l.tables[s].begin(), l.tables[s].begin() + ceil_div(len, l.page_size));
    f.lengths.push_back(len);
    f.sequence_ids.push_back(static_cast<std::int64_t>(s));
    f.positions.push_back(len - 1);
  }
  return f;
}

// ---- the FP64 check

// One problem's host view: attention (k, v) or MLA (k = latent, kp = rope, values = the latent rows).
struct Problem {
  const Layout* layout;
  std::int64_t q_heads, kv_heads, head_dim, rope_dim, value_dim;
  float scale;
  const std::vector<double>* q;
  const std::vector<double>* qp;  // MLA
  const Cycled* k;
  const Cycled* kp;  // MLA
  const Cycled* v;   // attention
};

struct Check {
  double max_err = 0;
  std::string problem;  // empty: passed
};

double tolerance(DType dtype) { return dtype == DType::BF16 ? 2e-2 : dtype == DType::F16 ? 5e-3 : 1e-4; }

// Every output finite and not all zero; then rows × heads against the FP64 computation over the
// same (rounded) inputs, causal: a row at position p of a sequence of length L sees keys 0..min(p, L − 1).
Check check_output(const Problem& pb, const Tensor& out, const std::vector<std::int64_t>& rows, DType dtype) {
  Check c;
  auto host = to_host(out);
  if (!host.ok()) {
    c.problem = "reading the output back: " + host.error().message();
    return c;
  }
  const std::vector<double> o = host->to_f64();
  bool nonzero = false;
  for (double x : o) {
    if (!std::isfinite(x)) {
      c.problem = "a non-finite output value";
      c.max_err = INFINITY;
      return c;
    }
    nonzero = nonzero || x != 0;
  }
  if (!nonzero) {
    c.problem = "every output value is zero";
    c.max_err = INFINITY;
    return c;
  }
  const Layout& l = *pb.layout;
  const std::int64_t hq = pb.q_heads, group = pb.q_heads / pb.kv_heads, d = pb.head_dim, p = pb.rope_dim,
                     dv = pb.value_dim, ps = l.page_size;
  // Up to 8 heads (MLA, 4: its rows are 4× wider), evenly spaced, first and last included.
  std::vector<std::int64_t> heads;
  const std::int64_t nh = std::min<std::int64_t>(hq, pb.kp ? 4 : 8);
  for (std::int64_t i = 0; i < nh; ++i) heads.push_back(nh == 1 ? 0 : i * (hq - 1) / (nh - 1));
  std::vector<double> scores, ref(sz(dv)), buffer(sz(std::max({d, p, dv})));
  for (std::int64_t r : rows) {
    const std::int64_t seq = l.sequence_ids[sz(r)], pos = l.positions[sz(r)];
    const std::int64_t keys = std::min(pos + 1, l.lengths[sz(seq)]);
    scores.assign(sz(keys), 0);
    for (std::int64_t h : heads) {
      const std::int64_t kvh = h / group;
      const double* qrow = pb.q->data() + (r * hq + h) * d;
      double top = -INFINITY;
      for (std::int64_t j = 0; j < keys; ++j) {
        const std::int64_t slot = std::int64_t{l.tables[sz(seq)][sz(j / ps)]} * ps + j % ps;
        double s = 0;
        pb.k->row((slot * pb.kv_heads + kvh) * d, d, buffer.data());
        for (std::int64_t x = 0; x < d; ++x) s += qrow[x] * buffer[sz(x)];
        if (pb.kp) {
          const double* qprow = pb.qp->data() + (r * hq + h) * p;
          pb.kp->row(slot * p, p, buffer.data());
          for (std::int64_t x = 0; x < p; ++x) s += qprow[x] * buffer[sz(x)];
        }
        scores[sz(j)] = s * pb.scale;
        top = std::max(top, scores[sz(j)]);
      }
      double total = 0;
      std::fill(ref.begin(), ref.end(), 0.0);
      for (std::int64_t j = 0; j < keys; ++j) {
        const double w = std::exp(scores[sz(j)] - top);
        total += w;
        const std::int64_t slot = std::int64_t{l.tables[sz(seq)][sz(j / ps)]} * ps + j % ps;
        // Attention: V [pages, page_size, Hkv, Dv]; MLA: the latent row's first Dv (= R) columns.
        if (pb.v)
          pb.v->row((slot * pb.kv_heads + kvh) * dv, dv, buffer.data());
        else
          pb.k->row(slot * d, dv, buffer.data());
        for (std::int64_t x = 0; x < dv; ++x) ref[sz(x)] += w * buffer[sz(x)];
      }
      double scale_ref = 1e-30, err = 0;
      for (std::int64_t x = 0; x < dv; ++x) {
        ref[sz(x)] /= total;
        scale_ref = std::max(scale_ref, std::abs(ref[sz(x)]));
      }
      const double* orow = o.data() + (r * hq + h) * dv;
      for (std::int64_t x = 0; x < dv; ++x) err = std::max(err, std::abs(orow[x] - ref[sz(x)]));
      c.max_err = std::max(c.max_err, err / scale_ref);
    }
  }
  if (!(c.max_err <= tolerance(dtype)))
    c.problem = "max_err " + scientific(c.max_err) + " over the tolerance " + scientific(tolerance(dtype));
  return c;
}

// The checked rows: the first and last row of the first and the last sequence (deduplicated), and,
// with several sequences, the first row of the middle one.
std::vector<std::int64_t> rows_to_check(const Layout& l) {
  std::vector<std::int64_t> rows;
  auto add_sequence = [&](std::int64_t s) {
    std::int64_t first = -1, last = -1;
    for (std::int64_t r = 0; r < l.queries(); ++r)
      if (l.sequence_ids[sz(r)] == s) {
        if (first < 0) first = r;
        last = r;
      }
    if (first < 0) return;
    rows.push_back(first);
    rows.push_back(last);
  };
  const auto n = static_cast<std::int64_t>(l.lengths.size());
  add_sequence(0);
  if (n > 2) add_sequence(n / 2);
  if (n > 1) add_sequence(n - 1);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

// ---- output

struct Row {
  std::string set;
  std::int64_t batch = 0, seq_len = 0, prefill_seqs = 0, prefill_len = 0, page_size = 0, q_heads = 0, kv_heads = 0,
               head_dim = 0, value_dim = 0, rope_dim = 0, splits = 1, rows = 0;
  double median_us = 0, flops = 0, bytes = 0;
  std::optional<double> merge_pct;
  Check check;
};

struct Context {
  Device device;
  DType dtype;
  Timing timing;
  std::optional<double> copy_gbps;
  bool verify = true;
  bool any_failed = false;
};

void print_row(Context& ctx, const Row& r) {
  const double seconds = r.median_us * 1e-6;
  const double gbps = r.bytes / seconds / 1e9;
  const std::optional<double> pct = ctx.copy_gbps ? std::optional<double>(100.0 * gbps / *ctx.copy_gbps) : std::nullopt;
  const bool ok = r.check.problem.empty();
  std::printf(
      "%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%s,%.2f,%s,%s,%s,%s,%s,%s,%s\n", r.set.c_str(),
      static_cast<long long>(r.batch), static_cast<long long>(r.seq_len), static_cast<long long>(r.prefill_seqs),
      static_cast<long long>(r.prefill_len), static_cast<long long>(r.page_size), static_cast<long long>(r.q_heads),
      static_cast<long long>(r.kv_heads), static_cast<long long>(r.head_dim), static_cast<long long>(r.value_dim),
      static_cast<long long>(r.rope_dim), static_cast<long long>(r.splits), static_cast<long long>(r.rows),
      std::string(dtype_name(ctx.dtype)).c_str(), ctx.device.to_string().c_str(), r.median_us,
      csv_number(r.flops / seconds / 1e12, 3).c_str(), csv_number(gbps, 1).c_str(),
      csv_number(ctx.copy_gbps, 1).c_str(), csv_number(pct, 1).c_str(), csv_number(r.merge_pct, 1).c_str(),
      ctx.verify ? scientific(r.check.max_err).c_str() : "", ctx.verify ? (ok ? "ok" : "FAIL") : "");
  std::fflush(stdout);
  if (!ok) {
    std::fprintf(stderr, "rudnn-bench: check FAILED: %s batch=%lld seq_len=%lld page_size=%lld splits=%lld: %s\n",
                 r.set.c_str(), static_cast<long long>(r.batch), static_cast<long long>(r.seq_len),
                 static_cast<long long>(r.page_size), static_cast<long long>(r.splits), r.check.problem.c_str());
    ctx.any_failed = true;
  }
}

// Times `call` (which leaves its output in *last), then checks that output once.
template <class Call>
std::optional<std::string> measure(Context& ctx, const Tensor& q, Row& row, const Problem& pb,
                                   const std::vector<std::int64_t>& rows, std::optional<Tensor>* last, Call call) {
  const Measured m = time_call(q.queue(), ctx.timing, [&]() -> std::optional<std::string> {
    auto o = call();
    if (!o.ok()) return o.error().message();
    *last = std::move(o.value());
    return std::nullopt;
  });
  if (!m.ok()) return m.error;
  row.median_us = m.median_us;
  if (ctx.verify) row.check = check_output(pb, **last, rows, ctx.dtype);
  return std::nullopt;
}

// Σ over rows of the keys each sees (causal); Σ over sequences of their lengths.
std::int64_t seen_keys(const Layout& l) {
  std::int64_t n = 0;
  for (std::int64_t r = 0; r < l.queries(); ++r)
    n += std::min(l.positions[sz(r)] + 1, l.lengths[sz(l.sequence_ids[sz(r)])]);
  return n;
}
std::int64_t total_length(const Layout& l) {
  return std::accumulate(l.lengths.begin(), l.lengths.end(), std::int64_t{0});
}

// The split count of a split row: --splits N, or auto (see the usage), or 0 when none fits.
std::int64_t choose_splits(std::int64_t requested, const Device& device, std::int64_t sequences, std::int64_t kv_heads,
                           std::int64_t queries, std::int64_t heads, std::int64_t value_dim, std::int64_t min_length) {
  const std::int64_t per_split = queries * heads * (value_dim + 1) * 4;
  const std::int64_t fit = paged_attention::kMaxWorkspaceBytes / per_split;
  if (requested > 0) return requested <= fit ? requested : 0;
  const std::int64_t need =
      ceil_div(2 * device.info().multiprocessors, std::max<std::int64_t>(1, sequences * kv_heads));
  std::int64_t s = paged_attention::kMinSplits;
  while (s < need && s < paged_attention::kMaxSplits) s *= 2;
  while (s > paged_attention::kMinSplits && (s > fit || s > min_length)) s /= 2;
  return s <= fit ? s : 0;
}

struct Options {
  std::vector<std::string> sets{std::begin(kSets), std::end(kSets)};
  std::vector<std::int64_t> batches, seq_lens, page_sizes;
  std::int64_t q_heads = 0, kv_heads = 0, head_dim = 0;  // 0: the device's default (see the usage)
  std::int64_t splits = 0;                               // 0: auto
  std::int64_t prefill_seqs = 4, prefill_len = 0, decode_rows = -1, decode_len = 0;  // -1 (0 is a value): default
  std::int64_t mla_heads = 0, mla_latent = 512, mla_rope = 64, mla_page_size = 64;
  std::int64_t copy_mib = 0;
  bool want(const std::string& s) const { return std::find(sets.begin(), sets.end(), s) != sets.end(); }
};

// A failed allocation of the caches (OutOfMemory) skips the row with a note; any other error ends the run.
bool skippable(const RuntimeError& e) { return e.kind() == ErrorKind::OutOfMemory; }

// decode and split over one (batch, length, page size).
std::optional<std::string> run_decode(Context& ctx, const Options& opt, std::int64_t batch, std::int64_t len,
                                      std::int64_t ps, std::mt19937_64& rng) {
  const std::int64_t hq = opt.q_heads, hkv = opt.kv_heads, d = opt.head_dim, dv = opt.head_dim;
  const std::string what =
      "batch " + std::to_string(batch) + " seq_len " + std::to_string(len) + " page_size " + std::to_string(ps);
  const Layout l =
      make_layout(ps, std::vector<std::int64_t>(sz(batch), len), std::vector<std::int64_t>(sz(batch), 1), rng);
  auto k = cycled_tensor({l.pages, ps, hkv, d}, ctx.dtype, ctx.device, (1 << 20) + 7, rng);
  auto v = k.ok() ? cycled_tensor({l.pages, ps, hkv, dv}, ctx.dtype, ctx.device, (1 << 20) + 37, rng)
                  : Result<Cycled, RuntimeError>(k.error());
  if (!v.ok()) {
    if (!skippable(v.error())) return what + ": " + v.error().message();
    std::fprintf(stderr, "rudnn-bench: note: decode skipped at %s: %s\n", what.c_str(), v.error().message().c_str());
    return std::nullopt;
  }
  auto q = drawn_tensor({l.queries(), hq, d}, ctx.dtype, ctx.device, rng);
  if (!q.ok()) return what + ": " + q.error().message();
  auto plan = device_plan(l, q->tensor);
  if (!plan.ok()) return what + ": " + plan.error().message();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const Problem pb{&l, hq, hkv, d, 0, dv, scale, &q->values, nullptr, &*k, nullptr, &*v};
  const std::vector<std::int64_t> rows = rows_to_check(l);
  const double es = static_cast<double>(dtype_size(ctx.dtype));
  Row row;
  row.batch = batch;
  row.seq_len = len;
  row.page_size = ps;
  row.q_heads = hq;
  row.kv_heads = hkv;
  row.head_dim = d;
  row.value_dim = dv;
  row.rows = l.queries();
  row.flops = 2.0 * static_cast<double>(hq) * static_cast<double>(seen_keys(l)) * static_cast<double>(d + dv);
  row.bytes = es * (static_cast<double>(total_length(l)) * static_cast<double>(hkv * (d + dv)) +
                    static_cast<double>(l.queries()) * static_cast<double>(hq * (d + dv)));
  std::optional<Tensor> last;
  if (opt.want("decode")) {
    Row r = row;
    r.set = "decode";
    if (auto e = measure(ctx, q->tensor, r, pb, rows, &last,
                         [&] { return plan->attention(q->tensor, k->tensor, v->tensor, scale, true); }))
      return "decode at " + what + ": " + *e;
    print_row(ctx, r);
  }
  if (opt.want("split")) {
    const std::int64_t splits = choose_splits(opt.splits, ctx.device, batch, hkv, l.queries(), hq, dv, len);
    if (splits == 0) {
      std::fprintf(stderr, "rudnn-bench: note: split skipped at %s: no split count's workspace fits in 64 MiB\n",
                   what.c_str());
      return std::nullopt;
    }
    auto ws = SplitWorkspace::create(q->tensor, l.queries(), hq, dv, splits);
    if (!ws.ok()) return "split at " + what + ": " + ws.error().message();
    Row r = row;
    r.set = "split";
    r.splits = splits;
    if (auto e = measure(ctx, q->tensor, r, pb, rows, &last, [&] {
          return plan->attention_with_workspace(q->tensor, k->tensor, v->tensor, scale, true, *ws);
        }))
      return "split at " + what + ": " + *e;
    // The merge floor: the same call at one key per split (same rows, heads and workspace).
    const Layout fl = floor_layout(l, splits);
    auto floor_plan = device_plan(fl, q->tensor);
    if (!floor_plan.ok()) return "split floor at " + what + ": " + floor_plan.error().message();
    const Measured m = time_call(q->tensor.queue(), ctx.timing, [&]() -> std::optional<std::string> {
      auto o = floor_plan->attention_with_workspace(q->tensor, k->tensor, v->tensor, scale, true, *ws);
      return o.ok() ? std::nullopt : std::optional<std::string>(o.error().message());
    });
    if (!m.ok()) return "split floor at " + what + ": " + m.error;
    r.merge_pct = 100.0 * m.median_us / r.median_us;
    print_row(ctx, r);
  }
  return std::nullopt;
}

// Mixed prefill + decode at one page size: the prefill sequences' rows first, then one row per decode sequence.
std::optional<std::string> run_mixed(Context& ctx, const Options& opt, std::int64_t ps, std::mt19937_64& rng) {
  const std::int64_t hq = opt.q_heads, hkv = opt.kv_heads, d = opt.head_dim, dv = opt.head_dim;
  const std::string what = "page_size " + std::to_string(ps);
  std::vector<std::int64_t> lengths(sz(opt.prefill_seqs), opt.prefill_len),
      rows_per(sz(opt.prefill_seqs), opt.prefill_len);
  lengths.insert(lengths.end(), sz(opt.decode_rows), opt.decode_len);
  rows_per.insert(rows_per.end(), sz(opt.decode_rows), 1);
  const Layout l = make_layout(ps, lengths, rows_per, rng);
  auto k = cycled_tensor({l.pages, ps, hkv, d}, ctx.dtype, ctx.device, (1 << 20) + 7, rng);
  auto v = k.ok() ? cycled_tensor({l.pages, ps, hkv, dv}, ctx.dtype, ctx.device, (1 << 20) + 37, rng)
                  : Result<Cycled, RuntimeError>(k.error());
  if (!v.ok()) {
    if (!skippable(v.error())) return what + ": " + v.error().message();
    std::fprintf(stderr, "rudnn-bench: note: mixed skipped at %s: %s\n", what.c_str(), v.error().message().c_str());
    return std::nullopt;
  }
  auto q = drawn_tensor({l.queries(), hq, d}, ctx.dtype, ctx.device, rng);
  if (!q.ok()) return what + ": " + q.error().message();
  auto plan = device_plan(l, q->tensor);
  if (!plan.ok()) return what + ": " + plan.error().message();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const Problem pb{&l, hq, hkv, d, 0, dv, scale, &q->values, nullptr, &*k, nullptr, &*v};
  std::vector<std::int64_t> rows = rows_to_check(l);
  if (opt.prefill_seqs > 0 && opt.prefill_len > 2) rows.push_back(opt.prefill_len / 2);  // a mid prefill row
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  const double es = static_cast<double>(dtype_size(ctx.dtype));
  Row r;
  r.set = "mixed";
  r.batch = opt.decode_rows;
  r.seq_len = opt.decode_len;
  r.prefill_seqs = opt.prefill_seqs;
  r.prefill_len = opt.prefill_len;
  r.page_size = ps;
  r.q_heads = hq;
  r.kv_heads = hkv;
  r.head_dim = d;
  r.value_dim = dv;
  r.rows = l.queries();
  r.flops = 2.0 * static_cast<double>(hq) * static_cast<double>(seen_keys(l)) * static_cast<double>(d + dv);
  r.bytes = es * (static_cast<double>(total_length(l)) * static_cast<double>(hkv * (d + dv)) +
                  static_cast<double>(l.queries()) * static_cast<double>(hq * (d + dv)));
  std::optional<Tensor> last;
  if (auto e = measure(ctx, q->tensor, r, pb, rows, &last,
                       [&] { return plan->attention(q->tensor, k->tensor, v->tensor, scale, true); }))
    return "mixed at " + what + ": " + *e;
  print_row(ctx, r);
  return std::nullopt;
}

// MLA decode (mla, mla_split) over one (batch, length) at --mla-page-size.
std::optional<std::string> run_mla(Context& ctx, const Options& opt, std::int64_t batch, std::int64_t len,
                                   std::mt19937_64& rng) {
  const std::int64_t h = opt.mla_heads, rr = opt.mla_latent, p = opt.mla_rope, ps = opt.mla_page_size;
  const std::string what =
      "batch " + std::to_string(batch) + " seq_len " + std::to_string(len) + " page_size " + std::to_string(ps);
  const Layout l =
      make_layout(ps, std::vector<std::int64_t>(sz(batch), len), std::vector<std::int64_t>(sz(batch), 1), rng);
  auto latent = cycled_tensor({l.pages, ps, 1, rr}, ctx.dtype, ctx.device, (1 << 20) + 7, rng);
  auto kp = latent.ok() ? cycled_tensor({l.pages, ps, 1, p}, ctx.dtype, ctx.device, (1 << 18) + 9, rng)
                        : Result<Cycled, RuntimeError>(latent.error());
  if (!kp.ok()) {
    if (!skippable(kp.error())) return what + ": " + kp.error().message();
    std::fprintf(stderr, "rudnn-bench: note: mla skipped at %s: %s\n", what.c_str(), kp.error().message().c_str());
    return std::nullopt;
  }
  auto q = drawn_tensor({l.queries(), h, rr}, ctx.dtype, ctx.device, rng);
  if (!q.ok()) return what + ": " + q.error().message();
  auto qp = drawn_tensor({l.queries(), h, p}, ctx.dtype, ctx.device, rng);
  if (!qp.ok()) return what + ": " + qp.error().message();
  auto plan = device_plan(l, q->tensor);
  if (!plan.ok()) return what + ": " + plan.error().message();
  const float scale = 1.0f / std::sqrt(static_cast<float>(rr + p));
  const Problem pb{&l, h, 1, rr, p, rr, scale, &q->values, &qp->values, &*latent, &*kp, nullptr};
  const std::vector<std::int64_t> rows = rows_to_check(l);
  const double es = static_cast<double>(dtype_size(ctx.dtype));
  Row row;
  row.batch = batch;
  row.seq_len = len;
  row.page_size = ps;
  row.q_heads = h;
  row.kv_heads = 1;
  row.head_dim = rr;
  row.value_dim = rr;
  row.rope_dim = p;
  row.rows = l.queries();
  row.flops = 2.0 * static_cast<double>(h) * static_cast<double>(seen_keys(l)) * static_cast<double>(rr + p + rr);
  row.bytes = es * (static_cast<double>(total_length(l)) * static_cast<double>(rr + p) +
                    static_cast<double>(l.queries()) * static_cast<double>(h * (rr + p + rr)));
  std::optional<Tensor> last;
  if (opt.want("mla")) {
    Row r = row;
    r.set = "mla";
    if (auto e = measure(ctx, q->tensor, r, pb, rows, &last,
                         [&] { return plan->mla(q->tensor, qp->tensor, latent->tensor, kp->tensor, scale, true); }))
      return "mla at " + what + ": " + *e;
    print_row(ctx, r);
  }
  if (opt.want("mla_split")) {
    const std::int64_t splits = choose_splits(opt.splits, ctx.device, batch, 1, l.queries(), h, rr, len);
    if (splits == 0) {
      std::fprintf(stderr, "rudnn-bench: note: mla_split skipped at %s: no split count's workspace fits in 64 MiB\n",
                   what.c_str());
      return std::nullopt;
    }
    auto ws = SplitWorkspace::create(q->tensor, l.queries(), h, rr, splits);
    if (!ws.ok()) return "mla_split at " + what + ": " + ws.error().message();
    Row r = row;
    r.set = "mla_split";
    r.splits = splits;
    if (auto e = measure(ctx, q->tensor, r, pb, rows, &last, [&] {
          return plan->mla_with_workspace(q->tensor, qp->tensor, latent->tensor, kp->tensor, scale, true, *ws);
        }))
      return "mla_split at " + what + ": " + *e;
    const Layout fl = floor_layout(l, splits);
    auto floor_plan = device_plan(fl, q->tensor);
    if (!floor_plan.ok()) return "mla_split floor at " + what + ": " + floor_plan.error().message();
    const Measured m = time_call(q->tensor.queue(), ctx.timing, [&]() -> std::optional<std::string> {
      auto o = floor_plan->mla_with_workspace(q->tensor, qp->tensor, latent->tensor, kp->tensor, scale, true, *ws);
      return o.ok() ? std::nullopt : std::optional<std::string>(o.error().message());
    });
    if (!m.ok()) return "mla_split floor at " + what + ": " + m.error;
    r.merge_pct = 100.0 * m.median_us / r.median_us;
    print_row(ctx, r);
  }
  return std::nullopt;
}

}  // namespace

int run_paged(int argc, char** argv) {
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
          const std::int64_t hi = a == "--page-size" ? paged_attention::kMaxPageSize
                                  : a == "--batch"   ? 1 << 20
                                                     : 1 << 24;
          if (auto e = int_option(a, v, 1, hi, &n)) return e;
          list->push_back(n);
          return std::nullopt;
        }
        struct Scalar {
          const char* name;
          std::int64_t* into;
          std::int64_t lo, hi;
        };
        const Scalar scalars[] = {
            {"--q-heads", &opt.q_heads, 1, 1024},
            {"--kv-heads", &opt.kv_heads, 1, 1024},
            {"--head-dim", &opt.head_dim, 1, paged_attention::kMaxHeadDim},
            {"--prefill-seqs", &opt.prefill_seqs, 0, 1 << 16},
            {"--prefill-len", &opt.prefill_len, 1, 1 << 20},
            {"--decode-rows", &opt.decode_rows, 0, 1 << 20},
            {"--decode-len", &opt.decode_len, 1, 1 << 24},
            {"--mla-heads", &opt.mla_heads, 1, 1024},
            {"--mla-latent", &opt.mla_latent, 1, paged_attention::kMaxHeadDim},
            {"--mla-rope", &opt.mla_rope, 1, paged_attention::kMaxRopeDim},
            {"--mla-page-size", &opt.mla_page_size, 1, paged_attention::kMaxPageSize},
            {"--copy-mib", &opt.copy_mib, 1, 1 << 16},
        };
        for (const auto& s : scalars)
          if (a == s.name) return int_option(a, v, s.lo, s.hi, s.into);
        if (a == "--splits") {
          if (v == "auto") {
            opt.splits = 0;
            return std::nullopt;
          }
          if (auto e = int_option(a, v, paged_attention::kMinSplits, paged_attention::kMaxSplits, &opt.splits))
            return "--splits wants auto or 2..32: " + *e;
        } else if (a == "--check") {
          if (v != "1" && v != "0") return "--check wants 1 or 0, got " + v;
          verify = v == "1";
        } else if (a == "--dtype") {
          auto t = parse_dtype(v);
          if (!t || !is_float(*t)) return "--dtype wants f32, f16 or bf16, got " + v;
          dtype = *t;
        } else if (a == "--sets") {
          opt.sets = split_list(v);
          if (opt.sets.empty()) return "--sets is empty";
          for (const auto& s : opt.sets)
            if (std::find(std::begin(kSets), std::end(kSets), s) == std::end(kSets))
              return "--sets wants a subset of decode,split,mixed,mla,mla_split, got " + v;
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
  // The host emulation device: small defaults, so that the whole benchmark is a smoke test of seconds.
  auto or_default = [&](std::int64_t& v, std::int64_t gpu, std::int64_t emulator) {
    if (v == 0) v = host ? emulator : gpu;
  };
  or_default(opt.q_heads, 32, 8);
  or_default(opt.kv_heads, 8, 2);
  or_default(opt.head_dim, 128, 64);
  or_default(opt.mla_heads, 128, 16);
  or_default(opt.splits, 0, 4);  // auto on a GPU; the host device's SM count is nominal
  if (opt.q_heads % opt.kv_heads != 0)
    return fail("--kv-heads " + std::to_string(opt.kv_heads) + " does not divide --q-heads " +
                std::to_string(opt.q_heads));
  if (opt.batches.empty())
    opt.batches = host ? std::vector<std::int64_t>{1, 3} : std::vector<std::int64_t>{1, 16, 64, 256};
  if (opt.seq_lens.empty())
    opt.seq_lens = host ? std::vector<std::int64_t>{100} : std::vector<std::int64_t>{1024, 4096, 32768};
  if (opt.page_sizes.empty()) opt.page_sizes = {1, 16, 64};
  or_default(opt.prefill_len, 1024, 20);
  if (opt.decode_rows < 0) opt.decode_rows = host ? 4 : 64;
  or_default(opt.decode_len, 4096, 100);
  or_default(opt.copy_mib, 1024, 64);
  if (host && !timing_given) {
    timing.iters = 1;
    timing.runs = 2;
  }

  Context ctx{device, dtype, timing, std::nullopt, verify, false};
  Timing copy_timing;
  copy_timing.iters = host ? 2 : 10;
  copy_timing.runs = host ? 3 : 5;
  auto bw = copy_bandwidth(device, static_cast<std::size_t>(opt.copy_mib) << 20, copy_timing);
  if (bw.ok())
    ctx.copy_gbps = *bw;
  else
    std::fprintf(stderr, "rudnn-bench: note: no reference copy bandwidth (copy_gb_per_s, pct_copy empty): %s\n",
                 bw.error().message().c_str());

  std::printf(
      "set,batch,seq_len,prefill_seqs,prefill_len,page_size,q_heads,kv_heads,head_dim,value_dim,rope_dim,splits,rows,"
      "dtype,device,median_us,tflops,gb_per_s,copy_gb_per_s,pct_copy,merge_pct,max_err,check\n");
  std::fflush(stdout);
  std::mt19937_64 rng(1);
  if (opt.want("decode") || opt.want("split"))
    for (std::int64_t b : opt.batches)
      for (std::int64_t len : opt.seq_lens)
        for (std::int64_t ps : opt.page_sizes)
          if (auto e = run_decode(ctx, opt, b, len, ps, rng)) return fail(*e);
  if (opt.want("mixed") && opt.prefill_seqs + opt.decode_rows > 0)
    for (std::int64_t ps : opt.page_sizes)
      if (auto e = run_mixed(ctx, opt, ps, rng)) return fail(*e);
  if (opt.want("mla") || opt.want("mla_split"))
    for (std::int64_t b : opt.batches)
      for (std::int64_t len : opt.seq_lens)
        if (auto e = run_mla(ctx, opt, b, len, rng)) return fail(*e);
  if (ctx.any_failed) return fail("an output check failed (check=FAIL rows above)");
  return 0;
}

}  // namespace rudnn::bench
