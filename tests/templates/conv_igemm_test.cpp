// rudnn::conv implicit-GEMM kernels (conv_fprop_igemm, conv_dgrad_igemm, conv_wgrad_igemm +
// conv_split_reduce) on the host emulation device vs the FP64 oracles of tests/reference/conv.h:
// tensor-core policies (f16, bf16) and plain policies (f32, f16); 1-D (k = 4), 2-D (1×1, 3×3, 7×7
// stride 2), 3-D (3×3×3); strides 1/2/3, padding 0..k, dilation 1/2; C and O not multiples of the
// tile nor (some) of 8 (element gathers); n = 0, 1, > 1; wgrad splits 1 and 3; bias void/float/T;
// split-K forward and data backward (conv_*_igemm_split + conv_split_reduce).
// Every run is repeated under the reverse schedule and with a grid smaller than the natural one
// (spread over x and y): the bits must not change. Outputs start as NaN bytes with guards after
// them that must stay untouched.
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
#include "row_norm_harness.h"  // to_storage / from_storage
#include "rudnn/conv/implicit_gemm.cuh"

namespace {

namespace host = rudnn::runtime::host;
namespace conv = rudnn::conv;
namespace gemm = rudnn::gemm;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i64;

// The registered policies (conv/implicit_gemm.cuh).
using TcLarge = gemm::BlockPolicy<128, 128, 32, 2, 4, 3, true>;
using TcLargeK64 = gemm::BlockPolicy<128, 128, 64, 2, 4, 3, true>;
using TcWide = gemm::BlockPolicy<64, 128, 32, 2, 2, 3, true>;
using TcMid = gemm::BlockPolicy<64, 64, 32, 2, 2, 4, true>;
using TcWarp64 = gemm::BlockPolicy<128, 128, 32, 2, 2, 4, true>;  // 4 warps of 64×64
using TcTall = gemm::BlockPolicy<128, 64, 32, 2, 2, 4, true>;     // 4 warps of 64×32
using Plain = gemm::BlockPolicy<64, 64, 16, 2, 4, 3, false>;
using PlainSmall = gemm::BlockPolicy<32, 32, 16, 2, 2, 2, false>;
// Hopper's warpgroup MMA (emulated): one warpgroup of 64 x 64, two of 64 x 128, two of 64 x 256.
using Wg64 = gemm::WgmmaPolicy<64, 64, 64, 4>;
using Wg128 = gemm::WgmmaPolicy<128, 128, 64, 4>;
using Wg128x256 = gemm::WgmmaPolicy<128, 256, 64, 3>;
using Wg64TwoStages = gemm::WgmmaPolicy<64, 64, 64, 2>;  // no wgmma group left in flight (as Wg128x256)

// Geometry<C, O, G, D, H, W, KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH, DW>
using Conv1d = conv::Geometry<5, 7, 1, 1, 1, 11, 1, 1, 4, 1, 1, 1, 0, 0, 2, 1, 1, 1>;       // C, O odd
using Conv1dS3D2 = conv::Geometry<8, 16, 1, 1, 1, 19, 1, 1, 4, 1, 1, 3, 0, 0, 4, 1, 1, 2>;  // pad = k
using Pointwise = conv::Geometry<16, 24, 1, 1, 5, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1>;   // 1×1
using Conv3x3S2 = conv::Geometry<24, 40, 1, 1, 9, 7, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1>;   // stride 2
using Conv3x3D2 = conv::Geometry<3, 10, 1, 1, 6, 7, 1, 3, 3, 1, 1, 1, 0, 2, 2, 1, 2, 2>;    // dilation 2
using Conv3x3S3 = conv::Geometry<16, 8, 1, 1, 7, 8, 1, 3, 3, 1, 3, 3, 0, 3, 3, 1, 1, 1>;    // stride 3, pad 3
using Conv7x7S2 = conv::Geometry<3, 16, 1, 1, 12, 11, 1, 7, 7, 1, 2, 2, 0, 3, 3, 1, 1, 1>;  // a stem
using Conv3d = conv::Geometry<8, 12, 1, 4, 5, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1>;       // 3×3×3
using Wide3x3 = conv::Geometry<40, 136, 1, 1, 12, 13, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>;  // 2 N tiles of 128
using Block3x3 = conv::Geometry<32, 64, 1, 1, 6, 5, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>;    // C, O % BK == 0
// The data backward's stride phases (conv/dgrad_phase.cuh):
using Conv3x3S2D2 = conv::Geometry<16, 24, 1, 1, 11, 10, 1, 3, 3, 1, 2, 2, 0, 2, 1, 1, 2, 2>;  // odd phases: no taps
using PointwiseS2 = conv::Geometry<16, 32, 1, 1, 7, 6, 1, 1, 1, 1, 2, 2, 0, 0, 0, 1, 1, 1>;    // 3 of 4 phases: zeros
using Conv3dS2 = conv::Geometry<8, 16, 1, 5, 6, 5, 3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1>;        // 8 phases
using Conv3x3S2x3 = conv::Geometry<8, 40, 1, 1, 9, 11, 1, 3, 5, 1, 2, 3, 0, 2, 1, 1, 1, 1>;    // 6 phases, pad 2
using Block3x3S2 = conv::Geometry<32, 64, 1, 1, 9, 8, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1>;     // B's one-tap K blocks
// The weight backward's pixel walk (igemm::WindowWalk: OutPixels > BK):
using WalkS2 = conv::Geometry<16, 24, 1, 1, 19, 23, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1>;  // 10×12: 32 = 2 rows + 8
using Walk3dS2 = conv::Geometry<8, 16, 1, 7, 9, 10, 3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1>;  // 4×5×5: 32 = 25 + 5 + 2
using Walk1dD2 = conv::Geometry<8, 8, 1, 1, 1, 100, 1, 1, 3, 1, 1, 2, 0, 0, 2, 1, 1, 2>;  // 50: w wraps into images

template <class G>
rudnn::reference::ConvShape shape_of(i64 n) {
  rudnn::reference::ConvShape s;
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

template <class X>
X arg(void** a, int i) {
  return *static_cast<X*>(a[i]);
}

template <class T, class B, class G, class P>
void fprop_entry(void** a) {
  conv::conv_fprop_igemm<T, B, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<const B*>(a, 2), arg<T*>(a, 3),
                                     arg<i64>(a, 4));
}
template <class T, class G, class P>
void dgrad_entry(void** a) {
  conv::conv_dgrad_igemm<T, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<T*>(a, 2), arg<i64>(a, 3));
}
template <class T, class G, class P>
void wgrad_entry(void** a) {
  conv::conv_wgrad_igemm<T, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<float*>(a, 2), arg<i64>(a, 3),
                                  arg<i64>(a, 4));
}
template <class T, class G, class P>
void fprop_split_entry(void** a) {
  conv::conv_fprop_igemm_split<T, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<float*>(a, 2), arg<i64>(a, 3),
                                        arg<i64>(a, 4));
}
template <class T, class G, class P>
void dgrad_split_entry(void** a) {
  conv::conv_dgrad_igemm_split<T, G, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<float*>(a, 2), arg<i64>(a, 3),
                                        arg<i64>(a, 4));
}
template <class T, class B>
void split_reduce_entry(void** a) {
  conv::conv_split_reduce<T, B>(arg<const float*>(a, 0), arg<const B*>(a, 1), arg<T*>(a, 2), arg<i64>(a, 3),
                                arg<i64>(a, 4), arg<i64>(a, 5));
}
template <class T>
void reduce_entry(void** a) {
  conv::conv_split_reduce<T, void>(arg<const float*>(a, 0), nullptr, arg<T*>(a, 1), arg<i64>(a, 2), 1, arg<i64>(a, 3));
}

