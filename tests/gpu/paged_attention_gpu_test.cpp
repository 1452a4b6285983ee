// Paged attention, paged MLA and the paged append (rudnn/paged_attention.h) on a real GPU against
// the FP64 oracles of tests/reference/paged_attention.h, for bf16, f16 and f32: decode with GQA
// 32/8 at D = 128 (lengths 1..2000, shuffled pages, a shared prefix), G = 1 and G = 8, mixed
// prefill + decode batches (rows interleaved, page sizes 5 and 64, D ≠ Dv), split-KV with 2, 4 and
// 32 splits (≈ the oracle, ≈ unsplit, the same bits twice, a sequence alone = inside the batch),
// MLA at R = 512 / P = 64 with H = 16 and H = 128, the append in place and copy-on-write; and a
// CUDA graph captured on the plan's stream after the warm-up: append, attention,
// attention_with_workspace, mla and mla_with_workspace recorded with no module load, no host wait
// and no allocation but the returned outputs, replayed three times (the second time with new query
// values written into the same storage, the third after DevicePlan::update wrote another schedule
// into the plan's buffers) bit for bit equal to eager calls. Every test prints SKIP without a CUDA
// device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../../runtime/queue_impl.h"  // Queue::impl().stream(): the CUstream a graph captures
#include "../ops/op_test_util.h"
#include "../ops/paged_test_util.h"
#include "gpu_test_util.h"
#include "graph_api.h"
#include "reference/paged_attention.h"
#include "rudnn/paged_attention.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using paged_attention::AppendedCache;
using paged_attention::DevicePlan;
using paged_attention::HostPlan;
using paged_attention::SplitWorkspace;
using testing::fresh_seed;
using testing::graph_api;
using testing::GraphApi;
using testing::host_values;
using testing::relative_l2;
using testing::tolerance;

using paged_test::device_plan;
using paged_test::Layout;
using paged_test::make_layout;
using paged_test::Rows;
using paged_test::Seq;
using paged_test::sz;

class PagedAttentionOnGpu : public testing::GpuTest {};

std::vector<std::byte> host_bytes(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->bytes : std::vector<std::byte>{};
}

// ---------------------------------------------------------------------------------------------
// Attention

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

Problem make_problem(Layout l, Heads h, DType dtype, std::mt19937_64& rng, const Device& device) {
  const std::int64_t rows = l.pages * l.page_size;
  auto q = testing::random_values(sz(l.queries() * h.hq * h.d), dtype, rng);
  auto k = testing::random_values(sz(rows * h.hkv * h.d), dtype, rng);
  auto v = testing::random_values(sz(rows * h.hkv * h.dv), dtype, rng);
  Tensor tq = testing::upload({l.queries(), h.hq, h.d}, dtype, q, device);
  Tensor tk = testing::upload({l.pages, l.page_size, h.hkv, h.d}, dtype, k, device);
  Tensor tv = testing::upload({l.pages, l.page_size, h.hkv, h.dv}, dtype, v, device);
  return Problem{std::move(l), h, dtype, std::move(q), std::move(k), std::move(v), tq, tk, tv};
}

// One call, unsplit (splits = 1) or split-KV through a fresh workspace.
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
  return check(plan.attention_with_workspace(p.tq, p.tk, p.tv, scale, causal, *ws));
}

// Unsplit and with each of `splits`: ≈ the oracle, split ≈ unsplit, and each the same bits when
// called again.
void check_attention(const Problem& p, bool causal, std::initializer_list<std::int64_t> splits) {
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.h.d)));
  SCOPED_TRACE(fmt::format("{} Hq={} Hkv={} D={} Dv={} {} causal={}", p.layout.describe(), p.h.hq, p.h.hkv, p.h.d,
                           p.h.dv, dtype_name(p.dtype), causal));
  const auto want =
      reference::paged_attention(p.q, p.k, p.v, p.layout.ref(), {p.h.hq, p.h.hkv, p.h.d, p.h.dv}, scale, causal);
  auto plan = device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  auto unsplit = run_attention(*plan, p, scale, causal, 1);
  ASSERT_TRUE(unsplit.has_value());
  const auto base = host_values(*unsplit);
  EXPECT_LE(relative_l2(base, want), 2 * tolerance(p.dtype));
  const auto base_bytes = host_bytes(*unsplit);
  auto again = run_attention(*plan, p, scale, causal, 1);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(host_bytes(*again) == base_bytes) << "a repeated unsplit call is not deterministic";
  for (std::int64_t s : splits) {
    SCOPED_TRACE(fmt::format("splits={}", s));
    auto split = run_attention(*plan, p, scale, causal, s);
    ASSERT_TRUE(split.has_value());
    const auto got = host_values(*split);
    EXPECT_LE(relative_l2(got, want), 2 * tolerance(p.dtype));
    EXPECT_LE(relative_l2(got, base), 2 * tolerance(p.dtype));
    auto split_again = run_attention(*plan, p, scale, causal, s);
    ASSERT_TRUE(split_again.has_value());
    EXPECT_TRUE(host_bytes(*split_again) == host_bytes(*split)) << "a repeated split call is not deterministic";
  }
}

