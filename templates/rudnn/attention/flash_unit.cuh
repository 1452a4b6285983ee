#pragma once
// FlashUnit attention (SPEC §5 `FlashUnit`): one fused kernel on plain cores (no tensor cores), for
// T ∈ {float, f16, bf16}, D ≤ 256 and Dv ≤ Policy::kMaxValueDim (≤ 256), any lengths, no alignment
// requirement (D only sizes shared memory; a Dv past kMaxValueDim traps rather than truncating).
// Online softmax: per query row a running max and sum in FP32, scores in the log2 domain
// (scale·log2 e folded into one multiply, exp2), the output accumulated in FP32 registers and
// divided by the sum at the end; a row with no kept key outputs zeros.
//
// Work split. A block owns kBlockM consecutive rows of one panel (attention/problem.cuh: the group·Tq
// query rows that share a kv head, so decode with GQA fills a block with the group's heads) and
// streams the panel's keys in tiles of kBlockN. Each row is served by kThreadsPerRow consecutive
// lanes of one warp (so a row's reductions are shuffles and its hand-offs need only __syncwarp):
//   scores:  lane s of a row computes the keys s, s + kTPR, ... of the tile (kBlockN / kTPR keys),
//            each a dot product over D between the row's Q and the key's K, both from shared memory;
//   P·V:     the row's probabilities go through shared memory to all its lanes; lane s accumulates
//            output columns s, s + kTPR, ... (kMaxValueDim / kTPR registers).
// Tiles are staged as FP32 (converted once per element), zero-padded so that tails need no tests in
// the inner loops. Causal: the key loop stops at the last key any row of the block can see, so
// fully masked key tiles are never loaded.
//
// Parameters (launch order): q, k, v, mask, bias, out, batch, q_heads, kv_heads, q_len, kv_len,
// head_dim, value_dim, mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride,
// causal (i64), scale (float), then the (batch, head, token) element strides of q, k, v and out
// (attention/problem.cuh; any values, the last dims dense). MB ∈ {u8, void}, BB ∈ {float, T, void}
// and the score variant as in attention/variant.cuh.
//
// Launch geometry: block Policy::kThreads = kBlockM·kThreadsPerRow threads; grid.x =
// B·Hkv·⌈group·Tq / kBlockM⌉ (strided over the linear block index: any grid ≥ 1 is correct). Dynamic shared memory,
// with Ds = ⌈D/4⌉·4 + 4 (row stride of Q and K in floats):
//   Policy::shared_bytes(D, Dv) = shared_memory::flash_unit
//                               = 4·((kBlockM + kBlockN)·Ds + kBlockM·(kBlockN + 4) + kBlockN·Dv)
// (above 48 KiB the launcher must opt in; see the policy table below for the sizes).
#include "rudnn/attention/problem.cuh"
#include "rudnn/shared_memory.h"
#include "rudnn/vector.cuh"  // RUDNN_VECTOR_MAY_ALIAS_STRUCT

namespace rudnn::attention {

template <int kBlockM, int kBlockN, int kThreadsPerRow, int kMaxValueDim>
struct FlashUnitPolicy {
  static_assert(kThreadsPerRow >= 1 && kThreadsPerRow <= 32 && (kThreadsPerRow & (kThreadsPerRow - 1)) == 0,
                "FlashUnitPolicy: a row's threads are a power of two within one warp");
  static_assert(kBlockN % kThreadsPerRow == 0 && kBlockN % 4 == 0,
                "FlashUnitPolicy: the key tile splits evenly over a row's threads, in fours");
  static_assert(kMaxValueDim % kThreadsPerRow == 0 && kMaxValueDim <= 256,
                "FlashUnitPolicy: the value columns split evenly over a row's threads");
  static constexpr int kBM = kBlockM, kBN = kBlockN, kTPR = kThreadsPerRow, kMaxDv = kMaxValueDim;
  static constexpr int kThreads = kBlockM * kThreadsPerRow;
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "FlashUnitPolicy: whole warps, at most 1024 threads");
  static constexpr int kKeysPerThread = kBlockN / kThreadsPerRow;
  static constexpr int kValuesPerThread = kMaxValueDim / kThreadsPerRow;
  static constexpr int kStrideP = kBlockN + 4;

  // Row stride (floats) of staged Q and K rows: a multiple of 4 for 16-byte reads, plus 4 so that
  // the rows a warp reads together start in different banks.
  RUDNN_DEVICE static constexpr i64 stride_qk(i64 head_dim) { return shared_memory::flash_unit_stride_qk(head_dim); }
  RUDNN_DEVICE static constexpr i64 shared_bytes(i64 head_dim, i64 value_dim) {
    return shared_memory::flash_unit(kBlockM, kBlockN, head_dim, value_dim);
  }
};

