// rudnn::moe::swiglu_gate_up_mma / expert_down_mma (tensor-core SwiGLU experts) on the host
// emulation device vs the FP64 oracles rudnn::reference::swiglu_act / expert_down: f16 and bf16;
// the mma.sync and the wgmma (sm_90a) policies; mixed, skewed (one expert holds every row),
// mostly-empty (more than 32 experts: the tile cursor walks several chunks) and empty loads;
// n_rows = 0 and 1, E = 1; H and I not multiples of the tiles; K over many pipeline stages; grids
// smaller than the launch formula (grid stride); forward and reverse schedules; outputs poisoned
// (NaN bytes) before the run and guards past the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "host/emulator.h"
#include "reference/moe.h"
#include "row_norm_harness.h"  // to_storage / from_storage / tolerance / fresh_seed
#include "rudnn/moe/experts_mma.cuh"

namespace {

namespace host = rudnn::runtime::host;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i64;
using rudnn::u32;

// The variants the NVRTC reports were checked for (see the report of this work): decode-like
// (BM = 16), mid-size, and a large 8-warp tile.
using Small = rudnn::moe::MmaGemmPolicy<16, 64, 64, 1, 4, 3>;
using Mid = rudnn::moe::MmaGemmPolicy<64, 64, 32, 2, 2, 4>;
using Large = rudnn::moe::MmaGemmPolicy<128, 128, 32, 2, 4, 3>;
// Hopper's warpgroup MMA (sm_90a; MoEConfig.cpp tensorCoreTiles()): one and two warpgroups, each with
// one wgmma group in flight, and an unregistered two-stage tile that retires each group in its step.
using OneWarpgroup = rudnn::moe::WgmmaExpertsPolicy<64, 128, 64, 4>;
using TwoWarpgroups = rudnn::moe::WgmmaExpertsPolicy<128, 128, 64, 4>;
using TwoStageWgmma = rudnn::moe::WgmmaExpertsPolicy<64, 64, 64, 2>;

template <class T, class P>
void gate_up_entry(void** a) {
  rudnn::moe::swiglu_gate_up_mma<T, P>(
      *static_cast<const T* const*>(a[0]), *static_cast<const u32* const*>(a[1]), *static_cast<const T* const*>(a[2]),
      *static_cast<const T* const*>(a[3]), *static_cast<T* const*>(a[4]), *static_cast<const i64*>(a[5]),
      *static_cast<const i64*>(a[6]), *static_cast<const i64*>(a[7]), *static_cast<const i64*>(a[8]));
}

template <class T, class P>
void down_entry(void** a) {
  rudnn::moe::expert_down_mma<T, P>(*static_cast<const T* const*>(a[0]), *static_cast<const u32* const*>(a[1]),
                                    *static_cast<const T* const*>(a[2]), *static_cast<T* const*>(a[3]),
                                    *static_cast<const i64*>(a[4]), *static_cast<const i64*>(a[5]),
                                    *static_cast<const i64*>(a[6]), *static_cast<const i64*>(a[7]));
}

constexpr std::size_t kGuard = 24;  // elements past the end that must stay 0xFF bytes

// Unit roundoff of the storage type (round to nearest): 2^-8 for bf16, 2^-11 for f16.
template <class T>
double unit_roundoff() {
  return std::is_same_v<T, rudnn::bf16> ? 0x1p-8 : 0x1p-11;
}

// Error bounds. Inputs are the T-rounded values, so every product of two 16-bit values is exact in
// FP32 (8 + 8 or 11 + 11 significant bits < 24): the kernel's only error before the output
// rounding is FP32 summation of K terms, |err| ≤ (K − 1)·2⁻²⁴·Σ|terms| in any order. We allow
// 4·K·2⁻²⁴·Σ|terms| (tensor cores need not round like sequential IEEE adds), then the rounding of
// the result to T (unit roundoff u_T: 2⁻⁸ bf16, 2⁻¹¹ f16) and an absolute floor for f16 subnormals.
// This is far tighter than a T-precision bound like 2⁻⁸·Σ|terms|, yet a missing or duplicated K
// block, a wrong row or expert, or a stale pipeline stage shifts results by O(|term|) and fails.
double accumulation_bound(i64 k, double abs_sum) { return 4.0 * static_cast<double>(k) * 0x1p-24 * abs_sum; }
constexpr double kAbsFloor = 0x1p-23;

struct Case {
  std::string name;
  std::vector<u32> counts;  // rows per expert
  i64 hidden, inter;
  unsigned grid_x = 0, grid_y = 0;  // 0: the launch formula
  host::Schedule order = host::Schedule::Forward;
};

std::vector<u32> offsets_of(const std::vector<u32>& counts) {
  std::vector<u32> off(counts.size() + 1, 0);
  for (std::size_t e = 0; e < counts.size(); ++e) off[e + 1] = off[e] + counts[e];
  return off;
}

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

template <class T>
std::vector<T> poisoned(std::size_t n) {
  std::vector<T> v(n + kGuard);
  std::memset(v.data(), 0xFF, v.size() * sizeof(T));
  return v;
}

template <class T>
void expect_guards(const std::vector<T>& v, std::size_t n, const char* what) {
  for (std::size_t i = n; i < v.size(); ++i) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v[i], sizeof(T));
    for (unsigned char b : bytes) ASSERT_EQ(b, 0xFF) << what << ": wrote past the end at " << i;
  }
}

