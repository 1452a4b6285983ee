// rudnn::moe::swiglu_backward_hidden_mma / swiglu_backward_input_mma / experts_weight_grad_mma (the
// tensor-core SwiGLU experts backward) on the host emulation device against the FP64 oracle
// rudnn::reference::swiglu_experts_backward, for the registered tiles (moe_config::backwardTiles(): two
// on mma.sync, one on Hopper's wgmma) and f16/bf16: mixed, skewed (one expert holds every row, several row tiles),
// mostly-empty (more than 32 experts) and empty loads; H and I not multiples of the tiles; grids of one block (the grid
// stride); forward and reverse schedules; outputs poisoned before the run, guards past the end, exact zeros for experts
// without rows. The op-level tests (tests/ops/moe_experts_backward_test.cpp) run the heuristic tile through the public
// API; this one reaches every registered tile.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/numerics.h"
#include "host/emulator.h"
#include "reference/moe_experts_backward.h"
#include "row_norm_harness.h"  // to_storage / from_storage / tolerance / fresh_seed
#include "rudnn/moe/experts_backward_mma.cuh"

namespace {

namespace host = rudnn::runtime::host;
namespace shared_memory = rudnn::shared_memory;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i64;
using rudnn::u32;

// The registered tensor-core backward tiles (MoEConfig.cpp backwardTiles(), indices 3, 4 and 5).
using Square = rudnn::gemm::BlockPolicy<64, 64, 32, 2, 2, 3, true>;
using Tall = rudnn::gemm::BlockPolicy<128, 64, 32, 4, 2, 3, true>;
using Warpgroups = rudnn::gemm::WgmmaPolicy<128, 64, 64, 4>;   // sm_90a: two warpgroups
using OneWarpgroup = rudnn::gemm::WgmmaPolicy<64, 64, 64, 2>;  // not registered: no wgmma group in flight

// Dynamic shared memory of the three passes (hidden, input, weight gradients) for policy P.
template <class P>
std::array<long long, 3> pass_shared_bytes() {
  if constexpr (P::kWgmma) {
    const long long bytes = shared_memory::block_gemm_wgmma(P::kStages, P::kBM, P::kBN, P::kBK, 2);
    return {shared_memory::experts_backward_hidden_wgmma(P::kStages, P::kBM, P::kBN, P::kBK), bytes, bytes};
  } else {
    return {shared_memory::experts_backward_hidden_mma(P::kStages, P::kBM, P::kBN, P::kBK),
            shared_memory::block_gemm(P::kStages, P::kBM, P::kBN, P::kBK, 2, false, true),
            shared_memory::block_gemm(P::kStages, P::kBM, P::kBN, P::kBK, 2, true, true)};
  }
}

template <class T>
const T* in(void** a, int i) {
  return *static_cast<const T* const*>(a[i]);
}
template <class T>
T* out(void** a, int i) {
  return *static_cast<T* const*>(a[i]);
}
i64 size(void** a, int i) { return *static_cast<const i64*>(a[i]); }

template <class T, class P>
void hidden_entry(void** a) {
  rudnn::moe::swiglu_backward_hidden_mma<T, P>(in<T>(a, 0), in<T>(a, 1), in<u32>(a, 2), in<T>(a, 3), in<T>(a, 4),
                                               in<T>(a, 5), out<T>(a, 6), out<T>(a, 7), out<T>(a, 8), size(a, 9),
                                               size(a, 10), size(a, 11), size(a, 12));
}
template <class T, class P>
void input_entry(void** a) {
  rudnn::moe::swiglu_backward_input_mma<T, P>(in<T>(a, 0), in<T>(a, 1), in<u32>(a, 2), in<T>(a, 3), in<T>(a, 4),
                                              out<T>(a, 5), size(a, 6), size(a, 7), size(a, 8), size(a, 9));
}
template <class T, class P>
void weight_grad_entry(void** a) {
  rudnn::moe::experts_weight_grad_mma<T, P>(in<T>(a, 0), in<T>(a, 1), in<u32>(a, 2), in<u32>(a, 3), out<float>(a, 4),
                                            size(a, 5), size(a, 6), size(a, 7), size(a, 8));
}

constexpr std::size_t kGuard = 24;  // elements past the end that must keep their poison

struct Case {
  std::string name;
  std::vector<u32> counts;  // rows per expert
  i64 hidden, inter;
  bool one_block = false;  // grid (1, 1): every tile through the grid stride
  host::Schedule order = host::Schedule::Forward;
};

template <class T>
struct Rounded {
  std::vector<T> stored;
  std::vector<double> value;  // exactly what the kernel reads
};

template <class T>
Rounded<T> random_tensor(std::size_t n, double scale, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, scale);
  Rounded<T> r{std::vector<T>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    r.stored[i] = to_storage<T>(normal(rng));
    r.value[i] = from_storage(r.stored[i]);
  }
  return r;
}