// The variants this file is checked with (spill-free on sm_80 and sm_90a; see the report in the
// test file). Shared bytes at the largest head dims they serve:
//   FlashUnitSmall  D, Dv ≤ 64:  64 rows × 32 keys, 4 lanes/row:   43,264 B at D = Dv = 64
//   FlashUnitMedium D, Dv ≤ 128: 32 rows × 32 keys, 8 lanes/row:   54,784 B at D = Dv = 128
//   FlashUnitLarge  D, Dv ≤ 256: 16 rows × 32 keys, 16 lanes/row:  84,992 B at D = Dv = 256
using FlashUnitSmall = FlashUnitPolicy<64, 32, 4, 64>;
using FlashUnitMedium = FlashUnitPolicy<32, 32, 8, 128>;
using FlashUnitLarge = FlashUnitPolicy<16, 32, 16, 256>;

namespace flash_unit_detail {

// Stages `count` rows of `len` elements (row r of the source at row(r)) into FP32 rows of `stride`
// floats, zero-filling columns [len, padded) and whole rows [count, kRows). One warp per row at a
// time, lanes along the row (coalesced).
template <int kRows, int kThreads, class RowOf>
RUDNN_DEVICE void stage_rows(float* dst, i64 stride, const RowOf& row, i64 count, i64 len, i64 padded, int tid) {
  const int lane = tid & 31;
  for (int r = tid >> 5; r < kRows; r += kThreads / 32) {
    const auto* s = row(r < count ? r : 0);
    float* d = dst + r * stride;
    for (i64 c = lane; c < padded; c += 32) d[c] = r < count && c < len ? to_float(s[c]) : 0.0f;
  }
}

// The online-softmax state of one query row, held redundantly (bit-identical) by each of the row's
// lanes: running max (log2 domain; −inf until a key is kept) and running sum.
template <int kTPR>
struct OnlineRow {
  float max = negative_infinity();
  float sum = 0.0f;

  // Takes the tile's scores s (log2 domain, −inf = excluded), turns them into probabilities in
  // place, and returns the factor by which earlier accumulations must be rescaled.
  template <int N>
  RUDNN_DEVICE float absorb(float (&s)[N]) {
    float tile_max = s[0];
    RUDNN_UNROLL
    for (int t = 1; t < N; ++t) tile_max = fmaxf(tile_max, s[t]);
    RUDNN_UNROLL
    for (int m = kTPR / 2; m >= 1; m /= 2) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, m));
    const float new_max = fmaxf(max, tile_max);
    // Subtract 0 while every key so far is excluded: exp2(−inf − 0) = 0, never −inf − (−inf).
    const float base = new_max == negative_infinity() ? 0.0f : new_max;
    const float rescale = exp2f(max - base);
    float tile_sum = 0.0f;
    RUDNN_UNROLL
    for (int t = 0; t < N; ++t) {
      s[t] = exp2f(s[t] - base);
      tile_sum += s[t];
    }
    RUDNN_UNROLL
    for (int m = kTPR / 2; m >= 1; m /= 2) tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, m);
    sum = sum * rescale + tile_sum;
    max = new_max;
    return rescale;
  }
};

}  // namespace flash_unit_detail