// Decode with GQA 32/8 at D = 128: one row per sequence at its last position, lengths 1..2000,
// two sequences sharing their first pages; causal (the same keys as not causal for decode rows).
TEST_F(PagedAttentionOnGpu, DecodeGqaMatchesTheOracle) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16,
                           {{1, Rows::Decode},
                            {17, Rows::Decode},
                            {300, Rows::Decode},
                            {1000, Rows::Decode},
                            {1999, Rows::Decode},
                            {512, Rows::Decode, 0, 3, 10},
                            {777, Rows::Decode},
                            {64, Rows::Decode}},
                           true);
    check_attention(make_problem(std::move(l), {32, 8, 128, 128}, dtype, rng, device_), true, {4});
  }
}

// GQA groups 1 (16/16) and 8 (64/8), bf16 and f32, decode and a few prefill rows.
TEST_F(PagedAttentionOnGpu, GroupsOneAndEightMatchTheOracle) {
  const std::pair<Heads, DType> kCases[] = {{{16, 16, 128, 128}, DType::BF16},
                                            {{64, 8, 128, 128}, DType::BF16},
                                            {{16, 16, 128, 128}, DType::F32},
                                            {{64, 8, 128, 128}, DType::F16}};
  for (const auto& [heads, dtype] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16, {{450, Rows::Decode}, {129, Rows::Chunk, 9}, {3, Rows::Decode}}, true);
    check_attention(make_problem(std::move(l), heads, dtype, rng, device_), true, {2});
  }
}

// Mixed batches: chunked prefill rows, a whole short prefill, decode rows and random positions,
// interleaved; page sizes 5 (dividing no length) and 64; D = Dv = 128 and D = 192 ≠ Dv = 128;
// causal and not.
TEST_F(PagedAttentionOnGpu, MixedPrefillAndDecodeMatchTheOracle) {
  const std::tuple<std::int64_t, Heads, DType> kCases[] = {{5, {16, 4, 128, 128}, DType::BF16},
                                                           {64, {16, 4, 128, 128}, DType::F16},
                                                           {64, {16, 4, 128, 128}, DType::F32},
                                                           {16, {8, 2, 192, 128}, DType::BF16},
                                                           {5, {8, 2, 192, 128}, DType::F32}};
  for (const auto& [page_size, heads, dtype] : kCases)
    for (bool causal : {true, false}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(fmt::format("seed={}", seed));
      std::mt19937_64 rng(seed);
      Layout l = make_layout(rng, page_size,
                             {{600, Rows::Chunk, 48},
                              {37, Rows::Prefill},
                              {1200, Rows::Decode},
                              {300, Rows::Random, 7},
                              {1, Rows::Decode},
                              {90, Rows::Chunk, 5, 0, 2}},
                             true);
      check_attention(make_problem(std::move(l), heads, dtype, rng, device_), causal, {});
    }
}

