// The paged attention and MLA backward, atomic path (SPEC §9), through DevicePlan::attention_backward
// and DevicePlan::mla_backward on the host emulation device, against the FP64 oracles
// (tests/reference/paged_attention.h, checked against finite differences in
// paged_backward_oracle_test.cpp): every dtype, GQA 1/4/8, causal and not, page sizes 1, 5, 16, 64,
// shuffled pages, sequences sharing prefix pages (both sequences' gradients summed into one page),
// decode-only, prefill and mixed rows, D ≠ Dv, MLA at R = 512 / P = 64 and small; cache slots no
// visible key reaches are exact zeros (outputs poisoned); dq the same bits under the emulator's other
// thread orders and the history gradients within the dtype's bound of each other (FP32 atomics); the
// backward's contract lines (grad_out's dtype, shape and queue; the forward's lines through it)
// rejected with the argument named and nothing launched.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <random>
#include <set>

#include "contract_fixture.h"
#include "host/emulator.h"
#include "jit.h"
#include "op_test_util.h"
#include "paged_test_util.h"
#include "plan_cache.h"
#include "reference/paged_attention.h"
#include "rudnn/paged_attention.h"

namespace rudnn {
namespace {

using paged_attention::DevicePlan;
using paged_test::Layout;
using paged_test::make_layout;
using paged_test::Rows;
using paged_test::Seq;
using paged_test::sz;
using runtime::host::Schedule;
using testing::fresh_seed;
using testing::host_values;
using testing::relative_l2;

// The gradients go through FP32 atomics over dtype-rounded inputs and are rounded to the dtype once.
double bound(DType dtype) { return 3 * testing::tolerance(dtype); }

std::vector<std::byte> host_bytes(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->bytes : std::vector<std::byte>{};
}

struct Heads {
  std::int64_t hq, hkv, d, dv;
};

struct Problem {
  Layout layout;
  Heads h;
  DType dtype;
  std::vector<double> q, k, v, go;  // rounded to the dtype
  Tensor tq, tk, tv, tgo;
};

Problem make_problem(Layout l, Heads h, DType dtype, std::mt19937_64& rng) {
  const Device host = Device::host();
  const std::int64_t rows = l.pages * l.page_size, n = l.queries();
  auto q = testing::random_values(sz(n * h.hq * h.d), dtype, rng);
  auto k = testing::random_values(sz(rows * h.hkv * h.d), dtype, rng);
  auto v = testing::random_values(sz(rows * h.hkv * h.dv), dtype, rng);
  auto go = testing::random_values(sz(n * h.hq * h.dv), dtype, rng);
  Tensor tq = testing::upload({n, h.hq, h.d}, dtype, q, host);
  Tensor tk = testing::upload({l.pages, l.page_size, h.hkv, h.d}, dtype, k, host);
  Tensor tv = testing::upload({l.pages, l.page_size, h.hkv, h.dv}, dtype, v, host);
  Tensor tgo = testing::upload({n, h.hq, h.dv}, dtype, go, host);
  return Problem{std::move(l), h, dtype, std::move(q), std::move(k), std::move(v), std::move(go), tq, tk, tv, tgo};
}

// What a check of an attention problem starts from: its scale (1/√D), its description for the
// trace and the FP64 oracle's gradients.
struct AttentionCase {
  float scale;
  std::string trace;
  reference::PagedAttentionGrads want;
};

AttentionCase attention_case(const Problem& p, bool causal) {
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.h.d)));
  return {scale,
          fmt::format("{} Hq={} Hkv={} D={} Dv={} {} causal={}", p.layout.describe(), p.h.hq, p.h.hkv, p.h.d, p.h.dv,
                      dtype_name(p.dtype), causal),
          reference::paged_attention_backward(p.q, p.k, p.v, p.go, p.layout.ref(), {p.h.hq, p.h.hkv, p.h.d, p.h.dv},
                                              scale, causal)};
}

// Cache rows (of [pages · page_size · Hkv]) no visible key reaches: their dk and dv must be exact
// zeros. A reached key's dv row is Σ p·dO, never all zero for random dO; its dk may be exactly 0 in
// the oracle (a sequence of one key: dS = p·(dp − δ) = 0) but not in FP32 on another kernel's
// summation order, so "the oracle's dk is 0" would not mean "unreached".
void expect_unreached_rows_zero(const Problem& p, const std::vector<double>& want_dv, const std::vector<double>& dk,
                                const std::vector<double>& dv) {
  const std::size_t rows = want_dv.size() / sz(p.h.dv);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto first = want_dv.begin() + static_cast<std::ptrdiff_t>(r * sz(p.h.dv));
    if (std::any_of(first, first + p.h.dv, [](double x) { return x != 0.0; })) continue;
    for (std::size_t c = 0; c < sz(p.h.d); ++c) ASSERT_EQ(dk[r * sz(p.h.d) + c], 0.0) << "dk of unreached row " << r;
    for (std::size_t c = 0; c < sz(p.h.dv); ++c) ASSERT_EQ(dv[r * sz(p.h.dv) + c], 0.0) << "dv of unreached row " << r;
  }
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

void check_attention(const Problem& p, bool causal, bool orders = false) {
  const AttentionCase c = attention_case(p, causal);
  SCOPED_TRACE(c.trace);
  const float scale = c.scale;
  const auto& want = c.want;
  auto plan = paged_test::device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  auto g = plan->attention_backward(p.tq, p.tk, p.tv, p.tgo, scale, causal);
  ASSERT_TRUE(g.ok()) << g.error().message();
  for (auto [t, like] : {std::pair{&g->dq, &p.tq}, {&g->dk, &p.tk}, {&g->dv, &p.tv}}) {
    EXPECT_EQ(t->shape(), like->shape());
    EXPECT_EQ(t->dtype(), p.dtype);
  }
  const auto dq = host_values(g->dq), dk = host_values(g->dk), dv = host_values(g->dv);
  EXPECT_LE(relative_l2(dq, want.dq), bound(p.dtype)) << "dq";
  EXPECT_LE(relative_l2(dk, want.dk), bound(p.dtype)) << "dk";
  EXPECT_LE(relative_l2(dv, want.dv), bound(p.dtype)) << "dv";
  // Cache rows no visible key reaches: exactly 0 (the outputs were poisoned).
  expect_unreached_rows_zero(p, want.dv, dk, dv);
  if (!orders) return;
  const auto dq_bytes = host_bytes(g->dq);
  for_each_other_order([&] {
    auto again = plan->attention_backward(p.tq, p.tk, p.tv, p.tgo, scale, causal);
    ASSERT_TRUE(again.ok()) << again.error().message();
    EXPECT_EQ(host_bytes(again->dq), dq_bytes) << "dq depends on the thread order";
    // The history gradients sum with atomics: their order may change the last bits, nothing more.
    EXPECT_LE(relative_l2(host_values(again->dk), dk), bound(p.dtype)) << "dk";
    EXPECT_LE(relative_l2(host_values(again->dv), dv), bound(p.dtype)) << "dv";
  });
}

