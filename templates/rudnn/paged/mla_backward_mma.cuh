#pragma once
// Paged MLA backward on tensor cores (SPEC §9), mma.sync m16n8k16 for f16/bf16: a drop-in for
// paged_attention_backward_unit with MLA's operands (same parameters and outputs: dq and dq_rope in
// T; dlatent (dk) and dk_rope as FP32 atomics into the zeroed scratch, or, with those null, the
// ordered path's row statistics, which paged_mla_backward_history_mma below then reads).
//
// Keys are (latent [R], rope [Pr]) rows of K = R + Pr columns and the values are the latent rows,
// so one gathered key tile serves S = Q·Kᵀ, dP = dO·Vᵀ, dQ += dS·K and dlatent's value part; and
// like the forward (mla_mma.cuh) a block serves the heads of a query row (or of up to 32 / H
// consecutive rows of one sequence) so each key tile is gathered once for all of them.
//
// The accumulators are wide (dQ: 32 rows × K, dlatent: 32 keys × K, K = 576 for DeepSeek), so a
// block has 8 warps and a panel chunk 32 rows; key tiles of 32 keys, two cp.async stages. Roles per
// key tile (warp w; row block rb = w % 2, key half kh = (w / 2) % 2):
//   scores   warps 0-3: S of rows 16·rb.. × keys 16·kh.. over K columns (FP32, log2 domain,
//            masked past each row's visible end); warps 4-7: dP of the same blocks over the R
//            latent columns, handed to the score warps through shared memory (FP32)
//   pass 1   the score warps keep, per row and key half, the running max m, Σ 2^(s−m) and
//            Σ 2^(s−m)·dP; the two halves merge at the end: L = m + log2 ℓ and δ = Σ P·dP
//            (= dO·O, without holding O's 32 × R accumulator)
//   pass 2   P = 2^(S − L), dS' = scale·P ⊙ (dP − δ), both rounded to T into shared memory; then
//            every warp w: dQ (rows 16·(w % 2).., columns of group w / 2) += dS'·K in registers,
//            and, when a history output is asked for, its block of the key tile's history
//            gradient (keys 16·(w % 2).., the same columns) = dS'ᵀ·[Q | Qp] + Pᵀ·dO (the value part
//            on the latent columns only), added to the FP32 scratch with atomics — one add per key,
//            column and 32-row chunk
// Column group g of 4 covers n16 column pairs g·kColPairs.. (kColPairs = ⌈K / 64⌉): R and Pr are
// multiples of 16, so a pair never straddles the latent / rope boundary; pairs past K are skipped
// (K ≤ 192 leaves group 3 empty: warps 6 and 7 then only compute dP).
// dq = dQ (the scale is in dS'). A row that sees no key gets dq = 0, statistics (0, 0) and adds
// nothing. The history sums' order depends on scheduling (the atomic path).
//
// Parameters (launch order, paged_attention_backward_unit's): q, q_rope, k (latent), k_rope, v
// (null), grad_out, page_table, lengths, sequence_ids, positions, dq, dq_rope, dk (dlatent), dk_rope,
// dv (null), row_stats, queries, q_heads, kv_heads, head_dim, rope_dim, value_dim, page_size,
// table_stride, causal (i64), scale (float). Null outputs are not computed.
// Launch: 256 threads (else trap); grid queries items (kv_heads = 1; strided over the linear block
// index); dynamic shared memory shared_memory::paged_mla_backward_mma(R, Pr). Requirements: q,
// q_rope, latent, rope cache, grad_out 16-byte aligned; head_dim = value_dim = kLatent, rope_dim =
// kRope, kv_heads = 1 (else trap).
#include "rudnn/grid.cuh"
#include "rudnn/paged/gather.cuh"
#include "rudnn/paged/history_readers.cuh"
#include "rudnn/paged/schedule.cuh"
#include "rudnn/paged/shared_memory.h"
#include "rudnn/tile/accumulator.cuh"
#include "rudnn/tile/mma_fragment.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::paged {

template <int kLatent, int kRope>
struct MlaBackwardMmaPolicy {
  static_assert(kLatent % 128 == 0 && kLatent <= 512, "MlaBackwardMmaPolicy: R a multiple of 128, at most 512");
  static_assert(kRope % 16 == 0 && kRope >= 16 && kRope <= 256, "MlaBackwardMmaPolicy: Pr a multiple of 16 in 16..256");
  static constexpr int kR = kLatent, kPr = kRope, kKeyDim = kLatent + kRope;
  static constexpr int kBM = 32, kBN = 32, kWarps = 8, kThreads = 32 * kWarps;
  static constexpr int kColPairs = (kKeyDim / 16 + 3) / 4;  // n16 column pairs of a warp's dQ / history block
  static constexpr int kColTiles = 2 * kColPairs;
  static constexpr int kHistoryPairs = 3;  // column pairs of the history product per step
  static constexpr int kLd = kKeyDim + 8, kLdS = kBN + 8;
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::paged_mla_backward_mma(kLatent, kRope));
};