constexpr std::size_t kGuard = 24;  // elements past the end that must keep their 0xFF bytes

template <class T>
double unit_roundoff() {
  if constexpr (sizeof(T) == 4) return 0x1p-24;
  return std::is_same_v<T, rudnn::bf16> ? 0x1p-8 : 0x1p-11;
}

template <class T>
rudnn::DType dtype_of() {
  if constexpr (sizeof(T) == 4) return rudnn::DType::F32;
  return std::is_same_v<T, rudnn::bf16> ? rudnn::DType::BF16 : rudnn::DType::F16;
}

template <class T>
struct Rounded {
  std::vector<T> stored;
  std::vector<double> value;  // exactly what the kernel reads
  std::vector<double> magnitude;
};

template <class T>
Rounded<T> random_tensor(i64 n, double scale, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, scale);
  Rounded<T> r;
  for (i64 i = 0; i < n; ++i) {
    r.stored.push_back(to_storage<T>(normal(rng)));
    r.value.push_back(from_storage(r.stored.back()));
    r.magnitude.push_back(std::fabs(r.value.back()));
  }
  // A kernel that reads past the end would read these guards; keep the vectors exactly sized.
  return r;
}

template <class X>
std::vector<X> poisoned(std::size_t n) {
  std::vector<X> v(n + kGuard);
  std::memset(static_cast<void*>(v.data()), 0xFF, v.size() * sizeof(X));
  return v;
}