class PagedBackward : public ::testing::Test {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
};

// Mixed decode and chunked-prefill rows, shuffled, with a shared prefix; every dtype, causal and not.
TEST_F(PagedBackward, AttentionEveryDtype) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (bool causal : {false, true}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(fmt::format("seed={}", seed));
      std::mt19937_64 rng(seed);
      Layout l = make_layout(
          rng, 16,
          {Seq{37, Rows::Chunk, 5}, Seq{20, Rows::Decode}, Seq{45, Rows::Decode, 0, 0, 2}, Seq{9, Rows::Random, 3}},
          true);
      check_attention(make_problem(std::move(l), {8, 2, 16, 24}, dtype, rng), causal);
    }
}

// Page sizes 1, 5 (dividing no length), 16 and 64 with GQA groups 1, 4 and 8.
TEST_F(PagedBackward, PageSizesAndGroups) {
  const std::int64_t page_sizes[] = {1, 5, 16, 64};
  const Heads heads[] = {{2, 2, 32, 32}, {8, 2, 32, 16}, {8, 1, 8, 8}};
  for (std::int64_t ps : page_sizes)
    for (const Heads& h : heads) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(fmt::format("seed={}", seed));
      std::mt19937_64 rng(seed);
      Layout l = make_layout(rng, ps, {Seq{23, Rows::Chunk, 4}, Seq{70, Rows::Decode}}, false);
      check_attention(make_problem(std::move(l), h, DType::BF16, rng), true);
    }
}

// Two sequences share their first pages: each shared slot's gradient is the sum of both sequences'
// rows (the oracle adds them the same way), decode and prefill alike.
TEST_F(PagedBackward, SharedPrefixPagesSumBothSequences) {
  for (Rows rows : {Rows::Decode, Rows::Prefill}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 8, {Seq{40, rows}, Seq{35, rows, 0, 0, 3}, Seq{19, rows, 0, 0, 2}}, true);
    check_attention(make_problem(std::move(l), {4, 2, 16, 16}, DType::F32, rng), rows == Rows::Prefill, true);
  }
}

TEST_F(PagedBackward, DecodeOnlyAndThreadOrders) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  std::vector<Seq> seqs;
  for (std::int64_t length : {1, 17, 64, 100, 3}) seqs.push_back(Seq{length, Rows::Decode});
  Layout l = make_layout(rng, 16, seqs, true);
  check_attention(make_problem(std::move(l), {8, 1, 64, 64}, DType::F16, rng), false, true);
}

// ---- MLA

struct MlaProblem {
  Layout layout;
  std::int64_t heads, r, pr;
  DType dtype;
  std::vector<double> q, qp, c, kp, go;
  Tensor tq, tqp, tc, tkp, tgo;
};

MlaProblem make_mla(Layout l, std::int64_t heads, std::int64_t r, std::int64_t pr, DType dtype, std::mt19937_64& rng) {
  const Device host = Device::host();
  const std::int64_t rows = l.pages * l.page_size, n = l.queries();
  auto q = testing::random_values(sz(n * heads * r), dtype, rng, -0.5, 0.5);
  auto qp = testing::random_values(sz(n * heads * pr), dtype, rng, -0.5, 0.5);
  auto c = testing::random_values(sz(rows * r), dtype, rng, -0.5, 0.5);
  auto kp = testing::random_values(sz(rows * pr), dtype, rng, -0.5, 0.5);
  auto go = testing::random_values(sz(n * heads * r), dtype, rng);
  Tensor tq = testing::upload({n, heads, r}, dtype, q, host);
  Tensor tqp = testing::upload({n, heads, pr}, dtype, qp, host);
  Tensor tc = testing::upload({l.pages, l.page_size, 1, r}, dtype, c, host);
  Tensor tkp = testing::upload({l.pages, l.page_size, 1, pr}, dtype, kp, host);
  Tensor tgo = testing::upload({n, heads, r}, dtype, go, host);
  return MlaProblem{std::move(l),  heads, r,   pr, dtype, std::move(q), std::move(qp), std::move(c), std::move(kp),
                    std::move(go), tq,    tqp, tc, tkp,   tgo};
}

void check_mla(const MlaProblem& m, bool causal) {
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.r + m.pr)));
  SCOPED_TRACE(fmt::format("{} H={} R={} P={} {} causal={}", m.layout.describe(), m.heads, m.r, m.pr,
                           dtype_name(m.dtype), causal));
  const auto want =
      reference::paged_mla_backward(m.q, m.qp, m.c, m.kp, m.go, m.layout.ref(), m.heads, m.r, m.pr, scale, causal);
  auto plan = paged_test::device_plan(m.layout, m.tq);
  ASSERT_TRUE(plan.has_value());
  auto g = plan->mla_backward(m.tq, m.tqp, m.tc, m.tkp, m.tgo, scale, causal);
  ASSERT_TRUE(g.ok()) << g.error().message();
  for (auto [t, like] : {std::pair{&g->dq, &m.tq}, {&g->dqp, &m.tqp}, {&g->dlatent, &m.tc}, {&g->dkp, &m.tkp}}) {
    EXPECT_EQ(t->shape(), like->shape());
    EXPECT_EQ(t->dtype(), m.dtype);
  }
  EXPECT_LE(relative_l2(host_values(g->dq), want.dq), bound(m.dtype)) << "dq";
  EXPECT_LE(relative_l2(host_values(g->dqp), want.dq_rope), bound(m.dtype)) << "dqp";
  EXPECT_LE(relative_l2(host_values(g->dlatent), want.dlatent), bound(m.dtype)) << "dlatent";
  EXPECT_LE(relative_l2(host_values(g->dkp), want.dk_rope), bound(m.dtype)) << "dkp";
}