template <class T>
double rel_l2_bound() {
  return row_norm_test::tolerance<T>();
}

std::string describe(const Case& c, const char* type, const char* policy, std::uint64_t seed) {
  std::string counts;
  for (std::size_t e = 0; e < c.counts.size() && e < 12; ++e) counts += (e ? "," : "") + std::to_string(c.counts[e]);
  if (c.counts.size() > 12) counts += ",...";
  return c.name + " " + type + " " + policy + " E=" + std::to_string(c.counts.size()) + " counts={" + counts +
         "} H=" + std::to_string(c.hidden) + " I=" + std::to_string(c.inter) + " grid=(" + std::to_string(c.grid_x) +
         "," + std::to_string(c.grid_y) + ")" + (c.order == host::Schedule::Forward ? " forward" : " reverse") +
         " seed=" + std::to_string(seed);
}

template <class T, class P>
void run_case(const Case& c, const char* type, const char* policy) {
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE(describe(c, type, policy, seed));
  std::mt19937_64 rng(seed);
  const i64 experts = static_cast<i64>(c.counts.size()), h = c.hidden, in = c.inter;
  const std::vector<u32> off = offsets_of(c.counts);
  const i64 n = off.back();
  const auto sz = [](i64 v) { return static_cast<std::size_t>(v); };

  auto x = random_tensor<T>(sz(n * h), 1.0, rng);
  auto gate = random_tensor<T>(sz(experts * in * h), 1.0 / std::sqrt(static_cast<double>(h)), rng);
  auto up = random_tensor<T>(sz(experts * in * h), 1.0 / std::sqrt(static_cast<double>(h)), rng);
  auto down = random_tensor<T>(sz(experts * h * in), 1.0 / std::sqrt(static_cast<double>(in)), rng);
  auto act_in = random_tensor<T>(sz(n * in), 1.0, rng);  // expert_down's own input

  const unsigned gy = static_cast<unsigned>(std::max<i64>(1, (n + P::kTileM - 1) / P::kTileM));
  const unsigned block = static_cast<unsigned>(P::kThreads);
  const host::ScheduleOptions schedule{c.order, 0};

  // ---- gate/up + SwiGLU
  {
    std::vector<T> act = poisoned<T>(sz(n * in));
    const T* a0 = x.stored.data();
    const u32* a1 = off.data();
    const T* a2 = gate.stored.data();
    const T* a3 = up.stored.data();
    T* a4 = act.data();
    i64 a5 = n, a6 = experts, a7 = h, a8 = in;
    void* args[] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8};
    const unsigned gx = static_cast<unsigned>(std::max<i64>(1, (in + P::kTileN - 1) / P::kTileN));
    const host::Dim3 grid{c.grid_x ? c.grid_x : gx, c.grid_y ? c.grid_y : gy, 1};
    auto st = host::launch(&gate_up_entry<T, P>, args, grid, {block, 1, 1}, P::kSharedBytesGateUp, schedule);
    ASSERT_TRUE(st.ok()) << st.error().message();

    const auto want = rudnn::reference::swiglu_act(x.value, off, gate.value, up.value, h, in);
    double err2 = 0.0, ref2 = 0.0;
    int reported = 0;
    for (i64 r = 0; r < n; ++r) {
      i64 e = 0;
      while (static_cast<i64>(off[sz(e + 1)]) <= r) ++e;
      for (i64 i = 0; i < in; ++i) {
        const std::size_t k = sz(r * in + i);
        const double got = from_storage(act[k]);
        ASSERT_FALSE(std::isnan(got)) << "act[" << r << "," << i << "] not written";
        // Per-element bound: the FP32 errors of g and u propagated through silu(g)·u
        // (|silu'| ≤ 1.1), plus the rounding of act to T.
        double g = 0.0, u = 0.0, sg = 0.0, su = 0.0;
        for (i64 j = 0; j < h; ++j) {
          const double xv = x.value[sz(r * h + j)];
          const double gv = gate.value[sz((e * in + i) * h + j)] * xv;
          const double uv = up.value[sz((e * in + i) * h + j)] * xv;
          g += gv;
          u += uv;
          sg += std::fabs(gv);
          su += std::fabs(uv);
        }
        const double eg = accumulation_bound(h, sg), eu = accumulation_bound(h, su);
        const double silu = g / (1.0 + std::exp(-g));
        const double propagated = 1.1 * eg * (std::fabs(u) + eu) + std::fabs(silu) * eu;
        // + a few FP32 ulps for expf and the division in silu, + rounding to T.
        const double tol = propagated + unit_roundoff<T>() * (std::fabs(want[k]) + propagated) +
                           8 * 0x1p-24 * std::fabs(want[k]) + kAbsFloor;
        if (std::fabs(got - want[k]) > tol && reported++ < 5)
          ADD_FAILURE() << "act[" << r << "," << i << "] (expert " << e << ") = " << got << ", want " << want[k]
                        << " ± " << tol;
        err2 += (got - want[k]) * (got - want[k]);
        ref2 += want[k] * want[k];
      }
    }
    if (ref2 > 0) EXPECT_LE(std::sqrt(err2 / ref2), rel_l2_bound<T>()) << "act relative L2";
    expect_guards(act, sz(n * in), "act");
  }

  // ---- down projection (its input rounded to T, as the kernel stores act)
  {
    std::vector<T> out = poisoned<T>(sz(n * h));
    const T* a0 = act_in.stored.data();
    const u32* a1 = off.data();
    const T* a2 = down.stored.data();
    T* a3 = out.data();
    i64 a4 = n, a5 = experts, a6 = in, a7 = h;
    void* args[] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7};
    const unsigned gx = static_cast<unsigned>(std::max<i64>(1, (h + P::kTileN - 1) / P::kTileN));
    const host::Dim3 grid{c.grid_x ? c.grid_x : gx, c.grid_y ? c.grid_y : gy, 1};
    auto st = host::launch(&down_entry<T, P>, args, grid, {block, 1, 1}, P::kSharedBytesDown, schedule);
    ASSERT_TRUE(st.ok()) << st.error().message();

    const auto want = rudnn::reference::expert_down(act_in.value, off, down.value, h, in);
    double err2 = 0.0, ref2 = 0.0;
    int reported = 0;
    for (i64 r = 0; r < n; ++r) {
      i64 e = 0;
      while (static_cast<i64>(off[sz(e + 1)]) <= r) ++e;
      for (i64 j = 0; j < h; ++j) {
        const std::size_t k = sz(r * h + j);
        const double got = from_storage(out[k]);
        ASSERT_FALSE(std::isnan(got)) << "out[" << r << "," << j << "] not written";
        double s = 0.0;
        for (i64 i = 0; i < in; ++i)
          s += std::fabs(act_in.value[sz(r * in + i)] * down.value[sz((e * h + j) * in + i)]);
        const double acc = accumulation_bound(in, s);
        const double tol = acc + unit_roundoff<T>() * (std::fabs(want[k]) + acc) + kAbsFloor;
        if (std::fabs(got - want[k]) > tol && reported++ < 5)
          ADD_FAILURE() << "out[" << r << "," << j << "] (expert " << e << ") = " << got << ", want " << want[k]
                        << " ± " << tol;
        err2 += (got - want[k]) * (got - want[k]);
        ref2 += want[k] * want[k];
      }
    }
    if (ref2 > 0) EXPECT_LE(std::sqrt(err2 / ref2), rel_l2_bound<T>()) << "out relative L2";
    expect_guards(out, sz(n * h), "out");
  }
}

