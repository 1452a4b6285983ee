// rudnn::moe::route_softmax_topk / route_sigmoid_grouped on the host emulation device vs the
// routing oracles (tests/reference/moe.h): indices exact, weights within the dtype's bound; ties,
// NaN/+inf/all −inf rows, T = 1, E = 1, top_k = E, the DeepSeek-V3 shape; forward and reverse
// schedules, grid stride, outputs that start poisoned and guards past the end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/numerics.h"
#include "host/emulator.h"
#include "reference/moe.h"
#include "row_norm_harness.h"  // to_storage / from_storage / tolerance
#include "rudnn/moe/route_sigmoid_grouped.cuh"
#include "rudnn/moe/route_softmax_topk.cuh"

namespace {

namespace host = rudnn::runtime::host;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i32;
using rudnn::i64;
using rudnn::u32;

template <class T, int kRows>
void softmax_entry(void** a) {
  rudnn::moe::route_softmax_topk<T, rudnn::moe::RoutePolicy<kRows>>(
      *static_cast<const T* const*>(a[0]), *static_cast<u32* const*>(a[1]), *static_cast<T* const*>(a[2]),
      *static_cast<const i64*>(a[3]), *static_cast<const i64*>(a[4]), *static_cast<const i64*>(a[5]),
      *static_cast<const i64*>(a[6]));
}

template <class T, int kRows>
void grouped_entry(void** a) {
  rudnn::moe::route_sigmoid_grouped<T, rudnn::moe::RoutePolicy<kRows>>(
      *static_cast<const T* const*>(a[0]), *static_cast<const float* const*>(a[1]), *static_cast<u32* const*>(a[2]),
      *static_cast<T* const*>(a[3]), *static_cast<const i64*>(a[4]), *static_cast<const i64*>(a[5]),
      *static_cast<const i64*>(a[6]), *static_cast<const i64*>(a[7]), *static_cast<const i64*>(a[8]),
      *static_cast<const i64*>(a[9]), *static_cast<const i64*>(a[10]), *static_cast<const float*>(a[11]));
}

// The weight bound: relative (the dtype's bound), with the dtype's smallest normal as the floor.
template <class T>
rudnn::reference::RoutingTolerance exact_indices() {
  const double floor = std::is_same_v<T, rudnn::f16> ? 6.103515625e-05 : 1.1754943508222875e-38;
  return {row_norm_test::tolerance<T>(), floor};
}

constexpr std::size_t kGuard = 16;

// Indices exact (the inputs here have no near ties), weights within the bound, guards untouched.
template <class T>
void check(const rudnn::reference::Routing& want, i64 experts, i64 top_k, const std::vector<u32>& idx,
           const std::vector<T>& w, i64 n) {
  const std::vector<u32> got_i(idx.begin(), idx.begin() + n);
  std::vector<double> got_w;
  for (i64 i = 0; i < n; ++i) got_w.push_back(from_storage(w[static_cast<std::size_t>(i)]));
  EXPECT_EQ(rudnn::reference::routing_mismatch(want, experts, top_k, got_i, got_w, exact_indices<T>()), "");
  for (std::size_t k = static_cast<std::size_t>(n); k < idx.size(); ++k) ASSERT_EQ(idx[k], 0xffffffffu) << "past end";
}

struct SoftmaxCase {
  i64 rows, experts, top_k;
  bool renormalize;
  int rows_per_block;
  unsigned grid;  // 0: one block per row group
  host::Schedule order;
};

// Runs the case, checks it against the oracle, returns the indices (with the guard past the end).
template <class T>
std::vector<u32> run_softmax(const SoftmaxCase& c, const std::vector<double>& logits_in) {
  SCOPED_TRACE("softmax rows=" + std::to_string(c.rows) + " E=" + std::to_string(c.experts) +
               " k=" + std::to_string(c.top_k) + " renorm=" + std::to_string(c.renormalize) + " rpb=" +
               std::to_string(c.rows_per_block) + (c.order == host::Schedule::Forward ? " forward" : " reverse"));
  std::vector<T> x(logits_in.size());
  std::vector<double> xd(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = to_storage<T>(logits_in[i]);
    xd[i] = from_storage(x[i]);
  }
  const i64 n = c.rows * c.top_k;
  std::vector<u32> idx(static_cast<std::size_t>(n) + kGuard, 0xffffffffu);
  std::vector<T> w(static_cast<std::size_t>(n) + kGuard);
  std::memset(w.data(), 0xFF, w.size() * sizeof(T));
  const T* in = x.data();
  u32* oi = idx.data();
  T* ow = w.data();
  i64 rows = c.rows, experts = c.experts, top_k = c.top_k;
  i64 renorm = c.renormalize;
  void* args[] = {&in, &oi, &ow, &rows, &experts, &top_k, &renorm};
  host::ThreadEntry k = c.rows_per_block == 1 ? &softmax_entry<T, 1> : &softmax_entry<T, 4>;
  unsigned blocks = static_cast<unsigned>((c.rows + c.rows_per_block - 1) / c.rows_per_block);
  if (c.grid) blocks = std::min(blocks, c.grid);
  auto st =
      host::launch(k, args, {blocks, 1, 1}, {static_cast<unsigned>(32 * c.rows_per_block), 1, 1}, 0, {c.order, 0});
  EXPECT_TRUE(st.ok()) << st.error().message();
  if (!st.ok()) return idx;
  auto want = rudnn::reference::route_softmax_topk(xd, c.rows, c.experts, c.top_k, c.renormalize);
  check<T>(want, c.experts, c.top_k, idx, w, n);
  return idx;
}

struct GroupedCase {
  i64 rows, experts, top_k, groups, selected;
  bool top_two, renormalize, with_bias;
  double scale;
  int rows_per_block;
  unsigned grid;
  host::Schedule order;
};

// Runs the case, checks it against the oracle, returns the indices (with the guard past the end).
template <class T>
std::vector<u32> run_grouped(const GroupedCase& c, const std::vector<double>& logits_in,
                             const std::vector<float>& bias_in) {
  SCOPED_TRACE("grouped rows=" + std::to_string(c.rows) + " E=" + std::to_string(c.experts) + " k=" +
               std::to_string(c.top_k) + " G=" + std::to_string(c.groups) + " sel=" + std::to_string(c.selected) +
               " top2=" + std::to_string(c.top_two) + (c.order == host::Schedule::Forward ? " forward" : " reverse"));
  std::vector<T> x(logits_in.size());
  std::vector<double> xd(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = to_storage<T>(logits_in[i]);
    xd[i] = from_storage(x[i]);
  }
  const i64 n = c.rows * c.top_k;
  std::vector<u32> idx(static_cast<std::size_t>(n) + kGuard, 0xffffffffu);
  std::vector<T> w(static_cast<std::size_t>(n) + kGuard);
  std::memset(w.data(), 0xFF, w.size() * sizeof(T));
  const T* in = x.data();
  const float* b = c.with_bias ? bias_in.data() : nullptr;
  u32* oi = idx.data();
  T* ow = w.data();
  i64 rows = c.rows, experts = c.experts, top_k = c.top_k, groups = c.groups, sel = c.selected;
  i64 top2 = c.top_two, renorm = c.renormalize;
  float scale = static_cast<float>(c.scale);
  void* args[] = {&in, &b, &oi, &ow, &rows, &experts, &top_k, &groups, &sel, &top2, &renorm, &scale};
  host::ThreadEntry k = c.rows_per_block == 1 ? &grouped_entry<T, 1> : &grouped_entry<T, 4>;
  unsigned blocks = static_cast<unsigned>((c.rows + c.rows_per_block - 1) / c.rows_per_block);
  if (c.grid) blocks = std::min(blocks, c.grid);
  const std::size_t shared = static_cast<std::size_t>(c.rows_per_block * (c.experts + 2 * c.groups)) * sizeof(float);
  auto st =
      host::launch(k, args, {blocks, 1, 1}, {static_cast<unsigned>(32 * c.rows_per_block), 1, 1}, shared, {c.order, 0});
  EXPECT_TRUE(st.ok()) << st.error().message();
  if (!st.ok()) return idx;
  auto want =
      rudnn::reference::route_sigmoid_grouped(xd, c.with_bias ? bias_in : std::vector<float>{}, c.rows, c.experts,
                                              c.top_k, c.groups, c.selected, c.top_two, c.renormalize, c.scale);
  check<T>(want, c.experts, c.top_k, idx, w, n);
  return idx;
}

// Logits on a coarse grid (exact in bf16) with deliberate exact ties.
std::vector<double> grid_logits(i64 rows, i64 experts, std::uint64_t seed, double step = 0.125) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(-24, 24);
  std::vector<double> v(static_cast<std::size_t>(rows * experts));
  for (double& x : v) x = u(rng) * step;
  return v;
}