TEST_F(PagedBackward, MlaSmallEveryDtype) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (bool causal : {false, true}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(fmt::format("seed={}", seed));
      std::mt19937_64 rng(seed);
      Layout l = make_layout(rng, 16, {Seq{30, Rows::Chunk, 4}, Seq{21, Rows::Decode, 0, 0, 1}}, true);
      check_mla(make_mla(std::move(l), 4, 32, 8, dtype, rng), causal);
    }
}

// DeepSeek's latent width: R = 512, P = 64, page size 64, decode rows.
TEST_F(PagedBackward, MlaLatent512Decode) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 64, {Seq{90, Rows::Decode}, Seq{130, Rows::Decode, 0, 0, 1}}, true);
  check_mla(make_mla(std::move(l), 4, 512, 64, DType::BF16, rng), true);
}

// ---- the contract

class PagedBackwardContract : public rudnn::testing::ContractTest {};

TEST_F(PagedBackwardContract, EachLine) {
  std::mt19937_64 rng(fresh_seed());
  Layout l = make_layout(rng, 4, {Seq{6, Rows::Decode}, Seq{9, Rows::Decode}}, false, 0);
  const std::int64_t pages = l.pages;
  Problem p = make_problem(std::move(l), {4, 2, 8, 8}, DType::BF16, rng);
  auto plan = paged_test::device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  rebase();
  const DType bf = DType::BF16;
  // grad_out: dtype, shape, queue.
  expect_rejected(plan->attention_backward(p.tq, p.tk, p.tv, t({2, 4, 8}, DType::F32), 1.0f, true),
                  ErrorKind::UnsupportedDType, "grad_out");
  expect_rejected(plan->attention_backward(p.tq, p.tk, p.tv, t({2, 4, 16}, bf), 1.0f, true), ErrorKind::ShapeMismatch,
                  "grad_out");
  expect_rejected(plan->attention_backward(p.tq, p.tk, p.tv, t({2, 4}, bf), 1.0f, true), ErrorKind::ShapeMismatch,
                  "grad_out");
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  expect_rejected(plan->attention_backward(p.tq, p.tk, p.tv, t({2, 4, 8}, bf, &q2.value()), 1.0f, true),
                  ErrorKind::QueueMismatch, "grad_out");
  // The forward's lines, through the backward.
  expect_rejected(plan->attention_backward(p.tq, p.tk, p.tv, p.tgo, 0.0f, true), ErrorKind::InvalidValue, "scale");
  expect_rejected(plan->attention_backward(t({3, 4, 8}, bf), p.tk, p.tv, p.tgo, 1.0f, true), ErrorKind::ShapeMismatch,
                  "query");
  expect_rejected(
      plan->attention_backward(p.tq, t({pages + 1, 4, 2, 8}, bf), t({pages + 1, 4, 2, 8}, bf), p.tgo, 1.0f, true),
      ErrorKind::ShapeMismatch, "key");
  expect_rejected(plan->attention_backward(p.tq, p.tk, t({pages, 4, 2, 8}, DType::F16), p.tgo, 1.0f, true),
                  ErrorKind::UnsupportedDType, "value");
  expect_rejected(plan->attention_backward(p.tq, t({pages, 4, 3, 8}, bf), t({pages, 4, 3, 8}, bf), p.tgo, 1.0f, true),
                  ErrorKind::ShapeMismatch, "key");
  // MLA: grad_out [Q, H, R].
  Tensor mq = t({2, 4, 16}, bf), mqp = t({2, 4, 4}, bf), mc = t({pages, 4, 1, 16}, bf), mkp = t({pages, 4, 1, 4}, bf);
  expect_rejected(plan->mla_backward(mq, mqp, mc, mkp, t({2, 4, 4}, bf), 1.0f, false), ErrorKind::ShapeMismatch,
                  "grad_out");
  expect_rejected(plan->mla_backward(mq, mqp, mc, mkp, t({2, 4, 16}, DType::F16), 1.0f, false),
                  ErrorKind::UnsupportedDType, "grad_out");
  expect_rejected(plan->mla_backward(mq, t({2, 4, 5}, bf), mc, mkp, t({2, 4, 16}, bf), 1.0f, false),
                  ErrorKind::ShapeMismatch, "key_rope");
}

// ---- the unsafe selected outputs (*_backward_selected_into)

// A caller buffer like `like` holding `fill` everywhere.
Tensor buffer_like(const Tensor& like, double fill) {
  return testing::upload(like.shape(), like.dtype(), std::vector<double>(sz(like.numel()), fill), Device::host());
}

// Every subset of the three attention gradients: the given ones match the allocating call (dq
// bitwise: one kernel, the same arithmetic; dk, dv within the atomics' bound), and a history
// gradient left out costs no scratch allocation.
void check_selected_subsets(const Heads& heads) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={} Hq={} Hkv={} D={} Dv={}", seed, heads.hq, heads.hkv, heads.d, heads.dv));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 8, {Seq{29, Rows::Chunk, 5}, Seq{17, Rows::Decode, 0, 0, 1}}, true);
  Problem p = make_problem(std::move(l), heads, DType::BF16, rng);
  auto plan = paged_test::device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  auto full = plan->attention_backward(p.tq, p.tk, p.tv, p.tgo, 0.25f, true);
  ASSERT_TRUE(full.ok()) << full.error().message();
  const Tensor* want[3] = {&full->dq, &full->dk, &full->dv};
  const Tensor* like[3] = {&p.tq, &p.tk, &p.tv};
  for (int mask = 0; mask < 8; ++mask) {
    SCOPED_TRACE(fmt::format("outputs mask {}", mask));
    std::optional<Tensor> bufs[3];
    for (int i = 0; i < 3; ++i)
      if (mask & (1 << i)) bufs[i] = buffer_like(*like[i], 1234.0);
    paged_attention::AttentionBackwardOutputs out{bufs[0] ? &*bufs[0] : nullptr, bufs[1] ? &*bufs[1] : nullptr,
                                                  bufs[2] ? &*bufs[2] : nullptr};
    const Stats before = stats();
    auto st = plan->attention_backward_selected_into(p.tq, p.tk, p.tv, p.tgo, 0.25f, true, out);
    ASSERT_TRUE(st.ok()) << st.error().message();
    const int histories = ((mask >> 1) & 1) + ((mask >> 2) & 1);
    EXPECT_EQ(stats().device_allocations - before.device_allocations, static_cast<std::uint64_t>(histories))
        << "one FP32 scratch per selected history gradient, none for the others";
    if (mask == 0) EXPECT_EQ(stats().kernel_launches, before.kernel_launches) << "nothing asked, nothing launched";
    if (bufs[0]) EXPECT_EQ(host_bytes(*bufs[0]), host_bytes(full->dq)) << "dq";
    for (int i = 1; i < 3; ++i)
      if (bufs[i]) EXPECT_LE(relative_l2(host_values(*bufs[i]), host_values(*want[i])), bound(p.dtype)) << i;
  }
  // The ordered path asked for dq alone: the atomic path's dq bits (the same kernel, which then
  // skips the row statistics no history kernel reads).
  auto ws = paged_attention::OrderedBackwardWorkspace::create(*plan, p.tq);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  Tensor dq = buffer_like(p.tq, 1234.0);
  auto st = plan->attention_backward_ordered_into(p.tq, p.tk, p.tv, p.tgo, 0.25f, true, *ws, {&dq, nullptr, nullptr});
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(host_bytes(dq), host_bytes(full->dq)) << "ordered, dq alone";
}

