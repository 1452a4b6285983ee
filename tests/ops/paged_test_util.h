#pragma once
// The paged schedules of the paged attention op tests (forward and backward): a Layout the test
// writes, from which both the library's HostPlan and the oracle's PagedSchedule are made, and
// make_layout's shuffled pages, shared prefixes and row kinds.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "reference/paged_attention.h"
#include "rudnn/paged_attention.h"

namespace rudnn::paged_test {

using paged_attention::DevicePlan;
using paged_attention::HostPlan;

inline std::size_t sz(std::int64_t n) { return static_cast<std::size_t>(n); }

// ---------------------------------------------------------------------------------------------
// Schedules

// A schedule as the test writes it: both the library's HostPlan and the oracle's PagedSchedule are
// made from it (the oracle never sees the library's packed tables).
struct Layout {
  std::int64_t page_size = 16, pages = 1;
  std::vector<std::vector<std::int32_t>> tables;
  std::vector<std::int64_t> lengths, sequence_ids, positions;

  std::int64_t queries() const { return std::ssize(sequence_ids); }
  reference::PagedSchedule ref() const {
    reference::PagedSchedule s;
    s.page_size = page_size;
    for (const auto& t : tables) s.tables.emplace_back(t.begin(), t.end());
    s.lengths = lengths;
    s.sequence_ids = sequence_ids;
    s.positions = positions;
    return s;
  }
  std::string describe() const {
    return fmt::format("page_size={} pages={} lengths=[{}] rows={}", page_size, pages, fmt::join(lengths, ","),
                       queries());
  }
};

// The pool and page table of sequence `s` of `l`, as a one-sequence layout with no rows yet.
inline Layout one_sequence(const Layout& l, std::int64_t s) {
  Layout one;
  one.page_size = l.page_size;
  one.pages = l.pages;
  one.tables = {l.tables[sz(s)]};
  one.lengths = {l.lengths[sz(s)]};
  return one;
}

// The rows re-ordered so that each sequence keeps its own rows in order but the sequences' rows
// interleave at random (each next row drawn from a sequence with rows left, weighted by how many):
// a sequence's query tiles are then cut by the other sequences' rows.
inline void interleave_rows(Layout& l, std::mt19937_64& rng) {
  std::vector<std::vector<std::int64_t>> per(l.lengths.size());
  for (std::int64_t r = 0; r < l.queries(); ++r) per[sz(l.sequence_ids[sz(r)])].push_back(l.positions[sz(r)]);
  std::vector<std::size_t> next(per.size(), 0);
  std::int64_t left = l.queries();
  l.sequence_ids.clear();
  l.positions.clear();
  for (; left > 0; --left) {
    std::int64_t pick = std::uniform_int_distribution<std::int64_t>(0, left - 1)(rng);
    std::size_t s = 0;
    for (; pick >= std::ssize(per[s]) - static_cast<std::int64_t>(next[s]); ++s)
      pick -= std::ssize(per[s]) - static_cast<std::int64_t>(next[s]);
    l.sequence_ids.push_back(static_cast<std::int64_t>(s));
    l.positions.push_back(per[s][next[s]++]);
  }
}

enum class Rows { None, Decode, Prefill, Chunk, Random };

struct Seq {
  std::int64_t length;
  Rows rows = Rows::Decode;
  std::int64_t count = 0;  // Chunk: the last `count` positions; Random: `count` random positions
  int share_from = -1;     // its first `shared_pages` pages are those of this earlier sequence
  std::int64_t shared_pages = 0;
  std::int64_t extra_pages = 0;  // table pages past its length
};

// Physical pages: a random permutation of [0, pages) handed out in table order (plus `spare`
// pages no table names); rows in sequence order, or shuffled.
inline Layout make_layout(std::mt19937_64& rng, std::int64_t page_size, const std::vector<Seq>& seqs, bool shuffle_rows,
                          std::int64_t spare = 3) {
  Layout l;
  l.page_size = page_size;
  std::int64_t fresh = 0;
  for (const Seq& s : seqs) fresh += (s.length + page_size - 1) / page_size + s.extra_pages - s.shared_pages;
  l.pages = fresh + spare;
  std::vector<std::int32_t> ids(sz(l.pages));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::size_t next = 0;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const Seq& s = seqs[i];
    const std::int64_t n = (s.length + page_size - 1) / page_size + s.extra_pages;
    std::vector<std::int32_t> table;
    for (std::int64_t p = 0; p < n; ++p)
      table.push_back(p < s.shared_pages ? l.tables[sz(s.share_from)][sz(p)] : ids[next++]);
    l.tables.push_back(std::move(table));
    l.lengths.push_back(s.length);
  }
  struct Row {
    std::int64_t seq, pos;
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const Seq& s = seqs[i];
    const auto seq = static_cast<std::int64_t>(i);
    switch (s.rows) {
      case Rows::None: break;
      case Rows::Decode: rows.push_back({seq, s.length - 1}); break;
      case Rows::Prefill:
        for (std::int64_t p = 0; p < s.length; ++p) rows.push_back({seq, p});
        break;
      case Rows::Chunk:
        for (std::int64_t p = std::max<std::int64_t>(0, s.length - s.count); p < s.length; ++p)
          rows.push_back({seq, p});
        break;
      case Rows::Random: {
        std::uniform_int_distribution<std::int64_t> u(0, s.length - 1);
        for (std::int64_t c = 0; c < s.count; ++c) rows.push_back({seq, u(rng)});
        break;
      }
    }
  }
  if (shuffle_rows) std::shuffle(rows.begin(), rows.end(), rng);
  for (const Row& r : rows) {
    l.sequence_ids.push_back(r.seq);
    l.positions.push_back(r.pos);
  }
  return l;
}

inline std::optional<HostPlan> host_plan(const Layout& l) {
  auto r = HostPlan::create(l.page_size, l.pages, l.tables, l.lengths, l.sequence_ids, l.positions);
  EXPECT_TRUE(r.ok()) << r.error().message();
  if (!r.ok()) return std::nullopt;
  return std::move(r.value());
}

inline std::optional<DevicePlan> device_plan(const Layout& l, const Tensor& q) {
  auto host = host_plan(l);
  if (!host) return std::nullopt;
  auto r = DevicePlan::upload(*host, q);
  EXPECT_TRUE(r.ok()) << r.error().message();
  if (!r.ok()) return std::nullopt;
  EXPECT_EQ(r->queries(), l.queries());
  EXPECT_EQ(r->sequences(), std::ssize(l.lengths));
  EXPECT_EQ(r->pages(), l.pages);
  EXPECT_EQ(r->page_size(), l.page_size);
  return std::move(r.value());
}

}  // namespace rudnn::paged_test
