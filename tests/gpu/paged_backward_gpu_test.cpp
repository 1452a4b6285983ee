// The paged attention and MLA backward, atomic path (SPEC §9), on a real GPU against the FP64 oracles
// of tests/reference/paged_attention.h: decode GQA 32/8 at D = 128 and mixed chunked-prefill rows
// (shuffled pages, a shared prefix) for bf16, f16 and f32, causal and not; MLA at R = 512 / P = 64
// with H = 16; dq the same bits twice (no atomics in it); the ordered path (no atomics) the same
// bits on every run and with its row caching and compaction switched on; small shapes of both paths,
// tensor cores and plain, attention and MLA, for compute-sanitizer. Every test prints SKIP without a CUDA device
// (RUDNN_GPU_TESTS_ON_HOST=1 runs them on the host device).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "../ops/op_test_util.h"
#include "../ops/paged_test_util.h"
#include "gpu_test_util.h"
#include "reference/paged_attention.h"
#include "rudnn/paged_attention.h"

namespace rudnn {
namespace {

using paged_test::Layout;
using paged_test::make_layout;
using paged_test::Rows;
using paged_test::Seq;
using paged_test::sz;
using testing::fresh_seed;
using testing::host_values;
using testing::relative_l2;

class PagedBackwardOnGpu : public testing::GpuTest {};

double bound(DType dtype) { return 3 * testing::tolerance(dtype); }

std::vector<std::byte> host_bytes(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->bytes : std::vector<std::byte>{};
}

void check_attention(const Layout& l, std::int64_t hq, std::int64_t hkv, std::int64_t d, std::int64_t dv, DType dtype,
                     bool causal, std::mt19937_64& rng, const Device& device) {
  SCOPED_TRACE(
      fmt::format("{} Hq={} Hkv={} D={} Dv={} {} causal={}", l.describe(), hq, hkv, d, dv, dtype_name(dtype), causal));
  const std::int64_t rows = l.pages * l.page_size, n = l.queries();
  const auto q = testing::random_values(sz(n * hq * d), dtype, rng);
  const auto k = testing::random_values(sz(rows * hkv * d), dtype, rng);
  const auto v = testing::random_values(sz(rows * hkv * dv), dtype, rng);
  const auto go = testing::random_values(sz(n * hq * dv), dtype, rng);
  const Tensor tq = testing::upload({n, hq, d}, dtype, q, device);
  const Tensor tk = testing::upload({l.pages, l.page_size, hkv, d}, dtype, k, device);
  const Tensor tv = testing::upload({l.pages, l.page_size, hkv, dv}, dtype, v, device);
  const Tensor tgo = testing::upload({n, hq, dv}, dtype, go, device);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const auto want = reference::paged_attention_backward(q, k, v, go, l.ref(), {hq, hkv, d, dv}, scale, causal);
  auto plan = paged_test::device_plan(l, tq);
  ASSERT_TRUE(plan.has_value());
  auto g = plan->attention_backward(tq, tk, tv, tgo, scale, causal);
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_LE(relative_l2(host_values(g->dq), want.dq), bound(dtype)) << "dq";
  EXPECT_LE(relative_l2(host_values(g->dk), want.dk), bound(dtype)) << "dk";
  EXPECT_LE(relative_l2(host_values(g->dv), want.dv), bound(dtype)) << "dv";
  auto again = plan->attention_backward(tq, tk, tv, tgo, scale, causal);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(host_bytes(again->dq), host_bytes(g->dq)) << "dq bits";

  // The ordered path, without and with its switches: the oracle's values, the same bits on every
  // run and in every mode.
  std::vector<std::vector<std::byte>> first;
  for (int mode = 0; mode < 3; ++mode) {
    auto ws = paged_attention::OrderedBackwardWorkspace::create(*plan, tq);
    ASSERT_TRUE(ws.ok()) << ws.error().message();
    ASSERT_TRUE(ws->set_cache_rows(mode >= 1).ok());
    ASSERT_TRUE(ws->set_compact_history(mode == 2).ok());
    for (int run = 0; run < 2; ++run) {
      Tensor dq = testing::upload(tq.shape(), dtype, std::vector<double>(sz(tq.numel()), 9.0), device);
      Tensor dk = testing::upload(tk.shape(), dtype, std::vector<double>(sz(tk.numel()), 9.0), device);
      Tensor dv = testing::upload(tv.shape(), dtype, std::vector<double>(sz(tv.numel()), 9.0), device);
      auto st = plan->attention_backward_ordered_into(tq, tk, tv, tgo, scale, causal, *ws, {&dq, &dk, &dv});
      ASSERT_TRUE(st.ok()) << st.error().message();
      std::vector<std::vector<std::byte>> bytes{host_bytes(dq), host_bytes(dk), host_bytes(dv)};
      if (first.empty()) {
        EXPECT_LE(relative_l2(host_values(dk), want.dk), bound(dtype)) << "ordered dk";
        EXPECT_LE(relative_l2(host_values(dv), want.dv), bound(dtype)) << "ordered dv";
        EXPECT_EQ(bytes[0], host_bytes(g->dq)) << "ordered dq: the atomic path's kernel";
        first = bytes;
      } else {
        EXPECT_EQ(bytes, first) << "ordered mode " << mode << " run " << run << ": other bits";
      }
    }
  }
}

TEST_F(PagedBackwardOnGpu, AttentionMatchesTheOracle) {
  for (DType dtype : {DType::BF16, DType::F16, DType::F32})
    for (bool causal : {true, false}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(fmt::format("seed={}", seed));
      std::mt19937_64 rng(seed);
      const Layout l = make_layout(
          rng, 16,
          {Seq{300, Rows::Decode}, Seq{1000, Rows::Decode, 0, 0, 10}, Seq{77, Rows::Chunk, 24}, Seq{5, Rows::Decode}},
          true);
      check_attention(l, 32, 8, 128, 128, dtype, causal, rng, device_);
    }
}

// Small, for compute-sanitizer (scripts/gpu-check runs *Sanitized* under memcheck and racecheck): the
// atomic and the ordered backward on tensor cores (bf16, D = 64; pages of 16 and 24 slots, the
// ordered history kernel's 16- and 32-key tiles; a reader with more items than a 64-row chunk) and on
// plain cores (f32, pages of 5).
TEST_F(PagedBackwardOnGpu, SanitizedSmall) {
  for (const auto& [dtype, page_size] :
       {std::pair{DType::BF16, std::int64_t{16}}, std::pair{DType::BF16, std::int64_t{24}},
        std::pair{DType::F32, std::int64_t{5}}}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={} page_size={}", seed, page_size));
    std::mt19937_64 rng(seed);
    const Layout l = make_layout(rng, page_size,
                                 {Seq{40, Rows::Chunk, 9}, Seq{23, Rows::Decode, 0, 0, 1}, Seq{3, Rows::Decode}}, true);
    check_attention(l, 8, 1, 64, 64, dtype, true, rng, device_);
  }
}

// MLA against the oracle on both paths: the atomic one (dq the same bits twice) and the ordered one
// (the same bits on every run and with row caching and compaction switched on).
void check_mla(const Layout& l, std::int64_t h, std::int64_t r, std::int64_t p, DType dtype, std::mt19937_64& rng,
               const Device& device) {
  SCOPED_TRACE(fmt::format("{} H={} R={} P={} {}", l.describe(), h, r, p, dtype_name(dtype)));
  const std::int64_t rows = l.pages * l.page_size, n = l.queries();
  const auto q = testing::random_values(sz(n * h * r), dtype, rng, -0.5, 0.5);
  const auto qp = testing::random_values(sz(n * h * p), dtype, rng, -0.5, 0.5);
  const auto c = testing::random_values(sz(rows * r), dtype, rng, -0.5, 0.5);
  const auto kp = testing::random_values(sz(rows * p), dtype, rng, -0.5, 0.5);
  const auto go = testing::random_values(sz(n * h * r), dtype, rng);
  const Tensor tq = testing::upload({n, h, r}, dtype, q, device), tqp = testing::upload({n, h, p}, dtype, qp, device);
  const Tensor tc = testing::upload({l.pages, l.page_size, 1, r}, dtype, c, device);
  const Tensor tkp = testing::upload({l.pages, l.page_size, 1, p}, dtype, kp, device);
  const Tensor tgo = testing::upload({n, h, r}, dtype, go, device);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(r + p)));
  const auto want = reference::paged_mla_backward(q, qp, c, kp, go, l.ref(), h, r, p, scale, true);
  auto plan = paged_test::device_plan(l, tq);
  ASSERT_TRUE(plan.has_value());
  auto g = plan->mla_backward(tq, tqp, tc, tkp, tgo, scale, true);
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_LE(relative_l2(host_values(g->dq), want.dq), bound(dtype)) << "dq";
  EXPECT_LE(relative_l2(host_values(g->dqp), want.dq_rope), bound(dtype)) << "dqp";
  EXPECT_LE(relative_l2(host_values(g->dlatent), want.dlatent), bound(dtype)) << "dlatent";
  EXPECT_LE(relative_l2(host_values(g->dkp), want.dk_rope), bound(dtype)) << "dkp";
  auto again = plan->mla_backward(tq, tqp, tc, tkp, tgo, scale, true);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(host_bytes(again->dq), host_bytes(g->dq)) << "dq bits";