// Plain cores (D = 16, Dv = 8) and tensor cores (D = Dv = 64).
TEST_F(PagedBackward, SelectedOutputsEverySubset) {
  check_selected_subsets({4, 2, 16, 8});
  check_selected_subsets({8, 2, 64, 64});
}

// Every subset of the four MLA gradients (dlatent holds the key and the value contribution; dkp
// only the rope keys').
TEST_F(PagedBackward, MlaSelectedOutputsEverySubset) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 16, {Seq{30, Rows::Chunk, 3}, Seq{21, Rows::Decode}}, true);
  MlaProblem m = make_mla(std::move(l), 4, 32, 8, DType::F32, rng);
  auto plan = paged_test::device_plan(m.layout, m.tq);
  ASSERT_TRUE(plan.has_value());
  auto full = plan->mla_backward(m.tq, m.tqp, m.tc, m.tkp, m.tgo, 0.2f, true);
  ASSERT_TRUE(full.ok()) << full.error().message();
  const Tensor* want[4] = {&full->dq, &full->dqp, &full->dlatent, &full->dkp};
  const Tensor* like[4] = {&m.tq, &m.tqp, &m.tc, &m.tkp};
  for (int mask = 1; mask < 16; ++mask) {
    SCOPED_TRACE(fmt::format("outputs mask {}", mask));
    std::optional<Tensor> bufs[4];
    for (int i = 0; i < 4; ++i)
      if (mask & (1 << i)) bufs[i] = buffer_like(*like[i], -77.0);
    auto ptr = [&](int i) { return bufs[i] ? &*bufs[i] : nullptr; };
    auto st =
        plan->mla_backward_selected_into(m.tq, m.tqp, m.tc, m.tkp, m.tgo, 0.2f, true, {ptr(0), ptr(1), ptr(2), ptr(3)});
    ASSERT_TRUE(st.ok()) << st.error().message();
    for (int i = 0; i < 4; ++i)
      if (bufs[i]) EXPECT_LE(relative_l2(host_values(*bufs[i]), host_values(*want[i])), bound(m.dtype)) << i;
  }
}

// ---- the ordered (deterministic) path

