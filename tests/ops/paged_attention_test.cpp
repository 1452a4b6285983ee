// Paged attention, paged MLA and the paged append through the public entries
// (rudnn/paged_attention.h) on the host emulation device, against the FP64 oracles
// (tests/reference/paged_attention.h): page sizes 1, 5, 16, 64 (5 divides no length), shuffled
// physical pages, sequences sharing prefix pages, lengths 1..2000, decode-only, prefill-only and
// mixed batches (rows interleaved), GQA groups 1/4/8, D = Dv and D ≠ Dv, causal and not, MLA at
// R = 512 / P = 64 and R = 32 / P = 8, split-KV with 2 and 32 splits (≈ unsplit and ≈ the oracle),
// every float dtype; the split workspace's partials and log2-sum-exps; NaN in cache slots outside
// the valid keys never read; the same bits under the emulator's reverse and random thread orders;
// batch invariance (a sequence's rows bit for bit the same alone and in a batch, split or not, MLA
// too); paged = dense attention on the gathered tensors; append in place, copy-on-write and slot
// collisions; warm calls served by the plan cache (no compile, module load, wait or allocation but
// the output); every contract line of HostPlan::create and of the calls rejected with the argument
// named and nothing launched or written. Outputs poisoned.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>

#include "contract_fixture.h"
#include "device_limits.h"
#include "host/emulator.h"
#include "jit.h"
#include "op_test_util.h"
#include "paged_test_util.h"
#include "reference/paged_attention.h"
#include "rudnn/attention.h"
#include "rudnn/paged_attention.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using paged_attention::AppendedCache;
using paged_attention::DevicePlan;
using paged_attention::HostPlan;
using paged_attention::SplitWorkspace;
using runtime::host::Schedule;
using testing::fresh_seed;
using testing::host_values;
using testing::relative_l2;
using testing::tolerance;

using paged_test::device_plan;
using paged_test::host_plan;
using paged_test::Layout;
using paged_test::make_layout;
using paged_test::Rows;
using paged_test::Seq;
using paged_test::sz;

// ---------------------------------------------------------------------------------------------
// Problems

struct Heads {
  std::int64_t hq, hkv, d, dv;
};

struct Problem {
  Layout layout;
  Heads h;
  DType dtype;
  std::vector<double> q, k, v;  // already rounded to the dtype
  Tensor tq, tk, tv;
};

Problem make_problem(Layout l, Heads h, DType dtype, std::mt19937_64& rng) {
  const Device host = Device::host();
  const std::int64_t rows = l.pages * l.page_size;
  auto q = testing::random_values(sz(l.queries() * h.hq * h.d), dtype, rng);
  auto k = testing::random_values(sz(rows * h.hkv * h.d), dtype, rng);
  auto v = testing::random_values(sz(rows * h.hkv * h.dv), dtype, rng);
  Tensor tq = testing::upload({l.queries(), h.hq, h.d}, dtype, q, host);
  Tensor tk = testing::upload({l.pages, l.page_size, h.hkv, h.d}, dtype, k, host);
  Tensor tv = testing::upload({l.pages, l.page_size, h.hkv, h.dv}, dtype, v, host);
  return Problem{std::move(l), h, dtype, std::move(q), std::move(k), std::move(v), tq, tk, tv};
}

double default_scale(std::int64_t d) { return 1.0 / std::sqrt(static_cast<double>(d)); }

std::vector<double> oracle(const Problem& p, double scale, bool causal) {
  return reference::paged_attention(p.q, p.k, p.v, p.layout.ref(), {p.h.hq, p.h.hkv, p.h.d, p.h.dv}, scale, causal);
}

std::vector<std::byte> host_bytes(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->bytes : std::vector<std::byte>{};
}

// Runs `body` under the emulator's reverse and random thread orders (then back to the default).
template <class F>
void for_each_other_order(F body) {
  struct Restore {
    ~Restore() { runtime::host::set_default_schedule({}); }
  } restore;
  for (Schedule order : {Schedule::Reverse, Schedule::Random}) {
    SCOPED_TRACE(order == Schedule::Reverse ? "reverse thread order" : "random thread order");
    runtime::host::set_default_schedule({order, fresh_seed()});
    body();
  }
}

// One call, unsplit (splits = 1) or split-KV through a fresh workspace; checks the result's shape.
std::optional<Tensor> run_attention(const DevicePlan& plan, const Problem& p, float scale, bool causal,
                                    std::int64_t splits) {
  auto check = [&](Result<Tensor, PagedAttentionError> r) -> std::optional<Tensor> {
    EXPECT_TRUE(r.ok()) << r.error().message();
    if (!r.ok()) return std::nullopt;
    EXPECT_EQ(r->shape(), (Shape{p.layout.queries(), p.h.hq, p.h.dv}));
    EXPECT_EQ(r->dtype(), p.dtype);
    return std::move(r.value());
  };
  if (splits == 1) return check(plan.attention(p.tq, p.tk, p.tv, scale, causal));
  auto ws = SplitWorkspace::create(p.tq, p.layout.queries(), p.h.hq, p.h.dv, splits);
  EXPECT_TRUE(ws.ok()) << ws.error().message();
  if (!ws.ok()) return std::nullopt;
  EXPECT_EQ(ws->splits(), splits);
  EXPECT_EQ(ws->bytes(), splits * p.layout.queries() * p.h.hq * (p.h.dv + 1) * 4);
  return check(plan.attention_with_workspace(p.tq, p.tk, p.tv, scale, causal, *ws));
}

// Unsplit and with 2 and 32 splits: each ≈ the oracle, the split results ≈ the unsplit one.
// `orders`: also under the emulator's other thread orders (bit for bit the same).
void check_attention(const Problem& p, bool causal, double scale, std::initializer_list<std::int64_t> splits = {2, 32},
                     bool orders = true) {
  scale = static_cast<float>(scale);  // what the kernels get
  SCOPED_TRACE(fmt::format("{} Hq={} Hkv={} D={} Dv={} {} causal={} scale={}", p.layout.describe(), p.h.hq, p.h.hkv,
                           p.h.d, p.h.dv, dtype_name(p.dtype), causal, scale));
  const auto want = oracle(p, scale, causal);
  auto plan = device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  auto unsplit = run_attention(*plan, p, static_cast<float>(scale), causal, 1);
  ASSERT_TRUE(unsplit.has_value());
  const auto base = host_values(*unsplit);
  EXPECT_LE(relative_l2(base, want), 2 * tolerance(p.dtype));
  const auto base_bytes = host_bytes(*unsplit);
  for (std::int64_t s : splits) {
    SCOPED_TRACE(fmt::format("splits={}", s));
    auto split = run_attention(*plan, p, static_cast<float>(scale), causal, s);
    ASSERT_TRUE(split.has_value());
    const auto got = host_values(*split);
    EXPECT_LE(relative_l2(got, want), 2 * tolerance(p.dtype));
    EXPECT_LE(relative_l2(got, base), 2 * tolerance(p.dtype));
    // The other thread orders of the emulator: the same bits (no missing barrier).
    const auto split_bytes = host_bytes(*split);
    if (orders)
      for_each_other_order([&] {
        auto again = run_attention(*plan, p, static_cast<float>(scale), causal, s);
        ASSERT_TRUE(again.has_value());
        EXPECT_EQ(host_bytes(*again), split_bytes) << "the split result depends on the thread order";
      });
  }
  if (orders)
    for_each_other_order([&] {
      auto again = run_attention(*plan, p, static_cast<float>(scale), causal, 1);
      ASSERT_TRUE(again.has_value());
      EXPECT_EQ(host_bytes(*again), base_bytes) << "the result depends on the thread order";
    });
}

// A split workspace's FP32 contents (partials, then log2-sum-exps).
std::vector<float> workspace_floats(const SplitWorkspace& ws) {
  const auto bytes = host_bytes(ws.storage());
  std::vector<float> f(bytes.size() / sizeof(float));
  std::memcpy(f.data(), bytes.data(), f.size() * sizeof(float));
  return f;
}

class PagedAttention : public ::testing::Test {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
};

// ---------------------------------------------------------------------------------------------
// Attention against the oracle

// Page sizes 1, 16, 64 and 5 (dividing none of the lengths), shuffled pages, a table longer than
// its sequence, mixed decode / chunked prefill rows interleaved; the dtypes rotate.
TEST_F(PagedAttention, PageSizes) {
  const std::pair<std::int64_t, DType> kCases[] = {
      {1, DType::BF16}, {16, DType::F16}, {64, DType::F32}, {5, DType::BF16}};
  for (const auto& [page_size, dtype] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, page_size,
                           {{1, Rows::Decode},
                            {37, Rows::Chunk, 6},
                            {131, Rows::Decode, 0, -1, 0, 2},
                            {64, Rows::Random, 5},
                            {23, Rows::Decode}},
                           true);
    Problem p = make_problem(std::move(l), {4, 2, 32, 32}, dtype, rng);
    check_attention(p, true, default_scale(32));
  }
}

// Two sequences share their first pages (a common prompt prefix) with a third that shares the
// first's prefix too; causal and not.
TEST_F(PagedAttention, SharedPrefixPages) {
  for (bool causal : {true, false}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(
        rng, 16,
        {{70, Rows::Chunk, 4}, {90, Rows::Decode, 0, 0, 3}, {49, Rows::Random, 6, 0, 3}, {33, Rows::Decode, 0, 1, 2}},
        true);
    ASSERT_EQ(l.tables[1][2], l.tables[0][2]);
    Problem p = make_problem(std::move(l), {4, 1, 32, 32}, DType::BF16, rng);
    check_attention(p, causal, default_scale(32));
  }
}

// Lengths up to 2000 (and 1), small heads for the emulator: decode rows plus a chunk at the end of
// the longest, page sizes 16 and 64.
TEST_F(PagedAttention, LongSequences) {
  const std::pair<std::int64_t, DType> kCases[] = {{16, DType::F32}, {64, DType::BF16}};
  for (const auto& [page_size, dtype] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(
        rng, page_size,
        {{2000, Rows::Chunk, 3}, {1999, Rows::Decode}, {1, Rows::Decode}, {777, Rows::Random, 2}, {1025, Rows::Decode}},
        true);
    Problem p = make_problem(std::move(l), {2, 1, 16, 16}, dtype, rng);
    check_attention(p, true, default_scale(16));
  }
}

