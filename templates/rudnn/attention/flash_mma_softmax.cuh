#pragma once
// Online softmax in registers for the tensor-core flash attention kernel (FlashAttention-2 style):
// per query row a running maximum m and a running sum ℓ of exp2(s − m) over the key tiles seen so
// far; each new tile rescales ℓ and the output accumulators by exp2(m_old − m_new). Scores arrive in
// the log2 domain (flash_mma_scores.cuh), excluded keys as −inf.
//
// A lane holds rows lane/4 and lane/4 + 8 of each m16 tile (2·kMI rows); the 4 lanes of a quad share
// a row, so the row maximum is the accumulator's row_max (two xor shuffles). The sum stays per lane
// (each lane sums its own columns; rescaling is uniform across the quad) and is reduced once, in
// finish (tile::quad_sum).
//
// −inf handling: while every key of a row so far is excluded, m = −inf and the exponent base is 0
// instead (exp2(−inf − 0) = 0, never −inf − (−inf) = NaN). A row that never sees a kept key ends with
// ℓ = 0 and outputs zeros. Scores never overflow: every exponent is ≤ 0 after the max subtraction
// (±1e4 logits included).
#include "rudnn/numeric.cuh"
#include "rudnn/tile/accumulator.cuh"

namespace rudnn::attention::flash_mma {

template <int kMI>
struct OnlineSoftmax {
  float max_[kMI][2];  // running row maximum (log2 domain); −inf: no kept key yet
  float sum_[kMI][2];  // this lane's part of Σ exp2(s − max_)

  RUDNN_DEVICE void init() {
    RUDNN_UNROLL
    for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) {
      max_[mi][h] = negative_infinity();
      sum_[mi][h] = 0.0f;
    }
  }

  // Turns the tile's scores s into probabilities exp2(s − max_new) in place and rescales the
  // output accumulators o (kDI n8 tiles per row tile) to the new maximum.
  template <int kNI, int kDI>
  RUDNN_DEVICE void update(tile::Accumulator<kMI, kNI>& s, tile::Accumulator<kMI, kDI>& o) {
    RUDNN_UNROLL
    for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const float mx = s.row_max(mi, h, max_[mi][h]);
      const float base = mx == negative_infinity() ? 0.0f : mx;
      const float alpha = exp2f(max_[mi][h] - base);  // 0 while nothing was kept
      max_[mi][h] = mx;
      float sum = 0.0f;
      RUDNN_UNROLL
      for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
      for (int e = 0; e < 2; ++e) {
        const float p = exp2f(s.c[mi][j][2 * h + e] - base);
        s.c[mi][j][2 * h + e] = p;
        sum += p;
      }
      sum_[mi][h] = sum_[mi][h] * alpha + sum;
      o.scale_row(mi, h, alpha);
    }
  }

  // The factors that normalize each row: 1/ℓ, or 0 for a row without any kept key.
  RUDNN_DEVICE void finish(float (&inv)[kMI][2]) const {
    RUDNN_UNROLL
    for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const float l = tile::quad_sum(sum_[mi][h]);
      inv[mi][h] = l > 0.0f ? 1.0f / l : 0.0f;
    }
  }
};

}  // namespace rudnn::attention::flash_mma