// Sets an environment variable for a scope.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (const char* o = std::getenv(n)) old = o;
    if (value)
      setenv(n, value, 1);
    else
      unsetenv(n);
  }
  ~ScopedEnv() {
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

using paged_attention::OrderedBackwardWorkspace;

OrderedBackwardWorkspace ordered_workspace(const DevicePlan& plan, const Tensor& q, bool cache_rows, bool compact) {
  ScopedEnv rows("RUDA_PAGED_ORDERED_CACHE_ROWS", cache_rows ? "1" : "0");
  ScopedEnv history("RUDA_PAGED_ORDERED_COMPACT_HISTORY", compact ? "1" : nullptr);
  auto ws = OrderedBackwardWorkspace::create(plan, q);
  EXPECT_TRUE(ws.ok()) << ws.error().message();
  EXPECT_EQ(ws->cache_rows(), cache_rows);
  EXPECT_EQ(ws->compact_history(), compact);
  return std::move(ws.value());
}

struct Gradients {
  Tensor dq, dk, dv;
  std::vector<std::vector<std::byte>> bytes;  // dq, dk, dv
};

// The ordered attention backward into fresh buffers filled with NaN.
Gradients run_ordered(const DevicePlan& plan, const Problem& p, float scale, bool causal,
                      OrderedBackwardWorkspace& ws) {
  const double nan = std::nan("");
  Gradients g{buffer_like(p.tq, nan), buffer_like(p.tk, nan), buffer_like(p.tv, nan), {}};
  auto st = plan.attention_backward_ordered_into(p.tq, p.tk, p.tv, p.tgo, scale, causal, ws, {&g.dq, &g.dk, &g.dv});
  EXPECT_TRUE(st.ok()) << st.error().message();
  g.bytes = {host_bytes(g.dq), host_bytes(g.dk), host_bytes(g.dv)};
  return g;
}

// Against the oracle and the atomic path, in all four modes (row caching × compaction), which agree
// bitwise; the same bits again under the emulator's other thread orders.
void check_ordered(const Problem& p, bool causal, bool orders) {
  const AttentionCase c = attention_case(p, causal);
  SCOPED_TRACE(c.trace);
  const float scale = c.scale;
  const auto& want = c.want;
  auto plan = paged_test::device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  auto atomic = plan->attention_backward(p.tq, p.tk, p.tv, p.tgo, scale, causal);
  ASSERT_TRUE(atomic.ok()) << atomic.error().message();
  std::optional<Gradients> first;
  for (bool cache_rows : {false, true})
    for (bool compact : {false, true}) {
      SCOPED_TRACE(fmt::format("cache_rows={} compact_history={}", cache_rows, compact));
      OrderedBackwardWorkspace ws = ordered_workspace(*plan, p.tq, cache_rows, compact);
      Gradients g = run_ordered(*plan, p, scale, causal, ws);
      if (!first) {
        first = g;
        const auto dq = host_values(g.dq), dk = host_values(g.dk), dv = host_values(g.dv);
        EXPECT_LE(relative_l2(dq, want.dq), bound(p.dtype)) << "dq";
        EXPECT_LE(relative_l2(dk, want.dk), bound(p.dtype)) << "dk";
        EXPECT_LE(relative_l2(dv, want.dv), bound(p.dtype)) << "dv";
        EXPECT_LE(relative_l2(dk, host_values(atomic->dk)), bound(p.dtype)) << "dk against the atomic path";
        EXPECT_LE(relative_l2(dv, host_values(atomic->dv)), bound(p.dtype)) << "dv against the atomic path";
        EXPECT_EQ(g.bytes[0], host_bytes(atomic->dq)) << "dq: the same kernel as the atomic path's";
        expect_unreached_rows_zero(p, want.dv, dk, dv);
      } else {
        for (int i = 0; i < 3; ++i) EXPECT_EQ(g.bytes[sz(i)], first->bytes[sz(i)]) << "output " << i;
      }
      if (orders && cache_rows == compact)
        for_each_other_order([&] {
          Gradients again = run_ordered(*plan, p, scale, causal, ws);
          for (int i = 0; i < 3; ++i) EXPECT_EQ(again.bytes[sz(i)], first->bytes[sz(i)]) << "output " << i;
        });
    }
}

// The tensor-core backward (paged_attention_backward_mma: attention in f16/bf16 with D = Dv ∈ {64,
// 96, 128}) against the oracle: GQA 1, 4 and 8, causal and not, page sizes 1, 5, 16 and 64, a
// chunked prefill of more rows than a 64-row panel holds, decode rows, short runs and a one-key
// sequence, several 32-key tiles; dq the same bits under the other thread orders. The ordered path
// on tensor cores: OrderedOnTensorCores.
//
// The heuristic picks the kernels: these tests check that the backward's cached plans (cleared before
// each case) did run on tensor cores — the unit kernel, and on the ordered path the history kernel.
void expect_tensor_core_kernels(bool ordered) {
  const auto entries = ops::PlanCache::instance().kernel_entries("rudnn.paged_attention_backward");
  auto has = [&](std::string_view part) {
    return std::any_of(entries.begin(), entries.end(), [&](const std::string& e) { return e.find(part) != e.npos; });
  };
  EXPECT_TRUE(has("paged_attention_backward_mma")) << "no tensor-core unit kernel ran";
  if (ordered) EXPECT_TRUE(has("backward_history_mma")) << "the ordered history ran on plain cores";
  for (const std::string& e : entries)
    EXPECT_TRUE(e.find("history") == e.npos || e.find("history_mma") != e.npos) << e << " ran on plain cores";
}

TEST_F(PagedBackward, AttentionOnTensorCores) {
  struct Case {
    Heads h;
    DType dtype;
    std::int64_t page_size;
    bool causal;
  };
  const Case kCases[] = {{{8, 2, 64, 64}, DType::F16, 16, true},
                         {{4, 4, 128, 128}, DType::BF16, 1, true},
                         {{16, 2, 96, 96}, DType::BF16, 64, false},
                         {{8, 1, 128, 128}, DType::F16, 5, true}};
  for (const Case& c : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(
        rng, c.page_size,
        {Seq{90, Rows::Chunk, 70}, Seq{41, Rows::Decode}, Seq{33, Rows::Random, 5}, Seq{1, Rows::Decode}}, false);
    ops::PlanCache::instance().clear();  // the kernels this case's calls chose, below
    check_attention(make_problem(std::move(l), c.h, c.dtype, rng), c.causal, &c == &kCases[0]);
    expect_tensor_core_kernels(false);
  }
}

// The ordered path on tensor cores (paged_attention_backward_mma for dq and the row statistics, then
// paged_attention_backward_history_mma) against the oracle and the atomic path, in every mode, the
// same bits under the other thread orders: GQA 1, 4 and 8, causal and not, page sizes 1 and 16
// (16-key tiles), 24 (a 32-key tile, partly empty) and 64 (two 32-key tiles a page), a reader with
// more (row, head) items than a 64-row chunk, shared prefix pages, decode rows, a sequence without
// queries.
TEST_F(PagedBackward, OrderedOnTensorCores) {
  struct Case {
    Heads h;
    DType dtype;
    std::int64_t page_size;
    bool causal;
    std::vector<Seq> seqs;
  };
  const Case kCases[] = {
      {{8, 2, 64, 64},
       DType::F16,
       16,
       true,
       {Seq{90, Rows::Chunk, 70}, Seq{45, Rows::Decode, 0, 0, 2}, Seq{33, Rows::Random, 5}, Seq{1, Rows::Decode},
        Seq{12, Rows::None}}},
      {{4, 4, 128, 128}, DType::BF16, 1, true, {Seq{40, Rows::Chunk, 20}, Seq{30, Rows::Decode, 0, 0, 10}}},
      {{16, 2, 96, 96}, DType::BF16, 64, false, {Seq{100, Rows::Chunk, 12}, Seq{130, Rows::Decode, 0, 0, 1}}},
      {{8, 1, 128, 128}, DType::F16, 24, true, {Seq{37, Rows::Chunk, 9}, Seq{60, Rows::Decode, 0, 0, 1}}}};
  for (const Case& c : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, c.page_size, c.seqs, true);
    // The other thread orders with 16-key (page 16) and 32-key (page 24) tiles.
    ops::PlanCache::instance().clear();
    check_ordered(make_problem(std::move(l), c.h, c.dtype, rng), c.causal, &c == &kCases[0] || &c == &kCases[3]);
    expect_tensor_core_kernels(true);
  }
}

TEST_F(PagedBackward, OrderedEveryDtypeAndMode) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (bool causal : {false, true}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(fmt::format("seed={}", seed));
      std::mt19937_64 rng(seed);
      Layout l = make_layout(rng, 16,
                             {Seq{37, Rows::Chunk, 5}, Seq{20, Rows::Decode}, Seq{45, Rows::Decode, 0, 0, 2},
                              Seq{9, Rows::Random, 3}, Seq{12, Rows::None}},
                             true);
      check_ordered(make_problem(std::move(l), {8, 2, 16, 24}, dtype, rng), causal, dtype == DType::BF16);
    }
}

TEST_F(PagedBackward, OrderedPageSizesGroupsAndSharedPrefixes) {
  const std::int64_t page_sizes[] = {1, 16, 64};
  const Heads heads[] = {{2, 2, 32, 32}, {8, 2, 32, 16}, {8, 1, 8, 8}};
  for (std::int64_t ps : page_sizes)
    for (const Heads& h : heads) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(fmt::format("seed={}", seed));
      std::mt19937_64 rng(seed);
      Layout l = make_layout(rng, ps, {Seq{23, Rows::Chunk, 4}, Seq{70, Rows::Decode}, Seq{30, Rows::Prefill, 0, 0, 1}},
                             false);
      check_ordered(make_problem(std::move(l), h, DType::BF16, rng), true, false);
    }
}