// Decode only (one row per sequence at L − 1), GQA 8 and 4, causal and not (the same for decode).
// In f16/bf16 at D = 64 and 128 the tensor-core kernel serves these tiles (≤ 16 panel rows) with its
// four warps splitting the keys and merging at the end.
TEST_F(PagedAttention, DecodeOnly) {
  const std::tuple<Heads, DType, bool> kCases[] = {
      {{8, 1, 64, 64}, DType::BF16, false},
      {{8, 2, 64, 64}, DType::F16, true},
      {{32, 8, 128, 128}, DType::BF16, true},  // the benchmark's GQA 32/8 decode
      {{4, 4, 16, 16}, DType::F32, true}};
  for (const auto& [heads, dtype, causal] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16,
                           {{1, Rows::Decode},
                            {17, Rows::Decode},
                            {16, Rows::Decode},
                            {200, Rows::Decode},
                            {95, Rows::Decode},
                            {3, Rows::Decode}},
                           false);
    Problem p = make_problem(std::move(l), heads, dtype, rng);
    check_attention(p, causal, default_scale(heads.d));
  }
}

// Prefill only (rows 0..L − 1 of each sequence, in order), GQA 1, D ≠ Dv, causal and not.
TEST_F(PagedAttention, PrefillOnly) {
  for (bool causal : {true, false}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16, {{45, Rows::Prefill}, {20, Rows::Prefill}, {1, Rows::Prefill}}, false);
    Problem p = make_problem(std::move(l), {2, 2, 32, 16}, DType::F16, rng);
    check_attention(p, causal, default_scale(32));
  }
}

// Mixed batches: decode, prefill, chunks and random rows interleaved, a sequence with no rows and
// length 0, GQA 4 with D ≠ Dv (both directions), a non-default scale; every dtype.
TEST_F(PagedAttention, MixedBatchesEveryDtype) {
  const std::tuple<Heads, DType, bool> kCases[] = {{{8, 2, 40, 24}, DType::F32, true},
                                                   {{8, 2, 40, 24}, DType::F16, false},
                                                   {{8, 2, 24, 72}, DType::BF16, true},
                                                   {{4, 4, 128, 128}, DType::BF16, true}};
  for (const auto& [heads, dtype, causal] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16,
                           {{33, Rows::Prefill},
                            {0, Rows::None},
                            {120, Rows::Decode},
                            {50, Rows::Chunk, 7},
                            {90, Rows::None},
                            {61, Rows::Random, 4},
                            {2, Rows::Decode}},
                           true);
    Problem p = make_problem(std::move(l), heads, dtype, rng);
    check_attention(p, causal, 0.37);
  }
}

// Large logits (scale 2 on values in ±2, D = 64: scores of tens, nearly one-hot rows) match.
TEST_F(PagedAttention, LargeLogits) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 16, {{70, Rows::Chunk, 3}, {33, Rows::Decode}}, true);
  Problem p = make_problem(std::move(l), {2, 1, 64, 64}, DType::F32, rng);
  check_attention(p, true, 2.0);
}

// A long chunked prefill: the last 512 rows of a 2000-key sequence (and a 1-key prefill and a
// decode row), causal, unsplit and with 32 splits (one thread order: the emulator's time).
TEST_F(PagedAttention, LongChunkedPrefill) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 64, {{2000, Rows::Chunk, 512}, {1, Rows::Prefill}, {300, Rows::Decode}}, true);
  Problem p = make_problem(std::move(l), {2, 1, 16, 16}, DType::BF16, rng);
  check_attention(p, true, default_scale(16), {32}, false);
}

// Prefill with GQA 8 through 64-key pages, D = 128 ≠ Dv = 64.
TEST_F(PagedAttention, PrefillGqa8) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 64, {{70, Rows::Prefill}, {130, Rows::Chunk, 9}}, true);
  Problem p = make_problem(std::move(l), {8, 1, 128, 64}, DType::F16, rng);
  check_attention(p, true, default_scale(128));
}

// Cache slots no sequence's valid keys cover (the tails of last pages, pages no table names, table
// pages past a length) hold NaN: nothing reads them, every result stays finite and right.
TEST_F(PagedAttention, NaNOutsideTheValidKeysIsNeverRead) {
  const std::pair<std::int64_t, DType> kCases[] = {{16, DType::F32}, {5, DType::BF16}};
  for (const auto& [page_size, dtype] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(
        rng, page_size, {{37, Rows::Chunk, 4}, {1, Rows::Decode, 0, -1, 0, 1}, {50, Rows::Random, 3}, {9, Rows::None}},
        true);
    Problem p = make_problem(std::move(l), {4, 2, 32, 16}, dtype, rng);
    const auto sched = p.layout.ref();
    std::vector<bool> valid(sz(p.layout.pages * p.layout.page_size), false);
    for (std::int64_t s = 0; s < std::ssize(p.layout.lengths); ++s)
      for (std::int64_t j = 0; j < p.layout.lengths[sz(s)]; ++j)
        valid[sz(reference::paged_cache_row(sched, s, j))] = true;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t row = 0; row < valid.size(); ++row) {
      if (valid[row]) continue;
      std::fill_n(p.k.begin() + static_cast<std::ptrdiff_t>(row * sz(p.h.hkv * p.h.d)), p.h.hkv * p.h.d, nan);
      std::fill_n(p.v.begin() + static_cast<std::ptrdiff_t>(row * sz(p.h.hkv * p.h.dv)), p.h.hkv * p.h.dv, nan);
    }
    p.tk = testing::upload(p.tk.shape(), dtype, p.k, Device::host());
    p.tv = testing::upload(p.tv.shape(), dtype, p.v, Device::host());
    for (bool causal : {true, false}) check_attention(p, causal, default_scale(32));
  }
}

// The split workspace holds what the header says: per split, query row and head the output over
// that split's keys [i·⌈L/splits⌉, (i+1)·⌈L/splits⌉) ∩ the visible ones, normalized by its own sum,
// then the log2-sum-exp of those keys' scores (−inf where the split sees no key). The workspace is
// poisoned first, so every part the merge reads must have been written.
TEST_F(PagedAttention, SplitWorkspaceHoldsThePartials) {
  const std::tuple<DType, std::int64_t, bool> kCases[] = {{DType::F32, 4, true}, {DType::BF16, 32, false}};
  for (const auto& [dtype, splits, causal] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={} splits={} causal={}", seed, splits, causal));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16, {{1, Rows::Decode}, {37, Rows::Random, 4}, {100, Rows::Chunk, 3}}, true);
    Problem p = make_problem(std::move(l), {4, 2, 16, 8}, dtype, rng);
    const float scale = static_cast<float>(default_scale(16));
    auto plan = device_plan(p.layout, p.tq);
    ASSERT_TRUE(plan.has_value());
    const std::int64_t Q = p.layout.queries(), H = p.h.hq, Dv = p.h.dv;
    auto ws = SplitWorkspace::create(p.tq, Q, H, Dv, splits);
    ASSERT_TRUE(ws.ok()) << ws.error().message();
    ASSERT_TRUE(ws->storage().poison().ok());
    auto out = plan->attention_with_workspace(p.tq, p.tk, p.tv, scale, causal, *ws);
    ASSERT_TRUE(out.ok()) << out.error().message();
    const auto parts = host_values(ws->storage());
    ASSERT_EQ(parts.size(), sz(splits * Q * H * (Dv + 1)));

    // The oracle of each split: the paged oracle restricted to the split's keys.
    const auto sched = p.layout.ref();
    std::vector<double> got_o, want_o, got_lse, want_lse;
    const std::int64_t group = p.h.hq / p.h.hkv;
    for (std::int64_t r = 0; r < Q; ++r) {
      const std::int64_t seq = sched.sequence_ids[sz(r)], L = sched.lengths[sz(seq)];
      const std::int64_t visible = causal ? std::min(L, sched.positions[sz(r)] + 1) : L;
      const std::int64_t span = (L + splits - 1) / splits;
      const auto k = reference::gather_pages(p.k, sched, seq, p.h.hkv, p.h.d);
      const auto v = reference::gather_pages(p.v, sched, seq, p.h.hkv, Dv);
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < splits; ++i) {
          const std::int64_t lo = std::min(i * span, L), hi = std::min(lo + span, visible);
          const double lse = parts[sz(splits * Q * H * Dv + (i * Q + r) * H + h)];
          if (hi <= lo) {
            EXPECT_TRUE(std::isinf(lse) && lse < 0) << "row " << r << " head " << h << " split " << i << ": " << lse;
            continue;
          }
          std::vector<double> sc;
          double top = -std::numeric_limits<double>::infinity();
          for (std::int64_t j = lo; j < hi; ++j) {
            double dot = 0;
            for (std::int64_t e = 0; e < p.h.d; ++e)
              dot += p.q[sz((r * H + h) * p.h.d + e)] * k[sz((j * p.h.hkv + h / group) * p.h.d + e)];
            sc.push_back(scale * dot);
            top = std::max(top, sc.back());
          }
          double sum = 0;
          for (double x : sc) sum += std::exp(x - top);
          want_lse.push_back((top + std::log(sum)) / std::log(2.0));
          got_lse.push_back(lse);
          for (std::int64_t e = 0; e < Dv; ++e) {
            double o = 0;
            for (std::int64_t j = lo; j < hi; ++j)
              o += std::exp(sc[sz(j - lo)] - top) / sum * v[sz((j * p.h.hkv + h / group) * Dv + e)];
            want_o.push_back(o);
            got_o.push_back(parts[sz(((i * Q + r) * H + h) * Dv + e)]);
          }
        }
    }
    ASSERT_FALSE(want_o.empty());
    EXPECT_LE(relative_l2(got_o, want_o), 2 * tolerance(dtype));
    EXPECT_LE(relative_l2(got_lse, want_lse), 1e-5);
  }
}

// ---------------------------------------------------------------------------------------------
// Batch invariance

// The rows of sequence `s` of `p` as a problem of their own (one sequence, the same caches).
Problem alone(const Problem& p, std::int64_t s, std::vector<std::int64_t>& rows) {
  Layout l = paged_test::one_sequence(p.layout, s);
  rows.clear();
  std::vector<double> q;
  const std::int64_t row_size = p.h.hq * p.h.d;
  for (std::int64_t r = 0; r < p.layout.queries(); ++r) {
    if (p.layout.sequence_ids[sz(r)] != s) continue;
    rows.push_back(r);
    l.sequence_ids.push_back(0);
    l.positions.push_back(p.layout.positions[sz(r)]);
    q.insert(q.end(), p.q.begin() + r * row_size, p.q.begin() + (r + 1) * row_size);
  }
  Tensor tq = testing::upload({l.queries(), p.h.hq, p.h.d}, p.dtype, q, Device::host());
  return Problem{std::move(l), p.h, p.dtype, std::move(q), p.k, p.v, tq, p.tk, p.tv};
}

