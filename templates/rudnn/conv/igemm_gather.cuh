#pragma once
// The operand tiles of the implicit-GEMM convolution (conv/implicit_gemm.cuh) and the address logic of
// the im2col gather done on the fly: no im2col matrix ever exists in global memory.
//
// The tiles are gemm::GatherTile (gemm/gather_tile.cuh): chunks of 16 bytes when the contiguous extent
// of the gathered operand (e.g. C for the input) is a multiple of 16 bytes, so a chunk never
// straddles two taps, else single elements.
//
// The gathers (G = conv::Geometry; groups == 1, so a weight row holds Taps·C elements):
//   input_at_tap(x, m, k)        x at the input position that output pixel m (image·OutPixels + pixel)
//                                reaches through tap k / C, channel k % C; null in the padding.
//                                (fprop's A[m][k] and wgrad's B[p][j].)
//   grad_row / grad_tap / grad_at  dy at the output position that input pixel m reaches through tap
//                                k / O, channel k % O: (i + pad − tap·dil) must be ≥ 0, divisible by
//                                the stride and below the output extent in every dim, else null
//                                (MaskedGather: dgrad's A where the stride phases are too many to
//                                split, conv/dgrad_phase.cuh).
#include "rudnn/conv/geometry.cuh"
#include "rudnn/gemm/gather_tile.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/prelude.cuh"

namespace rudnn::conv::igemm {

using gemm::copy_chunk;
using gemm::GatherTile;
using gemm::kChunkWidth;
using gemm::PaddedTile;

// ---- Incremental gather state (fixed-column gathers, see GatherTile::load_rows).
// A row's state is computed once per output tile, a column's (tap, channel) once per K block; the
// per-chunk work is then 32-bit adds, unsigned range checks and one 64-bit add. Rows past the matrix
// and columns past K carry kFar, a coordinate that fails every range check (two kFar still add up
// without overflow).
inline constexpr int kFar = 1 << 29;

// True when 0 <= v < n (one unsigned compare).
template <i64 kN>
RUDNN_DEVICE bool in_range(int v) {
  return static_cast<unsigned>(v) < static_cast<unsigned>(kN);
}

// fprop A / wgrad B: the input window of output pixel m. base = element offset of input position
// (d, h, w) = (od·SD − PD, oh·SH − PH, ow·SW − PW) of m's image, channel 0 (may lie outside x).
struct WindowRow {
  i64 base;
  int d, h, w;
};
template <class G>
RUDNN_DEVICE WindowRow window_row_at(i64 image, int pixel) {
  const Pos3 o = decode3<G::kOH, G::kOW>(pixel);
  const int d = static_cast<int>(o.d * G::kSD - G::kPD), h = static_cast<int>(o.h * G::kSH - G::kPH);
  const int w = static_cast<int>(o.w * G::kSW - G::kPW);
  return {(image * G::kInPixels + (static_cast<i64>(d) * G::kH + h) * G::kW + w) * G::kC, d, h, w};
}
template <class G>
RUDNN_DEVICE WindowRow window_row(i64 m, i64 rows) {
  if (m >= rows) return {0, -kFar, -kFar, -kFar};
  const i64 image = m / G::kOutPixels;
  return window_row_at<G>(image, static_cast<int>(m - image * G::kOutPixels));
}
// Column k = tap·C + c of im2col: the tap's displacement and element offset from the window origin.
struct WindowTap {
  i64 offset;
  int d, h, w;
};
template <class G>
RUDNN_DEVICE WindowTap window_tap(int k) {
  if (k >= G::kFilter) return {0, -kFar, -kFar, -kFar};
  const auto [tap, c] = udivmod<G::kC>(k);
  const Pos3 t = decode3<G::kKH, G::kKW>(tap);
  const int d = static_cast<int>(t.d * G::kDD), h = static_cast<int>(t.h * G::kDH), w = static_cast<int>(t.w * G::kDW);
  return {(static_cast<i64>(d) * G::kH * G::kW + static_cast<i64>(h) * G::kW + w) * G::kC + c, d, h, w};
}
// input_at_tap(x, m, k) from m's row state and k's tap state.
template <class G, class T>
RUDNN_DEVICE const T* window_at(const T* x, const WindowRow& r, const WindowTap& t) {
  // A 1-D or 2-D convolution has D = KD = 1, PD = 0: d is 0 on every valid row and tap, and invalid
  // rows and taps fail the h check already.
  constexpr bool kFlatD = G::kD == 1 && G::kKD == 1 && G::kPD == 0;
  if (!kFlatD && !in_range<G::kD>(r.d + t.d)) return nullptr;
  if (!in_range<G::kH>(r.h + t.h) || !in_range<G::kW>(r.w + t.w)) return nullptr;
  return x + (r.base + t.offset);
}
// wgrad B: a row's window walked forward by kStep output pixels per K block with no division: the
// step's parts along w, h and d (kStep = kD·OH·OW + kH·OW + kW) are constants, and while
// kStep < OutPixels each coordinate wraps at most once (w + kW·SW passes the row's end at most once,
// then h, then d into the next image), so a step is a few adds, three compares and constant
// offsets. The window origin (d, h, w) = o·S − P itself says when its output coordinate wrapped:
// ow ≥ OW exactly when w ≥ OW·SW − PW. Rows walked past the split's end (or the last image) are
// never read.
template <class G, int kStep>
struct WindowWalk {
  WindowRow r;