// Bitwise the same over 20 runs (one workspace reused), decode-only rows.
TEST_F(PagedBackward, OrderedTwentyRunsSameBits) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  std::vector<Seq> seqs;
  for (std::int64_t length : {1, 17, 64, 100, 3}) seqs.push_back(Seq{length, Rows::Decode});
  seqs.push_back(Seq{50, Rows::Decode, 0, 3, 2});
  Problem p = make_problem(make_layout(rng, 16, seqs, true), {8, 1, 64, 64}, DType::F16, rng);
  auto plan = paged_test::device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  OrderedBackwardWorkspace ws = ordered_workspace(*plan, p.tq, true, false);
  const Gradients first = run_ordered(*plan, p, 0.125f, false, ws);
  for (int run = 1; run < 20; ++run) {
    const Gradients again = run_ordered(*plan, p, 0.125f, false, ws);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(again.bytes[sz(i)], first.bytes[sz(i)]) << "run " << run << " output " << i;
  }
  // Selected outputs on the ordered path: dk alone is the same bits as in the full call.
  Tensor dk = buffer_like(p.tk, 5.0);
  auto st = plan->attention_backward_ordered_into(p.tq, p.tk, p.tv, p.tgo, 0.125f, false, ws, {nullptr, &dk, nullptr});
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(host_bytes(dk), first.bytes[1]);
}

// The ordered MLA backward in both modes (row caching and compaction off, then on: the same bits)
// against the oracle; `bits` receives the outputs' bytes.
void check_ordered_mla(const MlaProblem& m, bool causal, std::vector<std::vector<std::byte>>* bits = nullptr) {
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.r + m.pr)));
  SCOPED_TRACE(fmt::format("{} H={} R={} P={} {} causal={}", m.layout.describe(), m.heads, m.r, m.pr,
                           dtype_name(m.dtype), causal));
  const auto want =
      reference::paged_mla_backward(m.q, m.qp, m.c, m.kp, m.go, m.layout.ref(), m.heads, m.r, m.pr, scale, causal);
  auto plan = paged_test::device_plan(m.layout, m.tq);
  ASSERT_TRUE(plan.has_value());
  std::optional<std::vector<std::vector<std::byte>>> first;
  for (bool mode : {false, true}) {
    OrderedBackwardWorkspace ws = ordered_workspace(*plan, m.tq, mode, mode);
    Tensor dq = buffer_like(m.tq, std::nan("")), dqp = buffer_like(m.tqp, std::nan("")),
           dc = buffer_like(m.tc, std::nan("")), dkp = buffer_like(m.tkp, std::nan(""));
    auto st =
        plan->mla_backward_ordered_into(m.tq, m.tqp, m.tc, m.tkp, m.tgo, scale, causal, ws, {&dq, &dqp, &dc, &dkp});
    ASSERT_TRUE(st.ok()) << st.error().message();
    std::vector<std::vector<std::byte>> bytes{host_bytes(dq), host_bytes(dqp), host_bytes(dc), host_bytes(dkp)};
    if (first) {
      EXPECT_EQ(bytes, *first) << "row caching and compaction change no bit";
      continue;
    }
    first = bytes;
    EXPECT_LE(relative_l2(host_values(dq), want.dq), bound(m.dtype)) << "dq";
    EXPECT_LE(relative_l2(host_values(dqp), want.dq_rope), bound(m.dtype)) << "dqp";
    EXPECT_LE(relative_l2(host_values(dc), want.dlatent), bound(m.dtype)) << "dlatent";
    EXPECT_LE(relative_l2(host_values(dkp), want.dk_rope), bound(m.dtype)) << "dkp";
  }
  if (bits && first) *bits = *first;
}

TEST_F(PagedBackward, OrderedMla) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16, {Seq{30, Rows::Chunk, 4}, Seq{21, Rows::Decode, 0, 0, 1}}, true);
    check_ordered_mla(make_mla(std::move(l), 4, 32, 8, dtype, rng), true);
  }
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  Layout l = make_layout(rng, 64, {Seq{90, Rows::Decode}, Seq{130, Rows::Decode, 0, 0, 1}}, true);
  check_ordered_mla(make_mla(std::move(l), 4, 512, 64, DType::BF16, rng), false);
}

// MLA on tensor cores (paged_mla_backward_mma: f16/bf16, R a multiple of 128 up to 512, Pr a
// multiple of 16) against the oracle: 32-row chunks holding several query rows (H = 4, 16), a row
// split over chunks (H = 64), a decode row of one block (H = 16); page sizes 1, 5, 16 and 64;
// causal and not; chunked prefill, decode and a one-key sequence; R = 512 / P = 64; column groups
// that end past the last column (R + Pr = 144); the ordered path (paged_mla_backward_history_mma
// after the unit's statistics) against the oracle in both modes, pages of 5 and 16 (one 16-key
// tile: a page of at most 16 slots), 48 (two 32-key tiles, the second half empty), and DeepSeek's
// R = 512 / P = 64 on pages of 16, the same bits under the other thread orders. The heuristic picks
// the kernels; the cached plans show they ran.
void expect_mla_tensor_core_unit(bool ordered = false) {
  const auto entries = ops::PlanCache::instance().kernel_entries("rudnn.paged_mla_backward");
  auto has = [&](std::string_view part) {
    return std::any_of(entries.begin(), entries.end(), [&](const std::string& e) { return e.find(part) != e.npos; });
  };
  EXPECT_TRUE(has("paged_mla_backward_mma")) << "no tensor-core MLA unit kernel ran";
  if (ordered) EXPECT_TRUE(has("paged_mla_backward_history_mma")) << "the ordered MLA history ran on plain cores";
}