template <class V>
std::vector<V> poisoned(std::size_t n) {
  std::vector<V> v(n + kGuard);
  std::memset(v.data(), 0xFF, v.size() * sizeof(V));
  return v;
}

// The first n values, after checking that each was written (the poison reads as NaN) and that the
// guards past them kept their poison bytes.
template <class V>
std::vector<double> written(const std::vector<V>& v, std::size_t n, const char* what) {
  std::vector<double> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = from_storage(v[i]);
    EXPECT_FALSE(std::isnan(values[i])) << what << "[" << i << "] not written";
  }
  for (std::size_t i = n; i < v.size(); ++i) {
    unsigned char bytes[sizeof(V)];
    std::memcpy(bytes, &v[i], sizeof(V));
    for (unsigned char b : bytes) EXPECT_EQ(b, 0xFF) << what << ": wrote past the end at " << i;
  }
  return values;
}

template <class T, class P>
void run_case(const Case& c, const char* type, const char* policy) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE(c.name + " " + type + " " + policy + " H=" + std::to_string(c.hidden) + " I=" + std::to_string(c.inter) +
               " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const i64 experts = static_cast<i64>(c.counts.size()), h = c.hidden, im = c.inter;
  std::vector<u32> off(c.counts.size() + 1, 0);
  for (std::size_t e = 0; e < c.counts.size(); ++e) off[e + 1] = off[e] + c.counts[e];
  const i64 n = off.back();
  const auto sz = [](i64 v) { return static_cast<std::size_t>(v); };
  auto x = random_tensor<T>(sz(n * h), 1.0, rng);
  auto dy = random_tensor<T>(sz(n * h), 1.0, rng);
  auto gate = random_tensor<T>(sz(experts * im * h), 1.0 / std::sqrt(static_cast<double>(h)), rng);
  auto up = random_tensor<T>(sz(experts * im * h), 1.0 / std::sqrt(static_cast<double>(h)), rng);
  auto down = random_tensor<T>(sz(experts * h * im), 1.0 / std::sqrt(static_cast<double>(im)), rng);
  std::vector<u32> order(sz(n));  // every expert's rows in token order: the compact rows' own order
  for (i64 r = 0; r < n; ++r) order[sz(r)] = static_cast<u32>(r);

  const unsigned block = static_cast<unsigned>(P::kThreads);
  const host::ScheduleOptions schedule{c.order, 0};
  auto grid = [&](i64 x_blocks, i64 y_blocks) {
    if (c.one_block) return host::Dim3{1, 1, 1};
    return host::Dim3{static_cast<unsigned>(std::max<i64>(1, x_blocks)),
                      static_cast<unsigned>(std::max<i64>(1, y_blocks)), 1};
  };
  const i64 row_tiles = (n + P::kBM - 1) / P::kBM;

  // ---- dA, dB, Hh
  std::vector<T> da = poisoned<T>(sz(n * im)), db = poisoned<T>(sz(n * im)), hh = poisoned<T>(sz(n * im));
  {
    const T* a0 = x.stored.data();
    const T* a1 = dy.stored.data();
    const u32* a2 = off.data();
    const T *a3 = gate.stored.data(), *a4 = up.stored.data(), *a5 = down.stored.data();
    T *a6 = da.data(), *a7 = db.data(), *a8 = hh.data();
    i64 a9 = n, a10 = experts, a11 = h, a12 = im;
    void* args[] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8, &a9, &a10, &a11, &a12};
    auto st = host::launch(&hidden_entry<T, P>, args, grid((im + P::kBN - 1) / P::kBN, row_tiles), {block, 1, 1},
                           pass_shared_bytes<P>()[0], schedule);
    ASSERT_TRUE(st.ok()) << st.error().message();
  }
  for (auto [v, what] : {std::pair{&da, "dA"}, {&db, "dB"}, {&hh, "Hh"}}) written(*v, sz(n * im), what);
  // ---- dX
  std::vector<T> dx = poisoned<T>(sz(n * h));
  {
    const T *a0 = da.data(), *a1 = db.data();
    const u32* a2 = off.data();
    const T *a3 = gate.stored.data(), *a4 = up.stored.data();
    T* a5 = dx.data();
    i64 a6 = n, a7 = experts, a8 = h, a9 = im;
    void* args[] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8, &a9};
    auto st = host::launch(&input_entry<T, P>, args, grid((h + P::kBN - 1) / P::kBN, row_tiles), {block, 1, 1},
                           pass_shared_bytes<P>()[1], schedule);
    ASSERT_TRUE(st.ok()) << st.error().message();
  }
  // ---- the weight gradients: (dA, X) → dgate, (dB, X) → dup, (dY, Hh) → ddown
  auto weight_grad = [&](const T* p, const T* q, i64 m, i64 k2, const char* what) {
    std::vector<float> w = poisoned<float>(sz(experts * m * k2));
    const T *a0 = p, *a1 = q;
    const u32 *a2 = off.data(), *a3 = order.data();
    float* a4 = w.data();
    i64 a5 = n, a6 = experts, a7 = m, a8 = k2;
    void* args[] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8};
    const i64 tiles = ((m + P::kBM - 1) / P::kBM) * ((k2 + P::kBN - 1) / P::kBN);
    auto st = host::launch(&weight_grad_entry<T, P>, args, grid(tiles, experts), {block, 1, 1},
                           pass_shared_bytes<P>()[2], schedule);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return written(w, sz(experts * m * k2), what);
  };
  const auto dgate = weight_grad(da.data(), x.stored.data(), im, h, "dgate");
  const auto dup = weight_grad(db.data(), x.stored.data(), im, h, "dup");
  const auto ddown = weight_grad(dy.stored.data(), hh.data(), h, im, "ddown");
  const auto dinput = written(dx, sz(n * h), "dX");

  // dA, dB and Hh are rounded to T between the passes: every gradient is within T's precision.
  const auto want =
      rudnn::reference::swiglu_experts_backward(x.value, dy.value, off, gate.value, up.value, down.value, h, im);
  const double bound = 3 * row_norm_test::tolerance<T>();
  EXPECT_LE(rudnn::testing::relative_l2(dinput, want.dinput), bound) << "dinput";
  EXPECT_LE(rudnn::testing::relative_l2(dgate, want.dgate), bound) << "dgate";
  EXPECT_LE(rudnn::testing::relative_l2(dup, want.dup), bound) << "dup";
  EXPECT_LE(rudnn::testing::relative_l2(ddown, want.ddown), bound) << "ddown";
  for (i64 e = 0; e < experts; ++e) {
    if (c.counts[sz(e)] != 0) continue;
    for (i64 q = 0; q < im * h; ++q) {
      ASSERT_EQ(dgate[sz(e * im * h + q)], 0.0) << "expert " << e << " has no rows";
      ASSERT_EQ(dup[sz(e * im * h + q)], 0.0) << "expert " << e << " has no rows";
      ASSERT_EQ(ddown[sz(e * im * h + q)], 0.0) << "expert " << e << " has no rows";
    }
  }
}