template <class X>
void expect_guards(const std::vector<X>& v, std::size_t n, const char* what) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = n * sizeof(X); i < v.size() * sizeof(X); ++i)
    ASSERT_EQ(bytes[i], 0xFF) << what << ": wrote past the end at byte " << i;
}

template <class X>
bool same_bits(const std::vector<X>& a, const std::vector<X>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(X)) == 0;
}

// Checks got (stored as X) against want. Error bound per element: the products of T-rounded inputs
// are exact in FP32 for 16-bit T and within 2⁻²⁴·|term| for F32, and FP32 summation of `terms` terms
// errs by at most (terms − 1)·2⁻²⁴·Σ|terms| in any order; we allow 4·terms·2⁻²⁴·Σ|terms| (tensor cores
// need not round like sequential IEEE adds), then the final rounding to T (unit roundoff u_T) and an
// absolute floor for f16 subnormals. A missing tap, a wrong position or a stale stage moves results by
// O(|term|) and fails. Plus the relative L2 bound of DESIGN §5.
template <class X>
void expect_close(const std::vector<X>& got, const std::vector<double>& want, const std::vector<double>& abs_sum,
                  double terms, double out_roundoff, rudnn::DType dtype, const char* what) {
  ASSERT_GE(got.size(), want.size());
  std::vector<double> values(want.size());
  int reported = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = from_storage(got[i]);
    ASSERT_FALSE(std::isnan(g)) << what << "[" << i << "] not written";
    values[i] = g;
    const double acc = 4.0 * terms * 0x1p-24 * abs_sum[i];
    const double tol = acc + out_roundoff * (std::fabs(want[i]) + acc) + 0x1p-23;
    if (std::fabs(g - want[i]) > tol && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "] = " << g << ", want " << want[i] << " ± " << tol;
  }
  EXPECT_LE(rudnn::testing::relative_l2(values, want), rudnn::testing::tolerance(dtype)) << what << " relative L2";
}

struct Run {
  host::Schedule order;
  host::Dim3 grid;  // {0,..}: the natural grid
};
// The natural grid forward, the same reversed, and a 2×2 grid (grid stride, linear_block over y).
const Run kRuns[] = {
    {host::Schedule::Forward, {0, 1, 1}}, {host::Schedule::Reverse, {0, 1, 1}}, {host::Schedule::Forward, {2, 2, 1}}};

host::Dim3 grid_of(const Run& r, i64 tiles) {
  if (r.grid.x != 0) return r.grid;
  return {static_cast<unsigned>(std::max<i64>(1, tiles)), 1, 1};
}

template <class T>
const char* type_name() {
  if constexpr (sizeof(T) == 4) return "f32";
  return std::is_same_v<T, rudnn::bf16> ? "bf16" : "f16";
}

template <class P>
std::string policy_name() {
  if constexpr (P::kWgmma)
    return std::to_string(P::kBM) + "x" + std::to_string(P::kBN) + "x" + std::to_string(P::kBK) + "/" +
           std::to_string(P::kStages) + "/wgmma";
  else
    return std::to_string(P::kBM) + "x" + std::to_string(P::kBN) + "x" + std::to_string(P::kBK) + "/" +
           std::to_string(P::kWarpsM) + "x" + std::to_string(P::kWarpsN) + "/" + std::to_string(P::kStages) +
           (P::kTensorCore ? "/tc" : "/plain");
}

enum class Bias { None, Float, Same };