  std::vector<std::vector<std::byte>> first;
  for (int mode = 0; mode < 2; ++mode) {
    auto ws = paged_attention::OrderedBackwardWorkspace::create(*plan, tq);
    ASSERT_TRUE(ws.ok()) << ws.error().message();
    ASSERT_TRUE(ws->set_cache_rows(mode == 1).ok());
    ASSERT_TRUE(ws->set_compact_history(mode == 1).ok());
    for (int run = 0; run < 2; ++run) {
      std::vector<Tensor> out;
      for (const Tensor* like : {&tq, &tqp, &tc, &tkp})
        out.push_back(testing::upload(like->shape(), dtype, std::vector<double>(sz(like->numel()), 9.0), device));
      auto st = plan->mla_backward_ordered_into(tq, tqp, tc, tkp, tgo, scale, true, *ws,
                                                {&out[0], &out[1], &out[2], &out[3]});
      ASSERT_TRUE(st.ok()) << st.error().message();
      std::vector<std::vector<std::byte>> bytes;
      for (const Tensor& t : out) bytes.push_back(host_bytes(t));
      if (first.empty()) {
        EXPECT_LE(relative_l2(host_values(out[2]), want.dlatent), bound(dtype)) << "ordered dlatent";
        EXPECT_LE(relative_l2(host_values(out[3]), want.dk_rope), bound(dtype)) << "ordered dkp";
        EXPECT_EQ(bytes[0], host_bytes(g->dq)) << "ordered dq: the atomic path's kernel";
        first = bytes;
      } else {
        EXPECT_EQ(bytes, first) << "ordered mode " << mode << " run " << run << ": other bits";
      }
    }
  }
}