TEST_F(PagedBackward, MlaOnTensorCores) {
  struct Case {
    std::int64_t heads, r, pr;
    DType dtype;
    std::int64_t page_size;
    bool causal;
  };
  const Case kCases[] = {{16, 128, 16, DType::F16, 16, true},
                         {4, 128, 32, DType::BF16, 5, false},
                         {64, 256, 16, DType::BF16, 1, true},
                         {16, 512, 64, DType::BF16, 64, true}};
  for (const Case& c : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed={}", seed));
    std::mt19937_64 rng(seed);
    Layout l =
        make_layout(rng, c.page_size, {Seq{70, Rows::Chunk, 9}, Seq{41, Rows::Decode}, Seq{1, Rows::Decode}}, false);
    ops::PlanCache::instance().clear();
    check_mla(make_mla(std::move(l), c.heads, c.r, c.pr, c.dtype, rng), c.causal);
    expect_mla_tensor_core_unit();
  }
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  struct Ordered {
    std::int64_t page_size, r, pr;
  };
  for (const Ordered& o : {Ordered{5, 128, 16}, Ordered{16, 128, 16}, Ordered{48, 128, 16}, Ordered{16, 512, 64}}) {
    SCOPED_TRACE(fmt::format("ordered page_size={} R={} P={}", o.page_size, o.r, o.pr));
    Layout l =
        o.r == 512
            ? make_layout(rng, o.page_size, {Seq{20, Rows::Chunk, 3}, Seq{35, Rows::Decode}}, true)
            : make_layout(rng, o.page_size,
                          {Seq{40, Rows::Chunk, 6}, Seq{21, Rows::Decode, 0, 0, 1}, Seq{70, Rows::Random, 3}}, true);
    const MlaProblem m = make_mla(std::move(l), 16, o.r, o.pr, o.r == 512 ? DType::BF16 : DType::F16, rng);
    ops::PlanCache::instance().clear();
    std::vector<std::vector<std::byte>> bits;
    check_ordered_mla(m, true, &bits);
    expect_mla_tensor_core_unit(true);
    for_each_other_order([&] {
      std::vector<std::vector<std::byte>> again;
      check_ordered_mla(m, true, &again);
      EXPECT_EQ(again, bits) << "the ordered path's bits changed with the thread order";
    });
  }
}

// The workspace: the switches from the environment (read once), compaction's page counts, the
// uploaded page order in bytes() (kept when switched off), the budget.
TEST_F(PagedBackward, OrderedWorkspaceSwitchesAndCompaction) {
  std::mt19937_64 rng(fresh_seed());
  // Pages: 3 + 2 + 4 + 2 spare; sequence 2 has no rows and sequence 1 shares sequence 0's first page.
  Layout l = make_layout(
      rng, 4, {Seq{10, Rows::Decode, 0, -1, 0, 1}, Seq{7, Rows::Prefill, 0, 0, 1}, Seq{16, Rows::None}}, false, 2);
  Problem p = make_problem(l, {2, 1, 8, 8}, DType::F32, rng);
  auto plan = paged_test::device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  // Active: the pages within the valid length of sequences with rows (seq 0: 3 of its 4 table
  // pages, seq 1: its own second page; its first is seq 0's).
  std::set<std::int32_t> active;
  for (std::size_t s = 0; s < 2; ++s)
    for (std::int64_t j = 0; j < (l.lengths[s] + 3) / 4; ++j) active.insert(l.tables[s][sz(j)]);
  const auto n_active = static_cast<std::int64_t>(active.size());
  ASSERT_EQ(n_active, 4);

  OrderedBackwardWorkspace off = ordered_workspace(*plan, p.tq, false, false);
  EXPECT_FALSE(off.history_compaction_pages().has_value());
  const std::int64_t base = off.bytes();
  EXPECT_GE(base, p.layout.queries() * 2 * 8);
  ASSERT_TRUE(off.set_compact_history(true).ok());
  EXPECT_EQ(off.history_compaction_pages(), (std::pair<std::int64_t, std::int64_t>{n_active, l.pages - n_active}));
  EXPECT_EQ(off.bytes(), base + l.pages * 4) << "the page order, physical_pages × 4 bytes";
  ASSERT_TRUE(off.set_compact_history(false).ok());
  EXPECT_FALSE(off.history_compaction_pages().has_value());
  EXPECT_EQ(off.bytes(), base + l.pages * 4) << "kept when switched off";

  // The environment: 1 and 0 as asked, anything else an error naming the variable; read once.
  {
    ScopedEnv rows("RUDA_PAGED_ORDERED_CACHE_ROWS", "1");
    ScopedEnv history("RUDA_PAGED_ORDERED_COMPACT_HISTORY", "1");
    auto ws = OrderedBackwardWorkspace::create(*plan, p.tq);
    ASSERT_TRUE(ws.ok()) << ws.error().message();
    EXPECT_TRUE(ws->cache_rows());
    EXPECT_TRUE(ws->compact_history());
    setenv("RUDA_PAGED_ORDERED_CACHE_ROWS", "0", 1);
    EXPECT_TRUE(ws->cache_rows()) << "a later change of the environment touches no workspace";
  }
  for (const char* bad : {"2", "yes", "", " 1", "01"})
    for (const char* var : {"RUDA_PAGED_ORDERED_CACHE_ROWS", "RUDA_PAGED_ORDERED_COMPACT_HISTORY"}) {
      SCOPED_TRACE(fmt::format("{}=\"{}\"", var, bad));
      ScopedEnv env(var, bad);
      auto ws = OrderedBackwardWorkspace::create(*plan, p.tq);
      ASSERT_FALSE(ws.ok());
      EXPECT_EQ(ws.error().kind(), ErrorKind::InvalidValue);
      EXPECT_EQ(ws.error().argument(), var);
    }
}

// Over budget: at creation an error; a switch-on that would pass it an error that keeps the mode.
TEST_F(PagedBackward, OrderedWorkspaceBudget) {
  const std::int64_t pages = std::int64_t{1} << 20, queries = 58000, heads = 128;
  // Row statistics 58000 · 128 · 8 B = 56.6 MiB, the index ~4.5 MiB, the page order 4 MiB more.
  std::vector<std::int64_t> ids(sz(queries), 0), positions(sz(queries));
  std::iota(positions.begin(), positions.end(), 0);
  std::vector<std::vector<std::int32_t>> table(1);
  for (std::int64_t i = 0; i < queries; ++i) table[0].push_back(static_cast<std::int32_t>(i));
  auto host = paged_attention::HostPlan::create(1, pages, table, {queries}, ids, positions);
  ASSERT_TRUE(host.ok()) << host.error().message();
  Tensor q =
      testing::upload({queries, heads, 1}, DType::BF16, std::vector<double>(sz(queries * heads), 0.0), Device::host());
  auto plan = DevicePlan::upload(*host, q);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  auto ws = ordered_workspace(*plan, q, false, false);
  const std::int64_t bytes = ws.bytes();
  EXPECT_LE(bytes, paged_attention::kMaxWorkspaceBytes);
  auto on = ws.set_compact_history(true);
  ASSERT_FALSE(on.ok());
  EXPECT_EQ(on.error().argument(), "workspace");
  EXPECT_FALSE(ws.compact_history()) << "the workspace keeps its previous mode";
  EXPECT_EQ(ws.bytes(), bytes);
  {
    ScopedEnv history("RUDA_PAGED_ORDERED_COMPACT_HISTORY", "1");
    auto over = OrderedBackwardWorkspace::create(*plan, q);
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.error().argument(), "workspace");
  }
  Tensor q2 = testing::upload({queries, 2 * heads, 1}, DType::BF16, std::vector<double>(sz(queries * heads * 2), 0.0),
                              Device::host());
  auto plan2 = DevicePlan::upload(*host, q2);
  ASSERT_TRUE(plan2.ok());
  auto over = OrderedBackwardWorkspace::create(*plan2, q2);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().argument(), "workspace");
}

