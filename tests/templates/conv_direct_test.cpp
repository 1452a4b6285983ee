// rudnn::conv direct kernels (conv_fprop_direct, conv_dgrad_direct, conv_wgrad_direct,
// conv_bias_grad), the depthwise forward (conv_fprop_depthwise) and the layout swap
// (swap_last_two) on the host emulation device vs the FP64 oracles of tests/reference/conv.h:
// 1-D (k = 4), 2-D (1×1, 3×3, 7×7), 3-D (3×3×3); stride 1/2/3, padding 0..k, dilation 1/2,
// groups 1/2/C (depthwise, multiplier 1 and 2); odd extents; N = 0, 1, 3; f32, f16, bf16; bias
// void / float / T. Every kernel runs on four grids (natural, one block, 2×3 blocks, natural + 3)
// under the forward and reverse schedules: all eight results must be bit-identical. Outputs are
// poisoned (NaN bytes) with guard elements past the end that must stay untouched.
//
// Error bound per element (not a tuned constant): the kernels sum K products (and the bias) in FP32
// and round once to T, so |got − want| ≤ u_T·|want| + (1 + u_T)·γ_K·Σ|terms|, γ_K = K·u/(1 − K·u),
// u = 2⁻²⁴ (Higham, any summation order), u_T the unit roundoff of T; Σ|terms| is the oracle run on
// the absolute values of the inputs. Plus half of T's smallest subnormal step. On top, the relative
// L2 error must meet DESIGN §5's per-dtype bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/numerics.h"
#include "host/emulator.h"
#include "reference/conv.h"
#include "row_norm_harness.h"  // to_storage / from_storage / tolerance
#include "rudnn/conv/depthwise.cuh"
#include "rudnn/conv/depthwise_backward.cuh"
#include "rudnn/conv/direct.cuh"
#include "rudnn/conv/implicit_gemm.cuh"
#include "rudnn/conv/layout.cuh"

namespace {

namespace host = rudnn::runtime::host;
namespace conv = rudnn::conv;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i64;
using rudnn::reference::ConvShape;
using rudnn::testing::fresh_seed;

constexpr std::size_t kGuard = 16;

template <class X>
X arg(void** a, int i) {
  return *static_cast<X*>(a[i]);
}

// ---- kernel entries (what the generated extern "C" function does, one per thread)

template <class T, class B, class G, class P>
void fprop_entry(void** a) {
  conv::conv_fprop_direct<T, B, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<const B*>(a, 2), arg<T*>(a, 3),
                                      arg<i64>(a, 4));
}
template <class T, class B, class G, class P>
void depthwise_entry(void** a) {
  conv::conv_fprop_depthwise<T, B, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<const B*>(a, 2), arg<T*>(a, 3),
                                         arg<i64>(a, 4));
}
template <class T, class G, class P>
void dgrad_entry(void** a) {
  conv::conv_dgrad_direct<T, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<T*>(a, 2), arg<i64>(a, 3));
}
template <class T, class G, class P>
void wgrad_entry(void** a) {
  conv::conv_wgrad_direct<T, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<T*>(a, 2), arg<i64>(a, 3));
}
template <class T, class G, class P>
void depthwise_dgrad_entry(void** a) {
  conv::conv_dgrad_depthwise<T, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<T*>(a, 2), arg<i64>(a, 3));
}
template <class T, class G, class P>
void depthwise_wgrad_entry(void** a) {
  conv::conv_wgrad_depthwise<T, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<float*>(a, 2), arg<i64>(a, 3),
                                      arg<i64>(a, 4));
}
template <class T>
void wgrad_reduce_entry(void** a) {
  conv::conv_split_reduce<T, void>(arg<const float*>(a, 0), nullptr, arg<T*>(a, 1), arg<i64>(a, 2), 1, arg<i64>(a, 3));
}
template <class T, class P>
void bias_grad_entry(void** a) {
  conv::conv_bias_grad<T, P>(arg<const T*>(a, 0), arg<float*>(a, 1), arg<i64>(a, 2), arg<i64>(a, 3));
}
template <class T>
void swap_entry(void** a) {
  conv::swap_last_two<T>(arg<const T*>(a, 0), arg<T*>(a, 1), arg<i64>(a, 2), arg<i64>(a, 3), arg<i64>(a, 4));
}

template <class G>
ConvShape shape_of(i64 n) {
  ConvShape s;
  s.batch = n;
  s.channels = G::kC;
  s.out_channels = G::kO;
  s.groups = G::kGroups;
  s.input = {G::kD, G::kH, G::kW};
  s.kernel = {G::kKD, G::kKH, G::kKW};
  s.stride = {G::kSD, G::kSH, G::kSW};
  s.padding = {G::kPD, G::kPH, G::kPW};
  s.dilation = {G::kDD, G::kDH, G::kDW};
  return s;
}