// A sequence's output rows are bit for bit the same computed alone (its own plan with only its rows)
// and inside a larger batch, unsplit and with 2 and 32 splits.
TEST_F(PagedAttention, BatchInvariance) {
  // Plain cores (D = 32, 16/24) and tensor cores (D = 128; BatchInvariantSplitPartials compares FP32).
  const std::pair<Heads, DType> kCases[] = {
      {{4, 2, 32, 32}, DType::BF16}, {{2, 1, 16, 24}, DType::F32}, {{8, 2, 128, 128}, DType::F16}};
  for (const auto& [heads, dtype] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16,
                           {{300, Rows::Chunk, 5},
                            {41, Rows::Decode},
                            {97, Rows::Random, 3, 0, 2},
                            {150, Rows::Prefill},
                            {5, Rows::Decode}},
                           true);
    Problem p = make_problem(std::move(l), heads, dtype, rng);
    auto plan = device_plan(p.layout, p.tq);
    ASSERT_TRUE(plan.has_value());
    const float scale = static_cast<float>(default_scale(heads.d));
    const auto want = oracle(p, scale, true);
    const std::size_t row_bytes = sz(heads.hq * heads.dv) * dtype_size(dtype);
    for (std::int64_t splits : {1, 2, 32}) {
      SCOPED_TRACE(fmt::format("splits={}", splits));
      auto full = run_attention(*plan, p, scale, true, splits);
      ASSERT_TRUE(full.has_value());
      EXPECT_LE(relative_l2(host_values(*full), want), 2 * tolerance(dtype));
      const auto full_bytes = host_bytes(*full);
      ASSERT_EQ(full_bytes.size(), sz(p.layout.queries()) * row_bytes);
      for (std::int64_t s = 0; s < std::ssize(p.layout.lengths); ++s) {
        SCOPED_TRACE(fmt::format("sequence {}", s));
        std::vector<std::int64_t> rows;
        Problem one = alone(p, s, rows);
        auto one_plan = device_plan(one.layout, one.tq);
        ASSERT_TRUE(one_plan.has_value());
        auto out = run_attention(*one_plan, one, scale, true, splits);
        ASSERT_TRUE(out.has_value());
        const auto bytes = host_bytes(*out);
        ASSERT_EQ(bytes.size(), rows.size() * row_bytes);
        for (std::size_t i = 0; i < rows.size(); ++i)
          EXPECT_EQ(std::memcmp(bytes.data() + i * row_bytes, full_bytes.data() + sz(rows[i]) * row_bytes, row_bytes),
                    0)
              << "row " << rows[i] << " (position " << p.layout.positions[sz(rows[i])] << ") differs alone";
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Paged = dense

// [A, B, C] → [B, A, C]
std::vector<double> swap_first_two(const std::vector<double>& x, std::int64_t a, std::int64_t b, std::int64_t c) {
  std::vector<double> y(x.size());
  for (std::int64_t i = 0; i < a; ++i)
    for (std::int64_t j = 0; j < b; ++j)
      for (std::int64_t e = 0; e < c; ++e) y[sz((j * a + i) * c + e)] = x[sz((i * b + j) * c + e)];
  return y;
}

// The FP32 split partials (before any rounding to f16/bf16 can hide a difference) of a sequence's
// rows are bit for bit the same alone and inside a batch whose other rows interleave with its rows
// (so its query tiles are cut differently), on tensor cores: decode rows and runs of chunked-prefill
// rows, GQA 4 and 8.
TEST_F(PagedAttention, BatchInvariantSplitPartials) {
  const Heads kHeads[] = {{8, 2, 128, 128}, {16, 2, 64, 64}};
  for (const Heads& heads : kHeads) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={} Hq={} D={}", seed, heads.hq, heads.d));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(
        rng, 16,
        {{120, Rows::Chunk, 40}, {33, Rows::Decode}, {70, Rows::Chunk, 6}, {9, Rows::Decode}, {64, Rows::Chunk, 21}},
        false);
    paged_test::interleave_rows(l, rng);
    Problem p = make_problem(std::move(l), heads, DType::F16, rng);
    const float scale = static_cast<float>(default_scale(heads.d));
    constexpr std::int64_t kSplits = 2;
    // The workspace after a split call: [splits, queries, Hq, Dv] partials, then [splits, queries, Hq]
    // log2-sum-exps.
    auto partials = [&](const Problem& x) -> std::vector<float> {
      auto plan = device_plan(x.layout, x.tq);
      EXPECT_TRUE(plan.has_value());
      if (!plan) return {};
      auto ws = SplitWorkspace::create(x.tq, x.layout.queries(), x.h.hq, x.h.dv, kSplits);
      EXPECT_TRUE(ws.ok()) << ws.error().message();
      if (!ws.ok()) return {};
      auto out = plan->attention_with_workspace(x.tq, x.tk, x.tv, scale, true, *ws);
      EXPECT_TRUE(out.ok()) << out.error().message();
      return workspace_floats(*ws);
    };
    const auto full = partials(p);
    const std::int64_t Q = p.layout.queries(), H = heads.hq, Dv = heads.dv;
    ASSERT_EQ(std::ssize(full), kSplits * Q * H * (Dv + 1));
    std::int64_t interleaved = 0;
    for (std::int64_t s = 0; s < std::ssize(p.layout.lengths); ++s) {
      SCOPED_TRACE(fmt::format("sequence {}", s));
      std::vector<std::int64_t> rows;
      Problem one = alone(p, s, rows);
      const auto mine = partials(one);
      const std::int64_t n = one.layout.queries();
      ASSERT_EQ(std::ssize(mine), kSplits * n * H * (Dv + 1));
      for (std::size_t i = 1; i < rows.size(); ++i) interleaved += rows[i] != rows[i - 1] + 1;
      for (std::int64_t split = 0; split < kSplits; ++split)
        for (std::size_t i = 0; i < rows.size(); ++i) {
          const std::int64_t r = rows[i], a = static_cast<std::int64_t>(i);
          EXPECT_EQ(
              std::memcmp(&mine[sz(((split * n + a) * H) * Dv)], &full[sz(((split * Q + r) * H) * Dv)], sz(H * Dv) * 4),
              0)
              << "split " << split << " row " << r << ": partial outputs differ alone";
          EXPECT_EQ(std::memcmp(&mine[sz(kSplits * n * H * Dv + (split * n + a) * H)],
                                &full[sz(kSplits * Q * H * Dv + (split * Q + r) * H)], sz(H) * 4),
                    0)
              << "split " << split << " row " << r << ": log2-sum-exps differ alone";
        }
    }
    EXPECT_GT(interleaved, 0) << "the batch's rows must interleave for this test to mean anything";
  }
}

// One sequence's prefill through the paged entry = rudnn::attention::attention on the gathered
// dense tensors [1, H, L, D] (to rounding), causal and not.
TEST_F(PagedAttention, EqualsDenseAttentionOnGatheredTensors) {
  for (bool causal : {true, false}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={} causal={}", seed, causal));
    std::mt19937_64 rng(seed);
    const std::int64_t L = 53;
    const Heads h{4, 2, 64, 64};
    const DType dtype = DType::F16;
    Layout l = make_layout(rng, 16, {{L, Rows::Prefill}}, false);
    Problem p = make_problem(std::move(l), h, dtype, rng);
    const double scale = default_scale(h.d);
    auto plan = device_plan(p.layout, p.tq);
    ASSERT_TRUE(plan.has_value());
    auto paged = run_attention(*plan, p, static_cast<float>(scale), causal, 1);
    ASSERT_TRUE(paged.has_value());
    const auto got = host_values(*paged);  // [L, Hq, Dv]

    const auto sched = p.layout.ref();
    const auto k = reference::gather_pages(p.k, sched, 0, h.hkv, h.d);  // [L, Hkv, D]
    const auto v = reference::gather_pages(p.v, sched, 0, h.hkv, h.dv);
    const Device host = Device::host();
    Tensor dq = testing::upload({1, h.hq, L, h.d}, dtype, swap_first_two(p.q, L, h.hq, h.d), host);
    Tensor dk = testing::upload({1, h.hkv, L, h.d}, dtype, swap_first_two(k, L, h.hkv, h.d), host);
    Tensor dv = testing::upload({1, h.hkv, L, h.dv}, dtype, swap_first_two(v, L, h.hkv, h.dv), host);
    auto dense = attention::attention(dq, dk, dv, std::nullopt, std::nullopt, {static_cast<float>(scale), causal},
                                      attention::AttentionStrategy::FlashUnit);
    ASSERT_TRUE(dense.ok()) << dense.error().message();
    const auto want_dense = swap_first_two(host_values(*dense), h.hq, L, h.dv);  // → [L, Hq, Dv]
    EXPECT_LE(relative_l2(got, want_dense), 2 * tolerance(dtype));
    EXPECT_LE(relative_l2(got, oracle(p, scale, causal)), 2 * tolerance(dtype));
  }
}

// ---------------------------------------------------------------------------------------------
// MLA

struct MlaProblem {
  Layout layout;
  std::int64_t heads, r, p;
  DType dtype;
  std::vector<double> q, qp, c, kp;
  Tensor tq, tqp, tc, tkp;
};

MlaProblem make_mla(Layout l, std::int64_t heads, std::int64_t r, std::int64_t pr, DType dtype, std::mt19937_64& rng) {
  const Device host = Device::host();
  const std::int64_t rows = l.pages * l.page_size, qn = l.queries();
  auto q = testing::random_values(sz(qn * heads * r), dtype, rng, -1, 1);
  auto qp = testing::random_values(sz(qn * heads * pr), dtype, rng, -1, 1);
  auto c = testing::random_values(sz(rows * r), dtype, rng, -1, 1);
  auto kp = testing::random_values(sz(rows * pr), dtype, rng, -1, 1);
  Tensor tq = testing::upload({qn, heads, r}, dtype, q, host);
  Tensor tqp = testing::upload({qn, heads, pr}, dtype, qp, host);
  Tensor tc = testing::upload({l.pages, l.page_size, 1, r}, dtype, c, host);
  Tensor tkp = testing::upload({l.pages, l.page_size, 1, pr}, dtype, kp, host);
  return MlaProblem{std::move(l),  heads,         r,   pr, dtype, std::move(q), std::move(qp), std::move(c),
                    std::move(kp), std::move(tq), tqp, tc, tkp};
}

// Sequence s of `m` alone: its rows (their batch indices into `rows`), in the batch's order, over
// the same caches.
MlaProblem mla_alone(const MlaProblem& m, std::int64_t s, std::vector<std::int64_t>& rows) {
  Layout one = paged_test::one_sequence(m.layout, s);
  rows.clear();
  std::vector<double> q, qp;
  for (std::int64_t r = 0; r < m.layout.queries(); ++r) {
    if (m.layout.sequence_ids[sz(r)] != s) continue;
    rows.push_back(r);
    one.sequence_ids.push_back(0);
    one.positions.push_back(m.layout.positions[sz(r)]);
    q.insert(q.end(), m.q.begin() + r * m.heads * m.r, m.q.begin() + (r + 1) * m.heads * m.r);
    qp.insert(qp.end(), m.qp.begin() + r * m.heads * m.p, m.qp.begin() + (r + 1) * m.heads * m.p);
  }
  const std::int64_t n = one.queries();
  Tensor tq = testing::upload({n, m.heads, m.r}, m.dtype, q, Device::host());
  Tensor tqp = testing::upload({n, m.heads, m.p}, m.dtype, qp, Device::host());
  return MlaProblem{std::move(one), m.heads, m.r, m.p,  m.dtype, std::move(q), std::move(qp), m.c,
                    m.kp,           tq,      tqp, m.tc, m.tkp};
}

void check_mla(const MlaProblem& m, bool causal, std::initializer_list<std::int64_t> splits) {
  SCOPED_TRACE(fmt::format("{} H={} R={} P={} {} causal={}", m.layout.describe(), m.heads, m.r, m.p,
                           dtype_name(m.dtype), causal));
  const double scale = 1.0 / std::sqrt(static_cast<double>(m.r + m.p));
  const auto want = reference::paged_mla(m.q, m.qp, m.c, m.kp, m.layout.ref(), m.heads, m.r, m.p, scale, causal);
  auto plan = device_plan(m.layout, m.tq);
  ASSERT_TRUE(plan.has_value());
  const Shape out_shape{m.layout.queries(), m.heads, m.r};
  auto base = plan->mla(m.tq, m.tqp, m.tc, m.tkp, static_cast<float>(scale), causal);
  ASSERT_TRUE(base.ok()) << base.error().message();
  EXPECT_EQ(base->shape(), out_shape);
  EXPECT_EQ(base->dtype(), m.dtype);
  const auto unsplit = host_values(*base);
  EXPECT_LE(relative_l2(unsplit, want), 2 * tolerance(m.dtype));
  for (std::int64_t s : splits) {
    SCOPED_TRACE(fmt::format("splits={}", s));
    auto ws = SplitWorkspace::create(m.tq, m.layout.queries(), m.heads, m.r, s);
    ASSERT_TRUE(ws.ok()) << ws.error().message();
    auto out = plan->mla_with_workspace(m.tq, m.tqp, m.tc, m.tkp, static_cast<float>(scale), causal, *ws);
    ASSERT_TRUE(out.ok()) << out.error().message();
    EXPECT_EQ(out->shape(), out_shape);
    const auto got = host_values(*out);
    EXPECT_LE(relative_l2(got, want), 2 * tolerance(m.dtype));
    EXPECT_LE(relative_l2(got, unsplit), 2 * tolerance(m.dtype));
  }
  const auto base_bytes = host_bytes(*base);
  for_each_other_order([&] {
    auto again = plan->mla(m.tq, m.tqp, m.tc, m.tkp, static_cast<float>(scale), causal);
    ASSERT_TRUE(again.ok()) << again.error().message();
    EXPECT_EQ(host_bytes(*again), base_bytes) << "the result depends on the thread order";
  });
}

// Small MLA (R = 32, P = 8): mixed rows, shared prefix pages, page size 5, every dtype.
TEST_F(PagedAttention, MlaSmallEveryDtype) {
  const std::tuple<DType, bool, std::int64_t> kCases[] = {
      {DType::F32, true, 16}, {DType::F16, false, 5}, {DType::BF16, true, 1}};
  for (const auto& [dtype, causal, page_size] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l =
        make_layout(rng, page_size,
                    {{40, Rows::Chunk, 5}, {66, Rows::Decode, 0, 0, 2}, {1, Rows::Decode}, {19, Rows::Prefill}}, true);
    check_mla(make_mla(std::move(l), 4, 32, 8, dtype, rng), causal, {2, 32});
  }
}

// DeepSeek's shape (R = 512, P = 64): one small decode batch, two heads.
TEST_F(PagedAttention, MlaLatent512Decode) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 64, {{70, Rows::Decode}, {130, Rows::Decode}}, false);
  check_mla(make_mla(std::move(l), 2, 512, 64, DType::BF16, rng), true, {2});
  Layout l2 = make_layout(rng, 16, {{33, Rows::Decode}, {5, Rows::Chunk, 2}}, true);
  check_mla(make_mla(std::move(l2), 1, 512, 64, DType::F16, rng), false, {32});
}

