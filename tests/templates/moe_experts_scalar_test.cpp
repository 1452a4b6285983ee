// rudnn::moe::swiglu_gate_up_scalar / expert_down_scalar on the host emulation device vs the FP64
// oracles rudnn::reference::swiglu_act / expert_down (tests/reference/moe.h): f32, f16, bf16;
// skewed and empty expert loads, odd sizes (H = 7, I = 5, ...), n_rows = 1 and 0, grids smaller
// and larger than the launch formula; forward and reverse schedules, poisoned outputs, guards.
// Last, the whole chain dispatch → scatter → gate_up → down → combine against moe_forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/numerics.h"
#include "host/emulator.h"
#include "reference/moe.h"
#include "row_norm_harness.h"  // to_storage / from_storage / tolerance
#include "rudnn/moe/combine.cuh"
#include "rudnn/moe/dispatch.cuh"
#include "rudnn/moe/experts_scalar.cuh"

namespace {

namespace host = rudnn::runtime::host;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i64;
using rudnn::u32;

constexpr std::size_t kGuard = 16;

template <class T, class P>
void gate_up_entry(void** a) {
  rudnn::moe::swiglu_gate_up_scalar<T, P>(
      *static_cast<const T* const*>(a[0]), *static_cast<const u32* const*>(a[1]), *static_cast<const T* const*>(a[2]),
      *static_cast<const T* const*>(a[3]), *static_cast<T* const*>(a[4]), *static_cast<const i64*>(a[5]),
      *static_cast<const i64*>(a[6]), *static_cast<const i64*>(a[7]), *static_cast<const i64*>(a[8]));
}
template <class T, class P>
void down_entry(void** a) {
  rudnn::moe::expert_down_scalar<T, P>(*static_cast<const T* const*>(a[0]), *static_cast<const u32* const*>(a[1]),
                                       *static_cast<const T* const*>(a[2]), *static_cast<T* const*>(a[3]),
                                       *static_cast<const i64*>(a[4]), *static_cast<const i64*>(a[5]),
                                       *static_cast<const i64*>(a[6]), *static_cast<const i64*>(a[7]));
}

using Small = rudnn::moe::ScalarGemmPolicy<16, 32, 16, 2, 2>;
using Medium = rudnn::moe::ScalarGemmPolicy<32, 64, 16, 4, 4>;
using Wide = rudnn::moe::ScalarGemmPolicy<64, 64, 16, 4, 4>;
using Oblong = rudnn::moe::ScalarGemmPolicy<32, 32, 16, 2, 4>;

const host::Schedule kOrders[] = {host::Schedule::Forward, host::Schedule::Reverse};

using rudnn::testing::fresh_seed;

template <class T>
struct Tensor {
  std::vector<T> data;        // storage, what the kernel reads
  std::vector<double> exact;  // the same values in FP64, what the oracle reads
};
template <class T>
Tensor<T> random_tensor(std::size_t n, double scale, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-scale, scale);
  Tensor<T> t{std::vector<T>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    t.data[i] = to_storage<T>(u(rng));
    t.exact[i] = from_storage(t.data[i]);
  }
  return t;
}
template <class T>
std::vector<T> poisoned(std::size_t n) {
  std::vector<T> v(n + kGuard);
  std::memset(v.data(), 0xFF, v.size() * sizeof(T));
  return v;
}

// Absolute error of rounding a result in T's subnormal range (half the smallest step): f16 outputs
// of tiny products (e.g. H = I = 1) would otherwise fail a purely relative bound.
template <class T>
double subnormal_floor() {
  if constexpr (std::is_same_v<T, rudnn::f16>) return std::ldexp(1.0, -25);
  return std::ldexp(1.0, -140);
}