template <class T, class P, class G>
void check_fprop(i64 n, Bias bias_kind, std::mt19937_64& rng) {
  const auto shape = shape_of<G>(n);
  auto x = random_tensor<T>(shape.input_elements(), 1.0, rng);
  auto w = random_tensor<T>(shape.weight_elements(), 1.0 / std::sqrt(double(G::kFilter)), rng);
  auto bias_t = random_tensor<T>(G::kO, 1.0, rng);
  std::vector<float> bias_f(G::kO);
  std::vector<double> bias, bias_abs;
  if (bias_kind == Bias::Float)
    for (i64 o = 0; o < G::kO; ++o) bias_f[o] = static_cast<float>(bias_t.value[o] * 1.37);
  if (bias_kind == Bias::Same) bias = bias_t.value;
  if (bias_kind == Bias::Float) bias.assign(bias_f.begin(), bias_f.end());
  for (double b : bias) bias_abs.push_back(std::fabs(b));
  const auto want = rudnn::reference::conv_forward(x.value, w.value, bias, shape);
  const auto abs_sum = rudnn::reference::conv_forward(x.magnitude, w.magnitude, bias_abs, shape);

  const std::size_t count = static_cast<std::size_t>(shape.output_elements());
  const i64 tiles = (n * G::kOutPixels + P::kBM - 1) / P::kBM * ((G::kO + P::kBN - 1) / P::kBN);
  host::ThreadEntry entry = bias_kind == Bias::None    ? &fprop_entry<T, void, G, P>
                            : bias_kind == Bias::Float ? &fprop_entry<T, float, G, P>
                                                       : &fprop_entry<T, T, G, P>;
  const void* bias_ptr = bias_kind == Bias::None    ? nullptr
                         : bias_kind == Bias::Float ? static_cast<const void*>(bias_f.data())
                                                    : static_cast<const void*>(bias_t.stored.data());
  std::vector<T> first;
  for (const Run& r : kRuns) {
    std::vector<T> y = poisoned<T>(count);
    const T* a0 = x.stored.data();
    const T* a1 = w.stored.data();
    const void* a2 = bias_ptr;
    T* a3 = y.data();
    i64 a4 = n;
    void* args[] = {&a0, &a1, &a2, &a3, &a4};
    auto st = host::launch(entry, args, grid_of(r, tiles), {unsigned(P::kThreads), 1, 1},
                           conv::kIgemmSharedBytesFprop<T, P>, {r.order, 0});
    ASSERT_TRUE(st.ok()) << st.error().message();
    expect_guards(y, count, "y");
    if (first.empty()) {
      first = y;
      expect_close(y, want, abs_sum, double(G::kFilter) + 1, unit_roundoff<T>(), dtype_of<T>(), "y");
    } else {
      EXPECT_TRUE(same_bits(first, y)) << "fprop bits differ with grid " << r.grid.x << " schedule " << int(r.order);
    }
  }
}

template <class T, class P, class G>
void check_dgrad(i64 n, std::mt19937_64& rng) {
  const auto shape = shape_of<G>(n);
  auto dy = random_tensor<T>(shape.output_elements(), 1.0, rng);
  auto w = random_tensor<T>(shape.weight_elements(), 1.0 / std::sqrt(double(G::kFilter)), rng);
  const auto want = rudnn::reference::conv_data_backward(dy.value, w.value, shape);
  const auto abs_sum = rudnn::reference::conv_data_backward(dy.magnitude, w.magnitude, shape);
  const std::size_t count = static_cast<std::size_t>(shape.input_elements());
  const i64 tiles = (n * G::kInPixels + P::kBM - 1) / P::kBM * ((G::kC + P::kBN - 1) / P::kBN);
  std::vector<T> first;
  for (const Run& r : kRuns) {
    std::vector<T> dx = poisoned<T>(count);
    const T* a0 = dy.stored.data();
    const T* a1 = w.stored.data();
    T* a2 = dx.data();
    i64 a3 = n;
    void* args[] = {&a0, &a1, &a2, &a3};
    auto st = host::launch(&dgrad_entry<T, G, P>, args, grid_of(r, tiles), {unsigned(P::kThreads), 1, 1},
                           conv::kIgemmSharedBytesDgrad<T, P>, {r.order, 0});
    ASSERT_TRUE(st.ok()) << st.error().message();
    expect_guards(dx, count, "dx");
    if (first.empty()) {
      first = dx;
      expect_close(dx, want, abs_sum, double(G::kTaps * G::kO), unit_roundoff<T>(), dtype_of<T>(), "dx");
    } else {
      EXPECT_TRUE(same_bits(first, dx)) << "dgrad bits differ with grid " << r.grid.x << " schedule " << int(r.order);
    }
  }
}

