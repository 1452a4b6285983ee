#pragma once
// The score variant (attention/variant.cuh) applied to the tensor-core flash attention kernel's S
// accumulator (layout in tile/accumulator.cuh), in the log2 domain: the kernel has already scaled
// s by scale·log2(e) (every tile); here, for a key tile that needs per-element work,
//   s ← −inf                         key j out of the row's range (past Tk, or the variant's key_end)
//   s ← logit(s, j, log2 e)          kept keys (default variant: s + log2(e)·bias(i, j))
//   s ← −inf                         masked(j)
// so that the softmax can use exp2 directly: exp2(log2(e)·x) = e^x.
//
// Rows are panel rows (attention/flash_mma.cuh): the group = Hq / Hkv query heads sharing a kv head
// are consecutive, panel row m is query head (head0 + m / Tq) at position i = m % Tq; the variant's
// panel view is at (b, head0). Rows at or past panel_rows (tile padding) are left alone: their
// outputs are never stored. Panel rows are < 2^31 (group·Tq).
#include "rudnn/attention/variant.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/tile/accumulator.cuh"

namespace rudnn::attention::flash_mma {

// Applies the variant to the key tile starting at n0 (kNI·8 keys). m_lane: the panel row of this
// lane's accumulator row 0 (warp row0 + lane/4).
template <class Panel, int kMI, int kNI>
RUDNN_DEVICE void apply_variant(const Panel& panel, tile::Accumulator<kMI, kNI>& s, int m_lane, i64 n0, i64 panel_rows,
                                int lane) {
  const int col0 = 2 * (lane & 3);
  RUDNN_UNROLL
  for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int m = m_lane + 16 * mi + 8 * h;
    if (m >= panel_rows) continue;
    // 32-bit division (inline; a 64-bit one is a call that makes ptxas spill the accumulators).
    const i64 head = static_cast<u32>(m) / static_cast<u32>(panel.q_len), i = m - head * panel.q_len;
    // The clamp first, then the row's pointers: the order ptxas was tuned on (registers).
    const i64 end = panel.key_end(i) - n0;
    const int visible = end >= 8 * kNI ? 8 * kNI : (end < 0 ? 0 : static_cast<int>(end));
    const auto row = panel.row(head, i, n0);
    RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
    for (int e = 0; e < 2; ++e) {
      const int col = 8 * j + col0 + e;
      float& x = s.c[mi][j][2 * h + e];
      if (col >= visible) {
        x = negative_infinity();
        continue;
      }
      x = row.logit(x, col, kLog2e);
      if (row.masked(col)) x = negative_infinity();
    }
  }
}

}  // namespace rudnn::attention::flash_mma