// MLA on tensor cores (paged_mla_mma serves f16/bf16 with R a multiple of 128 up to 512 and Pr a
// multiple of 16; the cases above at R = 512 run it too): DeepSeek's H = 128 (two 64-head chunks per
// row) in decode; panels of several query rows (H = 16: 4 rows per tile, H = 8: 8) through chunked
// prefill, causal and not; page sizes 1, 5 and 64; shared prefix pages; keys past a 32-key tile's
// end; splits 2 and 32.
TEST_F(PagedAttention, MlaOnTensorCores) {
  struct Case {
    std::int64_t heads, r, p, page_size;
    DType dtype;
    bool causal, shuffle;
    std::vector<Seq> seqs;
  };
  const Case kCases[] = {
      {128, 512, 64, 64, DType::BF16, true, true, {{70, Rows::Decode}, {161, Rows::Decode}, {1, Rows::Decode}}},
      {16, 128, 16, 5, DType::F16, true, false, {{45, Rows::Chunk, 11}, {9, Rows::Decode}, {33, Rows::Prefill}}},
      {8, 256, 32, 1, DType::BF16, false, false, {{40, Rows::Chunk, 13}, {12, Rows::Chunk, 3, 0, 2}}},
      {16, 128, 64, 16, DType::BF16, true, true, {{66, Rows::Random, 4}, {50, Rows::Decode, 0, 0, 3}}},
  };
  for (const Case& c : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, c.page_size, c.seqs, c.shuffle);
    check_mla(make_mla(std::move(l), c.heads, c.r, c.p, c.dtype, rng), c.causal, {2, 32});
  }
}

// MLA rows are batch invariant too: each sequence alone = inside the batch, bit for bit, unsplit
// and with 2 and 32 splits, on plain cores (R = 32) and on tensor cores (R = 128, H = 16: panels of
// 4 rows).
void check_mla_batch_invariance(std::int64_t heads, std::int64_t r, std::int64_t p) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={} H={} R={} P={}", seed, heads, r, p));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 16, {{90, Rows::Chunk, 3}, {20, Rows::Decode}, {47, Rows::Random, 3, 0, 1}}, true);
  MlaProblem m = make_mla(std::move(l), heads, r, p, DType::BF16, rng);
  auto plan = device_plan(m.layout, m.tq);
  ASSERT_TRUE(plan.has_value());
  const float scale = 0.125f;
  auto call = [&](const DevicePlan& pl, const MlaProblem& x, std::int64_t splits) -> std::vector<std::byte> {
    if (splits == 1) {
      auto r = pl.mla(x.tq, x.tqp, x.tc, x.tkp, scale, true);
      EXPECT_TRUE(r.ok()) << r.error().message();
      return r.ok() ? host_bytes(*r) : std::vector<std::byte>{};
    }
    auto ws = SplitWorkspace::create(x.tq, x.layout.queries(), x.heads, x.r, splits);
    EXPECT_TRUE(ws.ok()) << ws.error().message();
    if (!ws.ok()) return {};
    auto r = pl.mla_with_workspace(x.tq, x.tqp, x.tc, x.tkp, scale, true, *ws);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? host_bytes(*r) : std::vector<std::byte>{};
  };
  const std::size_t row_bytes = sz(m.heads * m.r) * dtype_size(m.dtype);
  for (std::int64_t splits : {1, 2, 32}) {
    SCOPED_TRACE(fmt::format("splits={}", splits));
    const auto full = call(*plan, m, splits);
    ASSERT_EQ(full.size(), sz(m.layout.queries()) * row_bytes);
    for (std::int64_t s = 0; s < std::ssize(m.layout.lengths); ++s) {
      SCOPED_TRACE(fmt::format("sequence {}", s));
      std::vector<std::int64_t> rows;
      const MlaProblem alone_m = mla_alone(m, s, rows);
      auto one_plan = device_plan(alone_m.layout, alone_m.tq);
      ASSERT_TRUE(one_plan.has_value());
      const auto bytes = call(*one_plan, alone_m, splits);
      ASSERT_EQ(bytes.size(), rows.size() * row_bytes);
      for (std::size_t i = 0; i < rows.size(); ++i)
        EXPECT_EQ(std::memcmp(bytes.data() + i * row_bytes, full.data() + sz(rows[i]) * row_bytes, row_bytes), 0)
            << "row " << rows[i] << " differs alone";
    }
  }
}

