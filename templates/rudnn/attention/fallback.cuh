#pragma once
// Fallback attention (SPEC §5 `Fallback`): three kernels the integrator launches in sequence on the
// same queue, through an FP32 workspace S [B, Hq, Tq, Tk] (4·B·Hq·Tq·Tk bytes):
//   1. attention_scores<T, MB, BB, TilePolicy>:   S = scale·Q·Kᵀ + bias; excluded entries −inf (the
//                                                  score variant, attention/variant.cuh).
//   2. attention_softmax<SoftmaxPolicy>:           each row of S → softmax, in place (max
//                                                  subtracted); a row with no kept key → zeros.
//   3. attention_weighted_sum<T, TilePolicy>:      O = P·V (FP32 accumulation) → output in T.
// The reference path of the library: any D, Dv ≥ 1 (the contract caps them at 1024), any lengths,
// no alignment requirement; FP32 throughout. Query rows are tiled per panel (attention/problem.cuh),
// so decode with GQA fills tiles with the group's heads.
//
// All three take the same argument list (one argument pack for the whole sequence):
//   q, k, v, mask, bias, out, workspace,
//   batch, q_heads, kv_heads, q_len, kv_len, head_dim, value_dim,
//   mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride, causal (i64),
//   scale (float),
//   the (batch, head, token) element strides of q, k, v and out (attention/problem.cuh).
// Pointers a kernel does not use are typed const void* there and never read; the workspace is
// always dense.
//
// Launch geometry (every kernel strides over its linear block index, so any grid ≥ 1 is correct;
// the counts below are the natural total, which the launcher may split over x, y and z):
//   scores:       block TilePolicy::kThreads, grid.x = B·Hkv · ⌈group·Tq / kBM⌉ · ⌈Tk / kBN⌉,
//                 dynamic shared memory TilePolicy::kSharedBytes = (kBM + kBN + 8)·kBK·4.
//   softmax:      block SoftmaxPolicy::kThreads, grid.x = ⌈B·Hq·Tq / kRowsPerBlock⌉,
//                 dynamic shared memory SoftmaxPolicy::kSharedBytes
//                 = kRowsPerBlock·2·(kThreadsPerRow / 32)·4 when kThreadsPerRow > 32, else 0.
//   weighted sum: block TilePolicy::kThreads, grid.x = B·Hkv · ⌈group·Tq / kBM⌉ · ⌈Dv / kBN⌉,
//                 dynamic shared memory TilePolicy::kSharedBytes.
// Causal: score tiles wholly above the diagonal only write −inf (no product), and the weighted sum
// stops at the last key any row of its tile can see.
#include "rudnn/attention/fallback_tile.cuh"
#include "rudnn/attention/problem.cuh"
#include "rudnn/reduce.cuh"

namespace rudnn::attention {

// Rows of S per block and threads per row. kThreadsPerRow ∈ {1, 2, ..., 32} (one warp holds several
// rows; warp-only reductions) or a multiple of 32 up to 1024 (rows served by several warps;
// reductions through shared memory).
template <int kThreadsPerRow, int kRowsPerBlock>
struct FallbackSoftmaxPolicy {
  static_assert(kThreadsPerRow >= 1 && kThreadsPerRow <= 1024 && (kThreadsPerRow & (kThreadsPerRow - 1)) == 0,
                "FallbackSoftmaxPolicy: threads per row is a power of two <= 1024");
  static constexpr int kTPR = kThreadsPerRow;
  static constexpr int kRPB = kRowsPerBlock;
  static constexpr int kThreads = kThreadsPerRow * kRowsPerBlock;
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "FallbackSoftmaxPolicy: whole warps, at most 1024 threads");
  static constexpr int kWarpsPerRow = kThreadsPerRow > 32 ? kThreadsPerRow / 32 : 1;
  static constexpr int kSlotFloats = kThreadsPerRow > 32 ? 2 * kWarpsPerRow : 0;  // per row
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::fallback_softmax(kThreadsPerRow, kRowsPerBlock));
  static_assert(kSharedBytes == kRowsPerBlock * kSlotFloats * 4, "FallbackSoftmaxPolicy: slots disagree");
};

