#pragma once
// The stride phases of the implicit-GEMM data backward (conv/implicit_gemm.cuh) and their gathers.
//
// dx[i] = Σ_{t, o} dy[(i + pad − t·dil) / stride] · w[o][t] over the taps t whose numerator is ≥ 0,
// a multiple of the stride and below the output extent. With stride s > 1 most (i, t) pairs fail the
// multiple test: masked per element, ≈ 1 − 1/s^dims of the GEMM would be products with zero. Split
// by phase instead: per dim, the input coordinates with (i + pad) ≡ r (mod s), 0 ≤ r < s, are reached
// exactly by the taps with t·dil ≡ r (mod s). Each phase is then a stride-1 gather over its own
// pixels and taps, a GEMM of M = N·(the phase's pixels), K = (the phase's taps)·O. Stride 1 is the
// one phase with every pixel and tap. A phase without taps (e.g. a 1×1 stride-2 filter's odd rows)
// is a GEMM with K = 0: its pixels get zeros.
//
// Per dim (PhaseDim): i = first + j·s for j < count; t = tap0 + u·tap_step for u < taps
// (tap_step = s / gcd(s, dil)); through tap u, coordinate j reads output coordinate
// j + shift − u·tap_shift (shift = (first + pad − tap0·dil) / s and tap_shift = tap_step·dil / s,
// both exact), which must lie in [0, out).
//
// A phase's GEMM rows are (image, j) with j over the phase's count_d × count_h × count_w grid, its
// columns k = q·O + o over its taps q (u per dim) and output channels.
#include "rudnn/conv/geometry.cuh"
#include "rudnn/conv/shared_memory.h"
#include "rudnn/prelude.cuh"

