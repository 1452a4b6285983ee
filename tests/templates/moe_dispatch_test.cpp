// rudnn::moe::dispatch_rank / dispatch_scatter / combine on the host emulation device.
// Dispatch: the invariants of the compact layout (each (token, k) exactly once, offsets = exclusive
// prefix of the true histogram, slots of expert e inside its range, scattered rows = input rows,
// out-of-range indices skipped); every token on one expert, most experts empty, T = 1, E = 1,
// top_k = E, assignments = 0, more assignments and experts than threads.
// Combine: against a direct FP64 weighted sum in j order (bound: the rounding of T plus the FP32
// sum), NaN weights, skipped slots. Forward and reverse schedules, grids smaller than the formula,
// outputs that start poisoned and guards past the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/numerics.h"
#include "host/emulator.h"
#include "row_norm_harness.h"  // to_storage / from_storage
#include "rudnn/moe/combine.cuh"
#include "rudnn/moe/dispatch.cuh"

namespace {

namespace host = rudnn::runtime::host;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i64;
using rudnn::u32;

constexpr std::size_t kGuard = 16;
// Poison of u32 outputs: not a value the kernels can write (also a NaN pattern as a float).
constexpr u32 kPoison = 0x7fa5a5a5u;
constexpr u32 kNoSlot = 0xffffffffu;

template <int kThreads>
void rank_entry(void** a) {
  rudnn::moe::dispatch_rank<rudnn::moe::DispatchPolicy<kThreads>>(
      *static_cast<const u32* const*>(a[0]), *static_cast<u32* const*>(a[1]), *static_cast<u32* const*>(a[2]),
      *static_cast<const i64*>(a[3]), *static_cast<const i64*>(a[4]));
}

template <class T, int kThreads, int kVec>
void scatter_entry(void** a) {
  rudnn::moe::dispatch_scatter<T, rudnn::moe::RowCopyPolicy<kThreads, kVec>>(
      *static_cast<const T* const*>(a[0]), *static_cast<const u32* const*>(a[1]), *static_cast<T* const*>(a[2]),
      *static_cast<const i64*>(a[3]), *static_cast<const i64*>(a[4]), *static_cast<const i64*>(a[5]));
}

template <class T, class W, int kThreads, int kVec>
void combine_entry(void** a) {
  rudnn::moe::combine<T, W, rudnn::moe::RowCopyPolicy<kThreads, kVec>>(
      *static_cast<const T* const*>(a[0]), *static_cast<const u32* const*>(a[1]), *static_cast<const W* const*>(a[2]),
      *static_cast<T* const*>(a[3]), *static_cast<const i64*>(a[4]), *static_cast<const i64*>(a[5]),
      *static_cast<const i64*>(a[6]));
}

host::ThreadEntry rank_kernel(int threads) {
  switch (threads) {
    case 32: return &rank_entry<32>;
    case 256: return &rank_entry<256>;
    case 512: return &rank_entry<512>;
    case 1024: return &rank_entry<1024>;
  }
  return nullptr;
}

// (threads, vector bytes) of the row-copy variants under test; kVec = bytes / sizeof(T).
struct CopyVariant {
  int threads, bytes;
};
constexpr CopyVariant kCopyVariants[] = {{64, 16}, {128, 4}, {256, 8}, {64, 2}};

template <class T, int kThreads, int kBytes>
constexpr int vec_of() {
  return kBytes / static_cast<int>(sizeof(T)) > 0 ? kBytes / static_cast<int>(sizeof(T)) : 1;
}

template <class T>
host::ThreadEntry scatter_kernel(CopyVariant v) {
  if (v.threads == 64 && v.bytes == 16) return &scatter_entry<T, 64, vec_of<T, 64, 16>()>;
  if (v.threads == 128 && v.bytes == 4) return &scatter_entry<T, 128, vec_of<T, 128, 4>()>;
  if (v.threads == 256 && v.bytes == 8) return &scatter_entry<T, 256, vec_of<T, 256, 8>()>;
  if (v.threads == 64 && v.bytes == 2) return &scatter_entry<T, 64, vec_of<T, 64, 2>()>;
  return nullptr;
}
template <class T, class W>
host::ThreadEntry combine_kernel(CopyVariant v) {
  if (v.threads == 64 && v.bytes == 16) return &combine_entry<T, W, 64, vec_of<T, 64, 16>()>;
  if (v.threads == 128 && v.bytes == 4) return &combine_entry<T, W, 128, vec_of<T, 128, 4>()>;
  if (v.threads == 256 && v.bytes == 8) return &combine_entry<T, W, 256, vec_of<T, 256, 8>()>;
  if (v.threads == 64 && v.bytes == 2) return &combine_entry<T, W, 64, vec_of<T, 64, 2>()>;
  return nullptr;
}
template <class T>
int vec_elems(CopyVariant v) {
  return std::max(1, v.bytes / static_cast<int>(sizeof(T)));
}

const host::Schedule kOrders[] = {host::Schedule::Forward, host::Schedule::Reverse};
const char* order_name(host::Schedule o) { return o == host::Schedule::Forward ? "forward" : "reverse"; }

using rudnn::testing::fresh_seed;

// Routing-like indices: each token picks top_k distinct experts (top_k ≤ experts).
std::vector<u32> distinct_indices(i64 tokens, i64 top_k, i64 experts, std::mt19937_64& rng) {
  std::vector<u32> out;
  std::vector<u32> perm(static_cast<std::size_t>(experts));
  for (i64 t = 0; t < tokens; ++t) {
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    out.insert(out.end(), perm.begin(), perm.begin() + top_k);
  }
  return out;
}

struct DispatchCase {
  std::string name;
  i64 tokens, top_k, experts, hidden;
  std::vector<u32> indices;  // [tokens, top_k]
};

// Runs dispatch_rank, checks its invariants, then dispatch_scatter of T and checks the rows.
template <class T>
void run_dispatch(const DispatchCase& c, int rank_threads, CopyVariant copy, unsigned scatter_grid,
                  host::Schedule order, std::uint64_t seed) {
  SCOPED_TRACE(c.name + " T=" + std::to_string(c.tokens) + " k=" + std::to_string(c.top_k) +
               " E=" + std::to_string(c.experts) + " H=" + std::to_string(c.hidden) +
               " rank_threads=" + std::to_string(rank_threads) + " copy=" + std::to_string(copy.threads) + "x" +
               std::to_string(copy.bytes) + "B grid=" + std::to_string(scatter_grid) + " " + order_name(order) +
               " seed=" + std::to_string(seed));
  const i64 assignments = c.tokens * c.top_k;
  ASSERT_EQ(static_cast<i64>(c.indices.size()), assignments);
  const auto E = static_cast<std::size_t>(c.experts);

  // --- dispatch_rank
  std::vector<u32> offsets(E + 1 + kGuard, kPoison);
  std::vector<u32> slots(static_cast<std::size_t>(assignments) + kGuard, kPoison);
  const u32* idx = c.indices.data();
  u32* off = offsets.data();
  u32* sl = slots.data();
  i64 a_arg = assignments, e_arg = c.experts;
  void* rank_args[] = {&idx, &off, &sl, &a_arg, &e_arg};
  const std::size_t shared = static_cast<std::size_t>(((c.experts + 1) * 4 + 15) / 16 * 16);
  // A second block must change nothing (the kernel is meant for one block).
  const unsigned rank_blocks = order == host::Schedule::Reverse ? 2u : 1u;
  auto st = host::launch(rank_kernel(rank_threads), rank_args, {rank_blocks, 1, 1},
                         {static_cast<unsigned>(rank_threads), 1, 1}, shared, {order, seed});
  ASSERT_TRUE(st.ok()) << st.error().message();

  std::vector<u32> hist(E, 0);
  for (u32 e : c.indices)
    if (e < c.experts) ++hist[e];
  u32 running = 0;
  for (std::size_t e = 0; e <= E; ++e) {
    ASSERT_EQ(offsets[e], running) << "offsets[" << e << "]";
    if (e < E) running += hist[e];
  }
  const u32 valid = running;
  for (std::size_t g = E + 1; g < offsets.size(); ++g) ASSERT_EQ(offsets[g], kPoison) << "offsets guard " << g;

  std::vector<int> seen(valid, 0);
  for (i64 a = 0; a < assignments; ++a) {
    const u32 e = c.indices[static_cast<std::size_t>(a)];
    const u32 s = slots[static_cast<std::size_t>(a)];
    if (e >= c.experts) {
      ASSERT_EQ(s, kNoSlot) << "assignment " << a << " with out-of-range expert " << e;
      continue;
    }
    ASSERT_GE(s, offsets[e]) << "assignment " << a << " expert " << e;
    ASSERT_LT(s, offsets[e + 1]) << "assignment " << a << " expert " << e;
    ASSERT_EQ(seen[s]++, 0) << "slot " << s << " given twice";
  }
  for (std::size_t g = static_cast<std::size_t>(assignments); g < slots.size(); ++g)
    ASSERT_EQ(slots[g], kPoison) << "slots guard " << g;

  // --- dispatch_scatter
  const int vec = vec_elems<T>(copy);
  ASSERT_EQ(c.hidden % vec, 0);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  std::vector<T> input(static_cast<std::size_t>(c.tokens * c.hidden));
  for (T& v : input) v = to_storage<T>(u(rng));
  const std::size_t row_elems = static_cast<std::size_t>(valid) * static_cast<std::size_t>(c.hidden);
  std::vector<T> rows(row_elems + kGuard);
  std::memset(rows.data(), 0xFF, rows.size() * sizeof(T));
  const T* in = input.data();
  T* out = rows.data();
  i64 k_arg = c.top_k, h_arg = c.hidden;
  void* scatter_args[] = {&in, &sl, &out, &a_arg, &k_arg, &h_arg};
  const unsigned blocks =
      static_cast<unsigned>(std::max<i64>(1, std::min<i64>(assignments, scatter_grid ? scatter_grid : assignments)));
  st = host::launch(scatter_kernel<T>(copy), scatter_args, {blocks, 1, 1}, {static_cast<unsigned>(copy.threads), 1, 1},
                    0, {order, seed});
  ASSERT_TRUE(st.ok()) << st.error().message();
  const std::size_t H = static_cast<std::size_t>(c.hidden);
  for (i64 a = 0; a < assignments; ++a) {
    const u32 s = slots[static_cast<std::size_t>(a)];
    if (s == kNoSlot) continue;
    const std::size_t t = static_cast<std::size_t>(a / c.top_k);
    ASSERT_EQ(std::memcmp(&rows[s * H], &input[t * H], H * sizeof(T)), 0) << "row " << s << " (assignment " << a << ")";
  }
  std::vector<unsigned char> ff(kGuard * sizeof(T), 0xFF);
  ASSERT_EQ(std::memcmp(&rows[row_elems], ff.data(), ff.size()), 0) << "rows guard";
}

std::vector<DispatchCase> dispatch_cases(std::mt19937_64& rng) {
  std::vector<DispatchCase> cases;
  cases.push_back({"random", 37, 4, 16, 32, distinct_indices(37, 4, 16, rng)});
  cases.push_back({"one expert", 50, 1, 8, 16, std::vector<u32>(50, 3u)});
  {
    DispatchCase c{"two experts for all", 21, 2, 8, 8, {}};
    for (int t = 0; t < 21; ++t) {
      c.indices.push_back(t % 2 ? 5u : 2u);
      c.indices.push_back(t % 2 ? 2u : 5u);
    }
    cases.push_back(c);
  }
  {
    DispatchCase c{"most experts empty", 20, 2, 256, 24, {}};
    for (int t = 0; t < 20; ++t) {
      c.indices.push_back(t % 3 ? 7u : 200u);
      c.indices.push_back(255u);
    }
    cases.push_back(c);
  }
  cases.push_back({"T=1 E=1", 1, 1, 1, 8, {0u}});
  cases.push_back({"top_k=E", 9, 6, 6, 16, distinct_indices(9, 6, 6, rng)});
  cases.push_back({"assignments=0", 0, 2, 5, 8, {}});
  {
    DispatchCase c{"out-of-range indices", 12, 3, 10, 8, distinct_indices(12, 3, 10, rng)};
    c.indices[1] = 10u;
    c.indices[7] = 17u;
    c.indices[20] = 0xffffffffu;
    c.indices[35] = 0x80000000u;
    cases.push_back(c);
  }
  cases.push_back({"many assignments", 300, 8, 64, 8, distinct_indices(300, 8, 64, rng)});
  cases.push_back({"many experts", 40, 3, 1000, 8, distinct_indices(40, 3, 1000, rng)});
  return cases;
}

template <class T>
void dispatch_suite() {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("suite seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int rank_threads[] = {256, 32, 1024, 512};
  int variant = 0;
  for (const DispatchCase& c : dispatch_cases(rng))
    for (auto order : kOrders) {
      const CopyVariant copy = kCopyVariants[variant % 4];
      const int threads = rank_threads[variant % 4];
      ++variant;
      // Reverse runs the scatter on a grid smaller than the assignments (grid stride).
      run_dispatch<T>(c, threads, copy, order == host::Schedule::Reverse ? 3u : 0u, order, rng());
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(MoeDispatchTemplate, RankAndScatterF32) { dispatch_suite<float>(); }
TEST(MoeDispatchTemplate, RankAndScatterF16) { dispatch_suite<rudnn::f16>(); }
TEST(MoeDispatchTemplate, RankAndScatterBF16) { dispatch_suite<rudnn::bf16>(); }

// Every rank variant on the same large case (more assignments than threads, E > 32).
TEST(MoeDispatchTemplate, RankVariants) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const DispatchCase c{"variants", 129, 6, 97, 8, distinct_indices(129, 6, 97, rng)};
  for (int threads : {32, 256, 512, 1024})
    for (auto order : kOrders) {
      run_dispatch<float>(c, threads, kCopyVariants[1], 0, order, seed);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

// ---------------------------------------------------------------------------------------------------
// combine

// Unit roundoff of T: the largest relative error of one rounding to nearest.
template <class T>
double unit_roundoff() {
  if constexpr (sizeof(T) == 4) return std::ldexp(1.0, -24);
  if constexpr (std::is_same_v<T, rudnn::f16>) return std::ldexp(1.0, -11);
  return std::ldexp(1.0, -8);
}
// Half the smallest subnormal step of T (absolute error of rounding a tiny result).
template <class T>
double tiny_step() {
  if constexpr (std::is_same_v<T, rudnn::f16>) return std::ldexp(1.0, -25);
  return std::ldexp(1.0, -140);
}

struct CombineCase {
  i64 tokens, top_k, hidden;
  unsigned grid;  // 0: one block per token
  bool nan_rows, skipped_slots;
};

template <class T, class W>
void run_combine(const CombineCase& c, CopyVariant copy, host::Schedule order, std::uint64_t seed) {
  SCOPED_TRACE("combine T=" + std::to_string(c.tokens) + " k=" + std::to_string(c.top_k) + " H=" +
               std::to_string(c.hidden) + " copy=" + std::to_string(copy.threads) + "x" + std::to_string(copy.bytes) +
               "B grid=" + std::to_string(c.grid) + " " + order_name(order) + " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const i64 A = c.tokens * c.top_k;
  const std::size_t H = static_cast<std::size_t>(c.hidden), K = static_cast<std::size_t>(c.top_k);
  // Slots: a random bijection of the assignments onto the compact rows (some skipped).
  std::vector<u32> slots(static_cast<std::size_t>(A));
  std::iota(slots.begin(), slots.end(), 0u);
  std::shuffle(slots.begin(), slots.end(), rng);
  if (c.skipped_slots)
    for (std::size_t a = 1; a < slots.size(); a += 5) slots[a] = kNoSlot;
  std::uniform_real_distribution<double> ux(-2.0, 2.0), uw(0.0, 1.0);
  std::vector<T> rows(static_cast<std::size_t>(A) * H);
  for (T& v : rows) v = to_storage<T>(ux(rng));
  std::vector<W> weights(static_cast<std::size_t>(A));
  for (W& w : weights) w = to_storage<W>(uw(rng));
  std::vector<bool> nan_token(static_cast<std::size_t>(c.tokens), false);
  if (c.nan_rows) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (i64 t = 0; t < c.tokens; t += 4) {  // a whole NaN routing row ...
      for (std::size_t j = 0; j < K; ++j) weights[static_cast<std::size_t>(t) * K + j] = to_storage<W>(nan);
      nan_token[static_cast<std::size_t>(t)] = true;
    }
    for (i64 t = 2; t < c.tokens; t += 4) {  // ... or a single NaN weight
      weights[static_cast<std::size_t>(t) * K + K - 1] = to_storage<W>(nan);
      nan_token[static_cast<std::size_t>(t)] = slots[static_cast<std::size_t>(t) * K + K - 1] != kNoSlot;
    }
  }
  std::vector<T> out(static_cast<std::size_t>(c.tokens) * H + kGuard);
  std::memset(out.data(), 0xFF, out.size() * sizeof(T));
  const T* x = rows.data();
  const u32* sl = slots.data();
  const W* w = weights.data();
  T* o = out.data();
  i64 t_arg = c.tokens, k_arg = c.top_k, h_arg = c.hidden;
  void* args[] = {&x, &sl, &w, &o, &t_arg, &k_arg, &h_arg};
  const unsigned blocks = static_cast<unsigned>(std::max<i64>(1, c.grid ? std::min<i64>(c.grid, c.tokens) : c.tokens));
  auto st = host::launch(combine_kernel<T, W>(copy), args, {blocks, 1, 1}, {static_cast<unsigned>(copy.threads), 1, 1},
                         0, {order, seed});
  ASSERT_TRUE(st.ok()) << st.error().message();

  const double u = unit_roundoff<T>(), u32f = std::ldexp(1.0, -24);
  for (std::size_t t = 0; t < static_cast<std::size_t>(c.tokens); ++t)
    for (std::size_t h = 0; h < H; ++h) {
      double want = 0.0, magnitude = 0.0;
      for (std::size_t j = 0; j < K; ++j) {
        const u32 s = slots[t * K + j];
        if (s == kNoSlot) continue;
        const double term = from_storage(weights[t * K + j]) * from_storage(rows[s * H + h]);
        want += term;
        magnitude += std::fabs(term);
      }
      const double got = from_storage(out[t * H + h]);
      if (nan_token[t]) {
        ASSERT_TRUE(std::isnan(got)) << "token " << t << " h " << h << ": NaN weight must propagate";
        continue;
      }
      // FP32 products and j-ordered sum (≤ (k + 1)·u32·Σ|terms|), then one rounding to T.
      const double sum_error = 2.0 * static_cast<double>(K + 1) * u32f * magnitude;
      const double bound = u * (std::fabs(want) + sum_error) + sum_error + tiny_step<T>();
      ASSERT_TRUE(std::fabs(got - want) <= bound)
          << "token " << t << " h " << h << ": got " << got << " want " << want << " bound " << bound;
    }
  std::vector<unsigned char> ff(kGuard * sizeof(T), 0xFF);
  ASSERT_EQ(std::memcmp(&out[static_cast<std::size_t>(c.tokens) * H], ff.data(), ff.size()), 0) << "out guard";
}

template <class T, class W>
void combine_suite() {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("suite seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const CombineCase cases[] = {
      {13, 4, 32, 0, false, false}, {1, 1, 16, 0, false, false}, {9, 8, 64, 2, true, false},
      {30, 2, 16, 5, false, true},  {6, 3, 8, 0, true, true},    {0, 2, 16, 0, false, false},
  };
  int variant = 0;
  for (const CombineCase& c : cases)
    for (auto order : kOrders) {
      const CopyVariant copy = kCopyVariants[variant++ % 4];
      run_combine<T, W>(c, copy, order, rng());
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(MoeCombineTemplate, F32WeightsF32) { combine_suite<float, float>(); }
TEST(MoeCombineTemplate, F16WeightsF16) { combine_suite<rudnn::f16, rudnn::f16>(); }
TEST(MoeCombineTemplate, BF16WeightsBF16) { combine_suite<rudnn::bf16, rudnn::bf16>(); }
TEST(MoeCombineTemplate, BF16WeightsF32) { combine_suite<rudnn::bf16, float>(); }
TEST(MoeCombineTemplate, F32WeightsBF16) { combine_suite<float, rudnn::bf16>(); }

// Every row-copy variant of every type on one shape, both schedules.
template <class T>
void combine_variants() {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (const CopyVariant& v : kCopyVariants)
    for (auto order : kOrders) {
      run_combine<T, T>({7, 3, 48, 3, true, true}, v, order, rng());
      if (::testing::Test::HasFatalFailure()) return;
    }
}
TEST(MoeCombineTemplate, VariantsF32) { combine_variants<float>(); }
TEST(MoeCombineTemplate, VariantsF16) { combine_variants<rudnn::f16>(); }

}  // namespace