// A fresh seed per run (printed by the tests that use it), so repeated runs cover new inputs.
using rudnn::testing::fresh_seed;

const host::Schedule kOrders[] = {host::Schedule::Forward, host::Schedule::Reverse};

template <class T>
void softmax_suite() {
  rudnn_emu_bind(host::emulator_api());
  struct Shape {
    i64 rows, experts, top_k;
  };
  const Shape shapes[] = {{1, 1, 1}, {1, 8, 8}, {3, 8, 2}, {5, 64, 8}, {9, 160, 6}, {2, 1000, 40}, {70, 33, 33}};
  std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("first seed=" + std::to_string(seed));
  for (auto s : shapes)
    for (bool renorm : {true, false})
      for (int rpb : {1, 4})
        for (auto order : kOrders) {
          run_softmax<T>({s.rows, s.experts, s.top_k, renorm, rpb, order == host::Schedule::Reverse ? 2u : 0u, order},
                         grid_logits(s.rows, s.experts, seed++));
          if (::testing::Test::HasFatalFailure()) return;
        }
}

TEST(MoeRoutingTemplate, SoftmaxF32) { softmax_suite<float>(); }
TEST(MoeRoutingTemplate, SoftmaxF16) { softmax_suite<rudnn::f16>(); }
TEST(MoeRoutingTemplate, SoftmaxBF16) { softmax_suite<rudnn::bf16>(); }