namespace rudnn::conv {

template <i64 In, i64 K, i64 S, i64 P, i64 Dil, i64 R>
struct PhaseDim {
  RUDNN_CONV_CONSTEXPR_FN i64 gcd(i64 a, i64 b) { return b == 0 ? a : gcd(b, a % b); }
  RUDNN_CONV_CONSTEXPR_FN i64 first_tap() {
    for (i64 t = 0; t < K; ++t)
      if (t * Dil % S == R) return t;
    return K;
  }
  static constexpr i64 kFirst = ((R - P) % S + S) % S;
  static constexpr i64 kCount = kFirst < In ? (In - 1 - kFirst) / S + 1 : 0;
  static constexpr i64 kTapStep = S / gcd(S, Dil);
  static constexpr i64 kTap0 = first_tap();
  static constexpr i64 kTaps = kTap0 < K ? (K - 1 - kTap0) / kTapStep + 1 : 0;
  static constexpr i64 kShift = kTaps > 0 ? (kFirst + P - kTap0 * Dil) / S : 0;
  static constexpr i64 kTapShift = kTapStep * Dil / S;
};

// Phase `Index` of geometry G: (r_d, r_h, r_w) = Index over (S_D, S_H, S_W), row-major.
template <class G, i64 Index>
struct DgradPhase {
  using D = PhaseDim<G::kD, G::kKD, G::kSD, G::kPD, G::kDD, Index / (G::kSH * G::kSW)>;
  using H = PhaseDim<G::kH, G::kKH, G::kSH, G::kPH, G::kDH, Index / G::kSW % G::kSH>;
  using W = PhaseDim<G::kW, G::kKW, G::kSW, G::kPW, G::kDW, Index % G::kSW>;
  static constexpr i64 kPixels = D::kCount * H::kCount * W::kCount;  // of one image
  static constexpr i64 kTaps = D::kTaps * H::kTaps * W::kTaps;
  static constexpr i64 kK = kTaps * G::kO;  // the phase GEMM's K
};

// The phases G's data backward runs (shared_memory::dgrad_phases: S_D·S_H·S_W up to
// kMaxDgradPhases, each phase's tile code compiled separately; past that (rare: 2-D stride 3 is 9)
// one phase of every pixel and tap whose gather masks, MaskedGather) and the largest phase's pixels
// per image (the grid's M extent).
template <class G>
inline constexpr i64 kDgradPhases = shared_memory::dgrad_phases(G::kSD, G::kSH, G::kSW);
template <class G>
inline constexpr i64 kDgradPhasePixels = shared_memory::dgrad_phase_pixels(G::kD, G::kH, G::kW, G::kSD, G::kSH, G::kSW);

namespace igemm {

// kFar: a coordinate that fails every range check (two still add up without overflow).
inline constexpr int kPhaseFar = 1 << 29;

// Row m = image·Ph::kPixels + j of a phase GEMM: dy's image offset and the output coordinates j
// reads through tap u = 0 (j + shift per dim); kPhaseFar past the rows. `dx_row` is the pixel's row
// of dx, image·InPixels + ((first_d + j_d·S_D)·H + …).
struct PhaseRow {
  i64 base;
  int d, h, w;
};
template <class G, class Ph>
RUDNN_DEVICE PhaseRow phase_row(i64 m, i64 rows) {
  if constexpr (Ph::kPixels == 0) {
    return {0, -kPhaseFar, -kPhaseFar, -kPhaseFar};  // no rows at all
  } else {
    if (m >= rows) return {0, -kPhaseFar, -kPhaseFar, -kPhaseFar};
    const i64 image = m / Ph::kPixels;
    const Pos3 j = decode3<Ph::H::kCount, Ph::W::kCount>(static_cast<int>(m - image * Ph::kPixels));
    return {image * G::kOutPixels * G::kO, static_cast<int>(j.d + Ph::D::kShift), static_cast<int>(j.h + Ph::H::kShift),
            static_cast<int>(j.w + Ph::W::kShift)};
  }
}
template <class G, class Ph>
RUDNN_DEVICE i64 phase_dx_row(i64 m) {
  if constexpr (Ph::kPixels == 0) {
    return 0;  // no rows: never called
  } else {
    const i64 image = m / Ph::kPixels;
    const Pos3 j = decode3<Ph::H::kCount, Ph::W::kCount>(static_cast<int>(m - image * Ph::kPixels));
    const i64 d = Ph::D::kFirst + j.d * G::kSD, h = Ph::H::kFirst + j.h * G::kSH, w = Ph::W::kFirst + j.w * G::kSW;
    return image * G::kInPixels + (d * G::kH + h) * G::kW + w;
  }
}

// Column k = q·O + o of a phase GEMM: tap q's displacement (u·tap_shift per dim; kPhaseFar past K)
// and the channel o.
struct PhaseTap {
  int d, h, w, o;
};
template <class G, class Ph>
RUDNN_DEVICE PhaseTap phase_tap(int k) {
  if (k >= Ph::kK) return {kPhaseFar, kPhaseFar, kPhaseFar, 0};
  const auto [q, o] = udivmod<G::kO>(k);
  const Pos3 u = decode3<Ph::H::kTaps, Ph::W::kTaps>(q);
  return {static_cast<int>(u.d * Ph::D::kTapShift), static_cast<int>(u.h * Ph::H::kTapShift),
          static_cast<int>(u.w * Ph::W::kTapShift), o};
}
// The filter tap (index over KD·KH·KW) of the phase's tap q.
template <class G, class Ph>
RUDNN_DEVICE int phase_filter_tap(int q) {
  const Pos3 u = decode3<Ph::H::kTaps, Ph::W::kTaps>(q);
  const i64 d = Ph::D::kTap0 + u.d * Ph::D::kTapStep, h = Ph::H::kTap0 + u.h * Ph::H::kTapStep,
            w = Ph::W::kTap0 + u.w * Ph::W::kTapStep;
  return static_cast<int>((d * G::kKH + h) * G::kKW + w);
}

template <i64 kN>
RUDNN_DEVICE bool phase_in_range(int v) {
  return static_cast<unsigned>(v) < static_cast<unsigned>(kN);
}
// dy at the output position row r reads through tap t, or null outside dy.
template <class G, class T>
RUDNN_DEVICE const T* phase_grad_at(const T* dy, const PhaseRow& r, const PhaseTap& t) {
  const int od = r.d - t.d, oh = r.h - t.h, ow = r.w - t.w;
  if (!phase_in_range<G::kOD>(od) || !phase_in_range<G::kOH>(oh) || !phase_in_range<G::kOW>(ow)) return nullptr;
  return dy + (r.base + ((static_cast<i64>(od) * G::kOH + oh) * G::kOW + ow) * G::kO + t.o);
}

// The gather of phase Ph as a policy of the data backward's tile (implicit_gemm.cuh), beside
// igemm::MaskedGather (one phase of every pixel and tap, for more than kMaxDgradPhases phases).
template <class G, class Ph>
struct PhaseGather {
  static constexpr i64 kPixels = Ph::kPixels, kK = Ph::kK;
  using Row = PhaseRow;
  using Tap = PhaseTap;
  RUDNN_DEVICE static Row row(i64 m, i64 rows) { return phase_row<G, Ph>(m, rows); }
  RUDNN_DEVICE static Tap tap(int k) { return phase_tap<G, Ph>(k); }
  template <class T>
  RUDNN_DEVICE static const T* at(const T* dy, const Row& r, const Tap& t) {
    return phase_grad_at<G>(dy, r, t);
  }
  RUDNN_DEVICE static i64 dx_row(i64 m) { return phase_dx_row<G, Ph>(m); }
  RUDNN_DEVICE static int filter_tap(int q) { return phase_filter_tap<G, Ph>(q); }
};

}  // namespace igemm

}  // namespace rudnn::conv