// DeepSeek's R = 512 / P = 64 with H = 16, decode rows (the tensor-core kernels in bf16).
TEST_F(PagedBackwardOnGpu, MlaMatchesTheOracle) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const Layout l = make_layout(rng, 64, {Seq{400, Rows::Decode}, Seq{130, Rows::Decode, 0, 0, 1}}, true);
  check_mla(l, 16, 512, 64, DType::BF16, rng, device_);
}

// Small, for compute-sanitizer: the MLA tensor-core kernels of both paths (bf16, R = 128, P = 16,
// H = 16: two rows a 32-row chunk; pages of 16 and 48, one and two 32-key tiles of the history) and
// the plain ones (f32).
TEST_F(PagedBackwardOnGpu, MlaSanitizedSmall) {
  for (const auto& [dtype, page_size] :
       {std::pair{DType::BF16, std::int64_t{16}}, std::pair{DType::BF16, std::int64_t{48}},
        std::pair{DType::F32, std::int64_t{16}}}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={} page_size={}", seed, page_size));
    std::mt19937_64 rng(seed);
    const Layout l = make_layout(rng, page_size,
                                 {Seq{40, Rows::Chunk, 5}, Seq{23, Rows::Decode, 0, 0, 1}, Seq{3, Rows::Decode}}, true);
    check_mla(l, 16, 128, 16, dtype, rng, device_);
  }
}

}  // namespace
}  // namespace rudnn