namespace mla_backward_mma_detail {

// The panel rows' Q and dO, the key tiles, P and dS' (T), then dP and the row statistics (FP32).
template <class T, class P>
struct Smem {
  T* base;
  RUDNN_DEVICE T* q() const { return base; }
  RUDNN_DEVICE T* dout() const { return base + P::kBM * P::kLd; }  // R columns used
  RUDNN_DEVICE T* k(int stage) const { return base + (2 * P::kBM + stage * P::kBN) * P::kLd; }
  RUDNN_DEVICE T* p() const { return base + (2 * P::kBM + 2 * P::kBN) * P::kLd; }
  RUDNN_DEVICE T* ds() const { return p() + P::kBM * P::kLdS; }
  RUDNN_DEVICE float* dp() const { return reinterpret_cast<float*>(ds() + P::kBM * P::kLdS); }  // [kBM][kBN]
  // [2 key halves][max, sum, dot][kBM]: pass 1's running values of each half
  RUDNN_DEVICE float* half_stats() const { return dp() + P::kBM * P::kBN; }
  RUDNN_DEVICE float* lse() const { return half_stats() + 6 * P::kBM; }  // [kBM], log2 domain
  RUDNN_DEVICE float* delta() const { return lse() + P::kBM; }           // [kBM]
};

// S (or dP) of a warp's 16 rows × 16 keys over kDepth columns, from shared memory (a_lane, b_lane:
// the blocks plus LaneOffsets::a / b_nt). The k16 loop stays rolled: unrolled, ptxas keeps many
// steps' fragments live next to dQ's accumulator and spills at K = 576.
template <class T, int kDepth>
RUDNN_DEVICE void block_scores(tile::Accumulator<1, 2>& s, const T* a_lane, const T* b_lane) {
  s.zero();
  RUDNN_ROLLED
  for (int kk = 0; kk < kDepth; kk += 16) {
    u32 a[4], b[2][2];
    tile::load_a(a, a_lane + kk);
    tile::load_b_pair_nt(b, b_lane + kk);
    s.template mma_pair<T>(0, 0, a, b);
  }
}

// Keys of a warp's 16 × 16 S block (log2 domain) at or past `visible[h]` (counted from the block's
// first key) of this lane's rows 8h + lane/4 set to −inf.
RUDNN_DEVICE void mask_keys(tile::Accumulator<1, 2>& s, const i64 (&visible)[2], int lane) {
  RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) RUDNN_UNROLL
  for (int j = 0; j < 2; ++j) RUDNN_UNROLL
  for (int e = 0; e < 2; ++e)
    if (8 * j + 2 * (lane & 3) + e >= visible[h]) s.c[0][j][2 * h + e] = negative_infinity();
}

// A dP warp's 16 × 16 block into the FP32 dP tile ([rows][kBN]) at (row0, key0).
template <int kBN>
RUDNN_DEVICE void store_dp(float* dp, const tile::Accumulator<1, 2>& block, int row0, int key0, int lane) {
  float* at = dp + row0 * kBN + key0;
  block.each(lane, [&](int row, int col, float x) { at[row * kBN + col] = x; });
}

// A score warp's P = exp2(S − L) and dS' = scale·P ⊙ (dP − δ) (S masked, log2 domain; dP from the
// FP32 tile; L and δ of this lane's rows), rounded to T into P and dS' ([rows][kLdS]) at (row0, key0).
template <class T, int kBN, int kLdS>
RUDNN_DEVICE void store_p_ds(T* p_tile, T* ds_tile, const float* dp, const tile::Accumulator<1, 2>& s,
                             const float (&lse)[2], const float (&delta)[2], float scale, int row0, int key0,
                             int lane) {
  RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int r = row0 + 8 * h + (lane >> 2);
    RUDNN_UNROLL
    for (int j = 0; j < 2; ++j) {
      const int col = key0 + 8 * j + 2 * (lane & 3);
      float p[2], ds[2];
      RUDNN_UNROLL
      for (int e = 0; e < 2; ++e) {
        p[e] = exp2f(s.c[0][j][2 * h + e] - lse[h]);
        ds[e] = scale * p[e] * (dp[r * kBN + col + e] - delta[h]);
      }
      Vec<T, 2> pair;
      pair.words[0] = pack2_from_float<T>(p[0], p[1]);
      store_vec<T, 2>(p_tile + r * kLdS + col, pair);
      pair.words[0] = pack2_from_float<T>(ds[0], ds[1]);
      store_vec<T, 2>(ds_tile + r * kLdS + col, pair);
    }
  }
}

