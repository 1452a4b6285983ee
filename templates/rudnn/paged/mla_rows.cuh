#pragma once
// What the two tensor-core MLA kernels (paged/mla_mma.cuh, paged/mla_wgmma.cuh) share around their
// products: the scores role's online softmax over two key halves that meet in shared memory, and
// the epilogue. A lane of the scores role owns rows row0 + 8h + lane/4 (h = 0, 1) of the 64-row
// chunk (mma.sync's C-fragment rows, also a warpgroup MMA accumulator's) in one key half.
//
// Shared memory (floats): half_rows [2][64] (each half's row maxima in a key tile; its row sums at
// the end) and alpha [64] (the rows' rescale factors in a key tile; their maxima at the end).
#include "rudnn/paged/schedule.cuh"
#include "rudnn/prelude.cuh"
#include "rudnn/tile/accumulator.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::paged::mla {

inline constexpr int kRows = 64;  // panel rows per chunk

struct HalfSoftmax {
  float* half_rows;  // [2][kRows]
  float* alpha;      // [kRows]
  int row0, half, lane;
  float row_max[2], half_sum[2];  // this lane's rows: running max (log2) and this key half's sum

  RUDNN_DEVICE HalfSoftmax(float* half_rows_, float* alpha_, int row0_, int half_, int lane_)
      : half_rows(half_rows_), alpha(alpha_), row0(row0_), half(half_), lane(lane_) {}

  RUDNN_DEVICE int row(int h) const { return row0 + 8 * h + (lane >> 2); }

  // Starts a chunk: one past the last key each of this lane's rows sees (rows at or past `rows`
  // see none), and an empty state.
  RUDNN_DEVICE void start(i64 (&row_end)[2], const Schedule& sched, const KeyRange& range, i64 g0, i64 rows,
                          i64 q_heads, i64 causal) {
    RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const i64 m = row(h);
      row_end[h] = m >= rows ? range.lo
                   : causal  ? min_i64(range.hi, sched.position(div32(g0 + m, q_heads)) + 1)
                             : range.hi;
      row_max[h] = negative_infinity();
      half_sum[h] = 0.0f;
    }
  }

  // This half's scores s (keys from key0): −inf past each row's visible end (and in the tile's
  // zero-filled tail, which lies past every row's end); the half's row maxima to shared memory.
  // A barrier follows before exponentiate().
  template <int kTiles>
  RUDNN_DEVICE void mask_and_publish_max(tile::Accumulator<1, kTiles>& s, const i64 (&row_end)[2], i64 key0) const {
    RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const i64 visible = row_end[h] - key0;
      RUDNN_UNROLL
      for (int j = 0; j < kTiles; ++j) RUDNN_UNROLL
      for (int e = 0; e < 2; ++e)
        if (8 * j + 2 * (lane & 3) + e >= visible) s.c[0][j][2 * h + e] = negative_infinity();
      const float m = s.row_max(0, h, negative_infinity());
      if ((lane & 3) == 0) half_rows[half * kRows + row(h)] = m;
    }
  }

  // The new maxima from both halves, this half's probabilities P (rounded to T) stored as pairs at
  // p_at(r, c) (c: the column within the half), its row sums, and (half 0) the rescale factors.
  // A barrier follows before O is rescaled and accumulated.
  template <class T, int kTiles, class PAt>
  RUDNN_DEVICE void exponentiate(const tile::Accumulator<1, kTiles>& s, const PAt& p_at) {
    RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int r = row(h);
      const float mx = fmaxf(row_max[h], fmaxf(half_rows[r], half_rows[kRows + r]));
      const float base = mx == negative_infinity() ? 0.0f : mx;
      const float a = exp2f(row_max[h] - base);  // 0 while the row kept nothing
      row_max[h] = mx;
      float sum = 0.0f;
      RUDNN_UNROLL
      for (int j = 0; j < kTiles; ++j) {
        const float p0 = exp2f(s.c[0][j][2 * h] - base), p1 = exp2f(s.c[0][j][2 * h + 1] - base);
        sum += p0 + p1;
        Vec<T, 2> pair;
        pair.words[0] = pack2_from_float<T>(p0, p1);
        store_vec<T, 2>(p_at(r, 8 * j + 2 * (lane & 3)), pair);
      }
      half_sum[h] = half_sum[h] * a + tile::quad_sum(sum);
      if (half == 0 && (lane & 3) == 0) alpha[r] = a;
    }
  }

  // After the last key tile, behind a barrier: the halves' sums and (half 0) the maxima to shared
  // memory, for store(). A barrier follows.
  RUDNN_DEVICE void publish_totals() const {
    RUDNN_UNROLL
    for (int h = 0; h < 2; ++h)
      if ((lane & 3) == 0) {
        half_rows[half * kRows + row(h)] = half_sum[h];
        if (half == 0) alpha[row(h)] = row_max[h];
      }
  }
};

// Epilogue: O's rows m = row_of(mi, h) of the chunk (each lane's two columns of every n8 tile, from
// column col0) as O / ℓ to `out` ([queries·H, R]) or, split, as FP32 partials; ℓ = the two halves'
// sums in that order, from publish_totals(). `write_lse`: this lane also writes its rows'
// log2-sum-exps (one writer per row).
template <class T, int kMI, int kTiles, class RowOf>
RUDNN_DEVICE void store(const tile::Accumulator<kMI, kTiles>& o, const RowOf& row_of, const float* half_rows,
                        const float* max_rows, i64 rows, i64 g0, i64 q_heads, i64 latent, int col0, bool write_lse,
                        T* out, const SplitPartials& parts, i64 split) {
  RUDNN_UNROLL
  for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int m = row_of(mi, h);
    if (m >= rows) continue;
    const float l = half_rows[m] + half_rows[kRows + m];
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const i64 g = g0 + m;  // query row · H + head
    if (parts.base) {
      const i64 row = div32(g, q_heads), head = mod32(g, q_heads);
      float* orow = parts.output(split, row, head);
      RUDNN_UNROLL
      for (int d = 0; d < kTiles; ++d) {
        orow[col0 + 8 * d] = o.c[mi][d][2 * h] * inv;
        orow[col0 + 8 * d + 1] = o.c[mi][d][2 * h + 1] * inv;
      }
      if (write_lse) *parts.lse(split, row, head) = l > 0.0f ? max_rows[m] + log2f(l) : negative_infinity();
    } else {
      T* orow = out + g * latent;
      RUDNN_UNROLL
      for (int d = 0; d < kTiles; ++d) {
        Vec<T, 2> pair;
        pair.words[0] = pack2_from_float<T>(o.c[mi][d][2 * h] * inv, o.c[mi][d][2 * h + 1] * inv);
        store_vec<T, 2>(orow + col0 + 8 * d, pair);
      }
    }
  }
}

}  // namespace rudnn::paged::mla