// Every element written, relative L2 error within DESIGN §5's bound, each element within a few
// times that bound (relative to max(|want|, rms(want))), and the guard untouched. Both bounds allow
// T's subnormal rounding on top.
template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size() + kGuard);
  double err2 = 0.0, ref2 = 0.0;
  for (double w : want) ref2 += w * w;
  const double rms = want.empty() ? 0.0 : std::sqrt(ref2 / static_cast<double>(want.size()));
  const double tol = row_norm_test::tolerance<T>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = from_storage(got[i]);
    ASSERT_FALSE(std::isnan(g)) << what << "[" << i << "] not written (want " << want[i] << ")";
    ASSERT_LE(std::fabs(g - want[i]), 4.0 * tol * std::max(std::fabs(want[i]), rms) + subnormal_floor<T>())
        << what << "[" << i << "] got " << g << " want " << want[i];
    err2 += (g - want[i]) * (g - want[i]);
  }
  const double floor = std::sqrt(static_cast<double>(want.size())) * subnormal_floor<T>();
  if (ref2 > 0.0) EXPECT_LE(std::sqrt(err2), tol * std::sqrt(ref2) + floor) << what << ": L2 error vs tol·‖want‖";
  std::vector<unsigned char> ff(kGuard * sizeof(T), 0xFF);
  ASSERT_EQ(std::memcmp(&got[want.size()], ff.data(), ff.size()), 0) << what << ": guard past the end";
}

struct ExpertsCase {
  std::string name;
  std::vector<u32> counts;  // rows per expert
  i64 hidden, inter;
};

enum class Grid { Formula, One, Small, Large };
const char* grid_name(Grid g) {
  static const char* const kNames[] = {"formula", "1x1", "2x3", "large"};
  return kNames[static_cast<int>(g)];
}
// The integrator's geometry (x over output columns, y over M tiles), or a variation of it.
template <class P>
host::Dim3 grid_for(Grid g, i64 cols, i64 n_rows, i64 experts) {
  const auto x = static_cast<unsigned>(std::max<i64>(1, (cols + P::kBN - 1) / P::kBN));
  const auto y = static_cast<unsigned>(std::max<i64>(1, (n_rows + P::kBM - 1) / P::kBM));
  switch (g) {
    case Grid::Formula: return {x, y, 1};
    case Grid::One: return {1, 1, 1};
    case Grid::Small: return {std::min(x, 2u), std::min(y, 3u), 1};
    case Grid::Large: return {x + 1, y + static_cast<unsigned>(experts) + 2, 1};
  }
  return {x, y, 1};
}

template <class T, class P>
void run_experts(const ExpertsCase& c, Grid grid, host::Schedule order, std::uint64_t seed) {
  SCOPED_TRACE(c.name + " H=" + std::to_string(c.hidden) + " I=" + std::to_string(c.inter) +
               " policy=" + std::to_string(P::kBM) + "x" + std::to_string(P::kBN) + "x" + std::to_string(P::kBK) + "/" +
               std::to_string(P::kTM) + "x" + std::to_string(P::kTN) + " grid=" + grid_name(grid) +
               (order == host::Schedule::Forward ? " forward" : " reverse") + " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const i64 E = static_cast<i64>(c.counts.size()), H = c.hidden, I = c.inter;
  std::vector<u32> offsets(c.counts.size() + 1, 0);
  std::partial_sum(c.counts.begin(), c.counts.end(), offsets.begin() + 1);
  const i64 N = offsets.back();
  const auto n = static_cast<std::size_t>(N);
  auto x = random_tensor<T>(n * static_cast<std::size_t>(H), 1.0, rng);
  auto gate = random_tensor<T>(static_cast<std::size_t>(E * I * H), 2.0 / std::sqrt(static_cast<double>(H)), rng);
  auto up = random_tensor<T>(static_cast<std::size_t>(E * I * H), 2.0 / std::sqrt(static_cast<double>(H)), rng);
  auto down = random_tensor<T>(static_cast<std::size_t>(E * H * I), 2.0 / std::sqrt(static_cast<double>(I)), rng);
  auto act_in = random_tensor<T>(n * static_cast<std::size_t>(I), 1.0, rng);

  i64 n_arg = N, e_arg = E, h_arg = H, i_arg = I;
  const u32* off = offsets.data();
  {  // gate_up
    auto act = poisoned<T>(n * static_cast<std::size_t>(I));
    const T *xp = x.data.data(), *gp = gate.data.data(), *upp = up.data.data();
    T* ap = act.data();
    void* args[] = {&xp, &off, &gp, &upp, &ap, &n_arg, &e_arg, &h_arg, &i_arg};
    auto st = host::launch(&gate_up_entry<T, P>, args, grid_for<P>(grid, I, N, E),
                           {static_cast<unsigned>(P::kThreads), 1, 1}, P::kSharedBytesGateUp, {order, seed});
    ASSERT_TRUE(st.ok()) << st.error().message();
    expect_close(act, rudnn::reference::swiglu_act(x.exact, offsets, gate.exact, up.exact, H, I), "act");
  }
  {  // down, on its own random activations
    auto out = poisoned<T>(n * static_cast<std::size_t>(H));
    const T *ap = act_in.data.data(), *dp = down.data.data();
    T* op = out.data();
    void* args[] = {&ap, &off, &dp, &op, &n_arg, &e_arg, &i_arg, &h_arg};
    auto st = host::launch(&down_entry<T, P>, args, grid_for<P>(grid, H, N, E),
                           {static_cast<unsigned>(P::kThreads), 1, 1}, P::kSharedBytesDown, {order, seed});
    ASSERT_TRUE(st.ok()) << st.error().message();
    expect_close(out, rudnn::reference::expert_down(act_in.exact, offsets, down.exact, H, I), "out");
  }
}

std::vector<ExpertsCase> experts_cases() {
  return {
      {"odd sizes", {5, 0, 9}, 7, 5},
      {"n_rows=1", {0, 0, 1, 0}, 13, 9},
      {"skewed", {70, 1, 0, 0, 3, 0, 17, 0}, 33, 70},
      {"one busy expert of 16", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 40}, 64, 48},
      {"tile edges", {33, 32, 31, 64}, 40, 100},
      {"no rows", {0, 0, 0}, 8, 8},
      {"E=1", {1}, 1, 1},
  };
}