TEST(MoeRoutingTemplate, SoftmaxSpecialRows) {
  rudnn_emu_bind(host::emulator_api());
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const i64 e = 6;
  std::vector<double> v = {
      1,     2,     nan,   0,     0,    0,      // NaN
      1,     inf,   0,     0,     0,    0,      // +inf
      -inf,  -inf,  -inf,  -inf,  -inf, -inf,   // all −inf
      -inf,  1,     -inf,  1,     0.5,  -inf,   // −inf entries in a good row, ties
      3,     3,     3,     3,     3,    3,      // all tied
      -1000, -2000, -3000, -1000, 0,    -1000,  // probabilities underflow to 0: tied, by index
  };
  for (auto order : kOrders)
    for (bool renorm : {true, false}) {
      run_softmax<float>({6, e, 4, renorm, 4, 0, order}, v);
      run_softmax<rudnn::bf16>({6, e, 4, renorm, 1, 0, order}, v);
    }
}

// Issue 10 item 12: SPEC §3 ranks the FP32 probabilities, so logits whose probabilities round to
// the same float tie and go to the smaller index, whatever their order as logits.
TEST(MoeRoutingTemplate, SoftmaxRanksProbabilitiesNotLogits) {
  rudnn_emu_bind(host::emulator_api());
  // The row: both e^−150 and e^−120 underflow to 0 → {0, 1}, not {0, 2}.
  for (auto order : kOrders)
    for (bool renorm : {true, false}) {
      auto idx = run_softmax<float>({1, 3, 2, renorm, 1, 0, order}, {0, -150, -120});
      EXPECT_EQ(idx[0], 0u);
      EXPECT_EQ(idx[1], 1u);
      idx = run_softmax<rudnn::bf16>({1, 3, 2, renorm, 4, 0, order}, {0, -150, -120});
      EXPECT_EQ(idx[1], 1u);
    }
  // The class: every pattern of deep-underflow logits (each below the max by ≥ 110, where every
  // probability is 0 in FP32) behind one or two finite-probability experts, in every position, so
  // the zero tail must come out in index order whatever the logits' own order.
  const i64 e = 7;
  std::vector<double> v;
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> deep(110, 400), pos(0, e - 1);
  const i64 rows = 40;
  for (i64 r = 0; r < rows; ++r) {
    std::vector<double> row(static_cast<std::size_t>(e));
    for (double& x : row) x = -deep(rng);
    row[static_cast<std::size_t>(pos(rng))] = 0;
    if (r % 2) row[static_cast<std::size_t>(pos(rng))] = -1;
    v.insert(v.end(), row.begin(), row.end());
  }
  for (auto order : kOrders)
    for (i64 k : {2, 4, 7}) {
      run_softmax<float>({rows, e, k, true, 4, 3, order}, v);
      run_softmax<rudnn::f16>({rows, e, k, false, 1, 0, order}, v);
    }
  // Distinct logits whose probabilities are equal floats: 0 and 2^−30 give e^{x − max} = 1 for
  // both in FP32 (the difference is below half an ulp of 1), so they tie → index 0 first, although
  // logit 1 is larger. The oracle's rounded FP64 probabilities agree (checked by run_softmax).
  for (auto order : kOrders) {
    auto idx = run_softmax<float>({1, 3, 1, false, 1, 0, order}, {0, std::ldexp(1.0, -30), -1});
    EXPECT_EQ(idx[0], 0u);
  }
}