template <class T, class P, class G>
void check_wgrad(i64 n, i64 splits, std::mt19937_64& rng) {
  const auto shape = shape_of<G>(n);
  auto x = random_tensor<T>(shape.input_elements(), 1.0, rng);
  auto dy = random_tensor<T>(shape.output_elements(), 1.0, rng);
  const auto want = rudnn::reference::conv_weight_backward(x.value, dy.value, shape);
  const auto abs_sum = rudnn::reference::conv_weight_backward(x.magnitude, dy.magnitude, shape);
  const i64 elements = G::kO * G::kFilter;
  const std::size_t count = static_cast<std::size_t>(elements);
  const i64 tiles = splits * ((G::kO + P::kBM - 1) / P::kBM) * ((G::kFilter + P::kBN - 1) / P::kBN);
  std::vector<float> first_partial;
  std::vector<T> first_dw;
  for (const Run& r : kRuns) {
    std::vector<float> partial = poisoned<float>(count * static_cast<std::size_t>(splits));
    {
      const T* a0 = x.stored.data();
      const T* a1 = dy.stored.data();
      float* a2 = partial.data();
      i64 a3 = n, a4 = splits;
      void* args[] = {&a0, &a1, &a2, &a3, &a4};
      auto st = host::launch(&wgrad_entry<T, G, P>, args, grid_of(r, tiles), {unsigned(P::kThreads), 1, 1},
                             conv::kIgemmSharedBytesWgrad<T, P>, {r.order, 0});
      ASSERT_TRUE(st.ok()) << st.error().message();
      expect_guards(partial, count * splits, "partial");
      for (std::size_t i = 0; i < count * splits; ++i)
        ASSERT_FALSE(std::isnan(partial[i])) << "partial[" << i << "] not written";
    }
    std::vector<T> dw = poisoned<T>(count);
    {
      const float* a0 = partial.data();
      T* a1 = dw.data();
      i64 a2 = elements, a3 = splits;
      void* args[] = {&a0, &a1, &a2, &a3};
      auto st = host::launch(&reduce_entry<T>, args, grid_of(r, (elements + 63) / 64), {64, 1, 1}, 0, {r.order, 0});
      ASSERT_TRUE(st.ok()) << st.error().message();
      expect_guards(dw, count, "dw");
    }
    if (first_dw.empty()) {
      first_partial = partial;
      first_dw = dw;
      expect_close(dw, want, abs_sum, double(n * G::kOutPixels + splits), unit_roundoff<T>(), dtype_of<T>(), "dw");
    } else {
      EXPECT_TRUE(same_bits(first_partial, partial)) << "wgrad partial bits differ with grid " << r.grid.x;
      EXPECT_TRUE(same_bits(first_dw, dw)) << "dw bits differ with grid " << r.grid.x;
    }
  }
}

// Split-K forward (bias T, or none) or data backward: the split kernel's FP32 sums, every one
// written, then conv_split_reduce; against the oracle, and the same bits (sums and result) under
// every schedule and grid.
template <class T, class P, class G>
void check_split(bool forward, i64 n, i64 splits, bool with_bias) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = rudnn::testing::fresh_seed();
  SCOPED_TRACE(std::string(forward ? "fprop" : "dgrad") + " " + type_name<T>() + " " + policy_name<P>() +
               " n=" + std::to_string(n) + " splits=" + std::to_string(splits) + " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const auto shape = shape_of<G>(n);
  const i64 in_elements = forward ? shape.input_elements() : shape.output_elements();
  const i64 depth = forward ? G::kFilter : G::kTaps * G::kO;
  auto a = random_tensor<T>(in_elements, 1.0, rng);
  auto w = random_tensor<T>(shape.weight_elements(), 1.0 / std::sqrt(double(G::kFilter)), rng);
  auto bias = random_tensor<T>(G::kO, 1.0, rng);
  std::vector<double> bias_value, bias_abs;
  if (with_bias) bias_value = bias.value, bias_abs = bias.magnitude;
  const auto want = forward ? rudnn::reference::conv_forward(a.value, w.value, bias_value, shape)
                            : rudnn::reference::conv_data_backward(a.value, w.value, shape);
  const auto abs_sum = forward ? rudnn::reference::conv_forward(a.magnitude, w.magnitude, bias_abs, shape)
                               : rudnn::reference::conv_data_backward(a.magnitude, w.magnitude, shape);
  const i64 columns = forward ? G::kO : G::kC;
  const i64 elements = n * (forward ? G::kOutPixels : G::kInPixels) * columns;
  const std::size_t count = static_cast<std::size_t>(elements);
  const i64 tiles =
      splits * ((elements / std::max<i64>(columns, 1) + P::kBM - 1) / P::kBM) * ((columns + P::kBN - 1) / P::kBN);
  std::vector<float> first_partial;
  std::vector<T> first;
  for (const Run& r : kRuns) {
    std::vector<float> partial = poisoned<float>(count * static_cast<std::size_t>(splits));
    {
      const T* a0 = a.stored.data();
      const T* a1 = w.stored.data();
      float* a2 = partial.data();
      i64 a3 = n, a4 = splits;
      void* args[] = {&a0, &a1, &a2, &a3, &a4};
      auto st =
          host::launch(forward ? &fprop_split_entry<T, G, P> : &dgrad_split_entry<T, G, P>, args, grid_of(r, tiles),
                       {unsigned(P::kThreads), 1, 1},
                       forward ? conv::kIgemmSharedBytesFprop<T, P> : conv::kIgemmSharedBytesDgrad<T, P>, {r.order, 0});
      ASSERT_TRUE(st.ok()) << st.error().message();
      expect_guards(partial, count * splits, "partial");
      for (std::size_t i = 0; i < count * splits; ++i)
        ASSERT_FALSE(std::isnan(partial[i])) << "partial[" << i << "] not written";
    }
    std::vector<T> out = poisoned<T>(count);
    {
      const float* a0 = partial.data();
      const void* a1 = with_bias ? static_cast<const void*>(bias.stored.data()) : nullptr;
      T* a2 = out.data();
      i64 a3 = elements, a4 = columns, a5 = splits;
      void* args[] = {&a0, &a1, &a2, &a3, &a4, &a5};
      auto st = host::launch(with_bias ? &split_reduce_entry<T, T> : &split_reduce_entry<T, void>, args,
                             grid_of(r, (elements + 63) / 64), {64, 1, 1}, 0, {r.order, 0});
      ASSERT_TRUE(st.ok()) << st.error().message();
      expect_guards(out, count, "out");
    }
    if (first.empty()) {
      first_partial = partial;
      first = out;
      expect_close(out, want, abs_sum, double(depth + splits + 1), unit_roundoff<T>(), dtype_of<T>(), "out");
    } else {
      EXPECT_TRUE(same_bits(first_partial, partial)) << "split sums differ with grid " << r.grid.x;
      EXPECT_TRUE(same_bits(first, out)) << "split result differs with grid " << r.grid.x;
    }
  }
}