// acc[16 keys from key0 × kTiles n8 tiles from col0] += dS'ᵀ·[Q | Qp] + Pᵀ·dO over the first rows16
// panel rows (P, dS' [rows][kLdS]; Q | Qp and dO [rows][kLd], read with ldmatrix.trans); the value
// part only on the latent columns (< kR); n8 tile pairs j with !take(j) skipped (warp-uniform).
template <class T, int kTiles, int kR, int kLd, int kLdS, class Take>
RUDNN_DEVICE void add_history_product(tile::Accumulator<1, kTiles>& acc, const T* ds, const T* p, const T* q,
                                      const T* dout, int rows16, int key0, int col0, int lane, const Take& take) {
  for (int r0 = 0; r0 < rows16; r0 += 16) {
    u32 a[4];
    tile::load_a_kn(a, ds, kLdS, r0, key0, lane);
    RUDNN_UNROLL
    for (int j = 0; j < kTiles; j += 2) {
      if (!take(j)) continue;
      u32 b[2][2];
      tile::load_b_pair_kn(b, q, kLd, r0, col0 + 8 * j, lane);
      acc.template mma_pair<T>(0, j, a, b);
    }
    tile::load_a_kn(a, p, kLdS, r0, key0, lane);
    RUDNN_UNROLL
    for (int j = 0; j < kTiles; j += 2) {
      if (!take(j) || col0 + 8 * j >= kR) continue;
      u32 b[2][2];
      tile::load_b_pair_kn(b, dout, kLd, r0, col0 + 8 * j, lane);
      acc.template mma_pair<T>(0, j, a, b);
    }
  }
}

}  // namespace mla_backward_mma_detail