// The unsafe entries' own lines: each output's shape, dtype and queue; no output overlapping an
// input or another output; the workspace's schedule, query rows and heads, and queue. Nothing is
// written (the buffers keep their fill).
TEST_F(PagedBackwardContract, SelectedAndOrderedLines) {
  std::mt19937_64 rng(fresh_seed());
  Layout l = make_layout(rng, 4, {Seq{6, Rows::Decode}, Seq{9, Rows::Decode}}, false, 0);
  Problem p = make_problem(l, {4, 2, 8, 8}, DType::BF16, rng);
  auto plan = paged_test::device_plan(p.layout, p.tq);
  ASSERT_TRUE(plan.has_value());
  auto ws = OrderedBackwardWorkspace::create(*plan, p.tq);
  ASSERT_TRUE(ws.ok());
  Tensor dq = buffer_like(p.tq, 3.0), dk = buffer_like(p.tk, 3.0), dv = buffer_like(p.tv, 3.0);
  const auto dq_before = host_bytes(dq), dk_before = host_bytes(dk);
  rebase();
  const DType bf = DType::BF16;
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  Tensor wrong_shape = t({2, 4, 16}, bf), wrong_dtype = t(p.tq.shape(), DType::F32),
         other_queue = t(p.tq.shape(), bf, &q2.value()), wrong_cache = t({l.pages, 4, 2, 16}, bf);
  Tensor q_alias = p.tq;  // the query's own storage
  for (bool ordered : {false, true}) {
    SCOPED_TRACE(ordered ? "ordered" : "selected");
    auto call = [&](const paged_attention::AttentionBackwardOutputs& out) {
      return ordered ? plan->attention_backward_ordered_into(p.tq, p.tk, p.tv, p.tgo, 1.0f, true, *ws, out)
                     : plan->attention_backward_selected_into(p.tq, p.tk, p.tv, p.tgo, 1.0f, true, out);
    };
    expect_rejected(call({&wrong_shape, &dk, &dv}), ErrorKind::ShapeMismatch, "dq");
    expect_rejected(call({&dq, &wrong_cache, nullptr}), ErrorKind::ShapeMismatch, "dk");
    expect_rejected(call({&wrong_dtype, nullptr, nullptr}), ErrorKind::UnsupportedDType, "dq");
    expect_rejected(call({&other_queue, nullptr, nullptr}), ErrorKind::QueueMismatch, "dq");
    expect_rejected(call({&q_alias, nullptr, nullptr}), ErrorKind::InvalidValue, "dq");
    Tensor dk_alias = dk;  // dk and dv have one shape here (D = Dv)
    expect_rejected(call({&dq, &dk, &dk_alias}), ErrorKind::InvalidValue, "dv");
    Tensor key_alias = p.tk;
    expect_rejected(call({nullptr, &key_alias, nullptr}), ErrorKind::InvalidValue, "dk");
  }
  // The forward's and grad_out's lines come first.
  expect_rejected(plan->attention_backward_selected_into(p.tq, p.tk, p.tv, t({2, 4, 16}, bf), 1.0f, true, {&dq}),
                  ErrorKind::ShapeMismatch, "grad_out");
  expect_rejected(plan->attention_backward_ordered_into(p.tq, p.tk, p.tv, p.tgo, 0.0f, true, *ws, {&dq}),
                  ErrorKind::InvalidValue, "scale");
  EXPECT_EQ(host_bytes(dq), dq_before) << "a rejected call writes nothing";
  EXPECT_EQ(host_bytes(dk), dk_before) << "a rejected call writes nothing";

  // The workspace: another schedule, other heads, another queue.
  Layout other = make_layout(rng, 4, {Seq{6, Rows::Decode}, Seq{8, Rows::Decode}}, false, 0);
  auto other_plan = paged_test::device_plan(other, p.tq);
  ASSERT_TRUE(other_plan.has_value());
  auto foreign = OrderedBackwardWorkspace::create(*other_plan, p.tq);
  ASSERT_TRUE(foreign.ok());
  rebase();
  expect_rejected(plan->attention_backward_ordered_into(p.tq, p.tk, p.tv, p.tgo, 1.0f, true, *foreign, {&dq}),
                  ErrorKind::InvalidValue, "workspace");
  Tensor q8 = t({2, 8, 8}, bf);
  auto wide = OrderedBackwardWorkspace::create(*plan, q8);
  ASSERT_TRUE(wide.ok());
  rebase();
  expect_rejected(plan->attention_backward_ordered_into(p.tq, p.tk, p.tv, p.tgo, 1.0f, true, *wide, {&dq}),
                  ErrorKind::ShapeMismatch, "workspace");
  expect_rejected(OrderedBackwardWorkspace::create(*plan, t({3, 4, 8}, bf)), ErrorKind::ShapeMismatch, "query");
  expect_rejected(OrderedBackwardWorkspace::create(*plan, t({2, 4, 8}, bf, &q2.value())), ErrorKind::QueueMismatch,
                  "query");
  // A plan with the same schedule (uploaded again) shares the workspace.
  auto twin = paged_test::device_plan(p.layout, p.tq);
  ASSERT_TRUE(twin.has_value());
  EXPECT_TRUE(twin->attention_backward_ordered_into(p.tq, p.tk, p.tv, p.tgo, 1.0f, true, *ws, {&dq}).ok());
}

}  // namespace
}  // namespace rudnn