template <class T, class MB, class BB, class P, template <class, class> class Variant = DefaultVariant>
RUDNN_DEVICE void flash_attention_unit(const T* q, const T* k, const T* v, const MB* mask, const BB* bias, T* out,
                                       i64 batch, i64 q_heads, i64 kv_heads, i64 q_len, i64 kv_len, i64 head_dim,
                                       i64 value_dim, i64 mask_batch_stride, i64 mask_head_stride,
                                       i64 bias_batch_stride, i64 bias_head_stride, i64 causal, float scale,
                                       i64 q_batch_stride, i64 q_head_stride, i64 q_token_stride, i64 k_batch_stride,
                                       i64 k_head_stride, i64 k_token_stride, i64 v_batch_stride, i64 v_head_stride,
                                       i64 v_token_stride, i64 out_batch_stride, i64 out_head_stride,
                                       i64 out_token_stride) {
  // Columns past kMaxValueDim would have no accumulator: refuse rather than drop them.
  if (value_dim > P::kMaxDv) trap("flash_attention_unit: value_dim exceeds the policy's kMaxValueDim");
  const Problem pr(batch, q_heads, kv_heads, q_len, kv_len, head_dim, value_dim);
  const Variant<MB, BB> variant(mask, bias, mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride,
                                q_len, kv_len, causal);
  const RowStrides qs{q_batch_stride, q_head_stride, q_token_stride};
  const RowStrides ks{k_batch_stride, k_head_stride, k_token_stride};
  const RowStrides vs{v_batch_stride, v_head_stride, v_token_stride};
  const RowStrides os{out_batch_stride, out_head_stride, out_token_stride};
  const i64 D = head_dim, Dv = value_dim;
  const i64 ds = P::stride_qk(D);
  const i64 d_padded = (D + 3) / 4 * 4;
  const float scale_log2 = scale * kLog2e;

  float* sq = dynamic_shared<float>();    // [kBM][ds]
  float* sk = sq + P::kBM * ds;           // [kBN][ds]
  float* sp = sk + P::kBN * ds;           // [kBM][kStrideP]
  float* sv = sp + P::kBM * P::kStrideP;  // [kBN][Dv]

  const int tid = static_cast<int>(threadIdx.x);
  const int row = tid / P::kTPR;  // row of the block tile
  const int sub = tid % P::kTPR;  // lane within the row's group
  // This lane's output columns sub + u·kTPR that exist (u < values).
  const int values = static_cast<int>((Dv - sub + P::kTPR - 1) / P::kTPR);
  const i64 m_tiles = ceil_div(pr.panel_rows, P::kBM);
  const i64 tiles = pr.panels * m_tiles;

  for (i64 tile = linear_block(); tile < tiles; tile += block_count()) {
    const i64 panel = tile / m_tiles;
    const i64 m0 = (tile % m_tiles) * P::kBM;
    const i64 rows = min_i64(P::kBM, pr.panel_rows - m0);
    const PanelRows q_rows = pr.query_rows(panel, qs);
    const T* kp = k + pr.key_row0(panel, ks);
    const T* vp = v + pr.key_row0(panel, vs);
    // Uniform over the block: the last key any of its rows sees.
    const i64 key_stop = max_i64(0, variant.key_end(pr.last_position(m0, m0 + rows)));
    const bool live = row < rows;
    // This row's output (computed here: kept live as one pointer rather than its inputs).
    T* const orow = out + pr.query_rows(panel, os)(live ? m0 + row : m0);
    const auto mods = pr.row_view(variant, panel, live ? m0 + row : m0);

    __syncthreads();  // the previous tile's readers of sq are done
    flash_unit_detail::stage_rows<P::kBM, P::kThreads>(
        sq, ds, [&](int r) { return q + q_rows(m0 + r); }, rows, D, d_padded, tid);

    flash_unit_detail::OnlineRow<P::kTPR> state;
    float acc[P::kValuesPerThread];
    RUDNN_UNROLL
    for (int u = 0; u < P::kValuesPerThread; ++u) acc[u] = 0.0f;

    for (i64 key0 = 0; key0 < key_stop; key0 += P::kBN) {
      const i64 keys = min_i64(P::kBN, kv_len - key0);
      __syncthreads();  // sk, sv and sp of the previous key tile have been read
      flash_unit_detail::stage_rows<P::kBN, P::kThreads>(
          sk, ds, [&](int r) { return kp + (key0 + r) * ks.token; }, keys, D, d_padded, tid);
      flash_unit_detail::stage_rows<P::kBN, P::kThreads>(
          sv, Dv, [&](int r) { return vp + (key0 + r) * vs.token; }, keys, Dv, Dv, tid);
      __syncthreads();

      // Scores of this lane's keys key0 + sub + t·kTPR, in the log2 domain.
      float s[P::kKeysPerThread];
      RUDNN_UNROLL
      for (int t = 0; t < P::kKeysPerThread; ++t) s[t] = 0.0f;
      const float* qrow = sq + row * ds;
      RUDNN_ROLLED
      for (i64 d = 0; d < d_padded; d += 4) {
        const Floats4 qv = load_floats4(qrow + d);
        RUDNN_UNROLL
        for (int t = 0; t < P::kKeysPerThread; ++t) {
          const Floats4 kv = load_floats4(sk + (sub + t * P::kTPR) * ds + d);
          s[t] += qv.v[0] * kv.v[0] + qv.v[1] * kv.v[1] + qv.v[2] * kv.v[2] + qv.v[3] * kv.v[3];
        }
      }
      RUDNN_UNROLL
      for (int t = 0; t < P::kKeysPerThread; ++t) {
        const i64 key = key0 + sub + t * P::kTPR;
        s[t] = !live || mods.excluded(key) ? negative_infinity() : mods.logit(s[t] * scale_log2, key, kLog2e);
      }

      const float rescale = state.absorb(s);
      RUDNN_UNROLL
      for (int u = 0; u < P::kValuesPerThread; ++u) acc[u] *= rescale;

      // Hand the row's probabilities to all its lanes, then acc[u] += Σ_j p_j · V[j, sub + u·kTPR].
      float* prow = sp + row * P::kStrideP;
      RUDNN_UNROLL
      for (int t = 0; t < P::kKeysPerThread; ++t) prow[sub + t * P::kTPR] = s[t];
      __syncwarp(0xffffffffu);
      RUDNN_ROLLED
      for (int j = 0; j < P::kBN; j += 4) {
        const Floats4 p4 = load_floats4(prow + j);
        RUDNN_UNROLL
        for (int jj = 0; jj < 4; ++jj) {
          const float* vrow = sv + (j + jj) * Dv + sub;
          RUDNN_UNROLL
          for (int u = 0; u < P::kValuesPerThread; ++u)
            if (u < values) acc[u] += p4.v[jj] * vrow[u * P::kTPR];
        }
      }
    }

    // Epilogue: divide by the row sum; a row that kept no key (sum 0) writes zeros.
    if (live) {
      const float inv = state.sum > 0.0f ? 1.0f / state.sum : 0.0f;
      RUDNN_UNROLL
      for (int u = 0; u < P::kValuesPerThread; ++u)
        if (u < values) orow[sub + u * P::kTPR] = from_float<T>(acc[u] * inv);
    }
  }
}

}  // namespace rudnn::attention