// The variants this file is checked with (spill-free on sm_80 and sm_90a; see the test file).
//   FallbackTileLarge:  64 × 64 output tile, 16-deep slices, 4 × 4 per thread, 256 threads, 8,704 B.
//   FallbackTileSmall:  16 × 64 output tile (decode, short panels), 1 × 4 per thread, 256 threads,
//                       5,632 B.
//   FallbackSoftmaxWarp:   a warp per row, 8 rows per block (no shared memory).
//   FallbackSoftmaxNarrow: 8 lanes per row, 32 rows per block, for short rows (no shared memory).
//   FallbackSoftmaxBlock:  256 threads per row (long rows), 64 B of shared memory.
using FallbackTileLarge = FallbackTilePolicy<64, 64, 16, 4, 4>;
using FallbackTileSmall = FallbackTilePolicy<16, 64, 16, 1, 4>;
using FallbackSoftmaxWarp = FallbackSoftmaxPolicy<32, 8>;
using FallbackSoftmaxNarrow = FallbackSoftmaxPolicy<8, 32>;
using FallbackSoftmaxBlock = FallbackSoftmaxPolicy<256, 1>;

namespace fallback_detail {

// Tile t of the walk (panel, row tile, column tile) with the column tile fastest.
struct TileCoord {
  i64 panel, m0, n0;
  RUDNN_DEVICE TileCoord(i64 t, i64 m_tiles, i64 n_tiles, int bm, int bn) {
    n0 = (t % n_tiles) * bn;
    const i64 rest = t / n_tiles;
    m0 = (rest % m_tiles) * bm;
    panel = rest / m_tiles;
  }
};

// Row reduction of one float over a row's kTPR threads (see FallbackSoftmaxPolicy).
template <class P>
struct RowReducer {
  GroupReducer<P::kWarpsPerRow> group;
  RUDNN_DEVICE RowReducer(float* slots, int thread_in_row) : group(slots, thread_in_row) {}
  template <class Op>
  RUDNN_DEVICE float reduce(float v) {
    if constexpr (P::kTPR <= 32) {
      return warp_reduce<Op, P::kTPR>(v);
    } else {
      return group.template reduce<Op>(v);
    }
  }
};

}  // namespace fallback_detail