template <class T>
void grouped_suite() {
  rudnn_emu_bind(host::emulator_api());
  std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("first seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed - 1);
  std::uniform_int_distribution<int> ub(-4, 4);
  const GroupedCase shapes[] = {
      // rows, E, k, G, sel, top2, renorm, bias, scale
      {1, 1, 1, 1, 1, false, true, false, 1.0},        {3, 8, 8, 1, 1, true, true, true, 1.0},
      {4, 16, 3, 4, 2, false, false, true, 1.5},       {17, 256, 8, 8, 4, true, true, true, 2.5},  // DeepSeek-V3
      {5, 1024, 64, 128, 128, true, false, true, 1.0}, {6, 96, 5, 3, 1, false, true, false, 0.5},
  };
  for (GroupedCase c : shapes) {
    std::vector<float> bias(static_cast<std::size_t>(c.experts));
    for (float& b : bias) b = static_cast<float>(ub(rng)) * 0.25f;
    for (int rpb : {1, 4})
      for (auto order : kOrders) {
        c.rows_per_block = rpb;
        c.order = order;
        c.grid = order == host::Schedule::Reverse ? 2u : 0u;
        run_grouped<T>(c, grid_logits(c.rows, c.experts, seed++), bias);
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
}

TEST(MoeRoutingTemplate, GroupedF32) { grouped_suite<float>(); }
TEST(MoeRoutingTemplate, GroupedF16) { grouped_suite<rudnn::f16>(); }
TEST(MoeRoutingTemplate, GroupedBF16) { grouped_suite<rudnn::bf16>(); }

TEST(MoeRoutingTemplate, GroupedSpecialRows) {
  rudnn_emu_bind(host::emulator_api());
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v = {
      1,   2,    nan, 0, 0, 0, 0, 0,  // NaN → NaN weights
      inf, -inf, 0,   0, 1, 1, 1, 1,  // ±inf are ordinary scores (1 and 0)
      2,   2,    2,   2, 2, 2, 2, 2,  // all tied
  };
  std::vector<float> bias(8, 0.0f);
  for (auto order : kOrders) run_grouped<float>({3, 8, 3, 4, 2, true, true, true, 2.0, 4, 0, order}, v, bias);
}

// Issue 10 item 13: an infinite correction bias. A group holding +inf and −inf scores +inf + −inf =
// NaN under group_top_two; it ranks above every number (docs/moe.md), and exactly selected_groups
// groups are kept.
TEST(MoeRoutingTemplate, GroupedInfiniteBias) {
  rudnn_emu_bind(host::emulator_api());
  const float inf = std::numeric_limits<float>::infinity();
  // The case: E = 4, 2 groups, top-two, bias [+inf, −inf, 0, 0], one group kept: group 0
  // (NaN) is the one, so its experts are the picks: {0, 1} (c = +inf, then −inf).
  for (auto order : kOrders) {
    auto idx =
        run_grouped<float>({1, 4, 2, 2, 1, true, true, true, 1.0, 1, 0, order}, {0.5, -0.25, 1, 2}, {inf, -inf, 0, 0});
    EXPECT_EQ(idx[0], 0u);
    EXPECT_EQ(idx[1], 1u);
    // Two NaN groups (1 and 2): the smaller index wins; the +inf group 0 ranks behind both.
    idx = run_grouped<float>({1, 6, 2, 3, 1, true, false, true, 1.0, 1, 0, order}, {0, 0, 0, 0, 0, 0},
                             {inf, inf, -inf, inf, inf, -inf});
    EXPECT_EQ(idx[0], 3u);
    EXPECT_EQ(idx[1], 2u);
  }
  // The class: biases drawn from {+inf, −inf, finite} on many shapes. top_k = every expert of the
  // kept groups, so the picks must span exactly selected_groups groups (the bug kept more).
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> kind(0, 3);
  struct Shape {
    i64 experts, groups, selected;
    bool top_two;
  };
  for (Shape sh : {Shape{4, 2, 1, true}, Shape{16, 4, 2, true}, Shape{64, 8, 3, true}, Shape{32, 8, 5, false}}) {
    const i64 per = sh.experts / sh.groups, k = sh.selected * per, rows = 9;
    std::vector<float> bias(static_cast<std::size_t>(sh.experts));
    for (float& b : bias) {
      const int c = kind(rng);
      b = c == 0 ? inf : c == 1 ? -inf : 0.25f * static_cast<float>(c);
    }
    for (auto order : kOrders) {
      auto idx =
          run_grouped<float>({rows, sh.experts, k, sh.groups, sh.selected, sh.top_two, true, true, 1.0, 4, 0, order},
                             grid_logits(rows, sh.experts, static_cast<std::uint64_t>(rng())), bias);
      for (i64 r = 0; r < rows; ++r) {
        std::vector<bool> seen(static_cast<std::size_t>(sh.groups), false);
        i64 distinct = 0;
        for (i64 j = 0; j < k; ++j) {
          const u32 i = idx[static_cast<std::size_t>(r * k + j)];
          if (i >= static_cast<u32>(sh.experts)) continue;  // reported by the oracle check
          if (!seen[i / per]) ++distinct;
          seen[i / per] = true;
        }
        EXPECT_EQ(distinct, sh.selected) << "row " << r << " E=" << sh.experts << " G=" << sh.groups;
      }
    }
  }
}

}  // namespace