template <class T, class P>
void experts_suite(std::initializer_list<Grid> grids) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("suite seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const ExpertsCase& c : experts_cases())
    for (Grid g : grids)
      for (auto order : kOrders) {
        run_experts<T, P>(c, g, order, rng());
        if (::testing::Test::HasFatalFailure()) return;
      }
}

constexpr auto kAllGrids = {Grid::Formula, Grid::One, Grid::Small, Grid::Large};
constexpr auto kSomeGrids = {Grid::Formula, Grid::Small};

TEST(MoeExpertsScalarTemplate, F32Medium) { experts_suite<float, Medium>(kAllGrids); }
TEST(MoeExpertsScalarTemplate, F32Small) { experts_suite<float, Small>(kAllGrids); }
TEST(MoeExpertsScalarTemplate, F32Wide) { experts_suite<float, Wide>(kSomeGrids); }
TEST(MoeExpertsScalarTemplate, F32Oblong) { experts_suite<float, Oblong>(kSomeGrids); }
TEST(MoeExpertsScalarTemplate, F16Medium) { experts_suite<rudnn::f16, Medium>(kSomeGrids); }
TEST(MoeExpertsScalarTemplate, F16Small) { experts_suite<rudnn::f16, Small>(kSomeGrids); }
TEST(MoeExpertsScalarTemplate, BF16Medium) { experts_suite<rudnn::bf16, Medium>(kSomeGrids); }
TEST(MoeExpertsScalarTemplate, BF16Small) { experts_suite<rudnn::bf16, Small>(kSomeGrids); }

// ---------------------------------------------------------------------------------------------------
// The whole chain on the emulator vs reference::moe_forward (FP64 on the same rounded inputs).

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