// As BatchInvariantSplitPartials for MLA: the FP32 split partials of a sequence whose rows
// interleave with other sequences' rows, alone and in the batch, on tensor cores (H = 16, R = 128:
// panels of up to 4 rows) and plain cores (R = 32).
TEST_F(PagedAttention, MlaBatchInvariantSplitPartials) {
  const std::tuple<std::int64_t, std::int64_t, std::int64_t> kShapes[] = {{16, 128, 16}, {4, 32, 8}};
  for (const auto& [heads, r, pr] : kShapes) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={} H={} R={} P={}", seed, heads, r, pr));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16, {{70, Rows::Chunk, 23}, {20, Rows::Decode}, {45, Rows::Chunk, 9}}, false);
    paged_test::interleave_rows(l, rng);
    MlaProblem m = make_mla(std::move(l), heads, r, pr, DType::BF16, rng);
    constexpr std::int64_t kSplits = 2;
    const float scale = 0.125f;
    auto partials = [&](const MlaProblem& x) -> std::vector<float> {
      auto plan = device_plan(x.layout, x.tq);
      EXPECT_TRUE(plan.has_value());
      if (!plan) return {};
      auto ws = SplitWorkspace::create(x.tq, x.layout.queries(), x.heads, x.r, kSplits);
      EXPECT_TRUE(ws.ok()) << ws.error().message();
      if (!ws.ok()) return {};
      auto out = plan->mla_with_workspace(x.tq, x.tqp, x.tc, x.tkp, scale, true, *ws);
      EXPECT_TRUE(out.ok()) << out.error().message();
      return workspace_floats(*ws);
    };
    const auto full = partials(m);
    const std::int64_t Q = m.layout.queries(), H = heads, R = r;
    ASSERT_EQ(std::ssize(full), kSplits * Q * H * (R + 1));
    for (std::int64_t s = 0; s < std::ssize(m.layout.lengths); ++s) {
      SCOPED_TRACE(fmt::format("sequence {}", s));
      std::vector<std::int64_t> rows;
      const MlaProblem one = mla_alone(m, s, rows);
      const std::int64_t n = one.layout.queries();
      const auto mine = partials(one);
      ASSERT_EQ(std::ssize(mine), kSplits * n * H * (R + 1));
      for (std::int64_t split = 0; split < kSplits; ++split)
        for (std::size_t i = 0; i < rows.size(); ++i) {
          const std::int64_t row = rows[i], a = static_cast<std::int64_t>(i);
          EXPECT_EQ(
              std::memcmp(&mine[sz((split * n + a) * H * R)], &full[sz((split * Q + row) * H * R)], sz(H * R) * 4), 0)
              << "split " << split << " row " << row << ": partial outputs differ alone";
          EXPECT_EQ(std::memcmp(&mine[sz(kSplits * n * H * R + (split * n + a) * H)],
                                &full[sz(kSplits * Q * H * R + (split * Q + row) * H)], sz(H) * 4),
                    0)
              << "split " << split << " row " << row << ": log2-sum-exps differ alone";
        }
    }
  }
}

// Every tile a call takes fits the device's shared memory. On sm_86/sm_89's 99 KiB the heuristic
// narrows the plain tile: GQA 16 at D = 512 (16 rows of 16 keys; of 32 they would need 163 KiB),
// D = 1024 with Dv = 64 (16-key tiles of 4 rows), MLA with R + Pr = 1280 (16-key tiles of 2 rows);
// DeepSeek's MLA 512/64 runs on plain cores (its tensor-core tile needs 152 KiB). D = Dv = 1024 fits no tile there: an
// Unsupported error naming the value, nothing compiled or launched; an H100-sized device runs it.
TEST_F(PagedAttention, TilesWithinTheDevicesSharedMemory) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const Layout l = make_layout(rng, 16, {{21, Rows::Decode}, {9, Rows::Chunk, 3}}, true);
  Problem widest = make_problem(l, {1, 1, 1024, 1024}, DType::F32, rng);
  {
    testing::ScopedSharedMemory sm86(testing::kSm86SharedBytes);
    check_attention(make_problem(l, {16, 1, 512, 512}, DType::F32, rng), true, default_scale(512), {2}, false);
    check_attention(make_problem(l, {2, 1, 1024, 64}, DType::BF16, rng), false, default_scale(1024), {2}, false);
    check_mla(make_mla(l, 2, 512, 64, DType::BF16, rng), true, {2});
    check_mla(make_mla(l, 1, 1024, 256, DType::F32, rng), true, {});
    auto plan = device_plan(widest.layout, widest.tq);
    ASSERT_TRUE(plan.has_value());
    const Stats before = stats();
    auto refused = plan->attention(widest.tq, widest.tk, widest.tv, 0.03f, true);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind(), ErrorKind::Unsupported) << refused.error().message();
    EXPECT_EQ(refused.error().argument(), "value");
    EXPECT_NE(refused.error().message().find(std::to_string(testing::kSm86SharedBytes)), std::string::npos)
        << refused.error().message();
    EXPECT_EQ(stats().jit_compiles, before.jit_compiles);
    EXPECT_EQ(stats().kernel_launches, before.kernel_launches);
  }
  check_attention(widest, true, default_scale(1024), {}, false);
}

TEST_F(PagedAttention, MlaBatchInvariance) {
  check_mla_batch_invariance(2, 32, 8);
  check_mla_batch_invariance(16, 128, 16);
}

// ---------------------------------------------------------------------------------------------
// Append

struct AppendProblem {
  Layout layout;
  std::int64_t hkv, d, dv;
  DType dtype;
  std::vector<double> k, v, kcache, vcache;  // new rows; the caches before
  Tensor tk, tv;
};

AppendProblem make_append(Layout l, std::int64_t hkv, std::int64_t d, std::int64_t dv, DType dtype,
                          std::mt19937_64& rng) {
  const std::int64_t rows = l.pages * l.page_size, qn = l.queries();
  auto k = testing::random_values(sz(qn * hkv * d), dtype, rng);
  auto v = testing::random_values(sz(qn * hkv * dv), dtype, rng);
  auto kc = testing::random_values(sz(rows * hkv * d), dtype, rng);
  auto vc = testing::random_values(sz(rows * hkv * dv), dtype, rng);
  Tensor tk = testing::upload({qn, hkv, d}, dtype, k, Device::host());
  Tensor tv = testing::upload({qn, hkv, dv}, dtype, v, Device::host());
  return AppendProblem{std::move(l),  hkv,           d,  dv, dtype, std::move(k), std::move(v),
                       std::move(kc), std::move(vc), tk, tv};
}

Tensor key_cache_of(const AppendProblem& a) {
  return testing::upload({a.layout.pages, a.layout.page_size, a.hkv, a.d}, a.dtype, a.kcache, Device::host());
}
Tensor value_cache_of(const AppendProblem& a) {
  return testing::upload({a.layout.pages, a.layout.page_size, a.hkv, a.dv}, a.dtype, a.vcache, Device::host());
}

// New tokens of a decode step and a chunked prefill, through shuffled pages (page size 5 and 16):
// passed with std::move the caches are written in place (the same storage comes back); the rows
// land exactly where the oracle puts them and nothing else changes; attention then reads them.
TEST_F(PagedAttention, AppendInPlaceWhereTheOracleSays) {
  const std::pair<std::int64_t, DType> kCases[] = {{5, DType::F32}, {16, DType::F16}, {16, DType::BF16}};
  for (const auto& [page_size, dtype] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={} page_size={} {}", seed, page_size, dtype_name(dtype)));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, page_size,
                           {{40, Rows::Chunk, 7}, {1, Rows::Decode}, {77, Rows::Decode}, {16, Rows::Prefill}}, true);
    AppendProblem a = make_append(std::move(l), 2, 16, 8, dtype, rng);
    auto want_k = a.kcache, want_v = a.vcache;
    reference::paged_append(a.k, a.v, want_k, want_v, a.layout.ref(), a.hkv, a.d, a.dv);
    ASSERT_NE(want_k, a.kcache);  // the test writes something

    auto plan = device_plan(a.layout, a.tk);
    ASSERT_TRUE(plan.has_value());
    Tensor kc = key_cache_of(a), vc = value_cache_of(a);
    EXPECT_FALSE(kc.storage_shared());
    void* const kp = kc.data();
    void* const vp = vc.data();
    auto r = plan->append(a.tk, a.tv, std::move(kc), std::move(vc));
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->key_cache.data(), kp) << "a cache passed with std::move was copied";
    EXPECT_EQ(r->value_cache.data(), vp) << "a cache passed with std::move was copied";
    EXPECT_EQ(r->key_cache.shape(), (Shape{a.layout.pages, page_size, a.hkv, a.d}));
    EXPECT_EQ(host_values(r->key_cache), want_k);
    EXPECT_EQ(host_values(r->value_cache), want_v);

    // Attention over the appended caches (rows at the positions just written, causal).
    const std::int64_t hq = 4;
    auto q = testing::random_values(sz(a.layout.queries() * hq * a.d), dtype, rng);
    Tensor tq = testing::upload({a.layout.queries(), hq, a.d}, dtype, q, Device::host());
    const double scale = default_scale(a.d);
    auto out = plan->attention(tq, r->key_cache, r->value_cache, static_cast<float>(scale), true);
    ASSERT_TRUE(out.ok()) << out.error().message();
    const auto want =
        reference::paged_attention(q, want_k, want_v, a.layout.ref(), {hq, a.hkv, a.d, a.dv}, scale, true);
    EXPECT_LE(relative_l2(host_values(*out), want), 2 * tolerance(dtype));
  }
}

// A cache whose storage another handle shares is copied first: the original keeps its contents,
// the returned cache has the rows. One shared, one moved: only the shared one is copied.
TEST_F(PagedAttention, AppendCopiesSharedStorage) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 16, {{20, Rows::Chunk, 3}, {33, Rows::Decode}, {7, Rows::Decode}}, true);
  AppendProblem a = make_append(std::move(l), 1, 32, 16, DType::BF16, rng);
  auto want_k = a.kcache, want_v = a.vcache;
  reference::paged_append(a.k, a.v, want_k, want_v, a.layout.ref(), a.hkv, a.d, a.dv);
  auto plan = device_plan(a.layout, a.tk);
  ASSERT_TRUE(plan.has_value());

  Tensor kc = key_cache_of(a), vc = value_cache_of(a);
  auto r = plan->append(a.tk, a.tv, kc, vc);  // both handles kept: both copied
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_NE(r->key_cache.data(), kc.data());
  EXPECT_NE(r->value_cache.data(), vc.data());
  EXPECT_EQ(host_values(kc), a.kcache) << "the shared key cache was written";
  EXPECT_EQ(host_values(vc), a.vcache) << "the shared value cache was written";
  EXPECT_EQ(host_values(r->key_cache), want_k);
  EXPECT_EQ(host_values(r->value_cache), want_v);

  Tensor kc2 = key_cache_of(a), vc2 = value_cache_of(a);
  void* const kp2 = kc2.data();
  auto r2 = plan->append(a.tk, a.tv, std::move(kc2), vc2);  // key moved, value shared
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ(r2->key_cache.data(), kp2);
  EXPECT_NE(r2->value_cache.data(), vc2.data());
  EXPECT_EQ(host_values(vc2), a.vcache);
  EXPECT_EQ(host_values(r2->key_cache), want_k);
  EXPECT_EQ(host_values(r2->value_cache), want_v);
}

// ---------------------------------------------------------------------------------------------
// Warm calls

