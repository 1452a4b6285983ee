// The FP64 oracles of the paged attention and paged MLA backward (tests/reference/paged_attention.h:
// paged_attention_backward, paged_mla_backward) checked once against central differences of the
// forward oracles: loss = Σ grad_out ⊙ forward(...) is linear in grad_out, so its gradient with
// respect to each input is what the backward oracle returns. Covers GQA (Hq = 4, Hkv = 2), causal
// and not, page sizes 1 and 4, two sequences sharing a prefix page, a decode row, rows that see a
// single key, a row that sees none (dq = 0) and cache slots no visible key reaches (exact zeros).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "common/numerics.h"
#include "reference/paged_attention.h"

namespace rudnn {
namespace {

using testing::fresh_seed;
using testing::relative_l2;

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// Central differences of f() over every entry of v (each entry restored after).
std::vector<double> central_differences(std::vector<double>& v, const std::function<double()>& f, double step) {
  std::vector<double> g(v.size());
  for (std::size_t q = 0; q < v.size(); ++q) {
    const double keep = v[q];
    v[q] = keep + step;
    const double plus = f();
    v[q] = keep - step;
    const double minus = f();
    v[q] = keep;
    g[q] = (plus - minus) / (2 * step);
  }
  return g;
}

std::vector<double> uniform(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Four sequences: 0 (length 7) and 1 (length 10) share their first page(s) (the same physical ids),
// 2 has one key, 3 none. Rows: a chunk of sequence 0 at positions 4..6, a decode row of sequence 1 at
// its last position 9, sequence 1 at position 0 (one key when causal), sequence 2 at 0 (one key
// always), sequence 3 at 0 (no key). Some physical slots are read by no row.
struct Case {
  reference::PagedSchedule schedule;
  std::int64_t pages = 0;
};

Case make_case(std::int64_t page_size) {
  Case c;
  auto& s = c.schedule;
  s.page_size = page_size;
  if (page_size == 4) {
    c.pages = 6;  // page 1 unused; the tails of pages 2, 4 and 5 unused
    s.tables = {{0, 2}, {0, 3, 4}, {5}, {}};
  } else {
    c.pages = 20;  // pages 8, 10, 13, 17, 19 unused; 7, 2, 9 shared
    s.tables = {{7, 2, 9, 0, 11, 3, 14}, {7, 2, 9, 5, 1, 12, 15, 16, 4, 18}, {6}, {}};
  }
  s.lengths = {7, 10, 1, 0};
  s.sequence_ids = {0, 0, 0, 1, 1, 2, 3};
  s.positions = {4, 5, 6, 9, 0, 0, 0};
  return c;
}

// Which physical slots (of pages · page_size) some row's visible keys reach: the test's own count.
std::vector<bool> reached_slots(const Case& c, bool causal) {
  const auto& s = c.schedule;
  std::vector<bool> reached(at(c.pages * s.page_size), false);
  for (std::size_t r = 0; r < s.sequence_ids.size(); ++r) {
    const std::int64_t seq = s.sequence_ids[r];
    const std::int64_t length = s.lengths[at(seq)];
    const std::int64_t n = causal ? std::min(length, s.positions[r] + 1) : length;
    for (std::int64_t j = 0; j < n; ++j)
      reached[at(s.tables[at(seq)][at(j / s.page_size)] * s.page_size + j % s.page_size)] = true;
  }
  return reached;
}

// Every entry of a [slots, width] gradient whose slot no key reaches is exactly 0.
void expect_unreached_zero(const std::vector<double>& grad, const std::vector<bool>& reached, std::int64_t width,
                           const char* what) {
  for (std::size_t slot = 0; slot < reached.size(); ++slot) {
    if (reached[slot]) continue;
    for (std::int64_t e = 0; e < width; ++e) ASSERT_EQ(grad[slot * at(width) + at(e)], 0.0) << what << " slot " << slot;
  }
}

TEST(PagedBackwardOracle, AttentionMatchesFiniteDifferences) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  reference::PagedAttentionShape shape;
  shape.q_heads = 4, shape.kv_heads = 2, shape.head_dim = 5, shape.value_dim = 3;
  const double scale = 0.8, step = 1e-5, bound = 1e-7;
  for (std::int64_t page_size : {1, 4}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(fmt::format("page_size={} causal={}", page_size, causal));
      const Case c = make_case(page_size);
      const std::int64_t queries = static_cast<std::int64_t>(c.schedule.sequence_ids.size());
      const std::int64_t slots = c.pages * page_size;
      auto query = uniform(at(queries * shape.q_heads * shape.head_dim), rng);
      auto key = uniform(at(slots * shape.kv_heads * shape.head_dim), rng);
      auto value = uniform(at(slots * shape.kv_heads * shape.value_dim), rng);
      const auto grad_out = uniform(at(queries * shape.q_heads * shape.value_dim), rng);
      auto loss = [&] {
        return dot(grad_out, reference::paged_attention(query, key, value, c.schedule, shape, scale, causal));
      };
      const auto want =
          reference::paged_attention_backward(query, key, value, grad_out, c.schedule, shape, scale, causal);
      EXPECT_LE(relative_l2(want.dq, central_differences(query, loss, step)), bound) << "dq";
      EXPECT_LE(relative_l2(want.dk, central_differences(key, loss, step)), bound) << "dk";
      EXPECT_LE(relative_l2(want.dv, central_differences(value, loss, step)), bound) << "dv";
      // The row of sequence 3 (no key) gets dq = 0; unreached slots stay 0.
      const std::int64_t last = queries - 1, row = shape.q_heads * shape.head_dim;
      for (std::int64_t e = 0; e < row; ++e) ASSERT_EQ(want.dq[at(last * row + e)], 0.0);
      const auto reached = reached_slots(c, causal);
      expect_unreached_zero(want.dk, reached, shape.kv_heads * shape.head_dim, "dk");
      expect_unreached_zero(want.dv, reached, shape.kv_heads * shape.value_dim, "dv");
    }
  }
}

TEST(PagedBackwardOracle, MlaMatchesFiniteDifferences) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const std::int64_t heads = 2, R = 6, P = 3;
  const double scale = 0.6, step = 1e-5, bound = 1e-7;
  for (std::int64_t page_size : {1, 4}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(fmt::format("page_size={} causal={}", page_size, causal));
      const Case c = make_case(page_size);
      const std::int64_t queries = static_cast<std::int64_t>(c.schedule.sequence_ids.size());
      const std::int64_t slots = c.pages * page_size;
      auto query = uniform(at(queries * heads * R), rng);
      auto query_rope = uniform(at(queries * heads * P), rng);
      auto latent = uniform(at(slots * R), rng);
      auto key_rope = uniform(at(slots * P), rng);
      const auto grad_out = uniform(at(queries * heads * R), rng);
      auto loss = [&] {
        return dot(grad_out,
                   reference::paged_mla(query, query_rope, latent, key_rope, c.schedule, heads, R, P, scale, causal));
      };
      const auto want = reference::paged_mla_backward(query, query_rope, latent, key_rope, grad_out, c.schedule, heads,
                                                      R, P, scale, causal);
      EXPECT_LE(relative_l2(want.dq, central_differences(query, loss, step)), bound) << "dq";
      EXPECT_LE(relative_l2(want.dq_rope, central_differences(query_rope, loss, step)), bound) << "dq_rope";
      EXPECT_LE(relative_l2(want.dlatent, central_differences(latent, loss, step)), bound) << "dlatent";
      EXPECT_LE(relative_l2(want.dk_rope, central_differences(key_rope, loss, step)), bound) << "dk_rope";
      const std::int64_t last = queries - 1;
      for (std::int64_t e = 0; e < heads * R; ++e) ASSERT_EQ(want.dq[at(last * heads * R + e)], 0.0);
      for (std::int64_t e = 0; e < heads * P; ++e) ASSERT_EQ(want.dq_rope[at(last * heads * P + e)], 0.0);
      const auto reached = reached_slots(c, causal);
      expect_unreached_zero(want.dlatent, reached, R, "dlatent");
      expect_unreached_zero(want.dk_rope, reached, P, "dk_rope");
    }
  }
}

}  // namespace
}  // namespace rudnn