// Split-KV with 2, 4 and 32 splits on long sequences (up to 4000 keys) with decode and chunk rows;
// a sequence's rows are the same bits alone (its own plan) as inside the batch, split or not.
TEST_F(PagedAttentionOnGpu, SplitKvMatchesTheOracleAndIsBatchInvariant) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(
        rng, 16, {{4000, Rows::Decode}, {2500, Rows::Chunk, 6}, {33, Rows::Decode}, {1024, Rows::Decode}}, true);
    Problem p = make_problem(std::move(l), {32, 8, 128, 128}, dtype, rng, device_);
    check_attention(p, true, {2, 4, 32});

    // Batch invariance: sequence 1 (the chunk) alone.
    const float scale = static_cast<float>(1.0 / std::sqrt(128.0));
    auto plan = device_plan(p.layout, p.tq);
    ASSERT_TRUE(plan.has_value());
    Layout one;
    one.page_size = p.layout.page_size;
    one.pages = p.layout.pages;
    one.tables = {p.layout.tables[1]};
    one.lengths = {p.layout.lengths[1]};
    std::vector<std::int64_t> rows;
    std::vector<double> q;
    const std::int64_t row_size = p.h.hq * p.h.d;
    for (std::int64_t r = 0; r < p.layout.queries(); ++r) {
      if (p.layout.sequence_ids[sz(r)] != 1) continue;
      rows.push_back(r);
      one.sequence_ids.push_back(0);
      one.positions.push_back(p.layout.positions[sz(r)]);
      q.insert(q.end(), p.q.begin() + r * row_size, p.q.begin() + (r + 1) * row_size);
    }
    Problem alone{one,  p.h, dtype, q, p.k, p.v, testing::upload({one.queries(), p.h.hq, p.h.d}, dtype, q, device_),
                  p.tk, p.tv};
    auto alone_plan = device_plan(alone.layout, alone.tq);
    ASSERT_TRUE(alone_plan.has_value());
    const std::size_t row_bytes = sz(p.h.hq * p.h.dv) * dtype_size(dtype);
    for (std::int64_t splits : {1, 4, 32}) {
      SCOPED_TRACE(fmt::format("batch invariance, splits={}", splits));
      auto full = run_attention(*plan, p, scale, true, splits);
      auto part = run_attention(*alone_plan, alone, scale, true, splits);
      ASSERT_TRUE(full.has_value() && part.has_value());
      const auto full_bytes = host_bytes(*full), part_bytes = host_bytes(*part);
      ASSERT_EQ(part_bytes.size(), rows.size() * row_bytes);
      for (std::size_t i = 0; i < rows.size(); ++i)
        EXPECT_EQ(
            std::memcmp(part_bytes.data() + i * row_bytes, full_bytes.data() + sz(rows[i]) * row_bytes, row_bytes), 0)
            << "row " << rows[i] << " differs alone";
    }
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

MlaProblem make_mla(Layout l, std::int64_t heads, std::int64_t r, std::int64_t pr, DType dtype, std::mt19937_64& rng,
                    const Device& device) {
  const std::int64_t rows = l.pages * l.page_size, qn = l.queries();
  auto q = testing::random_values(sz(qn * heads * r), dtype, rng, -1, 1);
  auto qp = testing::random_values(sz(qn * heads * pr), dtype, rng, -1, 1);
  auto c = testing::random_values(sz(rows * r), dtype, rng, -1, 1);
  auto kp = testing::random_values(sz(rows * pr), dtype, rng, -1, 1);
  Tensor tq = testing::upload({qn, heads, r}, dtype, q, device);
  Tensor tqp = testing::upload({qn, heads, pr}, dtype, qp, device);
  Tensor tc = testing::upload({l.pages, l.page_size, 1, r}, dtype, c, device);
  Tensor tkp = testing::upload({l.pages, l.page_size, 1, pr}, dtype, kp, device);
  return MlaProblem{std::move(l),  heads,         r,   pr, dtype, std::move(q), std::move(qp), std::move(c),
                    std::move(kp), std::move(tq), tqp, tc, tkp};
}

double mla_scale(const MlaProblem& m) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.r + m.p))); }

void check_mla(const MlaProblem& m, bool causal, std::initializer_list<std::int64_t> splits) {
  SCOPED_TRACE(fmt::format("{} H={} R={} P={} {} causal={}", m.layout.describe(), m.heads, m.r, m.p,
                           dtype_name(m.dtype), causal));
  const double scale = mla_scale(m);
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
}