template <class T, class P>
RUDNN_DEVICE void paged_mla_backward_mma(const T* q, const T* q_rope, const T* k, const T* k_rope, const T* /*v*/,
                                         const T* grad_out, const i32* page_table, const i32* lengths,
                                         const i32* sequence_ids, const i32* positions, T* dq, T* dq_rope, float* dk,
                                         float* dk_rope, float* /*dv*/, float* row_stats, i64 queries, i64 q_heads,
                                         i64 kv_heads, i64 head_dim, i64 rope_dim, i64 value_dim, i64 page_size,
                                         i64 table_stride, i64 causal, float scale) {
  constexpr int kR = P::kR, kPr = P::kPr, kK = P::kKeyDim, kBM = P::kBM, kBN = P::kBN, kLd = P::kLd, kLdS = P::kLdS,
                kCT = P::kColTiles, kHP = P::kHistoryPairs;
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_mla_backward_mma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != kR || value_dim != kR || rope_dim != kPr || kv_heads != 1)
    trap("rudnn::paged::paged_mla_backward_mma: head_dim = value_dim = kLatent, rope_dim = kRope and kv_heads = 1");
  const Schedule sched{page_table, lengths, sequence_ids, positions, table_stride, page_size};
  const mla_backward_mma_detail::Smem<T, P> sm{dynamic_shared<T>()};
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int row_block = warp & 1, key_half = (warp >> 1) & 1;  // the scores role's block
  const bool score_warp = warp < 4;                            // S (else dP)
  const int col0 = 16 * P::kColPairs * (warp >> 1);            // dQ / history columns col0..
  const int hist_key0 = 16 * (warp & 1);                       // history keys of the tile
  const i64 rows_per_tile = max_i64(1, div32(kBM, q_heads));
  const float scale_log2 = scale * kLog2e;
  const tile::LaneOffsets lo = tile::lane_offsets<kLd>(lane);
  const bool want_dq = dq != nullptr || dq_rope != nullptr;
  const bool history = dk != nullptr || dk_rope != nullptr;

  for (i64 item = linear_block(); item < queries; item += block_count()) {
    QueryTile work;
    if (!sched.query_tile(item, queries, 1, 1, rows_per_tile, causal, work)) continue;  // uniform
    const i64 seq = work.sequence, stop = work.stop;
    const KeyRange& range = work.keys;  // [0, length): unsplit
    const int n_tiles = work.key_tiles(kBN);
    // kv_heads = 1: panel row m is row run0·H + m of the [queries·H] query matrix.
    const i64 panel = work.panel_rows(q_heads);
    auto latent_row = [&](i64 key) { return k + sched.cache_row(seq, key) * kR; };
    auto rope_row = [&](i64 key) { return k_rope + sched.cache_row(seq, key) * kPr; };
    // Both passes start the key pipeline over: tile 0 into stage 0 (the caller has synchronized).
    auto load_tile = [&](int t, int stage) {
      const i64 key0 = range.lo + static_cast<i64>(t) * kBN;
      gather_split_rows_async<T, kBN, kR, kPr, kLd, P::kThreads>(
          sm.k(stage), min_i64(kBN, stop - key0), tid, k, [&](int r) { return latent_row(key0 + r); },
          [&](int r) { return rope_row(key0 + r); });
    };

    for (i64 m0 = 0; m0 < panel; m0 += kBM) {
      const i64 rows = min_i64(kBM, panel - m0), g0 = work.run0 * q_heads + m0;
      const int rows16 = static_cast<int>((rows + 15) / 16) * 16;
      // A warp whose row block lies past the chunk's rows (a decode row of ≤ 16 heads) computes no
      // scores and no dQ; the history products read only the active blocks' P and dS' rows.
      const bool idle = 16 * row_block >= rows;
      // The scores role's rows (16·rb + 8h + lane/4): their visible end.
      i64 row_end[2];
      RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        const i64 m = 16 * row_block + 8 * h + (lane >> 2);
        row_end[h] = m >= rows ? range.lo
                     : causal  ? min_i64(range.hi, sched.position(div32(g0 + m, q_heads)) + 1)
                               : range.hi;
      }
      // Phase A of a key tile: a score warp's S (scaled to log2, masked) in `s`; a dP warp's dP
      // into shared memory.
      auto scores_or_dp = [&](tile::Accumulator<1, 2>& s, int stage, int t) {
        const T* k_lane = sm.k(stage) + 16 * key_half * kLd + lo.b_nt;
        if (score_warp) {
          mla_backward_mma_detail::block_scores<T, kK>(s, sm.q() + 16 * row_block * kLd + lo.a, k_lane);
          s.scale(scale_log2);
          const i64 key0 = range.lo + static_cast<i64>(t) * kBN + 16 * key_half;
          const i64 visible[2] = {row_end[0] - key0, row_end[1] - key0};
          mla_backward_mma_detail::mask_keys(s, visible, lane);
        } else {
          tile::Accumulator<1, 2> dp;
          mla_backward_mma_detail::block_scores<T, kR>(dp, sm.dout() + 16 * row_block * kLd + lo.a, k_lane);
          mla_backward_mma_detail::store_dp<kBN>(sm.dp(), dp, 16 * row_block, 16 * key_half, lane);
        }
      };
      auto dp_at = [&](int h, int j, int e) {
        return sm.dp()[(16 * row_block + 8 * h + (lane >> 2)) * kBN + 16 * key_half + 8 * j + 2 * (lane & 3) + e];
      };

      // ---- Pass 1: per row and key half, the running max, Σ 2^(s−m) and Σ 2^(s−m)·dP (lane parts).
      __syncthreads();  // every warp is done with the previous chunk's shared memory
      if (n_tiles > 0) {
        gather_split_rows_async<T, kBM, kR, kPr, kLd, P::kThreads>(
            sm.q(), rows, tid, q, [&](int r) { return q + (g0 + r) * kR; },
            [&](int r) { return q_rope + (g0 + r) * kPr; });
        gather_rows_async<T, kBM, kR, kLd, P::kThreads>(sm.dout(), rows, tid, grad_out,
                                                        [&](int r) { return grad_out + (g0 + r) * kR; });
        load_tile(0, 0);
      }
      cp_async_commit();
      float run_max[2], run_sum[2], run_dot[2];
      RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        run_max[h] = negative_infinity();
        run_sum[h] = 0.0f;
        run_dot[h] = 0.0f;
      }
      for (int t = 0; t < n_tiles; ++t) {
        const int stage = t & 1;
        cp_async_wait<0>();
        __syncthreads();  // tile t landed; every warp is past tile t − 1's reads of dP
        if (t + 1 < n_tiles) load_tile(t + 1, stage ^ 1);
        cp_async_commit();
        tile::Accumulator<1, 2> s;
        if (!idle) scores_or_dp(s, stage, t);  // warp-uniform
        __syncthreads();                       // dP of every active block
        if (!score_warp || idle) continue;
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) {
          const float mx = fmaxf(run_max[h], s.row_max(0, h, negative_infinity()));
          const float base = mx == negative_infinity() ? 0.0f : mx;
          const float alpha = exp2f(run_max[h] - base);  // 0 while the row kept nothing
          float sum = 0.0f, dot = 0.0f;
          RUDNN_UNROLL
          for (int j = 0; j < 2; ++j) RUDNN_UNROLL
          for (int e = 0; e < 2; ++e) {
            const float p = exp2f(s.c[0][j][2 * h + e] - base);
            sum += p;
            dot += p * dp_at(h, j, e);
          }
          run_sum[h] = run_sum[h] * alpha + sum;
          run_dot[h] = run_dot[h] * alpha + dot;
          run_max[h] = mx;
        }
      }
      if (score_warp && !idle) {
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) {
          const float sum = tile::quad_sum(run_sum[h]), dot = tile::quad_sum(run_dot[h]);
          if ((lane & 3) != 0) continue;
          float* half = sm.half_stats() + 3 * kBM * key_half + 16 * row_block + 8 * h + (lane >> 2);
          half[0] = run_max[h];
          half[kBM] = sum;
          half[2 * kBM] = dot;
        }
      }
      __syncthreads();  // both halves of every active row
      // The halves merged (in that order): L (log2, +inf for a row without keys: every P is then
      // 0) and δ; row_stats in the plain kernel's natural-log form.
      if (tid < rows16) {
        const float* a = sm.half_stats() + tid;
        const float* b = a + 3 * kBM;
        const float mx = fmaxf(a[0], b[0]);
        float lse = bits_as_float(0x7f800000u), delta = 0.0f;
        if (mx != negative_infinity()) {
          const float fa = exp2f(a[0] - mx), fb = exp2f(b[0] - mx);
          const float l = a[kBM] * fa + b[kBM] * fb;
          lse = mx + log2f(l);
          delta = (a[2 * kBM] * fa + b[2 * kBM] * fb) / l;
        }
        sm.lse()[tid] = lse;
        sm.delta()[tid] = delta;
        if (row_stats && tid < rows) {
          const i64 g = g0 + tid;
          row_stats[2 * g] = mx != negative_infinity() ? lse / kLog2e : 0.0f;
          row_stats[2 * g + 1] = delta;
        }
      }
      if (!want_dq && !history) continue;  // the statistics were all that was asked (uniform)

      // ---- Pass 2: the gradients.
      __syncthreads();  // L and δ; every warp is past pass 1's reads of the stages
      if (n_tiles > 0) load_tile(0, 0);
      cp_async_commit();
      float lse[2], delta[2];
      RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        lse[h] = sm.lse()[16 * row_block + 8 * h + (lane >> 2)];
        delta[h] = sm.delta()[16 * row_block + 8 * h + (lane >> 2)];
      }
      tile::Accumulator<1, kCT> dqa;
      dqa.zero();
      for (int t = 0; t < n_tiles; ++t) {
        const int stage = t & 1;
        cp_async_wait<0>();
        __syncthreads();  // tile t landed; every warp is past tile t − 1's products
        if (t + 1 < n_tiles) load_tile(t + 1, stage ^ 1);
        cp_async_commit();
        tile::Accumulator<1, 2> s;
        if (!idle) scores_or_dp(s, stage, t);
        __syncthreads();  // dP of every active block
        if (score_warp && !idle)
          mla_backward_mma_detail::store_p_ds<T, kBN, kLdS>(sm.p(), sm.ds(), sm.dp(), s, lse, delta, scale,
                                                            16 * row_block, 16 * key_half, lane);
        __syncthreads();  // P and dS' of every active row
        if (want_dq && !idle) {
          RUDNN_UNROLL
          for (int kk = 0; kk < kBN; kk += 16) {
            u32 a[4];
            tile::load_a(a, sm.ds(), kLdS, 16 * row_block, kk, lane);
            RUDNN_UNROLL
            for (int j = 0; j < kCT; j += 2) {
              if (col0 + 8 * j >= kK) continue;  // warp-uniform
              u32 b[2][2];
              tile::load_b_pair_kn(b, sm.k(stage), kLd, kk, col0 + 8 * j, lane);
              dqa.template mma_pair<T>(0, j, a, b);
            }
          }
        }
        if (!history) continue;  // uniform
        // This warp's 16 keys × its columns of dS'ᵀ·[Q | Qp] + Pᵀ·dO, added atomically, in steps of
        // kHistoryPairs n16 column pairs (dQ's accumulator stays live beside it: a whole column
        // group at once would spill at K = 576).
        const i64 key0 = range.lo + static_cast<i64>(t) * kBN + hist_key0;
        i64 cache[2];  // the scratch row of this lane's two keys; −1: the tile's zero-filled tail
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) {
          const i64 key = key0 + 8 * h + (lane >> 2);
          cache[h] = key < stop ? sched.cache_row(seq, key) : -1;
        }
        RUDNN_ROLLED
        for (int pair0 = 0; pair0 < P::kColPairs; pair0 += kHP) {
          const int step0 = col0 + 16 * pair0;
          if (step0 >= kK) break;  // warp-uniform
          // n8 tile j of this step: columns step0 + 8j.., inside the warp's group and the row, of an
          // output that was asked for.
          auto in_step = [&](int j) {
            return pair0 + j / 2 < P::kColPairs && step0 + 8 * j < kK && (step0 + 8 * j < kR ? dk : dk_rope);
          };
          tile::Accumulator<1, 2 * kHP> part;
          part.zero();
          mla_backward_mma_detail::add_history_product<T, 2 * kHP, kR, kLd, kLdS>(
              part, sm.ds(), sm.p(), sm.q(), sm.dout(), rows16, hist_key0, step0, lane, in_step);
          RUDNN_UNROLL
          for (int h = 0; h < 2; ++h) {
            if (cache[h] < 0) continue;
            RUDNN_UNROLL
            for (int j = 0; j < 2 * kHP; ++j) {
              if (!in_step(j)) continue;
              const int col = step0 + 8 * j + 2 * (lane & 3);
              float* at = col < kR ? (dk ? dk + cache[h] * kR + col : nullptr)
                                   : (dk_rope ? dk_rope + cache[h] * kPr + (col - kR) : nullptr);
              if (!at) continue;
              atomicAdd(at, part.c[0][j][2 * h]);
              atomicAdd(at + 1, part.c[0][j][2 * h + 1]);
            }
          }
        }
      }

      if (!want_dq || idle) continue;
      RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        const i64 m = 16 * row_block + 8 * h + (lane >> 2);
        if (m >= rows) continue;
        const i64 g = g0 + m;
        RUDNN_UNROLL
        for (int j = 0; j < kCT; ++j) {
          const int col = col0 + 8 * j + 2 * (lane & 3);
          T* at = col0 + 8 * j >= kK ? nullptr
                  : col < kR         ? (dq ? dq + g * kR + col : nullptr)
                                     : (dq_rope ? dq_rope + g * kPr + (col - kR) : nullptr);
          if (!at) continue;
          Vec<T, 2> pair;
          pair.words[0] = pack2_from_float<T>(dqa.c[0][j][2 * h], dqa.c[0][j][2 * h + 1]);
          store_vec<T, 2>(at, pair);
        }
      }
    }
  }
}

}  // namespace rudnn::paged