const host::Schedule kOrders[] = {host::Schedule::Forward, host::Schedule::Reverse};

// Loads shared by the policies: sizes are not multiples of any tile (H = 72, I = 40), rows 1..37.
std::vector<Case> load_cases() {
  std::vector<Case> cases;
  for (auto order : kOrders) {
    cases.push_back({"mixed", {37, 0, 1, 20, 5}, 72, 40, 0, 0, order});
    cases.push_back({"skewed", {0, 45, 0}, 72, 40, 0, 0, order});
    // 40 experts, three with rows, one past the first 32: the cursor skips whole chunks.
    std::vector<u32> sparse(40, 0);
    sparse[5] = 3;
    sparse[33] = 17;
    sparse[39] = 1;
    cases.push_back({"mostly-empty", sparse, 72, 40, 0, 0, order});
    cases.push_back({"one-row", {1}, 72, 40, 0, 0, order});
    cases.push_back({"no-rows", {0, 0, 0}, 72, 40, 0, 0, order});
    // Grid smaller than the formula in both dimensions: blocks stride over N and M tiles.
    cases.push_back({"grid-stride", {9, 0, 23, 2}, 136, 152, 1, 2, order});
  }
  return cases;
}

template <class T, class P>
void run_loads(const char* type, const char* policy) {
  rudnn_emu_bind(host::emulator_api());
  for (const Case& c : load_cases()) {
    run_case<T, P>(c, type, policy);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(MoeExpertsMmaTemplate, SmallTileF16) { run_loads<rudnn::f16, Small>("f16", "16x64x64/1x4/3"); }
TEST(MoeExpertsMmaTemplate, SmallTileBF16) { run_loads<rudnn::bf16, Small>("bf16", "16x64x64/1x4/3"); }
TEST(MoeExpertsMmaTemplate, MidTileF16) { run_loads<rudnn::f16, Mid>("f16", "64x64x32/2x2/4"); }
TEST(MoeExpertsMmaTemplate, MidTileBF16) { run_loads<rudnn::bf16, Mid>("bf16", "64x64x32/2x2/4"); }

// K over many BK blocks (H = 328: 11 K blocks through a 4-stage pipeline; I = 264 for the down
// projection), plus a block tile with several M tiles in one expert and two N tiles.
TEST(MoeExpertsMmaTemplate, LongK) {
  rudnn_emu_bind(host::emulator_api());
  for (auto order : kOrders) {
    run_case<rudnn::bf16, Mid>({"long-k", {3, 70}, 328, 264, 0, 0, order}, "bf16", "64x64x32/2x2/4");
    run_case<rudnn::f16, Small>({"long-k", {19, 2}, 328, 264, 1, 1, order}, "f16", "16x64x64/1x4/3");
    if (HasFatalFailure()) return;
  }
}

TEST(MoeExpertsMmaTemplate, LargeTile) {
  rudnn_emu_bind(host::emulator_api());
  run_case<rudnn::bf16, Large>({"large", {130, 0, 6}, 72, 136, 0, 0, host::Schedule::Forward}, "bf16",
                               "128x128x32/2x4/3");
  run_case<rudnn::f16, Large>({"large", {3, 140}, 40, 72, 1, 1, host::Schedule::Reverse}, "f16", "128x128x32/2x4/3");
}

TEST(MoeExpertsMmaTemplate, WarpgroupMmaF16) { run_loads<rudnn::f16, OneWarpgroup>("f16", "wgmma 64x128x64/4"); }
TEST(MoeExpertsMmaTemplate, WarpgroupMmaBF16) { run_loads<rudnn::bf16, TwoWarpgroups>("bf16", "wgmma 128x128x64/4"); }

// wgmma over many K blocks (H = 328: 6 blocks of 64 through the pipeline with a group in flight, and
// without one in the two-stage tile), several row tiles of one expert, a grid of one block.
TEST(MoeExpertsMmaTemplate, WarpgroupMmaLongK) {
  rudnn_emu_bind(host::emulator_api());
  run_case<rudnn::bf16, OneWarpgroup>({"long-k", {3, 150}, 328, 264, 0, 0, host::Schedule::Forward}, "bf16",
                                      "wgmma 64x128x64/4");
  run_case<rudnn::f16, TwoWarpgroups>({"long-k", {131, 2}, 328, 264, 1, 1, host::Schedule::Reverse}, "f16",
                                      "wgmma 128x128x64/4");
  run_case<rudnn::bf16, TwoStageWgmma>({"long-k", {19, 70}, 328, 136, 0, 0, host::Schedule::Forward}, "bf16",
                                       "wgmma 64x64x64/2");
}

// A block of the wrong size is refused (trap), not run with a wrong warp layout.
TEST(MoeExpertsMmaTemplate, WrongBlockTraps) {
  rudnn_emu_bind(host::emulator_api());
  std::vector<rudnn::bf16> x(8 * 8), w(8 * 8), act(8 * 8);
  std::vector<u32> off = {0, 8};
  const rudnn::bf16* a0 = x.data();
  const u32* a1 = off.data();
  const rudnn::bf16* a2 = w.data();
  const rudnn::bf16* a3 = w.data();
  rudnn::bf16* a4 = act.data();
  i64 a5 = 8, a6 = 1, a7 = 8, a8 = 8;
  void* args[] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8};
  auto st = host::launch(&gate_up_entry<rudnn::bf16, Small>, args, {1, 1, 1}, {64, 1, 1}, Small::kSharedBytesGateUp,
                         {host::Schedule::Forward, 0});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("blockDim"), std::string::npos) << st.error().message();
}

}  // namespace