std::vector<Case> cases() {
  std::vector<u32> mostly_empty(40, 0);
  mostly_empty[3] = 5, mostly_empty[35] = 9;  // the tile cursor walks past the first 32 experts
  return {
      {"mixed", {3, 0, 17, 70, 1}, 72, 48},
      {"skewed", {150}, 40, 24},  // several row tiles of one expert; weight-gradient K over 5 blocks
      {"mostly empty", mostly_empty, 16, 8},
      {"wide", {2, 9}, 136, 80},  // H and I over several column tiles, not multiples of them
      {"one block", {5, 33, 0, 12}, 48, 40, true},
      {"reverse", {7, 20, 4}, 24, 56, false, host::Schedule::Reverse},
      {"no rows", {0, 0, 0}, 16, 8},
      {"deep", {70, 140}, 264, 136},  // K loops longer than the pipeline (5 blocks of 64, 9 of 32)
  };
}

TEST(MoeExpertsBackwardMmaTemplate, SquareTileBF16) {
  for (const Case& c : cases()) run_case<rudnn::bf16, Square>(c, "bf16", "64x64x32/2x2/3");
}
TEST(MoeExpertsBackwardMmaTemplate, SquareTileF16) {
  for (const Case& c : cases()) run_case<rudnn::f16, Square>(c, "f16", "64x64x32/2x2/3");
}
TEST(MoeExpertsBackwardMmaTemplate, TallTileBF16) {
  for (const Case& c : cases()) run_case<rudnn::bf16, Tall>(c, "bf16", "128x64x32/4x2/3");
}
TEST(MoeExpertsBackwardMmaTemplate, TallTileF16) {
  for (const Case& c : cases()) run_case<rudnn::f16, Tall>(c, "f16", "128x64x32/4x2/3");
}