namespace rudnn::paged {

// ---- The ordered path's MLA history kernel on tensor cores (SPEC §9's deterministic backward).
//
// paged_attention_backward_history's schedule — one block per physical page (kv_heads = 1), the
// page's readers ascending, each one's (query row, head) items in the history index's order; no
// floating-point atomics — with paged_mla_backward_mma's products. The page's slots in key tiles of
// 32, or of 16 when the page holds at most 16 slots (vLLM's default page: a 32-key tile would spend
// half of every product on empty slots); the latent + rope rows in shared memory; per tile the
// readers that reach it, their items in chunks of 32 (Q | Qp and dO gathered with cp.async, one
// stage: two would pass sm_80's shared memory at R = 512). Per chunk warps 0-3 form S and warps 4-7
// dP as in the unit kernel (16-key tiles: warps 0-1 and 4-5), P = exp2(S·scale·log2 e − L) from the
// unit kernel's row statistics (masked past the item's causal limit, its sequence's length and the
// page), dS' = scale·P ⊙ (dP − δ), both rounded to T into shared memory; then every warp adds its
// block of dS'ᵀ·[Q | Qp] + Pᵀ·dO to registers: 32-key tiles 16 keys (16·(w % 2)..) × a quarter of
// the columns, 16-key tiles all 16 keys × an eighth. At the tile's end the sums are rounded into
// dlatent (dk) and dk_rope — zeros in slots nobody reaches. The order of every sum is the
// schedule's: the same bits on every run. Compaction (page_order) moves no bit; the items are
// always staged, so row caching selects nothing.
//
// Parameters (launch order): paged_attention_backward_history's. Launch: 256 threads (else trap);
// grid pages (strided); dynamic shared memory shared_memory::paged_mla_history_mma(R, Pr).
// Requirements: as paged_mla_backward_mma; row_stats from it.
template <int kLatent, int kRope, bool kCompactHistoryFlag>
struct MlaHistoryMmaPolicy : MlaBackwardMmaPolicy<kLatent, kRope> {
  static constexpr bool kCompactHistory = kCompactHistoryFlag;
  // 16-key tiles: each of the 8 warps takes all 16 keys × an eighth of the columns.
  static constexpr int kColPairs16 = (MlaBackwardMmaPolicy<kLatent, kRope>::kKeyDim / 16 + 7) / 8;
  static constexpr int kColTiles16 = 2 * kColPairs16;
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::paged_mla_history_mma(kLatent, kRope));
};