template <class T, class MB, class BB, class P, template <class, class> class Variant = DefaultVariant>
RUDNN_DEVICE void attention_scores(const T* q, const T* k, const void* /*v*/, const MB* mask, const BB* bias,
                                   void* /*out*/, float* scores, i64 batch, i64 q_heads, i64 kv_heads, i64 q_len,
                                   i64 kv_len, i64 head_dim, i64 value_dim, i64 mask_batch_stride, i64 mask_head_stride,
                                   i64 bias_batch_stride, i64 bias_head_stride, i64 causal, float scale,
                                   i64 q_batch_stride, i64 q_head_stride, i64 q_token_stride, i64 k_batch_stride,
                                   i64 k_head_stride, i64 k_token_stride, i64 /*v_batch_stride*/, i64 /*v_head_stride*/,
                                   i64 /*v_token_stride*/, i64 /*out_batch_stride*/, i64 /*out_head_stride*/,
                                   i64 /*out_token_stride*/) {
  const Problem pr(batch, q_heads, kv_heads, q_len, kv_len, head_dim, value_dim);
  const RowStrides qs{q_batch_stride, q_head_stride, q_token_stride};
  const RowStrides ks{k_batch_stride, k_head_stride, k_token_stride};
  const Variant<MB, BB> variant(mask, bias, mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride,
                                q_len, kv_len, causal);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % P::kThreadsN, ty = tid / P::kThreadsN;
  const i64 D = head_dim, Tk = kv_len;
  const i64 m_tiles = ceil_div(pr.panel_rows, P::kBM), n_tiles = ceil_div(Tk, P::kBN);
  const i64 tiles = pr.panels * m_tiles * n_tiles;
  for (i64 t = linear_block(); t < tiles; t += block_count()) {
    const fallback_detail::TileCoord c(t, m_tiles, n_tiles, P::kBM, P::kBN);
    const i64 rows = min_i64(P::kBM, pr.panel_rows - c.m0);
    const i64 cols = min_i64(P::kBN, Tk - c.n0);
    const i64 row0 = pr.panel_row0(c.panel) + c.m0;
    const PanelRows q_rows = pr.query_rows(c.panel, qs);
    const T* kt = k + pr.key_row0(c.panel, ks) + c.n0 * ks.token;
    float acc[P::kTM][P::kTN];
    // A tile every row of which is causally blind to every key writes −inf without a product
    // (uniform over the block: it depends on the tile only).
    const i64 product_len = c.n0 < variant.key_end(pr.last_position(c.m0, c.m0 + rows)) ? D : 0;
    tile_product<P, true>(
        acc, product_len, dynamic_shared<float>(), tid,
        [&](int r, i64 d) { return r < rows && d < D ? to_float(q[q_rows(c.m0 + r) + d]) : 0.0f; },
        [&](int j, i64 d) { return j < cols && d < D ? to_float(kt[j * ks.token + d]) : 0.0f; });
    RUDNN_UNROLL
    for (int i = 0; i < P::kTM; ++i) {
      const int r = ty * P::kTM + i;
      if (r >= rows) continue;
      const auto mods = pr.row_view(variant, c.panel, c.m0 + r);
      float* out_row = scores + (row0 + r) * Tk;
      RUDNN_UNROLL
      for (int j = 0; j < P::kTN; ++j) {
        const i64 key = c.n0 + tx * P::kTN + j;
        if (key >= Tk) continue;
        out_row[key] = mods.excluded(key) ? negative_infinity() : mods.logit(acc[i][j] * scale, key, 1.0f);
      }
    }
  }
}

template <class P>
RUDNN_DEVICE void attention_softmax(const void* /*q*/, const void* /*k*/, const void* /*v*/, const void* /*mask*/,
                                    const void* /*bias*/, void* /*out*/, float* scores, i64 batch, i64 q_heads,
                                    i64 /*kv_heads*/, i64 q_len, i64 kv_len, i64 /*head_dim*/, i64 /*value_dim*/,
                                    i64 /*mask_batch_stride*/, i64 /*mask_head_stride*/, i64 /*bias_batch_stride*/,
                                    i64 /*bias_head_stride*/, i64 /*causal*/, float /*scale*/, i64 /*q_batch_stride*/,
                                    i64 /*q_head_stride*/, i64 /*q_token_stride*/, i64 /*k_batch_stride*/,
                                    i64 /*k_head_stride*/, i64 /*k_token_stride*/, i64 /*v_batch_stride*/,
                                    i64 /*v_head_stride*/, i64 /*v_token_stride*/, i64 /*out_batch_stride*/,
                                    i64 /*out_head_stride*/, i64 /*out_token_stride*/) {
  const int tid = static_cast<int>(threadIdx.x);
  const int slot = tid / P::kTPR;
  const int t = tid % P::kTPR;
  const i64 rows = batch * q_heads * q_len, Tk = kv_len;
  const float ninf = negative_infinity();
  // Built once: GroupReducer alternates its two buffers across calls.
  fallback_detail::RowReducer<P> reducer(dynamic_shared<float>() + slot * P::kSlotFloats, t);
  const i64 step = block_count() * P::kRPB;
  // The row-group loop is uniform over the block (the reductions may contain barriers); a slot past
  // the last row takes part with an empty row.
  for (i64 base = linear_block() * P::kRPB; base < rows; base += step) {
    const i64 row = base + slot;
    float* x = scores + (row < rows ? row : 0) * Tk;
    const i64 len = row < rows ? Tk : 0;
    // Online max and sum of this thread's share of the row; −inf entries are excluded keys.
    float m = ninf, s = 0.0f;
    for (i64 j = t; j < len; j += P::kTPR) {
      const float v = x[j];
      if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
      } else if (v != ninf) {
        s += expf(v - m);
      }
    }
    const float row_max = reducer.template reduce<MaxOp>(m);
    const float row_sum = reducer.template reduce<SumOp>(m == ninf ? 0.0f : s * expf(m - row_max));
    // No kept key: the row max is −inf and the row becomes zeros.
    const bool empty = row_max == ninf;
    const float inv = empty ? 0.0f : 1.0f / row_sum;
    for (i64 j = t; j < len; j += P::kTPR) x[j] = empty ? 0.0f : expf(x[j] - row_max) * inv;
  }
}