// Hopper's warpgroup MMA (the emulator emulates it): the registered two-warpgroup tile with a wgmma
// group in flight, and one warpgroup retiring each group in its step.
TEST(MoeExpertsBackwardMmaTemplate, WarpgroupMmaBF16) {
  for (const Case& c : cases()) run_case<rudnn::bf16, Warpgroups>(c, "bf16", "128x64x64/4/wgmma");
}
TEST(MoeExpertsBackwardMmaTemplate, WarpgroupMmaF16) {
  for (const Case& c : cases()) run_case<rudnn::f16, Warpgroups>(c, "f16", "128x64x64/4/wgmma");
  for (const Case& c : cases()) run_case<rudnn::f16, OneWarpgroup>(c, "f16", "64x64x64/2/wgmma");
}

TEST(MoeExpertsBackwardMmaTemplate, WrongBlockTraps) {
  rudnn_emu_bind(host::emulator_api());
  const rudnn::bf16* none = nullptr;
  const u32 offsets[2] = {0, 0};
  const u32* off = offsets;
  rudnn::bf16* none_out = nullptr;
  i64 zero = 0, one = 1, eight = 8;
  void* args[] = {&none, &none, &off, &none, &none, &none_out, &zero, &one, &eight, &eight};
  auto st = host::launch(&input_entry<rudnn::bf16, Square>, args, {1, 1, 1}, {64, 1, 1},
                         shared_memory::block_gemm(3, 64, 64, 32, 2, false, true), host::ScheduleOptions{});
  ASSERT_FALSE(st.ok()) << "a block of 64 threads for a 128-thread policy must trap";
  EXPECT_NE(st.error().message().find("blockDim"), std::string::npos) << st.error().message();
}

}  // namespace