// All three passes of one geometry: fprop with the given bias, dgrad, wgrad with `splits`.
template <class T, class P, class G>
void check_all(const char* geometry, i64 n, Bias bias, i64 splits) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = rudnn::testing::fresh_seed();
  SCOPED_TRACE(std::string(geometry) + " " + type_name<T>() + " " + policy_name<P>() + " n=" + std::to_string(n) +
               " bias=" + std::to_string(int(bias)) + " splits=" + std::to_string(splits) +
               " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  check_fprop<T, P, G>(n, bias, rng);
  if (::testing::Test::HasFatalFailure()) return;
  check_dgrad<T, P, G>(n, rng);
  if (::testing::Test::HasFatalFailure()) return;
  check_wgrad<T, P, G>(n, splits, rng);
}

#define CONV_ALL(T, P, G, n, bias, splits) check_all<T, P, G>(#G, n, bias, splits)

// Every geometry through the mid tensor-core policy (bf16) and the plain policy (f32).
TEST(ConvIgemmTemplate, TensorCoreBF16Geometries) {
  using T = rudnn::bf16;
  CONV_ALL(T, TcMid, Conv1d, 2, Bias::Same, 3);
  CONV_ALL(T, TcMid, Conv1dS3D2, 3, Bias::Float, 1);
  CONV_ALL(T, TcMid, Pointwise, 2, Bias::None, 3);
  CONV_ALL(T, TcMid, Conv3x3S2, 2, Bias::Same, 3);
  CONV_ALL(T, TcMid, Conv3x3D2, 1, Bias::Float, 1);
  CONV_ALL(T, TcMid, Conv3x3S3, 2, Bias::None, 3);
  CONV_ALL(T, TcMid, Conv7x7S2, 1, Bias::Same, 3);
  CONV_ALL(T, TcMid, Conv3d, 1, Bias::Float, 3);
}

TEST(ConvIgemmTemplate, PlainF32Geometries) {
  using T = float;
  CONV_ALL(T, Plain, Conv1d, 2, Bias::Same, 3);
  CONV_ALL(T, Plain, Conv1dS3D2, 3, Bias::None, 1);
  CONV_ALL(T, Plain, Pointwise, 2, Bias::Float, 3);
  CONV_ALL(T, Plain, Conv3x3S2, 2, Bias::None, 1);
  CONV_ALL(T, Plain, Conv3x3D2, 1, Bias::Same, 3);
  CONV_ALL(T, Plain, Conv3x3S3, 2, Bias::Float, 3);
  CONV_ALL(T, Plain, Conv7x7S2, 1, Bias::None, 3);
  CONV_ALL(T, Plain, Conv3d, 1, Bias::Same, 1);
}

// The other tensor-core policies and element types on a few shapes.
TEST(ConvIgemmTemplate, TensorCoreF16Policies) {
  using T = rudnn::f16;
  CONV_ALL(T, TcWide, Conv3x3S2, 2, Bias::Float, 3);
  CONV_ALL(T, TcWide, Conv1d, 1, Bias::Same, 1);
  CONV_ALL(T, TcMid, Conv3x3D2, 2, Bias::None, 3);
  CONV_ALL(T, TcLarge, Wide3x3, 1, Bias::Same, 3);
}