namespace mla_backward_mma_detail {

// One page's work in paged_mla_backward_history_mma: the history gradients of its slots, a key tile
// at a time.
template <class T, class P>
struct MlaHistoryPage {
  HistoryReaders index;
  const T *q, *q_rope, *k, *k_rope, *grad_out;
  const i32* positions;
  const float* row_stats;
  T *dk, *dk_rope;
  i64 causal;
  float scale;
  i64 page = 0;
  T* sk;       // [kBN][kLd]: the key tile
  T* sq;       // [kBM][kLd]: the chunk's Q | Qp
  T* sdo;      // [kBM][kLd]: its dO (R columns)
  T* sp;       // [kBM][kLdS]
  T* sds;      // [kBM][kLdS]
  float* sdp;  // [kBM][kKeys of the tile]
  int tid, lane, warp;
  tile::LaneOffsets lo;

  // The gradients of slots slot0 .. slot0 + kKeys − 1 (those below page_size).
  template <int kKeys>
  RUDNN_DEVICE void key_tile(i64 slot0) {
    static_assert(kKeys == 16 || kKeys == 32, "MlaHistoryPage::key_tile: 16 or 32 keys");
    constexpr int kR = P::kR, kPr = P::kPr, kK = P::kKeyDim, kBM = P::kBM, kLd = P::kLd, kLdS = P::kLdS;
    // This warp's history block: 32-key tiles 16 keys × a quarter of the columns, 16-key tiles all
    // 16 keys × an eighth.
    constexpr int kTiles = kKeys == 32 ? P::kColTiles : P::kColTiles16;
    const int row_block = warp & 1, key_half = (warp >> 1) & 1;
    const bool score_warp = warp < 4;
    const int hist_key0 = kKeys == 32 ? 16 * (warp & 1) : 0;
    const int col0 = kKeys == 32 ? 16 * P::kColPairs * (warp >> 1) : 16 * P::kColPairs16 * warp;
    const float scale_log2 = scale * kLog2e;
    const i64 keys = min_i64(kKeys, index.page_size - slot0), row0 = page * index.page_size + slot0;
    i64 e = index.reaching(index.first, slot0), m0 = 0;
    __syncthreads();     // every warp is done with the previous tile's shared memory
    if (e < index.last)  // committed with the first chunk
      gather_split_rows_async<T, kKeys, kR, kPr, kLd, P::kThreads>(
          sk, keys, tid, k, [&](int r) { return k + (row0 + r) * kR; },
          [&](int r) { return k_rope + (row0 + r) * kPr; });
    tile::Accumulator<1, kTiles> acc;
    acc.zero();
    while (e < index.last) {
      const i64 n = min_i64(kBM, index.items(e) - m0);
      gather_split_rows_async<T, kBM, kR, kPr, kLd, P::kThreads>(
          sq, n, tid, q, [&](int r) { return q + index.item(e, m0 + r) * kR; },
          [&](int r) { return q_rope + index.item(e, m0 + r) * kPr; });
      gather_rows_async<T, kBM, kR, kLd, P::kThreads>(sdo, n, tid, grad_out,
                                                      [&](int r) { return grad_out + index.item(e, m0 + r) * kR; });
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();                                                  // the chunk (and the key tile) landed
      const bool idle = 16 * row_block >= n || 16 * key_half >= kKeys;  // warp-uniform
      tile::Accumulator<1, 2> s;
      float lse[2], delta[2];
      if (!idle && score_warp) {
        block_scores<T, kK>(s, sq + 16 * row_block * kLd + lo.a, sk + 16 * key_half * kLd + lo.b_nt);
        s.scale(scale_log2);
        i64 visible[2];  // of the warp's 16 keys
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) {
          const i64 m = 16 * row_block + 8 * h + (lane >> 2);
          lse[h] = delta[h] = 0.0f;
          visible[h] = 0;
          if (m < n) {
            const i64 qi = index.item(e, m0 + m);
            lse[h] = row_stats[2 * qi] * kLog2e;
            delta[h] = row_stats[2 * qi + 1];
            visible[h] = index.seen(e, m0 + m, slot0, keys, positions, causal) - 16 * key_half;
          }
        }
        mask_keys(s, visible, lane);
      } else if (!idle) {
        tile::Accumulator<1, 2> dp;
        block_scores<T, kR>(dp, sdo + 16 * row_block * kLd + lo.a, sk + 16 * key_half * kLd + lo.b_nt);
        store_dp<kKeys>(sdp, dp, 16 * row_block, 16 * key_half, lane);
      }
      __syncthreads();  // dP of every active block
      if (!idle && score_warp)
        store_p_ds<T, kKeys, kLdS>(sp, sds, sdp, s, lse, delta, scale, 16 * row_block, 16 * key_half, lane);
      __syncthreads();  // P and dS' of every active row
      const int rows16 = static_cast<int>((n + 15) / 16) * 16;
      add_history_product<T, kTiles, kR, kLd, kLdS>(acc, sds, sp, sq, sdo, rows16, hist_key0, col0, lane,
                                                    [&](int j) { return col0 + 8 * j < kK; });
      m0 += kBM;
      if (m0 >= index.items(e)) {
        e = index.reaching(e + 1, slot0);
        m0 = 0;
      }
      __syncthreads();  // every warp is past this chunk's reads
    }
    RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const i64 key = hist_key0 + 8 * h + (lane >> 2);
      if (key >= keys) continue;
      RUDNN_UNROLL
      for (int j = 0; j < kTiles; ++j) {
        const int col = col0 + 8 * j + 2 * (lane & 3);
        T* at = col0 + 8 * j >= kK ? nullptr
                : col < kR         ? (dk ? dk + (row0 + key) * kR + col : nullptr)
                                   : (dk_rope ? dk_rope + (row0 + key) * kPr + (col - kR) : nullptr);
        if (!at) continue;
        Vec<T, 2> pair;
        pair.words[0] = pack2_from_float<T>(acc.c[0][j][2 * h], acc.c[0][j][2 * h + 1]);
        store_vec<T, 2>(at, pair);
      }
    }
  }
};

}  // namespace mla_backward_mma_detail

