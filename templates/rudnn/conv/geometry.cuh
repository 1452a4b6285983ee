#pragma once
// The shape of one convolution, known when the kernel is compiled (the JIT bakes everything but the
// batch into the kernel, so index arithmetic divides by constants and loops over the filter unroll).
//
// Every kernel works in channels-last layout over three spatial dims; 1-D and 2-D convolutions are
// the 3-D case with leading spatial extents 1 (kernel 1, stride 1, padding 0, dilation 1):
//   input  x  [N, D,  H,  W,  C]
//   weight w  [O, KD, KH, KW, C/G]      (group g: output channels [g·O/G, (g+1)·O/G) read input
//   output y  [N, OD, OH, OW, O]         channels [g·C/G, (g+1)·C/G))
// Output extent per dim: (in + 2·pad − dilation·(k − 1) − 1) / stride + 1 (the contract makes it ≥ 1).
#include "rudnn/prelude.cuh"

// out_extent is evaluated in constant expressions on both sides: NVRTC refuses unannotated (host)
// functions, so it is __host__ __device__ there.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_CONV_CONSTEXPR_FN __host__ __device__ static constexpr
#else
#define RUDNN_CONV_CONSTEXPR_FN static constexpr
#endif

namespace rudnn::conv {

template <i64 C_, i64 O_, i64 G_,     // channels in, out, groups
          i64 D_, i64 H_, i64 W_,     // input extents
          i64 KD_, i64 KH_, i64 KW_,  // filter extents
          i64 SD_, i64 SH_, i64 SW_,  // strides
          i64 PD_, i64 PH_, i64 PW_,  // paddings (each side)
          i64 DD_, i64 DH_, i64 DW_>  // dilations
struct Geometry {
  static constexpr i64 kC = C_, kO = O_, kGroups = G_;
  static constexpr i64 kD = D_, kH = H_, kW = W_;
  static constexpr i64 kKD = KD_, kKH = KH_, kKW = KW_;
  static constexpr i64 kSD = SD_, kSH = SH_, kSW = SW_;
  static constexpr i64 kPD = PD_, kPH = PH_, kPW = PW_;
  static constexpr i64 kDD = DD_, kDH = DH_, kDW = DW_;

  RUDNN_CONV_CONSTEXPR_FN i64 out_extent(i64 in, i64 k, i64 s, i64 p, i64 d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
  }
  static constexpr i64 kOD = out_extent(D_, KD_, SD_, PD_, DD_);
  static constexpr i64 kOH = out_extent(H_, KH_, SH_, PH_, DH_);
  static constexpr i64 kOW = out_extent(W_, KW_, SW_, PW_, DW_);

  static constexpr i64 kCg = C_ / G_;             // input channels per group
  static constexpr i64 kOg = O_ / G_;             // output channels per group
  static constexpr i64 kTaps = KD_ * KH_ * KW_;   // filter positions
  static constexpr i64 kFilter = kTaps * kCg;     // weight elements per output channel (the GEMM's K)
  static constexpr i64 kInPixels = D_ * H_ * W_;  // spatial positions of one image
  static constexpr i64 kOutPixels = kOD * kOH * kOW;

  static_assert(C_ % G_ == 0 && O_ % G_ == 0, "channels must divide by groups");
  static_assert(kOD >= 1 && kOH >= 1 && kOW >= 1, "every output extent must be >= 1");
};

// Spatial position (d, h, w) of index p over an extent (·, kH, kW) grid: output or input pixels of
// one image, filter taps, a stride phase's pixels or taps. In 32-bit unsigned arithmetic (a multiply
// and a shift per division by a constant, where 64-bit division by a constant costs ~20
// instructions): the tiled kernels keep one image's pixels and a filter's taps · channels below 2^30
// (the compiler's index guards, ConvConfig.cpp imageIndexServes and gemmServes). An empty grid decodes to zeros
// (never used for a real row or column).
struct Pos3 {
  int d, h, w;
};
template <i64 kD>
RUDNN_DEVICE int udiv(int v) {  // v / kD for 0 <= v < 2^31, 32-bit unsigned
  return static_cast<int>(static_cast<unsigned>(v) / static_cast<unsigned>(kD));
}
// v / kD and v % kD (a GEMM column k = tap·C + c into its tap and channel).
struct QuotRem {
  int quot, rem;
};
template <i64 kD>
RUDNN_DEVICE QuotRem udivmod(int v) {
  const int q = udiv<kD>(v);
  return {q, v - q * static_cast<int>(kD)};
}
template <i64 kH, i64 kW>
RUDNN_DEVICE Pos3 decode3(int p) {
  if constexpr (kH * kW == 0) {
    return {0, 0, 0};
  } else {
    constexpr unsigned kPlane = static_cast<unsigned>(kH * kW), kRow = static_cast<unsigned>(kW);
    const unsigned u = static_cast<unsigned>(p);
    return {static_cast<int>(u / kPlane), static_cast<int>(u / kRow % static_cast<unsigned>(kH)),
            static_cast<int>(u % kRow)};
  }
}

}  // namespace rudnn::conv