TEST_F(PagedAttention, WarmCallHitsThePlanCache) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 16, {{45, Rows::Chunk, 3}, {12, Rows::Decode}}, true);
  Problem p = make_problem(std::move(l), {4, 2, 32, 32}, DType::BF16, rng);
  auto plan = device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  const float scale = static_cast<float>(default_scale(32));
  auto first = plan->attention(p.tq, p.tk, p.tv, scale, true);
  ASSERT_TRUE(first.ok()) << first.error().message();
  const auto first_bytes = host_bytes(*first);
  const Stats cold = stats();
  auto second = plan->attention(p.tq, p.tk, p.tv, scale, true);
  ASSERT_TRUE(second.ok()) << second.error().message();
  const Stats warm = stats();
  EXPECT_GT(warm.plan_cache_hits, cold.plan_cache_hits);
  EXPECT_EQ(warm.plan_cache_misses, cold.plan_cache_misses);
  EXPECT_EQ(warm.jit_compiles, cold.jit_compiles);
  EXPECT_GT(warm.kernel_launches, cold.kernel_launches);
  // Capture-safe: no module load, no wait for the device, no allocation but the returned output.
  EXPECT_EQ(warm.module_loads, cold.module_loads);
  EXPECT_EQ(warm.host_synchronizations, cold.host_synchronizations);
  EXPECT_LE(warm.device_allocations, cold.device_allocations + 1);
  EXPECT_EQ(host_bytes(*second), first_bytes) << "a repeated call is not deterministic";
  EXPECT_LE(relative_l2(host_values(*second), oracle(p, scale, true)), 2 * tolerance(p.dtype));

  // The same for a split call reusing its workspace.
  auto ws = SplitWorkspace::create(p.tq, p.layout.queries(), 4, 32, 4);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  auto s1 = plan->attention_with_workspace(p.tq, p.tk, p.tv, scale, true, *ws);
  ASSERT_TRUE(s1.ok()) << s1.error().message();
  const auto s1_bytes = host_bytes(*s1);
  const Stats cold2 = stats();
  auto s2 = plan->attention_with_workspace(p.tq, p.tk, p.tv, scale, true, *ws);
  ASSERT_TRUE(s2.ok()) << s2.error().message();
  const Stats warm2 = stats();
  EXPECT_GT(warm2.plan_cache_hits, cold2.plan_cache_hits);
  EXPECT_EQ(warm2.plan_cache_misses, cold2.plan_cache_misses);
  EXPECT_EQ(warm2.jit_compiles, cold2.jit_compiles);
  EXPECT_EQ(warm2.module_loads, cold2.module_loads);
  EXPECT_EQ(warm2.host_synchronizations, cold2.host_synchronizations);
  EXPECT_LE(warm2.device_allocations, cold2.device_allocations + 1);
  EXPECT_EQ(host_bytes(*s2), s1_bytes);

  // A warm in-place append: no allocation at all.
  auto kv = testing::random_values(sz(p.layout.queries() * 2 * 32), p.dtype, rng);
  Tensor rows = testing::upload({p.layout.queries(), 2, 32}, p.dtype, kv, Device::host());
  const Shape cs{p.layout.pages, p.layout.page_size, 2, 32};
  auto first_append = plan->append(rows, rows, testing::upload(cs, p.dtype, p.k, Device::host()),
                                   testing::upload(cs, p.dtype, p.v, Device::host()));
  ASSERT_TRUE(first_append.ok()) << first_append.error().message();
  AppendedCache caches = std::move(first_append.value());
  void* const kp = caches.key_cache.data();
  ASSERT_TRUE(caches.key_cache.queue().synchronize().ok());
  const Stats cold3 = stats();
  auto second_append = plan->append(rows, rows, std::move(caches.key_cache), std::move(caches.value_cache));
  const Stats warm3 = stats();
  ASSERT_TRUE(second_append.ok()) << second_append.error().message();
  EXPECT_EQ(second_append->key_cache.data(), kp);
  EXPECT_GT(warm3.plan_cache_hits, cold3.plan_cache_hits);
  EXPECT_EQ(warm3.plan_cache_misses, cold3.plan_cache_misses);
  EXPECT_EQ(warm3.jit_compiles, cold3.jit_compiles);
  EXPECT_EQ(warm3.module_loads, cold3.module_loads);
  EXPECT_EQ(warm3.host_synchronizations, cold3.host_synchronizations);
  EXPECT_EQ(warm3.device_allocations, cold3.device_allocations);
}

// ---------------------------------------------------------------------------------------------
// HostPlan

// The packed tables: row-major [sequences, widest table], short rows padded with 0; the U32
// overload packs the same.
TEST(PagedHostPlan, PacksTheSchedule) {
  const std::vector<std::vector<std::int32_t>> tables{{5, 2, 7}, {1}, {}, {3, 3}};
  const std::vector<std::int64_t> lengths{9, 4, 0, 6}, ids{0, 3, 1, 0}, pos{8, 5, 0, 2};
  auto r = HostPlan::create(4, 8, tables, lengths, ids, pos);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->page_size(), 4);
  EXPECT_EQ(r->pages(), 8);
  EXPECT_EQ(r->sequences(), 4);
  EXPECT_EQ(r->queries(), 4);
  EXPECT_EQ(r->max_table_pages(), 3);
  EXPECT_EQ(r->page_table(), (std::vector<std::int32_t>{5, 2, 7, 1, 0, 0, 0, 0, 0, 3, 3, 0}));
  EXPECT_EQ(r->lengths(), (std::vector<std::int32_t>{9, 4, 0, 6}));
  EXPECT_EQ(r->sequence_ids(), (std::vector<std::int32_t>{0, 3, 1, 0}));
  EXPECT_EQ(r->positions(), (std::vector<std::int32_t>{8, 5, 0, 2}));
  const std::vector<std::vector<std::uint32_t>> utables{{5, 2, 7}, {1}, {}, {3, 3}};
  auto u = HostPlan::create(4, 8, utables, lengths, ids, pos);
  ASSERT_TRUE(u.ok()) << u.error().message();
  EXPECT_EQ(u->page_table(), r->page_table());
  EXPECT_EQ(u->max_table_pages(), 3);
}

// ---------------------------------------------------------------------------------------------
// Contracts

class PagedContract : public testing::ContractTest {
 protected:
  // page size 4, 6 pages; sequences of length 7 (pages 0, 1) and 5 (pages 2, 3); query rows
  // (0, 6), (1, 3), (1, 4). Hq = 4, Hkv = 2, D = Dv = 8.
  static constexpr std::int64_t kQ = 3, kHq = 4, kHkv = 2, kD = 8, kPages = 6, kPs = 4;
  const std::vector<std::vector<std::int32_t>> tables_{{0, 1}, {2, 3}};
  const std::vector<std::int64_t> lengths_{7, 5}, ids_{0, 1, 1}, pos_{6, 3, 4};
  const DType f_ = DType::BF16;

  void SetUp() override {
    q_ = t({kQ, kHq, kD}, f_);
    k_ = t({kPages, kPs, kHkv, kD}, f_);
    v_ = t({kPages, kPs, kHkv, kD}, f_);
    auto host = HostPlan::create(kPs, kPages, tables_, lengths_, ids_, pos_);
    ASSERT_TRUE(host.ok()) << host.error().message();
    auto plan = DevicePlan::upload(*host, *q_);
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    plan_ = std::move(plan.value());
    rebase();
  }

  template <class R>
  void expect(const R& r, ErrorKind kind, const std::string& argument, const std::string& what) {
    SCOPED_TRACE(what);
    expect_rejected(r, kind, argument);
  }

  std::optional<Tensor> q_, k_, v_;
  std::optional<DevicePlan> plan_;
};

TEST_F(PagedContract, HostPlanEachLine) {
  using T32 = std::vector<std::vector<std::int32_t>>;
  using V = std::vector<std::int64_t>;
  auto create = [](std::int64_t ps, std::int64_t pages, const T32& tables, const V& lengths, const V& ids,
                   const V& pos) { return HostPlan::create(ps, pages, tables, lengths, ids, pos); };
  const T32 tb = tables_;
  const V ln = lengths_, id = ids_, ps = pos_;
  auto e = [&](const Result<HostPlan, PagedAttentionError>& r, ErrorKind kind, const char* arg, const char* what) {
    expect(r, kind, arg, what);
  };
  e(create(0, kPages, tb, ln, id, ps), ErrorKind::InvalidValue, "page_size", "page_size 0");
  e(create(-4, kPages, tb, ln, id, ps), ErrorKind::InvalidValue, "page_size", "page_size < 0");
  e(create(paged_attention::kMaxPageSize + 1, kPages, tb, ln, id, ps), ErrorKind::InvalidValue, "page_size",
    "page_size > 65536");
  e(create(kPs, 0, tb, ln, id, ps), ErrorKind::InvalidValue, "pages", "pages 0");
  e(create(kPs, std::int64_t{1} << 31, tb, ln, id, ps), ErrorKind::InvalidValue, "pages", "pages ≥ 2^31 (i32 ids)");
  e(create(kPs, kPages, {{0, 1}, {6, 3}}, ln, id, ps), ErrorKind::InvalidValue, "tables[1][0]", "id = pages");
  e(create(kPs, kPages, {{0, 1}, {2, 9}}, ln, id, ps), ErrorKind::InvalidValue, "tables[1][1]", "id > pages");
  e(create(kPs, kPages, {{0, -1}, {2, 3}}, ln, id, ps), ErrorKind::InvalidValue, "tables[0][1]", "negative id");
  {
    const std::vector<std::vector<std::uint32_t>> u{{0, 1}, {0x80000000u, 3}};
    expect(HostPlan::create(kPs, kPages, u, ln, id, ps), ErrorKind::InvalidValue, "tables[1][0]", "u32 id ≥ 2^31");
  }
  e(create(kPs, kPages, tb, {9, 5}, id, ps), ErrorKind::InvalidValue, "lengths[0]", "length > capacity");
  e(create(kPs, kPages, tb, {7, -1}, id, ps), ErrorKind::InvalidValue, "lengths[1]", "negative length");
  e(create(kPs, kPages, {{0, 1}, {2, 3}, {4}}, ln, id, ps), ErrorKind::ShapeMismatch, "tables",
    "more tables than lengths");
  e(create(kPs, kPages, {{0, 1}}, ln, id, ps), ErrorKind::ShapeMismatch, "tables", "fewer tables than lengths");
  e(create(kPs, kPages, tb, ln, {0, 1, 2}, ps), ErrorKind::InvalidValue, "sequence_ids[2]", "sequence id ≥ S");
  e(create(kPs, kPages, tb, ln, {0, -1, 1}, ps), ErrorKind::InvalidValue, "sequence_ids[1]", "negative sequence id");
  e(create(kPs, kPages, tb, ln, id, {6, 5, 4}), ErrorKind::InvalidValue, "positions[1]", "position = length");
  e(create(kPs, kPages, tb, ln, id, {6, 3, -1}), ErrorKind::InvalidValue, "positions[2]", "negative position");
  e(create(kPs, kPages, {{0, 1}, {}}, {7, 0}, {0, 1}, {6, 0}), ErrorKind::InvalidValue, "positions[1]",
    "a row of an empty sequence");
  e(create(kPs, kPages, tb, ln, id, {6, 3}), ErrorKind::ShapeMismatch, "positions", "fewer positions than ids");
  e(create(kPs, kPages, {}, {}, {}, {}), ErrorKind::EmptyDimension, "lengths", "no sequence");
  e(create(kPs, kPages, tb, ln, {}, {}), ErrorKind::EmptyDimension, "sequence_ids", "no query row");
}

