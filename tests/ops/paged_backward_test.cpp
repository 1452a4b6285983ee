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

#include <cmath>
#include <random>

#include "contract_fixture.h"
#include "host/emulator.h"
#include "jit.h"
#include "op_test_util.h"
#include "paged_test_util.h"
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
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.h.d)));
  SCOPED_TRACE(fmt::format("{} Hq={} Hkv={} D={} Dv={} {} causal={}", p.layout.describe(), p.h.hq, p.h.hkv, p.h.d,
                           p.h.dv, dtype_name(p.dtype), causal));
  const auto want = reference::paged_attention_backward(p.q, p.k, p.v, p.go, p.layout.ref(),
                                                        {p.h.hq, p.h.hkv, p.h.d, p.h.dv}, scale, causal);
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
  // Slots no visible key reaches: exactly 0 (the outputs were poisoned).
  for (std::size_t i = 0; i < want.dk.size(); ++i)
    if (want.dk[i] == 0.0) ASSERT_EQ(dk[i], 0.0) << "dk slot " << i << " is reached by no key";
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

}  // namespace
}  // namespace rudnn