// ---- data

template <class T>
double unit_roundoff() {
  if constexpr (std::is_same_v<T, float>) return std::ldexp(1.0, -24);
  if constexpr (std::is_same_v<T, rudnn::f16>) return std::ldexp(1.0, -11);
  return std::ldexp(1.0, -8);
}
template <class T>
double subnormal_floor() {  // half the smallest step of T's subnormal range
  if constexpr (std::is_same_v<T, rudnn::f16>) return std::ldexp(1.0, -25);
  return std::ldexp(1.0, -150);
}
template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, rudnn::f16>) return "f16";
  return "bf16";
}
template <class B, class T>
const char* bias_name() {
  if constexpr (std::is_void_v<B>) return "no bias";
  if constexpr (std::is_same_v<B, float>) return "f32 bias";
  return "T bias";
}

template <class T>
struct Tensor {
  std::vector<T> data;            // storage, what the kernel reads
  std::vector<double> exact;      // the same values in FP64, what the oracle reads
  std::vector<double> magnitude;  // |exact|: the oracle on these gives Σ|terms|
};
template <class T>
Tensor<T> random_tensor(i64 count, double scale, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-scale, scale);
  const auto n = static_cast<std::size_t>(count);
  Tensor<T> t{std::vector<T>(n), std::vector<double>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    t.data[i] = to_storage<T>(u(rng));
    t.exact[i] = from_storage(t.data[i]);
    t.magnitude[i] = std::fabs(t.exact[i]);
  }
  return t;
}

template <class T>
std::vector<T> poisoned(std::size_t n) {
  std::vector<T> v(n + kGuard);
  std::memset(v.data(), 0xFF, v.size() * sizeof(T));
  return v;
}

// ---- running: every grid and schedule must give the same bits

unsigned natural_blocks(i64 items) { return static_cast<unsigned>(std::max<i64>(1, items)); }
i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

// Launches `entry` with args (args[out_slot] is filled with the output pointer) on the natural
// grid, one block, a 2×3 grid and natural + 3 blocks, forward and reverse; expects identical bytes
// (guards included) from all eight and returns the first result (empty after a launch failure).
template <class Out>
std::vector<Out> run_everywhere(host::ThreadEntry entry, std::vector<void*> args, std::size_t out_slot,
                                std::size_t count, unsigned natural, unsigned threads, std::size_t shared,
                                std::uint64_t seed) {
  Out* out_ptr = nullptr;
  args[out_slot] = &out_ptr;
  const host::Dim3 grids[] = {{natural, 1, 1}, {1, 1, 1}, {2, 3, 1}, {natural + 3, 1, 1}};
  std::vector<Out> first;
  for (const host::Dim3& grid : grids)
    for (auto order : {host::Schedule::Forward, host::Schedule::Reverse}) {
      auto out = poisoned<Out>(count);
      out_ptr = out.data();
      auto st = host::launch(entry, args.data(), grid, {threads, 1, 1}, shared, {order, seed});
      EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
      if (!st.ok()) return {};
      if (first.empty()) {
        first = std::move(out);
      } else {
        EXPECT_EQ(std::memcmp(first.data(), out.data(), out.size() * sizeof(Out)), 0)
            << "grid " << grid.x << "x" << grid.y << (order == host::Schedule::Forward ? " forward" : " reverse")
            << " differs from the natural grid, forward";
      }
    }
  return first;
}

// The per-element bound of the file's header for a sum of `terms` terms, the relative L2 bound, every
// element written, the guard untouched.
template <class Out>
void expect_within_bound(const std::vector<Out>& got, const std::vector<double>& want,
                         const std::vector<double>& magnitude, double terms, const char* what) {
  ASSERT_EQ(got.size(), want.size() + kGuard) << what;
  const double u = std::ldexp(1.0, -24), u_out = unit_roundoff<Out>();
  const double gamma = terms * u / (1.0 - terms * u);
  double err2 = 0.0, ref2 = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = from_storage(got[i]);
    ASSERT_FALSE(std::isnan(g)) << what << "[" << i << "] not written (want " << want[i] << ")";
    const double bound = u_out * std::fabs(want[i]) + (1.0 + u_out) * gamma * magnitude[i] + subnormal_floor<Out>();
    ASSERT_LE(std::fabs(g - want[i]), bound) << what << "[" << i << "] got " << g << " want " << want[i];
    err2 += (g - want[i]) * (g - want[i]);
    ref2 += want[i] * want[i];
  }
  const double floor = std::sqrt(static_cast<double>(want.size())) * subnormal_floor<Out>();
  if (ref2 > 0.0)
    EXPECT_LE(std::sqrt(err2), row_norm_test::tolerance<Out>() * std::sqrt(ref2) + floor) << what << ": L2 error";
  std::vector<unsigned char> ff(kGuard * sizeof(Out), 0xFF);
  EXPECT_EQ(std::memcmp(&got[want.size()], ff.data(), ff.size()), 0) << what << ": guard past the end";
}