// DeepSeek's shape: R = 512, P = 64, H = 16 with decode and chunk rows for every dtype, and H = 128
// decode (bf16), unsplit and split.
TEST_F(PagedAttentionOnGpu, MlaMatchesTheOracle) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 64,
                           {{700, Rows::Decode}, {130, Rows::Chunk, 6}, {1, Rows::Decode}, {2047, Rows::Decode}}, true);
    check_mla(make_mla(std::move(l), 16, 512, 64, dtype, rng, device_), true, {4, 32});
  }
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={} H=128", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 64, {{900, Rows::Decode}, {65, Rows::Decode}, {1500, Rows::Decode}}, false);
  check_mla(make_mla(std::move(l), 128, 512, 64, DType::BF16, rng, device_), false, {2});
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
                          std::mt19937_64& rng, const Device& device) {
  const std::int64_t rows = l.pages * l.page_size, qn = l.queries();
  auto k = testing::random_values(sz(qn * hkv * d), dtype, rng);
  auto v = testing::random_values(sz(qn * hkv * dv), dtype, rng);
  auto kc = testing::random_values(sz(rows * hkv * d), dtype, rng);
  auto vc = testing::random_values(sz(rows * hkv * dv), dtype, rng);
  Tensor tk = testing::upload({qn, hkv, d}, dtype, k, device);
  Tensor tv = testing::upload({qn, hkv, dv}, dtype, v, device);
  return AppendProblem{std::move(l),  hkv,           d,  dv, dtype, std::move(k), std::move(v),
                       std::move(kc), std::move(vc), tk, tv};
}

// A decode step and a chunked prefill (page sizes 5 and 16), Hkv 8, D 128, Dv 64: in place (caches
// moved in: the same storage back), then copy-on-write (handles kept: the inputs unchanged); the
// rows land where the oracle puts them, nothing else changes, and attention then reads them.
TEST_F(PagedAttentionOnGpu, AppendMatchesTheOracle) {
  const std::pair<std::int64_t, DType> kCases[] = {{5, DType::BF16}, {16, DType::F16}, {16, DType::F32}};
  for (const auto& [page_size, dtype] : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={} page_size={} {}", seed, page_size, dtype_name(dtype)));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, page_size,
                           {{300, Rows::Chunk, 40}, {1, Rows::Decode}, {777, Rows::Decode}, {16, Rows::Prefill}}, true);
    AppendProblem a = make_append(std::move(l), 8, 128, 64, dtype, rng, device_);
    auto want_k = a.kcache, want_v = a.vcache;
    reference::paged_append(a.k, a.v, want_k, want_v, a.layout.ref(), a.hkv, a.d, a.dv);
    const Shape ks{a.layout.pages, a.layout.page_size, a.hkv, a.d}, vs{a.layout.pages, a.layout.page_size, a.hkv, a.dv};
    auto plan = device_plan(a.layout, a.tk);
    ASSERT_TRUE(plan.has_value());

    // In place.
    Tensor kc = testing::upload(ks, dtype, a.kcache, device_), vc = testing::upload(vs, dtype, a.vcache, device_);
    void* const kp = kc.data();
    void* const vp = vc.data();
    auto in_place = plan->append(a.tk, a.tv, std::move(kc), std::move(vc));
    ASSERT_TRUE(in_place.ok()) << in_place.error().message();
    EXPECT_EQ(in_place->key_cache.data(), kp);
    EXPECT_EQ(in_place->value_cache.data(), vp);
    EXPECT_EQ(host_values(in_place->key_cache), want_k);
    EXPECT_EQ(host_values(in_place->value_cache), want_v);

    // Copy-on-write.
    Tensor kc2 = testing::upload(ks, dtype, a.kcache, device_), vc2 = testing::upload(vs, dtype, a.vcache, device_);
    auto copied = plan->append(a.tk, a.tv, kc2, vc2);
    ASSERT_TRUE(copied.ok()) << copied.error().message();
    EXPECT_NE(copied->key_cache.data(), kc2.data());
    EXPECT_NE(copied->value_cache.data(), vc2.data());
    EXPECT_EQ(host_values(kc2), a.kcache) << "the shared key cache was written";
    EXPECT_EQ(host_values(vc2), a.vcache) << "the shared value cache was written";
    EXPECT_EQ(host_values(copied->key_cache), want_k);
    EXPECT_EQ(host_values(copied->value_cache), want_v);

    // Attention (GQA 32/8) over the appended caches.
    auto q = testing::random_values(sz(a.layout.queries() * 32 * a.d), dtype, rng);
    Tensor tq = testing::upload({a.layout.queries(), 32, a.d}, dtype, q, device_);
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.d)));
    auto out = plan->attention(tq, in_place->key_cache, in_place->value_cache, scale, true);
    ASSERT_TRUE(out.ok()) << out.error().message();
    const auto want =
        reference::paged_attention(q, want_k, want_v, a.layout.ref(), {32, a.hkv, a.d, a.dv}, scale, true);
    EXPECT_LE(relative_l2(host_values(*out), want), 2 * tolerance(dtype));
  }
}