TEST(ConvIgemmTemplate, TensorCoreLargeBF16) {
  CONV_ALL(rudnn::bf16, TcLarge, Conv7x7S2, 2, Bias::Float, 1);
  CONV_ALL(rudnn::bf16, TcWide, Wide3x3, 1, Bias::None, 3);
  CONV_ALL(rudnn::bf16, TcMid, Block3x3, 2, Bias::Same, 2);
  CONV_ALL(rudnn::bf16, TcLargeK64, Block3x3, 2, Bias::Float, 3);  // BK = 64: K = 288 ends in a partial block
  CONV_ALL(rudnn::f16, TcLargeK64, Wide3x3, 1, Bias::None, 1);     // K blocks inside one tap (C, O multiples of BK)
}

// The 64-wide warp tiles: a partial N tile (136 = 128 + 8 columns), element gathers (C = 3), one-tap
// K blocks, odd C and O, and the weight backward's K-major operands at these warp shapes.
TEST(ConvIgemmTemplate, WideWarpTiles) {
  CONV_ALL(rudnn::bf16, TcWarp64, Wide3x3, 1, Bias::Float, 3);
  CONV_ALL(rudnn::f16, TcWarp64, Conv7x7S2, 2, Bias::Same, 1);
  CONV_ALL(rudnn::bf16, TcTall, Block3x3, 2, Bias::None, 3);
  CONV_ALL(rudnn::f16, TcTall, Conv1d, 2, Bias::Same, 2);
}

// The warpgroup-MMA engine in every direction: the forward's K-major operands, the data backward's
// MN-major (transposed) B, the weight backward's two MN-major operands; 16-byte and element gathers
// (Conv1d's odd C and O) into the swizzled tiles, partial M / N tiles, a K ending mid-block, split
// sums, every accumulator width (N = 64, 128, 256) and one and two warpgroups; one wgmma group in
// flight across K steps (four stages or more, BN < 256) and none (two or three stages; BN = 256), over runs of 1, 2, 3
// and more K blocks (the split sums' short runs).
TEST(ConvIgemmTemplate, WarpgroupMma) {
  CONV_ALL(rudnn::bf16, Wg64, Conv3x3S2, 2, Bias::Same, 3);
  CONV_ALL(rudnn::bf16, Wg64TwoStages, Block3x3, 2, Bias::Float, 2);
  for (bool forward : {true, false}) {
    check_split<rudnn::bf16, Wg64, Block3x3>(forward, 2, 3, forward);
    check_split<rudnn::f16, Wg128x256, Wide3x3>(forward, 1, 5, forward);
  }
  CONV_ALL(rudnn::f16, Wg64, Conv1d, 2, Bias::Float, 2);
  CONV_ALL(rudnn::bf16, Wg128, Wide3x3, 1, Bias::None, 3);
  CONV_ALL(rudnn::f16, Wg128, Block3x3, 2, Bias::Same, 1);
  CONV_ALL(rudnn::bf16, Wg128x256, Conv7x7S2, 1, Bias::Float, 2);
}

TEST(ConvIgemmTemplate, PlainSmallPolicies) {
  CONV_ALL(float, PlainSmall, Conv3x3S2, 2, Bias::Float, 3);
  CONV_ALL(rudnn::f16, PlainSmall, Conv1d, 3, Bias::Same, 3);
  CONV_ALL(rudnn::f16, Plain, Conv3d, 1, Bias::None, 1);
  CONV_ALL(rudnn::bf16, PlainSmall, Conv3x3D2, 1, Bias::Float, 1);
}

// Split-K forward and data backward: 2..5 splits of K blocks (Block3x3 at BK = 32: 9 K blocks in
// the forward, 18 in the data backward; 7 splits leave the last one empty), a partial last block
// (BK = 64), element gathers (Conv1d's odd C and O), strides and the plain path.
TEST(ConvIgemmTemplate, SplitK) {
  for (bool forward : {true, false}) {
    check_split<rudnn::bf16, TcMid, Block3x3>(forward, 2, 3, forward);
    check_split<rudnn::bf16, TcMid, Block3x3>(forward, 1, 7, false);
    check_split<rudnn::f16, TcLargeK64, Wide3x3>(forward, 1, 2, forward);
    check_split<rudnn::bf16, TcWide, Conv3x3S2>(forward, 2, 5, forward);
    check_split<rudnn::bf16, TcMid, Conv1d>(forward, 2, 2, forward);
    check_split<float, Plain, Conv3x3S3>(forward, 2, 4, forward);
    check_split<rudnn::bf16, TcMid, Conv3x3S2>(forward, 0, 3, forward);  // n = 0: nothing to write
    // FP32 sums staged in two passes of rows (BlockEngine::store_rows): 128x128 tiles, and the plain
    // 64x64 tile over 16-bit operands.
    check_split<rudnn::bf16, TcLarge, Wide3x3>(forward, 1, 2, forward);
    check_split<rudnn::f16, Plain, Conv3x3S2>(forward, 2, 2, forward);
  }
}