// ---- direct kernels on one geometry

template <class T>
struct ConvData {
  ConvShape shape;
  Tensor<T> x, w, dy, bias_t;
  Tensor<float> bias_f;
};
template <class T, class G>
ConvData<T> conv_data(i64 n, std::mt19937_64& rng) {
  ConvData<T> d;
  d.shape = shape_of<G>(n);
  d.x = random_tensor<T>(d.shape.input_elements(), 1.0, rng);
  d.w = random_tensor<T>(d.shape.weight_elements(), 1.0 / std::sqrt(static_cast<double>(G::kFilter)), rng);
  d.dy = random_tensor<T>(d.shape.output_elements(), 1.0, rng);
  d.bias_t = random_tensor<T>(G::kO, 1.0, rng);
  d.bias_f = random_tensor<float>(G::kO, 1.0, rng);
  return d;
}

// Forward through `entry` (direct or depthwise; same parameters) with bias type B.
template <class T, class B, class G>
void check_forward(const ConvData<T>& d, host::ThreadEntry entry, unsigned natural, unsigned threads,
                   std::size_t shared, std::uint64_t seed) {
  SCOPED_TRACE((bias_name<B, T>()));
  const T *xp = d.x.data.data(), *wp = d.w.data.data();
  const void* bp = nullptr;
  std::vector<double> bias, bias_magnitude;
  if constexpr (std::is_same_v<B, float>) {
    bp = d.bias_f.data.data();
    bias = d.bias_f.exact;
    bias_magnitude = d.bias_f.magnitude;
  } else if constexpr (!std::is_void_v<B>) {
    bp = d.bias_t.data.data();
    bias = d.bias_t.exact;
    bias_magnitude = d.bias_t.magnitude;
  }
  i64 n = d.shape.batch;
  auto y = run_everywhere<T>(entry, {&xp, &wp, &bp, nullptr, &n}, 3,
                             static_cast<std::size_t>(d.shape.output_elements()), natural, threads, shared, seed);
  if (y.empty()) return;
  expect_within_bound(y, rudnn::reference::conv_forward(d.x.exact, d.w.exact, bias, d.shape),
                      rudnn::reference::conv_forward(d.x.magnitude, d.w.magnitude, bias_magnitude, d.shape),
                      static_cast<double>(G::kFilter + 1), "y");
}