// ---------------------------------------------------------------------------------------------
// CUDA graph capture

// The bytes of `values` rounded to `dtype`.
std::vector<std::byte> dtype_bytes(const Shape& shape, DType dtype, const std::vector<double>& values) {
  return HostData::from_f64(shape, dtype, values).bytes;
}

// After upload, workspace creation and one warm-up of each call, a capture on the plan's stream
// records append (in place), attention, attention_with_workspace, mla and mla_with_workspace: no
// module load, no host wait, no compile, no plan miss, and no allocation but the four returned
// outputs (the in-place append and the supplied workspaces allocate nothing). The graph replays the
// eager results bit for bit, and after new query values are written into the same storage it
// gives what eager calls on those values give.
TEST_F(PagedAttentionOnGpu, CudaGraphCaptureReplaysTheEagerCalls) {
  if (device_.kind() != DeviceKind::Cuda) GTEST_SKIP() << "SKIP: CUDA graph capture needs a CUDA device";
  std::string why;
  const GraphApi* api = graph_api(why);
  ASSERT_NE(api, nullptr) << why;
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const DType dtype = DType::BF16;
  Layout l =
      make_layout(rng, 16, {{300, Rows::Decode}, {77, Rows::Chunk, 4}, {1024, Rows::Decode}, {5, Rows::Decode}}, true);
  const std::int64_t Q = l.queries();
  Problem p = make_problem(l, {32, 8, 128, 128}, dtype, rng, device_);
  MlaProblem m = make_mla(l, 16, 512, 64, dtype, rng, device_);
  const auto kn = testing::random_values(sz(Q * 8 * 128), dtype, rng);
  const auto vn = testing::random_values(sz(Q * 8 * 128), dtype, rng);
  const Tensor tkn = testing::upload({Q, 8, 128}, dtype, kn, device_);
  const Tensor tvn = testing::upload({Q, 8, 128}, dtype, vn, device_);
  const float scale = static_cast<float>(1.0 / std::sqrt(128.0));
  const float mscale = static_cast<float>(mla_scale(m));

  auto plan = device_plan(l, p.tq);
  ASSERT_TRUE(plan.has_value());
  auto ws = SplitWorkspace::create(p.tq, Q, 32, 128, 4);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  auto mws = SplitWorkspace::create(m.tq, Q, 16, 512, 4);
  ASSERT_TRUE(mws.ok()) << mws.error().message();

  // The calls, in the order the graph records them. `caches` holds the only handles to the caches
  // and moves through each append, so that it writes in place.
  AppendedCache caches{std::move(p.tk), std::move(p.tv)};
  struct Outputs {
    std::optional<Tensor> attention, split, mla, mla_split;
  };
  auto record = [&](const Tensor& q, const Tensor& qm, Outputs& out) {
    auto a = plan->append(tkn, tvn, std::move(caches.key_cache), std::move(caches.value_cache));
    ASSERT_TRUE(a.ok()) << a.error().message();
    caches = std::move(a.value());
    auto o1 = plan->attention(q, caches.key_cache, caches.value_cache, scale, true);
    ASSERT_TRUE(o1.ok()) << o1.error().message();
    out.attention = std::move(o1.value());
    auto o2 = plan->attention_with_workspace(q, caches.key_cache, caches.value_cache, scale, true, *ws);
    ASSERT_TRUE(o2.ok()) << o2.error().message();
    out.split = std::move(o2.value());
    auto o3 = plan->mla(qm, m.tqp, m.tc, m.tkp, mscale, true);
    ASSERT_TRUE(o3.ok()) << o3.error().message();
    out.mla = std::move(o3.value());
    auto o4 = plan->mla_with_workspace(qm, m.tqp, m.tc, m.tkp, mscale, true, *mws);
    ASSERT_TRUE(o4.ok()) << o4.error().message();
    out.mla_split = std::move(o4.value());
  };
  auto bytes_of = [&](const Outputs& o) {
    return std::vector<std::vector<std::byte>>{host_bytes(*o.attention), host_bytes(*o.split), host_bytes(*o.mla),
                                               host_bytes(*o.mla_split)};
  };
  // Warm-up (eager): compiles, loads the modules, writes the appended rows.
  Outputs eager;
  record(p.tq, m.tq, eager);
  if (HasFatalFailure()) return;
  const auto eager_bytes = bytes_of(eager);
  void* const key_cache_ptr = caches.key_cache.data();
  ASSERT_TRUE(p.tq.queue().synchronize().ok());

  // Capture.
  void* const stream = p.tq.queue().impl().stream();
  Outputs captured;
  const Stats before = stats();
  int r = api->begin_capture(stream, GraphApi::kCaptureModeGlobal);
  ASSERT_EQ(r, 0) << "cuStreamBeginCapture: " << api->describe(r);
  record(p.tq, m.tq, captured);
  GraphApi::Graph graph = nullptr;
  r = api->end_capture(stream, &graph);  // also after a failed call: never leave the stream capturing
  const Stats after = stats();
  if (HasFatalFailure()) return;
  ASSERT_EQ(r, 0) << "cuStreamEndCapture (the capture was invalidated by a call): " << api->describe(r);
  EXPECT_EQ(after.module_loads, before.module_loads);
  EXPECT_EQ(after.host_synchronizations, before.host_synchronizations);
  EXPECT_EQ(after.jit_compiles, before.jit_compiles);
  EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses);
  EXPECT_EQ(after.device_allocations, before.device_allocations + 4) << "only the four returned outputs";
  EXPECT_EQ(after.kernel_launches, before.kernel_launches + 9) << "3 (append) + 1 + 2 (unit, merge) + 1 + 2";
  EXPECT_EQ(caches.key_cache.data(), key_cache_ptr) << "the captured append did not write in place";

  GraphApi::GraphExec exec = nullptr;
  r = api->instantiate(&exec, graph, GraphApi::kAutoFreeOnLaunch);
  ASSERT_EQ(r, 0) << "cuGraphInstantiateWithFlags: " << api->describe(r);

  // Replay 1: the warm-up's inputs.
  r = api->launch(exec, stream);
  ASSERT_EQ(r, 0) << "cuGraphLaunch: " << api->describe(r);
  EXPECT_TRUE(bytes_of(captured) == eager_bytes) << "the first replay differs from the eager calls";

  // Replay 2: new query values written into the same q storage.
  const auto q2 = testing::random_values(p.q.size(), dtype, rng);
  const auto qm2 = testing::random_values(m.q.size(), dtype, rng, -1, 1);
  const auto q2_bytes = dtype_bytes(p.tq.shape(), dtype, q2), qm2_bytes = dtype_bytes(m.tq.shape(), dtype, qm2);
  ASSERT_EQ(q2_bytes.size(), p.tq.nbytes());
  ASSERT_EQ(qm2_bytes.size(), m.tq.nbytes());
  r = api->copy_to_device(reinterpret_cast<unsigned long long>(p.tq.data()), q2_bytes.data(), q2_bytes.size(), stream);
  ASSERT_EQ(r, 0) << api->describe(r);
  r = api->copy_to_device(reinterpret_cast<unsigned long long>(m.tq.data()), qm2_bytes.data(), qm2_bytes.size(),
                          stream);
  ASSERT_EQ(r, 0) << api->describe(r);
  r = api->launch(exec, stream);
  ASSERT_EQ(r, 0) << "cuGraphLaunch: " << api->describe(r);
  const auto replay2 = bytes_of(captured);
  r = api->synchronize(stream);
  ASSERT_EQ(r, 0) << api->describe(r);

  // Eager on fresh tensors holding the new values.
  Outputs eager2;
  const Tensor tq2 = testing::upload(p.tq.shape(), dtype, q2, device_);
  const Tensor tqm2 = testing::upload(m.tq.shape(), dtype, qm2, device_);
  record(tq2, tqm2, eager2);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(replay2 == bytes_of(eager2)) << "the second replay differs from eager calls on the new query values";
  EXPECT_TRUE(replay2 != eager_bytes) << "the second replay did not read the new query values";
  // And the replayed results are right.
  auto want_k = p.k, want_v = p.v;
  reference::paged_append(kn, vn, want_k, want_v, l.ref(), 8, 128, 128);
  const auto want = reference::paged_attention(q2, want_k, want_v, l.ref(), {32, 8, 128, 128}, scale, true);
  const auto want_m = reference::paged_mla(qm2, m.qp, m.c, m.kp, l.ref(), 16, 512, 64, mscale, true);
  EXPECT_LE(relative_l2(host_values(*captured.attention), want), 2 * tolerance(dtype));
  EXPECT_LE(relative_l2(host_values(*captured.split), want), 2 * tolerance(dtype));
  EXPECT_LE(relative_l2(host_values(*captured.mla), want_m), 2 * tolerance(dtype));
  EXPECT_LE(relative_l2(host_values(*captured.mla_split), want_m), 2 * tolerance(dtype));

  // Replay 3: another schedule (every sequence one key shorter, its rows one position back) written
  // into the plan's own buffers by DevicePlan::update between replays: the graph replays with it,
  // as eager calls through the updated plan compute.
  Layout shorter = l;
  for (auto& length : shorter.lengths) --length;
  for (auto& position : shorter.positions) --position;
  // Four updates back to back, no synchronization: each writes the staging half the update before
  // last used, waiting (cuEventQuery, then cuEventSynchronize) only while that one's copies are in
  // flight; the caller's schedules are free once update returns; the last schedule is the one served.
  for (const Layout* next : {&l, &shorter, &l, &shorter}) {
    auto host = paged_test::host_plan(*next);
    ASSERT_TRUE(host.has_value());
    auto updated = plan->update(*host);
    ASSERT_TRUE(updated.ok()) << updated.error().message();
  }
  r = api->launch(exec, stream);
  ASSERT_EQ(r, 0) << "cuGraphLaunch: " << api->describe(r);
  const auto replay3 = bytes_of(captured);
  ASSERT_EQ(api->synchronize(stream), 0);
  Outputs eager3;
  record(tq2, tqm2, eager3);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(replay3 == bytes_of(eager3)) << "the third replay differs from eager calls through the updated plan";
  EXPECT_TRUE(replay3 != replay2) << "the third replay did not read the updated schedule";

  // The graph's outputs are freed in stream order (they outlive no launch), then the graph.
  captured = Outputs{};
  ASSERT_EQ(api->synchronize(stream), 0);
  EXPECT_EQ(api->exec_destroy(exec), 0);
  EXPECT_EQ(api->graph_destroy(graph), 0);
}