TEST_F(PagedContract, AttentionEachLine) {
  const DevicePlan& plan = *plan_;
  const Tensor &q = *q_, &k = *k_, &v = *v_;
  const float s = 0.3f;
  using R = Result<Tensor, PagedAttentionError>;
  auto e = [&](const R& r, ErrorKind kind, const char* arg, const char* what) { expect(r, kind, arg, what); };
  const Shape kv{kPages, kPs, kHkv, kD};
  // dtypes
  e(plan.attention(t({kQ, kHq, kD}, DType::FP8E4M3), k, v, s, false), ErrorKind::QuantizedDType, "query",
    "quantized query");
  e(plan.attention(t({kQ, kHq, kD}, DType::I32), k, v, s, false), ErrorKind::UnsupportedDType, "query",
    "integer query");
  e(plan.attention(q, t(kv, DType::F16), v, s, false), ErrorKind::UnsupportedDType, "key", "key dtype ≠ query");
  e(plan.attention(q, k, t(kv, DType::F32), s, false), ErrorKind::UnsupportedDType, "value", "value dtype ≠ query");
  e(plan.attention(q, t(kv, DType::FP8E4M3), v, s, false), ErrorKind::QuantizedDType, "key", "quantized key");
  // ranks and extents
  e(plan.attention(t({kQ, kHq * kD}, f_), k, v, s, false), ErrorKind::ShapeMismatch, "query", "query rank 2");
  e(plan.attention(q, t({kPages * kPs, kHkv, kD}, f_), v, s, false), ErrorKind::ShapeMismatch, "key", "key rank 3");
  e(plan.attention(q, k, t({kPages * kPs, kHkv, kD}, f_), s, false), ErrorKind::ShapeMismatch, "value", "value rank 3");
  e(plan.attention(q, t({kPages, kPs, kHkv, 16}, f_), v, s, false), ErrorKind::ShapeMismatch, "key", "key D ≠ query D");
  e(plan.attention(q, t({kPages, kPs, 3, kD}, f_), t({kPages, kPs, 3, kD}, f_), s, false), ErrorKind::ShapeMismatch,
    "key", "Hq % Hkv ≠ 0");
  e(plan.attention(q, k, t({kPages, kPs, 1, kD}, f_), s, false), ErrorKind::ShapeMismatch, "value",
    "value heads ≠ key heads");
  e(plan.attention(t({kQ, kHq, 1025}, f_), t({kPages, kPs, kHkv, 1025}, f_), v, s, false), ErrorKind::InvalidValue,
    "query", "D > 1024");
  e(plan.attention(q, k, t({kPages, kPs, kHkv, 1025}, f_), s, false), ErrorKind::InvalidValue, "value", "Dv > 1024");
  e(plan.attention(t({kQ, kHq, 0}, f_), t({kPages, kPs, kHkv, 0}, f_), v, s, false), ErrorKind::EmptyDimension, "query",
    "D = 0");
  // scale
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 0.0f, -0.5f})
    e(plan.attention(q, k, v, bad, false), ErrorKind::InvalidValue, "scale", "scale not finite > 0");
  // the plan
  for (std::int64_t pages : {kPages - 1, kPages + 1})
    e(plan.attention(q, t({pages, kPs, kHkv, kD}, f_), t({pages, kPs, kHkv, kD}, f_), s, false),
      ErrorKind::ShapeMismatch, "key", "cache pages ≠ plan pages");
  for (std::int64_t page_size : {kPs / 2, kPs * 2})
    e(plan.attention(q, t({kPages, page_size, kHkv, kD}, f_), t({kPages, page_size, kHkv, kD}, f_), s, false),
      ErrorKind::ShapeMismatch, "key", "cache page size ≠ plan page size");
  e(plan.attention(t({kQ + 1, kHq, kD}, f_), k, v, s, false), ErrorKind::ShapeMismatch, "query",
    "query rows ≠ plan queries");
  // queues
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  e(plan.attention(t({kQ, kHq, kD}, f_, &q2.value()), k, v, s, false), ErrorKind::QueueMismatch, "query",
    "query on another queue than the plan");
  e(plan.attention(q, t(kv, f_, &q2.value()), v, s, false), ErrorKind::QueueMismatch, "key", "key on another queue");
  e(plan.attention(q, k, t(kv, f_, &q2.value()), s, false), ErrorKind::QueueMismatch, "value",
    "value on another queue");
}

TEST_F(PagedContract, MlaEachLine) {
  const DevicePlan& plan = *plan_;
  const float s = 0.1f;
  const std::int64_t H = 2, Rd = 32, P = 8;
  const Tensor q = t({kQ, H, Rd}, f_), qp = t({kQ, H, P}, f_), c = t({kPages, kPs, 1, Rd}, f_),
               kp = t({kPages, kPs, 1, P}, f_);
  using R = Result<Tensor, PagedAttentionError>;
  auto e = [&](const R& r, ErrorKind kind, const char* arg, const char* what) { expect(r, kind, arg, what); };
  e(plan.mla(t({kQ, H, Rd}, DType::FP8E4M3), qp, c, kp, s, true), ErrorKind::QuantizedDType, "query",
    "quantized query");
  e(plan.mla(q, qp, t({kPages, kPs, 1, Rd}, DType::F16), kp, s, true), ErrorKind::UnsupportedDType, "latent",
    "latent dtype ≠ query");
  e(plan.mla(q, t({kQ, H, P}, DType::F32), c, kp, s, true), ErrorKind::UnsupportedDType, "query_rope",
    "query_rope dtype ≠ query");
  e(plan.mla(q, qp, c, t({kPages, kPs, 1, P}, DType::F32), s, true), ErrorKind::UnsupportedDType, "key_rope",
    "key_rope dtype ≠ query");
  e(plan.mla(q, qp, t({kPages, kPs, 2, Rd}, f_), kp, s, true), ErrorKind::ShapeMismatch, "latent", "latent heads 2");
  e(plan.mla(q, qp, t({kPages, kPs, 1, 16}, f_), kp, s, true), ErrorKind::ShapeMismatch, "latent", "latent R ≠ q R");
  e(plan.mla(q, t({kQ, H + 1, P}, f_), c, kp, s, true), ErrorKind::ShapeMismatch, "query_rope", "query_rope heads");
  e(plan.mla(q, t({kQ, H, P}, f_), c, t({kPages, kPs, 1, 16}, f_), s, true), ErrorKind::ShapeMismatch, "key_rope",
    "key_rope P ≠ query_rope P");
  e(plan.mla(q, t({kQ, H, 257}, f_), c, t({kPages, kPs, 1, 257}, f_), s, true), ErrorKind::InvalidValue, "query_rope",
    "P > 256");
  e(plan.mla(t({kQ, H, 1025}, f_), qp, t({kPages, kPs, 1, 1025}, f_), kp, s, true), ErrorKind::InvalidValue, "query",
    "R > 1024");
  e(plan.mla(q, qp, c, kp, std::numeric_limits<float>::infinity(), true), ErrorKind::InvalidValue, "scale",
    "infinite scale");
  e(plan.mla(q, qp, t({kPages, 8, 1, Rd}, f_), t({kPages, 8, 1, P}, f_), s, true), ErrorKind::ShapeMismatch, "latent",
    "page size ≠ plan page size");
  e(plan.mla(t({kQ + 1, H, Rd}, f_), t({kQ + 1, H, P}, f_), c, kp, s, true), ErrorKind::ShapeMismatch, "query",
    "query rows ≠ plan queries");
}

TEST_F(PagedContract, SplitWorkspaceEachLine) {
  const Tensor& q = *q_;
  using W = Result<SplitWorkspace, PagedAttentionError>;
  auto e = [&](const W& r, ErrorKind kind, const char* arg, const char* what) { expect(r, kind, arg, what); };
  e(SplitWorkspace::create(q, kQ, kHq, kD, 1), ErrorKind::InvalidValue, "splits", "splits 1");
  e(SplitWorkspace::create(q, kQ, kHq, kD, 33), ErrorKind::InvalidValue, "splits", "splits 33");
  e(SplitWorkspace::create(q, kQ, kHq, kD, 0), ErrorKind::InvalidValue, "splits", "splits 0");
  // 32 · 4096 · 16 · 129 · 4 bytes > 64 MiB
  e(SplitWorkspace::create(q, 4096, 16, 128, 32), ErrorKind::InvalidValue, "splits", "workspace > 64 MiB");
  e(SplitWorkspace::create(q, 0, kHq, kD, 2), ErrorKind::EmptyDimension, "queries", "no queries");
  e(SplitWorkspace::create(q, kQ, 0, kD, 2), ErrorKind::EmptyDimension, "heads", "no heads");
  e(SplitWorkspace::create(q, kQ, kHq, 0, 2), ErrorKind::EmptyDimension, "value_dim", "value_dim 0");
  // Exactly 64 MiB is fine: 32 · 4 · 8192 · (15 + 1) · 4 bytes.
  auto edge = SplitWorkspace::create(q, 4, 8192, 15, 32);
  ASSERT_TRUE(edge.ok()) << edge.error().message();
  EXPECT_EQ(edge->bytes(), paged_attention::kMaxWorkspaceBytes);
}