template <class T, class P, template <class, class> class Variant = DefaultVariant>
RUDNN_DEVICE void attention_weighted_sum(const void* /*q*/, const void* /*k*/, const T* v, const void* /*mask*/,
                                         const void* /*bias*/, T* out, const float* probs, i64 batch, i64 q_heads,
                                         i64 kv_heads, i64 q_len, i64 kv_len, i64 head_dim, i64 value_dim,
                                         i64 /*mask_batch_stride*/, i64 /*mask_head_stride*/, i64 /*bias_batch_stride*/,
                                         i64 /*bias_head_stride*/, i64 causal, float /*scale*/, i64 /*q_batch_stride*/,
                                         i64 /*q_head_stride*/, i64 /*q_token_stride*/, i64 /*k_batch_stride*/,
                                         i64 /*k_head_stride*/, i64 /*k_token_stride*/, i64 v_batch_stride,
                                         i64 v_head_stride, i64 v_token_stride, i64 out_batch_stride,
                                         i64 out_head_stride, i64 out_token_stride) {
  const Problem pr(batch, q_heads, kv_heads, q_len, kv_len, head_dim, value_dim);
  const RowStrides vs{v_batch_stride, v_head_stride, v_token_stride};
  const RowStrides os{out_batch_stride, out_head_stride, out_token_stride};
  // The key range only (no mask or bias here: excluded keys already have probability 0).
  const Variant<void, void> variant(nullptr, nullptr, 0, 0, 0, 0, q_len, kv_len, causal);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % P::kThreadsN, ty = tid / P::kThreadsN;
  const i64 Dv = value_dim, Tk = kv_len;
  const i64 m_tiles = ceil_div(pr.panel_rows, P::kBM), n_tiles = ceil_div(Dv, P::kBN);
  const i64 tiles = pr.panels * m_tiles * n_tiles;
  for (i64 t = linear_block(); t < tiles; t += block_count()) {
    const fallback_detail::TileCoord c(t, m_tiles, n_tiles, P::kBM, P::kBN);
    const i64 rows = min_i64(P::kBM, pr.panel_rows - c.m0);
    const i64 cols = min_i64(P::kBN, Dv - c.n0);
    const i64 row0 = pr.panel_row0(c.panel) + c.m0;
    const float* pt = probs + row0 * Tk;
    const T* vt = v + pr.key_row0(c.panel, vs) + c.n0;
    const PanelRows out_rows = pr.query_rows(c.panel, os);
    // Keys past the last one any row of the tile sees causally have probability 0: not read.
    const i64 keys = max_i64(0, variant.key_end(pr.last_position(c.m0, c.m0 + rows)));
    float acc[P::kTM][P::kTN];
    tile_product<P, false>(
        acc, keys, dynamic_shared<float>(), tid,
        [&](int r, i64 j) { return r < rows && j < keys ? pt[r * Tk + j] : 0.0f; },
        [&](int col, i64 j) { return col < cols && j < keys ? to_float(vt[j * vs.token + col]) : 0.0f; });
    RUDNN_UNROLL
    for (int i = 0; i < P::kTM; ++i) {
      const int r = ty * P::kTM + i;
      if (r >= rows) continue;
      T* out_row = out + out_rows(c.m0 + r) + c.n0;
      RUDNN_UNROLL
      for (int j = 0; j < P::kTN; ++j) {
        const int col = tx * P::kTN + j;
        if (col < cols) out_row[col] = from_float<T>(acc[i][j]);
      }
    }
  }
}

}  // namespace rudnn::attention