  RUDNN_DEVICE void advance() {
    static_assert(kStep >= 1 && kStep < G::kOutPixels, "WindowWalk: a step inside one image (else carries repeat)");
    constexpr int kW = static_cast<int>(kStep % G::kOW), kH = static_cast<int>(kStep / G::kOW % G::kOH);
    constexpr int kD = static_cast<int>(kStep / (G::kOW * G::kOH));
    constexpr i64 kRow = G::kW * G::kC, kPlane = G::kH * kRow;  // elements per input row, plane
    r.w += static_cast<int>(kW * G::kSW);
    r.base += kW * G::kSW * G::kC;
    if (r.w >= static_cast<int>(G::kOW * G::kSW - G::kPW)) {  // into the next output row
      r.w -= static_cast<int>(G::kOW * G::kSW);
      r.h += static_cast<int>(G::kSH);
      r.base += G::kSH * kRow - G::kOW * G::kSW * G::kC;
    }
    r.h += static_cast<int>(kH * G::kSH);
    r.base += kH * G::kSH * kRow;
    if (r.h >= static_cast<int>(G::kOH * G::kSH - G::kPH)) {  // into the next output plane
      r.h -= static_cast<int>(G::kOH * G::kSH);
      r.d += static_cast<int>(G::kSD);
      r.base += G::kSD * kPlane - G::kOH * G::kSH * kRow;
    }
    r.d += static_cast<int>(kD * G::kSD);
    r.base += kD * G::kSD * kPlane;
    if (r.d >= static_cast<int>(G::kOD * G::kSD - G::kPD)) {  // into the next image
      r.d -= static_cast<int>(G::kOD * G::kSD);
      r.base += G::kInPixels * G::kC - G::kOD * G::kSD * kPlane;
    }
  }
};
// input_at_tap(x, m, k) for one element (the element gathers, k < K): m's row state and k's column
// state composed, as the fixed-column gathers do per tile and per K block.
template <class G, class T>
RUDNN_DEVICE const T* input_at_tap(const T* x, i64 m, int k) {
  const i64 image = m / G::kOutPixels;
  return window_at<G>(x, window_row_at<G>(image, static_cast<int>(m - image * G::kOutPixels)), window_tap<G>(k));
}

// dgrad A: input pixel m's numerators (i + pad per dim) and its image's offset in dy.
struct GradRow {
  i64 base;
  int d, h, w;
};
template <class G>
RUDNN_DEVICE GradRow grad_row(i64 m, i64 rows) {
  if (m >= rows) return {0, -kFar, -kFar, -kFar};
  const i64 image = m / G::kInPixels;
  const Pos3 i = decode3<G::kH, G::kW>(static_cast<int>(m - image * G::kInPixels));
  return {image * G::kOutPixels * G::kO, static_cast<int>(i.d + G::kPD), static_cast<int>(i.h + G::kPH),
          static_cast<int>(i.w + G::kPW)};
}
// Column k = tap·O + o: the tap's dilated displacement (kFar past K) and the channel o.
struct GradTap {
  int d, h, w, o;
};
template <class G>
RUDNN_DEVICE GradTap grad_tap(int k) {
  if (k >= G::kTaps * G::kO) return {kFar, kFar, kFar, 0};
  const auto [tap, o] = udivmod<G::kO>(k);
  const Pos3 t = decode3<G::kKH, G::kKW>(tap);
  return {static_cast<int>(t.d * G::kDD), static_cast<int>(t.h * G::kDH), static_cast<int>(t.w * G::kDW), o};
}
// The output coordinate num / stride when num = i + pad − t·dil is ≥ 0, divisible by the stride and
// below the output extent, else −1.
template <i64 kStride, i64 kOut>
RUDNN_DEVICE int grad_coord(int num) {
  if (static_cast<unsigned>(num) >= static_cast<unsigned>(kStride * kOut)) return -1;
  const unsigned u = static_cast<unsigned>(num);
  if (kStride > 1 && u % static_cast<unsigned>(kStride) != 0u) return -1;
  return static_cast<int>(u / static_cast<unsigned>(kStride));
}
// grad_output_at_tap(dy, m, k) from m's row state and k's tap state.
template <class G, class T>
RUDNN_DEVICE const T* grad_at(const T* dy, const GradRow& r, const GradTap& t) {
  const int od = grad_coord<G::kSD, G::kOD>(r.d - t.d);
  const int oh = grad_coord<G::kSH, G::kOH>(r.h - t.h);
  const int ow = grad_coord<G::kSW, G::kOW>(r.w - t.w);
  if (od < 0 || oh < 0 || ow < 0) return nullptr;
  return dy + (r.base + ((static_cast<i64>(od) * G::kOH + oh) * G::kOW + ow) * G::kO + t.o);
}

// The data backward's gather without a phase split (more than kMaxDgradPhases stride phases): one
// GEMM over every input pixel and tap, the stride masked per chunk; the same policy shape as
// PhaseGather (conv/dgrad_phase.cuh).
template <class G>
struct MaskedGather {
  static constexpr i64 kPixels = G::kInPixels, kK = G::kTaps * G::kO;
  using Row = GradRow;
  using Tap = GradTap;
  RUDNN_DEVICE static Row row(i64 m, i64 rows) { return grad_row<G>(m, rows); }
  RUDNN_DEVICE static Tap tap(int k) { return grad_tap<G>(k); }
  template <class T>
  RUDNN_DEVICE static const T* at(const T* dy, const Row& r, const Tap& t) {
    return grad_at<G>(dy, r, t);
  }
  RUDNN_DEVICE static i64 dx_row(i64 m) { return m; }
  RUDNN_DEVICE static int filter_tap(int q) { return q; }
};

}  // namespace rudnn::conv::igemm
