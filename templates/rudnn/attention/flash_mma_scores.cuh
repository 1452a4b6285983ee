#pragma once
// Score modifiers of the tensor-core flash attention kernel: everything between S = Q·Kᵀ and the
// softmax, applied to the warp's S registers (layout in flash_mma_warp.cuh) in the log2 domain:
//   s ← s · scale · log2(e)                 (scale_scores; every tile)
//   s ← s + log2(e) · bias(i, j)            (bias present)
//   s ← −inf  where key j is past Tk, causally hidden (j > i + Tk − Tq) or masked (mask(i, j) ≠ 0)
// so that the softmax can use exp2 directly: exp2(log2(e)·x) = e^x.
//
// Rows are panel rows (attention/flash_mma.cuh): the group = Hq / Hkv query heads sharing a kv head
// are consecutive, panel row m is query head (head0 + m / Tq) at position i = m % Tq. Mask and bias
// element (b, h, i, j) sits at b·batch_stride + h·head_stride + i·Tk + j (stride 0 = broadcast).
// MB ∈ {u8, void} and BB ∈ {float, T, void}: void builds the kernel without that input (the pointer
// is ignored); otherwise a null pointer means absent at run time. Panel rows are < 2^31 (group·Tq).
#include "rudnn/numeric.cuh"

namespace rudnn::attention::flash_mma {

template <class X>
struct IsVoid {
  static constexpr bool value = false;
};
template <>
struct IsVoid<void> {
  static constexpr bool value = true;
};

inline constexpr float kLog2e = 1.4426950408889634f;

RUDNN_DEVICE float minus_infinity() { return bits_as_float(0xff800000u); }

template <int kMI, int kNI>
RUDNN_DEVICE void scale_scores(float (&s)[kMI][kNI][4], float scale_log2) {
  RUDNN_UNROLL
  for (int mi = 0; mi < kMI; ++mi)
    RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j)
      RUDNN_UNROLL
      for (int v = 0; v < 4; ++v) s[mi][j][v] *= scale_log2;
}

// The per-(batch, kv head) view of the mask, bias and causal rule, for one panel. Rows at or past
// panel_rows (tile padding) are left alone: their outputs are never stored.
template <class MB, class BB>
struct ScoreMods {
  const MB* mask = nullptr;  // at (b, head0, 0, 0); null: no mask
  const BB* bias = nullptr;  // likewise
  i64 mask_head_stride = 0, bias_head_stride = 0;
  i64 q_len = 0, kv_len = 0, panel_rows = 0;
  bool causal = false;

  RUDNN_DEVICE bool has_mask_or_bias() const {
    bool any = false;
    if constexpr (!IsVoid<MB>::value) any = any || mask != nullptr;
    if constexpr (!IsVoid<BB>::value) any = any || bias != nullptr;
    return any;
  }

  // Keys [0, key_end) are visible to the query at position i before the mask.
  RUDNN_DEVICE i64 key_end(i64 i) const {
    const i64 causal_end = i + kv_len - q_len + 1;
    return causal && causal_end < kv_len ? causal_end : kv_len;
  }

  // Applies bias, mask and the key range to the key tile starting at n0 (kNI·8 keys). m_lane: the
  // panel row of this lane's accumulator row 0 (warp row0 + lane/4).
  template <int kMI, int kNI>
  RUDNN_DEVICE void apply(float (&s)[kMI][kNI][4], int m_lane, i64 n0, int lane) const {
    const int col0 = 2 * (lane & 3);
    RUDNN_UNROLL
    for (int mi = 0; mi < kMI; ++mi)
      RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int m = m_lane + 16 * mi + 8 * h;
        if (m >= panel_rows) continue;
        // 32-bit division (inline; a 64-bit one is a call that makes ptxas spill the accumulators).
        const i64 head = static_cast<u32>(m) / static_cast<u32>(q_len), i = m - head * q_len;
        const i64 end = key_end(i) - n0;
        const int visible = end >= 8 * kNI ? 8 * kNI : (end < 0 ? 0 : static_cast<int>(end));
        const i64 row = i * kv_len + n0;
        const MB* mask_row = nullptr;
        const BB* bias_row = nullptr;
        if constexpr (!IsVoid<MB>::value) {
          if (mask != nullptr) mask_row = mask + head * mask_head_stride + row;
        }
        if constexpr (!IsVoid<BB>::value) {
          if (bias != nullptr) bias_row = bias + head * bias_head_stride + row;
        }
        RUDNN_UNROLL
        for (int j = 0; j < kNI; ++j)
          RUDNN_UNROLL
          for (int e = 0; e < 2; ++e) {
            const int col = 8 * j + col0 + e;
            float& x = s[mi][j][2 * h + e];
            if (col >= visible) {
              x = minus_infinity();
              continue;
            }
            if constexpr (!IsVoid<BB>::value) {
              if (bias_row != nullptr) x += kLog2e * to_float(bias_row[col]);
            }
            if constexpr (!IsVoid<MB>::value) {
              if (mask_row != nullptr && mask_row[col] != 0) x = minus_infinity();
            }
          }
      }
  }
};

}  // namespace rudnn::attention::flash_mma