// Small, for compute-sanitizer (scripts/gpu-check runs *Sanitized* under memcheck and racecheck):
// attention unsplit and split, MLA and append.
TEST_F(PagedAttentionOnGpu, SanitizedSmall) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 5, {{23, Rows::Chunk, 3}, {1, Rows::Decode}, {40, Rows::Decode}}, true);
  check_attention(make_problem(l, {8, 2, 64, 64}, DType::BF16, rng, device_), true, {2});
  check_mla(make_mla(l, 4, 32, 8, DType::F16, rng, device_), true, {2});
  AppendProblem a = make_append(l, 2, 16, 8, DType::F32, rng, device_);
  auto want_k = a.kcache, want_v = a.vcache;
  reference::paged_append(a.k, a.v, want_k, want_v, a.layout.ref(), a.hkv, a.d, a.dv);
  auto plan = device_plan(a.layout, a.tk);
  ASSERT_TRUE(plan.has_value());
  auto r = plan->append(a.tk, a.tv, testing::upload({l.pages, l.page_size, 2, 16}, DType::F32, a.kcache, device_),
                        testing::upload({l.pages, l.page_size, 2, 8}, DType::F32, a.vcache, device_));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(host_values(r->key_cache), want_k);
  EXPECT_EQ(host_values(r->value_cache), want_v);
}

}  // namespace
}  // namespace rudnn