template <class T>
void run_chain(host::Schedule order, std::uint64_t seed) {
  SCOPED_TRACE(std::string("chain ") + (order == host::Schedule::Forward ? "forward" : "reverse") +
               " seed=" + std::to_string(seed));
  using P = Medium;
  std::mt19937_64 rng(seed);
  const i64 T_ = 23, E = 6, K = 2, H = 24, I = 20, A = T_ * K;
  auto input = random_tensor<T>(static_cast<std::size_t>(T_ * H), 1.0, rng);
  auto gate = random_tensor<T>(static_cast<std::size_t>(E * I * H), 2.0 / std::sqrt(double(H)), rng);
  auto up = random_tensor<T>(static_cast<std::size_t>(E * I * H), 2.0 / std::sqrt(double(H)), rng);
  auto down = random_tensor<T>(static_cast<std::size_t>(E * H * I), 2.0 / std::sqrt(double(I)), rng);
  rudnn::reference::Routing routing;
  std::vector<u32> perm(static_cast<std::size_t>(E));
  std::vector<T> weights;
  std::uniform_real_distribution<double> uw(0.0, 1.0);
  for (i64 t = 0; t < T_; ++t) {
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (i64 j = 0; j < K; ++j) {
      routing.indices.push_back(t < 5 ? static_cast<u32>(j) : perm[static_cast<std::size_t>(j)]);  // skew to 0, 1
      weights.push_back(to_storage<T>(uw(rng)));
      routing.weights.push_back(from_storage(weights.back()));
    }
  }
  std::vector<u32> offsets(static_cast<std::size_t>(E + 1)), slots(static_cast<std::size_t>(A));
  std::vector<T> rows(static_cast<std::size_t>(A * H)), act(static_cast<std::size_t>(A * I)),
      expert_out(static_cast<std::size_t>(A * H));
  auto out = poisoned<T>(static_cast<std::size_t>(T_ * H));
  const u32* idx = routing.indices.data();
  u32 *off = offsets.data(), *sl = slots.data();
  const T *in = input.data.data(), *gp = gate.data.data(), *upp = up.data.data(), *dp = down.data.data(),
          *wp = weights.data();
  T *rp = rows.data(), *ap = act.data(), *ep = expert_out.data(), *op = out.data();
  i64 a_arg = A, e_arg = E, k_arg = K, h_arg = H, i_arg = I, t_arg = T_, n_arg = A;
  const host::ScheduleOptions sched{order, seed};

  void* rank_args[] = {&idx, &off, &sl, &a_arg, &e_arg};
  auto st = host::launch(&rank_entry<256>, rank_args, {1, 1, 1}, {256, 1, 1}, 32, sched);
  ASSERT_TRUE(st.ok()) << st.error().message();
  void* scatter_args[] = {&in, &sl, &rp, &a_arg, &k_arg, &h_arg};
  st = host::launch(&scatter_entry<T, 64, 2>, scatter_args, {static_cast<unsigned>(A), 1, 1}, {64, 1, 1}, 0, sched);
  ASSERT_TRUE(st.ok()) << st.error().message();
  void* gate_args[] = {&rp, &off, &gp, &upp, &ap, &n_arg, &e_arg, &h_arg, &i_arg};
  st = host::launch(&gate_up_entry<T, P>, gate_args, grid_for<P>(Grid::Formula, I, A, E), {P::kThreads, 1, 1},
                    P::kSharedBytesGateUp, sched);
  ASSERT_TRUE(st.ok()) << st.error().message();
  void* down_args[] = {&ap, &off, &dp, &ep, &n_arg, &e_arg, &i_arg, &h_arg};
  st = host::launch(&down_entry<T, P>, down_args, grid_for<P>(Grid::Formula, H, A, E), {P::kThreads, 1, 1},
                    P::kSharedBytesDown, sched);
  ASSERT_TRUE(st.ok()) << st.error().message();
  void* combine_args[] = {&ep, &sl, &wp, &op, &t_arg, &k_arg, &h_arg};
  st = host::launch(&combine_entry<T, T, 128, 4>, combine_args, {static_cast<unsigned>(T_), 1, 1}, {128, 1, 1}, 0,
                    sched);
  ASSERT_TRUE(st.ok()) << st.error().message();

  auto want = rudnn::reference::moe_forward(input.exact, routing, K, gate.exact, up.exact, down.exact, E, H, I);
  // Three roundings to T on the way (rows are exact copies; act, expert rows, output): a looser
  // per-element bound than one kernel's, the same relative L2 bound.
  double err2 = 0.0, ref2 = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = from_storage(out[i]);
    ASSERT_FALSE(std::isnan(g)) << "out[" << i << "]";
    err2 += (g - want[i]) * (g - want[i]);
    ref2 += want[i] * want[i];
  }
  EXPECT_LE(std::sqrt(err2 / ref2), row_norm_test::tolerance<T>()) << "relative L2 error of the MoE forward";
}

TEST(MoeExpertsScalarTemplate, ChainF32) {
  rudnn_emu_bind(host::emulator_api());
  for (auto order : kOrders) run_chain<float>(order, fresh_seed());
}
TEST(MoeExpertsScalarTemplate, ChainF16) {
  rudnn_emu_bind(host::emulator_api());
  for (auto order : kOrders) run_chain<rudnn::f16>(order, fresh_seed());
}

}  // namespace