TEST_F(PagedContract, WorkspaceMismatchEachLine) {
  const DevicePlan& plan = *plan_;
  const Tensor &q = *q_, &k = *k_, &v = *v_;
  auto ws_for = [&](const Tensor& ref, std::int64_t queries, std::int64_t heads, std::int64_t dv) {
    auto w = SplitWorkspace::create(ref, queries, heads, dv, 2);
    EXPECT_TRUE(w.ok()) << w.error().message();
    return std::move(w.value());
  };
  SplitWorkspace rows = ws_for(q, kQ + 1, kHq, kD), heads = ws_for(q, kQ, kHq + 1, kD), dims = ws_for(q, kQ, kHq, 16);
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  const Tensor on_q2 = t({kQ, kHq, kD}, f_, &q2.value());
  SplitWorkspace queue = ws_for(on_q2, kQ, kHq, kD);
  rebase();
  using R = Result<Tensor, PagedAttentionError>;
  auto e = [&](const R& r, ErrorKind kind, const char* what) { expect(r, kind, "workspace", what); };
  e(plan.attention_with_workspace(q, k, v, 0.5f, true, rows), ErrorKind::ShapeMismatch, "workspace queries");
  e(plan.attention_with_workspace(q, k, v, 0.5f, true, heads), ErrorKind::ShapeMismatch, "workspace heads");
  e(plan.attention_with_workspace(q, k, v, 0.5f, true, dims), ErrorKind::ShapeMismatch, "workspace value_dim");
  e(plan.attention_with_workspace(q, k, v, 0.5f, true, queue), ErrorKind::QueueMismatch, "workspace queue");
  // MLA: the workspace's value dim is R.
  const std::int64_t H = 2, Rd = 32, P = 8;
  const Tensor mq = t({kQ, H, Rd}, f_), qp = t({kQ, H, P}, f_), c = t({kPages, kPs, 1, Rd}, f_),
               kp = t({kPages, kPs, 1, P}, f_);
  SplitWorkspace mla_dims = ws_for(mq, kQ, H, P);
  rebase();
  e(plan.mla_with_workspace(mq, qp, c, kp, 0.5f, true, mla_dims), ErrorKind::ShapeMismatch, "mla workspace value_dim");
  // A bad operand with a fitting workspace is named as such.
  SplitWorkspace fits = ws_for(q, kQ, kHq, kD);
  rebase();
  expect(plan.attention_with_workspace(q, k, v, -1.0f, true, fits), ErrorKind::InvalidValue, "scale",
         "split call with a bad scale");
}

TEST_F(PagedContract, AppendEachLineWritesNothing) {
  const DevicePlan& plan = *plan_;
  const Device host = Device::host();
  std::mt19937_64 rng(fresh_seed());
  const Shape cs{kPages, kPs, kHkv, kD};
  const auto kc_values = testing::random_values(sz(kPages * kPs * kHkv * kD), f_, rng);
  const auto vc_values = testing::random_values(sz(kPages * kPs * kHkv * kD), f_, rng);
  const Tensor kc = testing::upload(cs, f_, kc_values, host), vc = testing::upload(cs, f_, vc_values, host);
  const Tensor k = t({kQ, kHkv, kD}, f_), v = t({kQ, kHkv, kD}, f_);
  rebase();
  using R = Result<AppendedCache, PagedAttentionError>;
  auto e = [&](const R& r, ErrorKind kind, const char* arg, const char* what) { expect(r, kind, arg, what); };
  e(plan.append(t({kQ, kHkv, kD}, DType::FP8E4M3), v, kc, vc), ErrorKind::QuantizedDType, "key", "quantized key");
  e(plan.append(t({kQ, kHkv, kD}, DType::F16), t({kQ, kHkv, kD}, DType::F16), kc, vc), ErrorKind::UnsupportedDType,
    "key_cache", "rows f16, caches bf16");
  e(plan.append(k, t({kQ, kHkv, kD}, DType::F32), kc, vc), ErrorKind::UnsupportedDType, "value", "value dtype ≠ key");
  e(plan.append(k, v, kc, t(cs, DType::F32)), ErrorKind::UnsupportedDType, "value_cache", "value cache dtype");
  e(plan.append(t({kQ, kHkv * kD}, f_), v, kc, vc), ErrorKind::ShapeMismatch, "key", "key rank 2");
  e(plan.append(t({kQ + 1, kHkv, kD}, f_), t({kQ + 1, kHkv, kD}, f_), kc, vc), ErrorKind::ShapeMismatch, "key",
    "rows ≠ plan queries");
  e(plan.append(k, t({kQ, 1, kD}, f_), kc, vc), ErrorKind::ShapeMismatch, "value", "value heads ≠ key heads");
  e(plan.append(k, v, t({kPages, kPs, kHkv, 16}, f_), vc), ErrorKind::ShapeMismatch, "key_cache", "cache D ≠ key D");
  e(plan.append(k, v, t({kPages + 1, kPs, kHkv, kD}, f_), t({kPages + 1, kPs, kHkv, kD}, f_)), ErrorKind::ShapeMismatch,
    "key_cache", "cache pages ≠ plan pages");
  e(plan.append(k, v, t({kPages, 8, kHkv, kD}, f_), t({kPages, 8, kHkv, kD}, f_)), ErrorKind::ShapeMismatch,
    "key_cache", "cache page size ≠ plan page size");
  e(plan.append(k, v, kc, t({kPages, kPs, kHkv, 16}, f_)), ErrorKind::ShapeMismatch, "value_cache",
    "value cache Dv ≠ value Dv");
  e(plan.append(t({kQ, kHkv, 1025}, f_), v, t({kPages, kPs, kHkv, 1025}, f_), vc), ErrorKind::InvalidValue, "key",
    "D > 1024");
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  e(plan.append(t({kQ, kHkv, kD}, f_, &q2.value()), t({kQ, kHkv, kD}, f_, &q2.value()), kc, vc),
    ErrorKind::QueueMismatch, "key", "rows on another queue than the plan");
  e(plan.append(k, v, t(cs, f_, &q2.value()), vc), ErrorKind::QueueMismatch, "key_cache", "cache on another queue");
  // Views of one buffer as both caches (a caller's memory, written in place): the value rows would
  // overwrite the key rows. Owned tensors shared with another handle are copied first instead.
  auto view_of = [&](const Tensor& t, const Shape& shape) {
    auto v = Tensor::view(t.data(), shape, {}, t.dtype(), t.queue());
    EXPECT_TRUE(v.ok()) << v.error().message();
    return std::move(v.value());
  };
  e(plan.append(k, v, view_of(kc, cs), view_of(kc, cs)), ErrorKind::InvalidValue, "value_cache",
    "one buffer as both caches");
  e(plan.append(view_of(kc, {kQ, kHkv, kD}), v, view_of(kc, cs), vc), ErrorKind::InvalidValue, "key_cache",
    "new key rows inside the key cache");
  e(plan.append(k, v, kc, view_of(kc, cs)), ErrorKind::InvalidValue, "value_cache",
    "a view written in place over a cache another handle shares");
  EXPECT_EQ(host_values(kc), kc_values) << "a rejected append wrote the key cache";
  EXPECT_EQ(host_values(vc), vc_values) << "a rejected append wrote the value cache";
}

// Two rows that map to one physical slot — the same (sequence, position) twice, or two sequences
// at one position of a page they share — are rejected before anything is written; rows of two
// sequences at the same position of pages they do not share are fine.
TEST_F(PagedContract, AppendSlotCollisionsRejectedBeforeAnyWrite) {
  const Device host = Device::host();
  std::mt19937_64 rng(fresh_seed());
  const std::int64_t ps = 16, pages = 4, hkv = 1, d = 8;
  const Shape cs{pages, ps, hkv, d};
  const auto kc_values = testing::random_values(sz(pages * ps * hkv * d), f_, rng);
  const auto vc_values = testing::random_values(sz(pages * ps * hkv * d), f_, rng);
  struct Collision {
    const char* what;
    std::vector<std::vector<std::int32_t>> tables;
    std::vector<std::int64_t> lengths, ids, pos;
    const char* argument;  // the later of the two rows
  };
  const Collision kCases[] = {
      {"same sequence and position twice", {{3, 1}, {2}}, {20, 9}, {0, 1, 0}, {17, 8, 17}, "positions[2]"},
      {"two sequences on a shared page", {{3, 1}, {3, 2}}, {20, 30}, {1, 0}, {4, 4}, "positions[1]"},
  };
  for (const Collision& c : kCases) {
    SCOPED_TRACE(c.what);
    auto hp = HostPlan::create(ps, pages, c.tables, c.lengths, c.ids, c.pos);
    ASSERT_TRUE(hp.ok()) << hp.error().message();  // repeated page ids are a valid schedule
    const std::int64_t qn = std::ssize(c.ids);
    Tensor k = testing::upload({qn, hkv, d}, f_, testing::random_values(sz(qn * hkv * d), f_, rng), host);
    Tensor v = testing::upload({qn, hkv, d}, f_, testing::random_values(sz(qn * hkv * d), f_, rng), host);
    auto plan = DevicePlan::upload(*hp, k);
    ASSERT_TRUE(plan.ok()) << plan.error().message();
    Tensor kc = testing::upload(cs, f_, kc_values, host), vc = testing::upload(cs, f_, vc_values, host);
    rebase();
    auto r = plan->append(k, v, kc, vc);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind(), ErrorKind::InvalidValue) << r.error().message();
    EXPECT_EQ(r.error().argument(), c.argument) << r.error().message();
    EXPECT_EQ(stats().kernel_launches, before_.kernel_launches) << "a rejected append launched a kernel";
    EXPECT_EQ(host_values(kc), kc_values);
    EXPECT_EQ(host_values(vc), vc_values);
    // Moved in, the caches are rejected the same.
    Tensor kc2 = testing::upload(cs, f_, kc_values, host), vc2 = testing::upload(cs, f_, vc_values, host);
    auto r2 = plan->append(k, v, std::move(kc2), std::move(vc2));
    ASSERT_FALSE(r2.ok());
    EXPECT_EQ(r2.error().argument(), c.argument);
  }
  // Not a collision: the same position of two sequences whose pages there differ.
  const std::vector<std::vector<std::int32_t>> tables{{3, 1}, {3, 2}};
  auto hp = HostPlan::create(ps, pages, tables, {20, 30}, {1, 0}, {17, 17});
  ASSERT_TRUE(hp.ok()) << hp.error().message();
  Tensor k = testing::upload({2, hkv, d}, f_, testing::random_values(sz(2 * hkv * d), f_, rng), host);
  Tensor v = testing::upload({2, hkv, d}, f_, testing::random_values(sz(2 * hkv * d), f_, rng), host);
  auto plan = DevicePlan::upload(*hp, k);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  auto r = plan->append(k, v, testing::upload(cs, f_, kc_values, host), testing::upload(cs, f_, vc_values, host));
  EXPECT_TRUE(r.ok()) << r.error().message();
}

}  // namespace
}  // namespace rudnn
