#pragma once
// Paged MLA on tensor cores (SPEC §8): mma.sync m16n8k16 for f16/bf16, scores = scale · (q·latent +
// qp·kp) over K = R + Pr columns, values = the latent rows, output [queries, H, R]; FP32 online
// softmax in the log2 domain. The point of MLA is one K/V stream for all H heads, so a block serves
// 64 panel rows (heads of one query row, or of up to 64 / H consecutive rows of one sequence) and
// each latent tile is gathered once for all of them (H = 128: twice, once per 64-head chunk, the
// second from L2 — FlashMLA's split too).
//
// The output is 64 × R FP32 (R = 512: 128 KiB), too much for one warp group's registers next to
// the scores, so the block has 8 warps and two roles per key tile:
//   scores   warp w: panel rows 16·(w % 4).. × key half w / 4 (kBN / 2 keys), K = R + Pr: S = Q·Kᵀ
//            from shared memory (attention::flash_mma::warp_scores). The two halves' row maxima
//            meet in shared memory; each warp then writes its probabilities P (rounded to T) and
//            keeps its half's row sums; the rows' rescale factors go to shared memory.
//   values   warp w: all 64 rows × latent columns w·R/8.. (R/8 columns: 64 × 64 FP32 = 128 per
//            lane at R = 512): O = O·α + P·V with P by ldmatrix, V = the key tile's latent
//            columns by ldmatrix.trans — the latent tile is the value tile, never staged twice.
//
// Per key tile t: wait; barrier; prefetch tile t + 1 (cp.async, the other stage); scores + half
// maxima; barrier; softmax, P, α; barrier; O += P·V. The epilogue adds the two halves' row sums.
// Key tiles start at the split's first key, so a row's result does not depend on the batch.
//
// Parameters (launch order, paged_attention_unit's): q, q_rope, k (latent), k_rope, v (unused,
// null), page_table, lengths, sequence_ids, positions, out, partial, queries, q_heads, kv_heads,
// head_dim, rope_dim, value_dim, page_size, table_stride, splits, causal (i64), scale (float).
// Launch: 256 threads (else trap); grid queries · splits items (kv_heads = 1); dynamic shared
// memory shared_memory::paged_mla_mma(kBlockN, R, Pr). Requirements: q, q_rope, latent, rope cache
// 16-byte aligned; head_dim = value_dim = kLatent, rope_dim = kRope, kv_heads = 1 (else trap).
#include "rudnn/attention/flash_mma_warp.cuh"
#include "rudnn/paged/gather.cuh"
#include "rudnn/paged/mla_rows.cuh"
#include "rudnn/paged/schedule.cuh"
#include "rudnn/paged/shared_memory.h"
#include "rudnn/prelude.cuh"
#include "rudnn/tile/accumulator.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::paged {

template <int kLatent, int kRope, int kBlockN>
struct MlaMmaPolicy {
  static_assert(kLatent % 128 == 0 && kLatent <= 512, "MlaMmaPolicy: latent dim R a multiple of 128, at most 512");
  static_assert(kRope % 16 == 0 && kRope >= 16 && kRope <= 256, "MlaMmaPolicy: rope dim a multiple of 16 in 16..=256");
  static_assert(kBlockN % 32 == 0 && kBlockN >= 32 && kBlockN <= 64, "MlaMmaPolicy: 32 or 64 keys per tile");
  static constexpr int kR = kLatent, kPr = kRope, kKeyDim = kLatent + kRope;
  static constexpr int kBM = 64, kBN = kBlockN, kWarps = 8, kThreads = 32 * kWarps;
  static constexpr int kHalfKeys = kBlockN / 2;      // keys of one score warp
  static constexpr int kScoreTiles = kHalfKeys / 8;  // its n8 tiles of S
  static constexpr int kValueCols = kLatent / kWarps;
  static constexpr int kValueTiles = kValueCols / 8;  // n8 tiles of O per warp
  static constexpr int kRowBlocks = kBM / 16;         // m16 tiles of O per warp
  static constexpr int kLd = kKeyDim + 8, kLdP = kBlockN + 8;
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::paged_mla_mma(kBlockN, kLatent, kRope));
};