template <class T, class G, class P>
void check_direct(i64 n, std::uint64_t seed) {
  SCOPED_TRACE(std::string(type_name<T>()) + " N=" + std::to_string(n) + " threads=" + std::to_string(P::kThreads) +
               " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const ConvData<T> d = conv_data<T, G>(n, rng);
  const unsigned threads = P::kThreads;
  const unsigned fprop_blocks = natural_blocks(ceil_div(d.shape.output_elements(), P::kThreads));
  check_forward<T, void, G>(d, &fprop_entry<T, void, G, P>, fprop_blocks, threads, 0, seed);
  check_forward<T, float, G>(d, &fprop_entry<T, float, G, P>, fprop_blocks, threads, 0, seed);
  if constexpr (!std::is_same_v<T, float>)
    check_forward<T, T, G>(d, &fprop_entry<T, T, G, P>, fprop_blocks, threads, 0, seed);

  {  // data gradient
    const T *dyp = d.dy.data.data(), *wp = d.w.data.data();
    i64 n_arg = n;
    auto dx = run_everywhere<T>(&dgrad_entry<T, G, P>, {&dyp, &wp, nullptr, &n_arg}, 2,
                                static_cast<std::size_t>(d.shape.input_elements()),
                                natural_blocks(ceil_div(d.shape.input_elements(), P::kThreads)), threads, 0, seed);
    if (!dx.empty())
      expect_within_bound(dx, rudnn::reference::conv_data_backward(d.dy.exact, d.w.exact, d.shape),
                          rudnn::reference::conv_data_backward(d.dy.magnitude, d.w.magnitude, d.shape),
                          static_cast<double>(G::kTaps * G::kOg), "dx");
  }
  {  // weight gradient
    const T *xp = d.x.data.data(), *dyp = d.dy.data.data();
    i64 n_arg = n;
    auto dw = run_everywhere<T>(&wgrad_entry<T, G, P>, {&xp, &dyp, nullptr, &n_arg}, 2,
                                static_cast<std::size_t>(d.shape.weight_elements()),
                                natural_blocks(conv::shared_memory::wgrad_direct_items(G::kO, G::kGroups, G::kFilter)),
                                threads, static_cast<std::size_t>(P::kWgradSharedBytes), seed);
    if (!dw.empty())
      expect_within_bound(dw, rudnn::reference::conv_weight_backward(d.x.exact, d.dy.exact, d.shape),
                          rudnn::reference::conv_weight_backward(d.x.magnitude, d.dy.magnitude, d.shape),
                          static_cast<double>(std::max<i64>(1, n * G::kOutPixels)), "dw");
  }
}

template <class G, int kThreads>
void direct_suite() {
  rudnn_emu_bind(host::emulator_api());
  using P = conv::DirectPolicy<kThreads>;
  for (i64 n : {0, 1, 3}) {
    check_direct<float, G, P>(n, fresh_seed());
    if (::testing::Test::HasFatalFailure()) return;
    check_direct<rudnn::f16, G, P>(n, fresh_seed());
    if (::testing::Test::HasFatalFailure()) return;
    check_direct<rudnn::bf16, G, P>(n, fresh_seed());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Geometry<C, O, G, D, H, W, KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH, DW>
using conv::Geometry;
using Conv1dK4Stride2Pad3 = Geometry<5, 6, 1, 1, 1, 17, 1, 1, 4, 1, 1, 2, 0, 0, 3, 1, 1, 1>;
using Conv1dK4Stride3Pad4Dil2Groups2 = Geometry<4, 6, 2, 1, 1, 19, 1, 1, 4, 1, 1, 3, 0, 0, 4, 1, 1, 2>;
using Conv2d1x1 = Geometry<7, 5, 1, 1, 5, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1>;
using Conv2d1x1Stride2x3Pad1 = Geometry<3, 4, 1, 1, 7, 5, 1, 1, 1, 1, 2, 3, 0, 1, 1, 1, 1, 1>;
using Conv2d3x3Pad1 = Geometry<6, 8, 1, 1, 9, 7, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>;
using Conv2d3x3Stride2Dil2Groups2 = Geometry<6, 4, 2, 1, 11, 10, 1, 3, 3, 1, 2, 2, 0, 0, 0, 1, 2, 2>;
using Conv2d3x3Stride3Pad3 = Geometry<3, 5, 1, 1, 8, 9, 1, 3, 3, 1, 3, 3, 0, 3, 3, 1, 1, 1>;
using Conv2d7x7Stride2Pad3 = Geometry<3, 4, 1, 1, 13, 11, 1, 7, 7, 1, 2, 2, 0, 3, 3, 1, 1, 1>;
using Conv2d3x3Depthwise = Geometry<6, 6, 6, 1, 9, 8, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>;
using Conv2d3x3DepthwiseM2Stride2Dil2 = Geometry<5, 10, 5, 1, 10, 9, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 2, 2>;
using Conv3d3x3x3Pad1 = Geometry<4, 5, 1, 5, 6, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1>;
using Conv3d3x3x3Stride2Dil2Groups2 = Geometry<4, 6, 2, 7, 6, 9, 3, 3, 3, 2, 2, 2, 2, 1, 0, 2, 2, 2>;

TEST(ConvDirectTemplate, Conv1dK4Stride2Pad3) { direct_suite<Conv1dK4Stride2Pad3, 128>(); }
TEST(ConvDirectTemplate, Conv1dK4Stride3Pad4Dil2Groups2) { direct_suite<Conv1dK4Stride3Pad4Dil2Groups2, 256>(); }
TEST(ConvDirectTemplate, Conv2d1x1) { direct_suite<Conv2d1x1, 128>(); }
TEST(ConvDirectTemplate, Conv2d1x1Stride2x3Pad1) { direct_suite<Conv2d1x1Stride2x3Pad1, 256>(); }
TEST(ConvDirectTemplate, Conv2d3x3Pad1) { direct_suite<Conv2d3x3Pad1, 256>(); }
TEST(ConvDirectTemplate, Conv2d3x3Stride2Dil2Groups2) { direct_suite<Conv2d3x3Stride2Dil2Groups2, 128>(); }
TEST(ConvDirectTemplate, Conv2d3x3Stride3Pad3) { direct_suite<Conv2d3x3Stride3Pad3, 128>(); }
TEST(ConvDirectTemplate, Conv2d7x7Stride2Pad3) { direct_suite<Conv2d7x7Stride2Pad3, 256>(); }
TEST(ConvDirectTemplate, Conv2d3x3Depthwise) { direct_suite<Conv2d3x3Depthwise, 128>(); }
TEST(ConvDirectTemplate, Conv2d3x3DepthwiseM2Stride2Dil2) { direct_suite<Conv2d3x3DepthwiseM2Stride2Dil2, 256>(); }
TEST(ConvDirectTemplate, Conv3d3x3x3Pad1) { direct_suite<Conv3d3x3x3Pad1, 256>(); }
TEST(ConvDirectTemplate, Conv3d3x3x3Stride2Dil2Groups2) { direct_suite<Conv3d3x3x3Stride2Dil2Groups2, 128>(); }

// ---- depthwise forward

template <class T, class G, class P>
void check_depthwise(i64 n, std::uint64_t seed) {
  SCOPED_TRACE(std::string(type_name<T>()) + " N=" + std::to_string(n) + " tile=" + std::to_string(P::kTileH) + "x" +
               std::to_string(P::kTileW) + "x" + std::to_string(P::kChannels) + " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const ConvData<T> d = conv_data<T, G>(n, rng);
  const i64 tiles =
      n * G::kOD * ceil_div(G::kOH, P::kTileH) * ceil_div(G::kOW, P::kTileW) * ceil_div(G::kC, P::kChannels);
  const auto shared = static_cast<std::size_t>(P::template kSharedBytes<T, G>);
  check_forward<T, void, G>(d, &depthwise_entry<T, void, G, P>, natural_blocks(tiles), P::kThreads, shared, seed);
  if constexpr (std::is_same_v<T, float>)
    check_forward<T, float, G>(d, &depthwise_entry<T, float, G, P>, natural_blocks(tiles), P::kThreads, shared, seed);
  else
    check_forward<T, T, G>(d, &depthwise_entry<T, T, G, P>, natural_blocks(tiles), P::kThreads, shared, seed);
}

// Every tile in f32, the first one in the 16-bit types.
template <class G, class FirstTile, class... OtherTiles>
void depthwise_suite() {
  rudnn_emu_bind(host::emulator_api());
  for (i64 n : {0, 1, 3}) {
    check_depthwise<float, G, FirstTile>(n, fresh_seed());
    (check_depthwise<float, G, OtherTiles>(n, fresh_seed()), ...);
    check_depthwise<rudnn::f16, G, FirstTile>(n, fresh_seed());
    check_depthwise<rudnn::bf16, G, FirstTile>(n, fresh_seed());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

using conv::DepthwiseTile4x16x32;
using conv::DepthwiseTile8x8x32;
using conv::DepthwiseTile8x8x64;
using DepthwiseTile1x64x32 = conv::DepthwisePolicy<1, 64, 32>;  // not registered: a 1-D tile
using DepthwiseTile4x8x16 = conv::DepthwisePolicy<4, 8, 16>;    // not registered: 16 channels
using Depthwise7x7Stride2Pad3C40 = Geometry<40, 40, 40, 1, 19, 17, 1, 7, 7, 1, 2, 2, 0, 3, 3, 1, 1, 1>;
// od = 0 and 1 read only padding (id < 0): those outputs are the bias alone.
using Depthwise3d3x3x3Pad3 = Geometry<3, 3, 3, 3, 6, 7, 3, 3, 3, 2, 2, 1, 3, 1, 1, 1, 1, 1>;
using Depthwise1dK4C33 = Geometry<33, 33, 33, 1, 1, 70, 1, 1, 4, 1, 1, 1, 0, 0, 2, 1, 1, 1>;
using Depthwise1dK4M2Stride2Dil2 = Geometry<3, 6, 3, 1, 1, 29, 1, 1, 4, 1, 1, 2, 0, 0, 1, 1, 1, 2>;
// 16-byte channel vectors (kDepthwiseVector): C whole vectors, a partial last chunk (48 = 32 + 16), 3-D.
using Depthwise3x3C48 = Geometry<48, 48, 48, 1, 11, 10, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>;
using Depthwise3d3x3x3C16 = Geometry<16, 16, 16, 3, 6, 7, 3, 3, 3, 1, 1, 2, 1, 1, 1, 1, 1, 1>;
static_assert(conv::kDepthwiseVector<rudnn::bf16, Depthwise3x3C48, DepthwiseTile8x8x32> == 8);
static_assert(conv::kDepthwiseVector<float, Depthwise7x7Stride2Pad3C40, DepthwiseTile4x8x16> == 4);
static_assert(conv::kDepthwiseVector<rudnn::f16, Depthwise1dK4C33, DepthwiseTile8x8x32> == 1);        // C = 33
static_assert(conv::kDepthwiseVector<float, Depthwise1dK4M2Stride2Dil2, DepthwiseTile4x16x32> == 1);  // m = 2

TEST(ConvDepthwiseTemplate, Conv2d3x3Pad1) {
  depthwise_suite<Conv2d3x3Depthwise, DepthwiseTile8x8x32, DepthwiseTile4x16x32, DepthwiseTile8x8x64,
                  DepthwiseTile1x64x32, DepthwiseTile4x8x16>();
}
TEST(ConvDepthwiseTemplate, Conv2d3x3M2Stride2Dil2) {
  depthwise_suite<Conv2d3x3DepthwiseM2Stride2Dil2, DepthwiseTile4x16x32, DepthwiseTile8x8x32>();
}
TEST(ConvDepthwiseTemplate, Conv2d7x7Stride2Pad3PartialChannels) {
  depthwise_suite<Depthwise7x7Stride2Pad3C40, DepthwiseTile8x8x32, DepthwiseTile4x8x16, DepthwiseTile8x8x64>();
}
TEST(ConvDepthwiseTemplate, Conv3d3x3x3Pad3) {
  depthwise_suite<Depthwise3d3x3x3Pad3, DepthwiseTile8x8x32, DepthwiseTile4x16x32>();
}
TEST(ConvDepthwiseTemplate, ChannelVectors) {
  depthwise_suite<Depthwise3x3C48, DepthwiseTile8x8x32, DepthwiseTile4x16x32, DepthwiseTile8x8x64,
                  DepthwiseTile4x8x16>();
  depthwise_suite<Depthwise3d3x3x3C16, DepthwiseTile8x8x32, DepthwiseTile4x8x16>();
}
TEST(ConvDepthwiseTemplate, Conv1dK4PartialTile) {
  depthwise_suite<Depthwise1dK4C33, DepthwiseTile1x64x32, DepthwiseTile8x8x32>();
}
TEST(ConvDepthwiseTemplate, Conv1dK4M2Stride2Dil2) {
  depthwise_suite<Depthwise1dK4M2Stride2Dil2, DepthwiseTile4x16x32, DepthwiseTile1x64x32>();
}

// The shared memory the header promises for 7×7 stride 2: under 48 KiB with the 8×8×32 and
// 4×16×32 tiles in 16-bit types; f32 needs the opt-in. Independent of KD (one slice at a time).
TEST(ConvDepthwiseTemplate, SharedBytesOfTheRegisteredTiles) {
  using G = Geometry<64, 64, 64, 1, 56, 56, 1, 7, 7, 1, 2, 2, 0, 3, 3, 1, 1, 1>;
  using G3 = Geometry<64, 64, 64, 9, 56, 56, 5, 7, 7, 1, 2, 2, 2, 3, 3, 1, 1, 1>;
  EXPECT_LE((DepthwiseTile8x8x32::kSharedBytes<rudnn::bf16, G>), 48 * 1024);
  EXPECT_LE((DepthwiseTile4x16x32::kSharedBytes<rudnn::f16, G>), 48 * 1024);
  EXPECT_GT((DepthwiseTile8x8x32::kSharedBytes<float, G>), 48 * 1024);
  EXPECT_EQ((DepthwiseTile8x8x32::kSharedBytes<float, G>), (DepthwiseTile8x8x32::kSharedBytes<float, G3>));
  // weights 49·32·4 + halo (7·2 + 7)·(7·2 + 7)·32·2, rounded up to 16
  EXPECT_EQ((DepthwiseTile8x8x32::kSharedBytes<rudnn::bf16, G>), (49 * 32 * 4 + 21 * 21 * 32 * 2 + 15) / 16 * 16);
  EXPECT_EQ(DepthwiseTile8x8x32::kThreads, 256);
}

// ---- depthwise data and weight backward

template <class T, class G, class P>
void check_depthwise_backward(i64 n, std::uint64_t seed) {
  SCOPED_TRACE(std::string(type_name<T>()) + " N=" + std::to_string(n) + " tile=" + std::to_string(P::kTileH) + "x" +
               std::to_string(P::kTileW) + "x" + std::to_string(P::kChannels) + " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const ConvData<T> d = conv_data<T, G>(n, rng);
  {  // data gradient
    const i64 tiles =
        n * G::kD * ceil_div(G::kH, P::kTileH) * ceil_div(G::kW, P::kTileW) * ceil_div(G::kC, P::kChannels);
    const T *dyp = d.dy.data.data(), *wp = d.w.data.data();
    i64 n_arg = n;
    auto dx = run_everywhere<T>(&depthwise_dgrad_entry<T, G, P>, {&dyp, &wp, nullptr, &n_arg}, 2,
                                static_cast<std::size_t>(d.shape.input_elements()), natural_blocks(tiles), P::kThreads,
                                static_cast<std::size_t>(conv::kDepthwiseDgradSharedBytes<T, G, P>), seed);
    if (!dx.empty())
      expect_within_bound(dx, rudnn::reference::conv_data_backward(d.dy.exact, d.w.exact, d.shape),
                          rudnn::reference::conv_data_backward(d.dy.magnitude, d.w.magnitude, d.shape),
                          static_cast<double>(G::kTaps * G::kOg), "dx");
  }
  // weight gradient: split sums then the ordered reduce; splits 1, 3 and more splits than rows
  for (i64 splits : {i64{1}, i64{3}, i64{7}}) {
    SCOPED_TRACE("splits=" + std::to_string(splits));
    const T *xp = d.x.data.data(), *dyp = d.dy.data.data();
    i64 n_arg = n, s_arg = splits;
    const i64 elements = G::kO * G::kTaps;
    auto partial =
        run_everywhere<float>(&depthwise_wgrad_entry<T, G, P>, {&xp, &dyp, nullptr, &n_arg, &s_arg}, 2,
                              static_cast<std::size_t>(splits * elements),
                              natural_blocks(conv::shared_memory::depthwise_wgrad_items(G::kO, P::kChannels, splits)),
                              P::kThreads, static_cast<std::size_t>(conv::kDepthwiseWgradSharedBytes<T, G, P>), seed);
    if (partial.empty()) return;
    for (std::size_t i = 0; i < static_cast<std::size_t>(splits * elements); ++i)
      ASSERT_FALSE(std::isnan(partial[i])) << "partial[" << i << "] not written";
    const float* pp = partial.data();
    i64 e_arg = elements;
    auto dw =
        run_everywhere<T>(&wgrad_reduce_entry<T>, {&pp, nullptr, &e_arg, &s_arg}, 1, static_cast<std::size_t>(elements),
                          natural_blocks(ceil_div(elements, 256)), 256, 0, seed);
    if (!dw.empty())
      expect_within_bound(dw, rudnn::reference::conv_weight_backward(d.x.exact, d.dy.exact, d.shape),
                          rudnn::reference::conv_weight_backward(d.x.magnitude, d.dy.magnitude, d.shape),
                          static_cast<double>(std::max<i64>(1, n * G::kOutPixels)), "dw");
  }
}

template <class G, class FirstTile, class... OtherTiles>
void depthwise_backward_suite() {
  rudnn_emu_bind(host::emulator_api());
  for (i64 n : {0, 1, 3}) {
    check_depthwise_backward<float, G, FirstTile>(n, fresh_seed());
    (check_depthwise_backward<float, G, OtherTiles>(n, fresh_seed()), ...);
    check_depthwise_backward<rudnn::f16, G, FirstTile>(n, fresh_seed());
    check_depthwise_backward<rudnn::bf16, G, FirstTile>(n, fresh_seed());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

using DepthwiseM2Stride2Pad0 = Geometry<5, 10, 5, 1, 11, 12, 1, 3, 3, 1, 2, 2, 0, 0, 0, 1, 1, 1>;

TEST(ConvDepthwiseBackwardTemplate, Conv2d3x3Pad1) {
  depthwise_backward_suite<Conv2d3x3Depthwise, DepthwiseTile8x8x32, DepthwiseTile4x16x32, DepthwiseTile8x8x64,
                           DepthwiseTile4x8x16>();
}
TEST(ConvDepthwiseBackwardTemplate, Conv2d3x3M2Stride2Dil2) {
  depthwise_backward_suite<Conv2d3x3DepthwiseM2Stride2Dil2, DepthwiseTile4x16x32, DepthwiseTile8x8x32>();
}
TEST(ConvDepthwiseBackwardTemplate, Conv2d3x3M2Stride2Pad0) {
  depthwise_backward_suite<DepthwiseM2Stride2Pad0, DepthwiseTile8x8x32, DepthwiseTile4x8x16>();
}
TEST(ConvDepthwiseBackwardTemplate, Conv2d7x7Stride2Pad3PartialChannels) {
  depthwise_backward_suite<Depthwise7x7Stride2Pad3C40, DepthwiseTile8x8x32, DepthwiseTile4x8x16, DepthwiseTile8x8x64>();
}
TEST(ConvDepthwiseBackwardTemplate, ChannelVectors) {
  depthwise_backward_suite<Depthwise3x3C48, DepthwiseTile8x8x32, DepthwiseTile8x8x64, DepthwiseTile4x8x16>();
  depthwise_backward_suite<Depthwise3d3x3x3C16, DepthwiseTile8x8x32, DepthwiseTile4x16x32>();
}
TEST(ConvDepthwiseBackwardTemplate, Conv3d3x3x3Pad3) {
  depthwise_backward_suite<Depthwise3d3x3x3Pad3, DepthwiseTile8x8x32, DepthwiseTile4x16x32>();
}
TEST(ConvDepthwiseBackwardTemplate, Conv1dK4PartialTile) {
  depthwise_backward_suite<Depthwise1dK4C33, DepthwiseTile1x64x32, DepthwiseTile8x8x32>();
}
TEST(ConvDepthwiseBackwardTemplate, Conv1dK4M2Stride2Dil2) {
  depthwise_backward_suite<Depthwise1dK4M2Stride2Dil2, DepthwiseTile4x16x32, DepthwiseTile1x64x32>();
}

// ---- bias gradient

template <class T, class P>
void check_bias_grad(i64 rows, i64 channels, std::uint64_t seed) {
  SCOPED_TRACE(std::string(type_name<T>()) + " rows=" + std::to_string(rows) + " channels=" + std::to_string(channels) +
               " threads=" + std::to_string(P::kThreads) + " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto dy = random_tensor<T>(rows * channels, 1.0, rng);
  ConvShape shape;
  shape.out_channels = channels;
  const T* dyp = dy.data.data();
  i64 r = rows, c = channels;
  auto db =
      run_everywhere<float>(&bias_grad_entry<T, P>, {&dyp, nullptr, &r, &c}, 1, static_cast<std::size_t>(channels),
                            natural_blocks(conv::shared_memory::bias_grad_blocks(channels)), P::kThreads,
                            static_cast<std::size_t>(P::kBiasGradSharedBytes), seed);
  if (!db.empty())
    expect_within_bound(db, rudnn::reference::conv_bias_backward(dy.exact, shape),
                        rudnn::reference::conv_bias_backward(dy.magnitude, shape),
                        static_cast<double>(std::max<i64>(1, rows)), "db");
}

template <class T>
void bias_grad_suite() {
  rudnn_emu_bind(host::emulator_api());
  const std::pair<i64, i64> cases[] = {{0, 5}, {1, 1}, {37, 33}, {300, 70}, {1000, 8}};
  for (auto [rows, channels] : cases) {
    check_bias_grad<T, conv::DirectPolicy<128>>(rows, channels, fresh_seed());
    check_bias_grad<T, conv::DirectPolicy<256>>(rows, channels, fresh_seed());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(ConvBiasGradTemplate, F32) { bias_grad_suite<float>(); }
TEST(ConvBiasGradTemplate, F16) { bias_grad_suite<rudnn::f16>(); }
TEST(ConvBiasGradTemplate, BF16) { bias_grad_suite<rudnn::bf16>(); }

// ---- layout swap: an exact copy

template <class T>
void swap_suite() {
  rudnn_emu_bind(host::emulator_api());
  struct Shape {
    i64 a, b, s;
  };
  const Shape shapes[] = {{0, 5, 7}, {1, 1, 1}, {2, 33, 65}, {3, 7, 40}, {1, 64, 32}, {2, 31, 1}, {1, 1, 70}};
  for (const Shape& sh : shapes) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(std::string(type_name<T>()) + " a=" + std::to_string(sh.a) + " b=" + std::to_string(sh.b) +
                 " s=" + std::to_string(sh.s) + " seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    auto src = random_tensor<T>(sh.a * sh.b * sh.s, 1.0, rng);
    const T* sp = src.data.data();
    i64 a = sh.a, b = sh.b, s = sh.s;
    auto dst = run_everywhere<T>(&swap_entry<T>, {&sp, nullptr, &a, &b, &s}, 1, src.data.size(),
                                 natural_blocks(sh.a * ceil_div(sh.b, 32) * ceil_div(sh.s, 32)), conv::kSwapThreads,
                                 static_cast<std::size_t>(conv::shared_memory::swap_last_two(sizeof(T))), seed);
    if (dst.empty()) return;
    const auto want = rudnn::reference::swap_last_two(src.exact, a, b, s);
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(from_storage(dst[i]), want[i]) << "dst[" << i << "]";
    std::vector<unsigned char> ff(kGuard * sizeof(T), 0xFF);
    EXPECT_EQ(std::memcmp(&dst[want.size()], ff.data(), ff.size()), 0) << "guard past the end";
  }
}

TEST(ConvLayoutTemplate, SwapLastTwoF32) { swap_suite<float>(); }
TEST(ConvLayoutTemplate, SwapLastTwoF16) { swap_suite<rudnn::f16>(); }
TEST(ConvLayoutTemplate, SwapLastTwoBF16) { swap_suite<rudnn::bf16>(); }

}  // namespace