// The data backward split by stride phase: 4 phases (stride 2, with dilation 2: two phases have no
// taps and write zeros), 1x1 stride 2 (three phases of zeros), 6 phases (stride 2x3), 8 (3-D stride
// 2), 3 (1-D stride 3), and 9 (2-D stride 3: past kMaxDgradPhases, the masked gather); with split-K.
TEST(ConvIgemmTemplate, DataBackwardStridePhases) {
  CONV_ALL(rudnn::bf16, TcMid, Conv3x3S2D2, 2, Bias::None, 1);
  CONV_ALL(float, Plain, Conv3x3S2D2, 1, Bias::None, 1);
  CONV_ALL(rudnn::bf16, TcMid, PointwiseS2, 2, Bias::Same, 1);
  CONV_ALL(rudnn::f16, TcWide, Conv3x3S2x3, 2, Bias::None, 1);
  CONV_ALL(rudnn::bf16, TcMid, Conv3dS2, 1, Bias::None, 1);
  CONV_ALL(rudnn::bf16, TcMid, Block3x3S2, 3, Bias::None, 1);
  CONV_ALL(float, PlainSmall, Conv1dS3D2, 2, Bias::None, 1);
  CONV_ALL(rudnn::bf16, TcMid, Conv3x3S3, 1, Bias::None, 1);
  check_split<rudnn::bf16, TcMid, Block3x3S2>(false, 2, 3, false);
  check_split<rudnn::bf16, TcMid, Conv3x3S2D2>(false, 1, 2, false);
  check_split<float, Plain, Conv3dS2>(false, 1, 2, false);
}

template <class T, class P, class G>
void check_weight_backward(const char* geometry, i64 n, i64 splits) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = rudnn::testing::fresh_seed();
  SCOPED_TRACE(std::string(geometry) + " " + type_name<T>() + " " + policy_name<P>() + " n=" + std::to_string(n) +
               " splits=" + std::to_string(splits) + " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  check_wgrad<T, P, G>(n, splits, rng);
}
#define CONV_WGRAD(T, P, G, n, splits) check_weight_backward<T, P, G>(#G, n, splits)

// The weight backward's B rows walk BK output pixels per K block where BK is fewer pixels than an
// image (igemm::WindowWalk): steps whose w part wraps into h, h into d, and d into the next image,
// with strides, padding and dilation, at BK = 16, 32 and 64; three splits start mid-image. (Conv3d,
// Wide3x3 and, at BK = 16, the small 2-D images above walk too; the others take the per-block
// decode.)
TEST(ConvIgemmTemplate, WeightBackwardPixelWalk) {
  for (i64 splits : {1, 3}) {
    CONV_WGRAD(rudnn::bf16, TcMid, WalkS2, 2, splits);
    CONV_WGRAD(rudnn::bf16, TcMid, Walk3dS2, 2, splits);
    CONV_WGRAD(rudnn::f16, TcMid, Walk1dD2, 2, splits);
    CONV_WGRAD(rudnn::bf16, TcLargeK64, Walk3dS2, 2, splits);
    CONV_WGRAD(float, Plain, WalkS2, 2, splits);
    CONV_WGRAD(float, Plain, Walk3dS2, 1, splits);
  }
}

// n = 0: fprop and dgrad write nothing (the poisoned bytes stay), wgrad writes zeros.
TEST(ConvIgemmTemplate, EmptyBatch) {
  CONV_ALL(rudnn::bf16, TcMid, Conv3x3S2, 0, Bias::Same, 3);
  CONV_ALL(float, Plain, Conv1d, 0, Bias::None, 1);
}

// A block of the wrong size is refused (trap), not run with a wrong warp layout.
TEST(ConvIgemmTemplate, WrongBlockTraps) {
  rudnn_emu_bind(host::emulator_api());
  std::vector<rudnn::bf16> x(5 * 11), w(7 * 4 * 5), y(7 * 12);
  const rudnn::bf16* a0 = x.data();
  const rudnn::bf16* a1 = w.data();
  const void* a2 = nullptr;
  rudnn::bf16* a3 = y.data();
  i64 a4 = 1;
  void* args[] = {&a0, &a1, &a2, &a3, &a4};
  auto st = host::launch(&fprop_entry<rudnn::bf16, void, Conv1d, TcMid>, args, {1, 1, 1}, {64, 1, 1},
                         conv::kIgemmSharedBytesFprop<rudnn::bf16, TcMid>, {host::Schedule::Forward, 0});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("blockDim"), std::string::npos) << st.error().message();
}

}  // namespace