template <class T, class P>
RUDNN_DEVICE void paged_mla_mma(const T* q, const T* q_rope, const T* k, const T* k_rope, const T* /*v*/,
                                const i32* page_table, const i32* lengths, const i32* sequence_ids,
                                const i32* positions, T* out, float* partial, i64 queries, i64 q_heads, i64 kv_heads,
                                i64 head_dim, i64 rope_dim, i64 value_dim, i64 page_size, i64 table_stride, i64 splits,
                                i64 causal, float scale) {
  constexpr int kR = P::kR, kPr = P::kPr, kBM = P::kBM, kBN = P::kBN, kLd = P::kLd, kLdP = P::kLdP;
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_mla_mma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != kR || value_dim != kR || rope_dim != kPr || kv_heads != 1)
    trap("rudnn::paged::paged_mla_mma: head_dim = value_dim = kLatent, rope_dim = kRope and kv_heads = 1");
  const Schedule sched{page_table, lengths, sequence_ids, positions, table_stride, page_size};
  const SplitPartials parts{partial, queries, q_heads, value_dim, splits};

  T* const sq = dynamic_shared<T>();                                // [kBM][kLd]
  T* const sk = sq + kBM * kLd;                                     // 2 stages × [kBN][kLd]
  T* const sp = sk + 2 * kBN * kLd;                                 // [kBM][kLdP]
  float* const s_half = reinterpret_cast<float*>(sp + kBM * kLdP);  // [2][kBM]: per key half
  float* const s_alpha = s_half + 2 * kBM;                          // [kBM]
  auto stage_k = [&](int s) { return sk + s * kBN * kLd; };

  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int score_row0 = 16 * (warp & 3), key_half = warp >> 2;  // the scores role
  const int value_col0 = warp * P::kValueCols;                   // the values role
  const i64 rows_per_tile = max_i64(1, div32(kBM, q_heads));
  const i64 items = queries * splits;
  const float scale_log2 = scale * kLog2e;
  const tile::LaneOffsets lo = tile::lane_offsets<kLd>(lane);
  const tile::LaneOffsets lo_p = tile::lane_offsets<kLdP>(lane);
  static_assert(kBM == mla::kRows, "paged_mla_mma: 64-row chunks (mla_rows.cuh)");
  mla::HalfSoftmax softmax(s_half, s_alpha, score_row0, key_half, lane);

  for (i64 item = linear_block(); item < items; item += block_count()) {
    QueryTile work;
    if (!sched.query_tile(item, queries, 1, splits, rows_per_tile, causal, work)) continue;  // uniform
    const i64 split = work.split, seq = work.sequence, stop = work.stop;
    const KeyRange& range = work.keys;
    const int n_tiles = work.key_tiles(kBN);
    // kv_heads = 1: panel row m is row run0·H + m of the [queries·H] query matrix.
    const i64 panel = work.panel_rows(q_heads);
    auto latent_row = [&](i64 key) { return k + sched.cache_row(seq, key) * kR; };
    auto rope_row = [&](i64 key) { return k_rope + sched.cache_row(seq, key) * kPr; };

    for (i64 m0 = 0; m0 < panel; m0 += kBM) {
      const i64 rows = min_i64(kBM, panel - m0), g0 = work.run0 * q_heads + m0;
      i64 row_end[2];  // the scores role's two rows (score_row0 + 8h + lane/4): their visible end
      softmax.start(row_end, sched, range, g0, rows, q_heads, causal);

      __syncthreads();  // every warp is done with the previous chunk's shared memory
      if (n_tiles > 0) {
        gather_split_rows_async<T, kBM, kR, kPr, kLd, P::kThreads>(
            sq, rows, tid, q, [&](int r) { return q + (g0 + r) * kR; }, [&](int r) { return q_rope + (g0 + r) * kPr; });
        gather_split_rows_async<T, kBN, kR, kPr, kLd, P::kThreads>(
            stage_k(0), min_i64(kBN, stop - range.lo), tid, k, [&](int r) { return latent_row(range.lo + r); },
            [&](int r) { return rope_row(range.lo + r); });
      }
      cp_async_commit();

      tile::Accumulator<P::kRowBlocks, P::kValueTiles> o;
      o.zero();

      for (int t = 0; t < n_tiles; ++t) {
        const int stage = t & 1;
        cp_async_wait<0>();
        __syncthreads();  // tile t landed; every warp is past tile t − 1's P·V
        if (t + 1 < n_tiles) {
          const i64 key1 = range.lo + static_cast<i64>(t + 1) * kBN;
          gather_split_rows_async<T, kBN, kR, kPr, kLd, P::kThreads>(
              stage_k(stage ^ 1), min_i64(kBN, stop - key1), tid, k, [&](int r) { return latent_row(key1 + r); },
              [&](int r) { return rope_row(key1 + r); });
        }
        cp_async_commit();

        // Scores of this warp's 16 rows × kHalfKeys keys.
        tile::Accumulator<1, P::kScoreTiles> s;
        attention::flash_mma::warp_scores<T, 1, P::kScoreTiles, P::kKeyDim, kLd>(
            s, sq + score_row0 * kLd + lo.a, stage_k(stage) + key_half * P::kHalfKeys * kLd + lo.b_nt);
        s.scale(scale_log2);
        softmax.mask_and_publish_max(s, row_end, range.lo + static_cast<i64>(t) * kBN + key_half * P::kHalfKeys);
        __syncthreads();  // both halves' maxima
        softmax.exponentiate<T>(s, [&](int r, int c) { return sp + r * kLdP + key_half * P::kHalfKeys + c; });
        __syncthreads();  // P and α of every row

        // O = O·α + P·V over this warp's latent columns.
        RUDNN_UNROLL
        for (int mi = 0; mi < P::kRowBlocks; ++mi) RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) o.scale_row(mi, h, s_alpha[16 * mi + 8 * h + (lane >> 2)]);
        const T* v_lane = stage_k(stage) + value_col0 + lo.b_kn;
        RUDNN_UNROLL
        for (int kk = 0; kk < kBN / 16; ++kk) {
          u32 a[P::kRowBlocks][4];
          RUDNN_UNROLL
          for (int mi = 0; mi < P::kRowBlocks; ++mi) tile::load_a(a[mi], sp + lo_p.a + 16 * mi * kLdP + 16 * kk);
          RUDNN_UNROLL
          for (int d = 0; d < P::kValueTiles; d += 2) {
            u32 b[2][2];
            tile::load_b_pair_kn(b, v_lane + 16 * kk * kLd + 8 * d);
            RUDNN_UNROLL
            for (int mi = 0; mi < P::kRowBlocks; ++mi) o.template mma_pair<T>(mi, d, a[mi], b);
          }
        }
      }

      // Epilogue: row sum = the two halves' sums (in that order), max from the scores role.
      __syncthreads();  // every warp is past the last tile's reads of s_half and s_alpha
      softmax.publish_totals();
      __syncthreads();
      mla::store<T>(
          o, [&](int mi, int h) { return 16 * mi + 8 * h + (lane >> 2); }, s_half, s_alpha, rows, g0, q_heads, kR,
          value_col0 + 2 * (lane & 3), warp == 0 && (lane & 3) == 0, out, parts, split);
    }
  }
}

}  // namespace rudnn::paged