template <class T, class P>
RUDNN_DEVICE void paged_mla_backward_history_mma(const T* q, const T* q_rope, const T* k, const T* k_rope,
                                                 const T* /*v*/, const T* grad_out, const i32* lengths,
                                                 const i32* positions, const float* row_stats, const i32* history_index,
                                                 const i32* page_order, T* dk, T* dk_rope, T* /*dv*/, i64 queries,
                                                 i64 sequences, i64 pages, i64 q_heads, i64 kv_heads, i64 head_dim,
                                                 i64 rope_dim, i64 value_dim, i64 page_size, i64 causal, float scale) {
  constexpr int kR = P::kR, kPr = P::kPr, kBM = P::kBM, kBN = P::kBN, kLd = P::kLd, kLdS = P::kLdS;
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_mla_backward_history_mma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != kR || value_dim != kR || rope_dim != kPr || kv_heads != 1)
    trap(
        "rudnn::paged::paged_mla_backward_history_mma: head_dim = value_dim = kLatent, rope_dim = kRope and "
        "kv_heads = 1");
  const int tid = static_cast<int>(threadIdx.x);
  const i32* reader_offsets = history_index;
  const i32* row_offsets = reader_offsets + pages + 1;
  const i32* rows = row_offsets + sequences + 1;
  T* const sk = dynamic_shared<T>();
  T* const sq = sk + kBN * kLd;
  T* const sdo = sq + kBM * kLd;
  T* const sp = sdo + kBM * kLd;
  T* const sds = sp + kBM * kLdS;
  mla_backward_mma_detail::MlaHistoryPage<T, P> work{.index = {.lengths = lengths,
                                                               .row_offsets = row_offsets,
                                                               .rows = rows,
                                                               .readers = rows + queries,
                                                               .q_heads = q_heads,
                                                               .group = q_heads,
                                                               .page_size = page_size},
                                                     .q = q,
                                                     .q_rope = q_rope,
                                                     .k = k,
                                                     .k_rope = k_rope,
                                                     .grad_out = grad_out,
                                                     .positions = positions,
                                                     .row_stats = row_stats,
                                                     .dk = dk,
                                                     .dk_rope = dk_rope,
                                                     .causal = causal,
                                                     .scale = scale,
                                                     .sk = sk,
                                                     .sq = sq,
                                                     .sdo = sdo,
                                                     .sp = sp,
                                                     .sds = sds,
                                                     .sdp = reinterpret_cast<float*>(sds + kBM * kLdS),
                                                     .tid = tid,
                                                     .lane = tid & 31,
                                                     .warp = tid >> 5,
                                                     .lo = tile::lane_offsets<kLd>(tid & 31)};
  for (i64 block = linear_block(); block < pages; block += block_count()) {
    work.page = P::kCompactHistory ? static_cast<i64>(page_order[block]) : block;
    work.index.first = reader_offsets[work.page];
    work.index.last = reader_offsets[work.page + 1];
    if (page_size <= 16) {
      work.template key_tile<16>(0);  // uniform
    } else {
      for (i64 slot0 = 0; slot0 < page_size; slot0 += kBN) work.template key_tile<32>(slot0);
    }
  }
}

}  // namespace rudnn::paged
