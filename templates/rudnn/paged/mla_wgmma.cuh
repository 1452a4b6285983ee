#pragma once
// Paged MLA on Hopper's warpgroup MMA (sm_90a): paged_mla_mma's algorithm, contract, parameters and
// work decomposition (paged/mla_mma.cuh: 64 panel rows per chunk, each latent tile gathered once
// for all of them, the two roles per key tile, the two key halves' maxima and sums meeting in shared
// memory) with both products on wgmma, for T ∈ {f16, bf16}, R ∈ {128, 256, 512} and R + Pr a
// multiple of 64 (whole swizzle panels), 64-key tiles: DeepSeek's R = 512 / Pr = 64 takes
// 231168 bytes of shared memory, within sm_90's 227 KiB.
//
// 256 threads, two warpgroups; warp w of warpgroup g owns rows 16·(w % 4).. of the m64 products.
//   scores   warpgroup g: S = Q·Kᵀ for all 64 rows × key half g (32 keys), K = R + Pr, an SS wgmma
//            (Q and the key tile SwizzledKMajor<64, R + Pr>, N = 32). The row maxima of the two
//            halves meet in shared memory; each warp writes its probabilities P (rounded to T) into
//            a SwizzledKMajor<64, 64> tile and keeps its half's row sums; the rescale factors go
//            to shared memory (warpgroup 0).
//   values   warpgroup g: O = O·α + P·V for all 64 rows × latent columns g·R/2.. (m64n(R/2): 128
//            registers at R = 512), an SS wgmma with P from shared memory and V the key tile itself:
//            a SwizzledKMajor<64, R + Pr> tile's byte offsets are SwizzledMNMajor<64, R + Pr>'s (a
//            64-column panel of 64 key lines), so the latent tile staged for the scores is read with
//            the transpose flag as the value tile, never staged twice.
//
// Per key tile t: wait; proxy fence; barrier; prefetch tile t + 1 (cp.async, the other stage);
// scores + half maxima; barrier; softmax, P, α; proxy fence (P's plain stores reach wgmma's async
// proxy); barrier; O += P·V. Each group is retired before its registers are touched again. The
// epilogue adds the two halves' row sums in that order, as paged_mla_mma.
//
// Parameters and launch: paged_mla_mma's, 256 threads (else trap), dynamic shared memory
// shared_memory::paged_mla_wgmma(R, Pr). Requirements: q, q_rope, latent, rope cache 16-byte
// aligned; head_dim = value_dim = kLatent, rope_dim = kRope, kv_heads = 1 (else trap).
#include "rudnn/gemm/gather_tile.cuh"
#include "rudnn/paged/mla_rows.cuh"
#include "rudnn/paged/schedule.cuh"
#include "rudnn/paged/shared_memory.h"
#include "rudnn/prelude.cuh"
#include "rudnn/tile/accumulator.cuh"
#include "rudnn/tile/wgmma.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::paged {

template <int kLatent, int kRope>
struct MlaWgmmaPolicy {
  static_assert(kLatent % 128 == 0 && kLatent <= 512, "MlaWgmmaPolicy: latent dim R a multiple of 128, at most 512");
  static_assert(kRope % 16 == 0 && kRope >= 16 && kRope <= 256,
                "MlaWgmmaPolicy: rope dim a multiple of 16 in 16..=256");
  static_assert((kLatent + kRope) % 64 == 0, "MlaWgmmaPolicy: R + Pr whole 64-column swizzle panels");
  static_assert(kLatent != 384, "MlaWgmmaPolicy: R / 2 = 64, 128 or 256 (the wgmma wrappers' N)");
  static constexpr int kR = kLatent, kPr = kRope, kKeyDim = kLatent + kRope;
  static constexpr int kBM = 64, kBN = 64, kThreads = 256;
  static constexpr int kHalfKeys = kBN / 2;           // keys of one warpgroup's scores
  static constexpr int kScoreTiles = kHalfKeys / 8;   // n8 tiles of S
  static constexpr int kValueCols = kLatent / 2;      // one warpgroup's latent columns
  static constexpr int kValueTiles = kValueCols / 8;  // n8 tiles of O
  using QTile = tile::SwizzledKMajor<kBM, kKeyDim>;
  using KTile = tile::SwizzledKMajor<kBN, kKeyDim>;
  using VTile = tile::SwizzledMNMajor<kBN, kKeyDim>;  // the key tile, read as the value tile
  using PTile = tile::SwizzledKMajor<kBM, kBN>;
  static_assert(KTile::kBytes == VTile::kBytes, "MlaWgmmaPolicy: the value view is the key tile");
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::paged_mla_wgmma(kLatent, kRope));
  static_assert(kSharedBytes == QTile::kBytes + 2 * KTile::kBytes + PTile::kBytes + 3 * kBM * 4 +
                                    shared_memory::kWgmmaAlignmentSlack,
                "MlaWgmmaPolicy: the layout disagrees with shared_memory::paged_mla_wgmma");
};

template <class T, class P>
RUDNN_DEVICE void paged_mla_wgmma(const T* q, const T* q_rope, const T* k, const T* k_rope, const T* /*v*/,
                                  const i32* page_table, const i32* lengths, const i32* sequence_ids,
                                  const i32* positions, T* out, float* partial, i64 queries, i64 q_heads, i64 kv_heads,
                                  i64 head_dim, i64 rope_dim, i64 value_dim, i64 page_size, i64 table_stride,
                                  i64 splits, i64 causal, float scale) {
  using QTile = typename P::QTile;
  using KTile = typename P::KTile;
  using VTile = typename P::VTile;
  using PTile = typename P::PTile;
  constexpr int kR = P::kR, kPr = P::kPr, kKeyDim = P::kKeyDim, kBM = P::kBM, kBN = P::kBN, kThreads = P::kThreads;
  if (blockDim.x != static_cast<unsigned>(kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_mla_wgmma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != kR || value_dim != kR || rope_dim != kPr || kv_heads != 1)
    trap("rudnn::paged::paged_mla_wgmma: head_dim = value_dim = kLatent, rope_dim = kRope and kv_heads = 1");
  const Schedule sched{page_table, lengths, sequence_ids, positions, table_stride, page_size};
  const SplitPartials parts{partial, queries, q_heads, value_dim, splits};

  T* const sq = tile::swizzle_aligned(dynamic_shared<T>());
  T* const sk = sq + QTile::kElems;  // 2 stages
  T* const sp = sk + 2 * KTile::kElems;
  float* const s_half = reinterpret_cast<float*>(sp + PTile::kElems);  // [2][kBM]: per key half
  float* const s_alpha = s_half + 2 * kBM;                             // [kBM]
  auto stage_k = [&](int s) { return sk + s * KTile::kElems; };

  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int group = warp >> 2;       // the scores role's key half, the values role's columns
  const int row0 = 16 * (warp & 3);  // this warp's rows of every m64 product
  const int value_col0 = group * P::kValueCols;
  const i64 rows_per_tile = max_i64(1, div32(kBM, q_heads));
  const i64 items = queries * splits;
  const float scale_log2 = scale * kLog2e;
  static_assert(kBM == mla::kRows, "paged_mla_wgmma: 64-row chunks (mla_rows.cuh)");
  mla::HalfSoftmax softmax(s_half, s_alpha, row0, group, lane);

  for (i64 item = linear_block(); item < items; item += block_count()) {
    QueryTile work;
    if (!sched.query_tile(item, queries, 1, splits, rows_per_tile, causal, work)) continue;  // uniform
    const i64 split = work.split, seq = work.sequence, stop = work.stop;
    const KeyRange& range = work.keys;
    const int n_tiles = work.key_tiles(kBN);
    // kv_heads = 1: panel row m is row run0·H + m of the [queries·H] query matrix.
    const i64 panel = work.panel_rows(q_heads);
    // The key tile from key0: the latent columns, then the rope ones, of each cache row.
    auto load_keys = [&](int stage, i64 key0) {
      const i64 keys = min_i64(kBN, stop - key0);
      gemm::GatherTile<T, kBN, kKeyDim, kThreads, 8, KTile>::load_rolled(
          stage_k(stage), k, [&](int r, int c) -> const T* {
            if (r >= keys) return nullptr;
            const i64 row = sched.cache_row(seq, key0 + r);
            return c < kR ? k + row * kR + c : k_rope + row * kPr + (c - kR);
          });
    };

    for (i64 m0 = 0; m0 < panel; m0 += kBM) {
      const i64 rows = min_i64(kBM, panel - m0), g0 = work.run0 * q_heads + m0;
      i64 row_end[2];  // this lane's two rows (row0 + 8h + lane/4): their visible end
      softmax.start(row_end, sched, range, g0, rows, q_heads, causal);

      __syncthreads();  // every warp is done with the previous chunk's shared memory
      if (n_tiles > 0) {
        gemm::GatherTile<T, kBM, kKeyDim, kThreads, 8, QTile>::load_rolled(sq, q, [&](int r, int c) -> const T* {
          if (r >= rows) return nullptr;
          return c < kR ? q + (g0 + r) * kR + c : q_rope + (g0 + r) * kPr + (c - kR);
        });
        load_keys(0, range.lo);
      }
      cp_async_commit();

      tile::Accumulator<1, P::kValueTiles> o;
      o.zero();
      auto& o_regs = reinterpret_cast<float(&)[P::kValueCols / 2]>(o.c);

      for (int t = 0; t < n_tiles; ++t) {
        const int stage = t & 1;
        cp_async_wait<0>();
        fence_proxy_async_shared();  // the copies become visible to wgmma's async proxy
        __syncthreads();             // tile t landed; every warpgroup is past tile t − 1's P·V
        if (t + 1 < n_tiles) load_keys(stage ^ 1, range.lo + static_cast<i64>(t + 1) * kBN);
        cp_async_commit();

        // Scores of all 64 rows × this warpgroup's key half.
        tile::Accumulator<1, P::kScoreTiles> s;
        auto& s_regs = reinterpret_cast<float(&)[P::kHalfKeys / 2]>(s.c);
        wgmma_fence();
        RUDNN_UNROLL
        for (int kk = 0; kk < kKeyDim; kk += 16)
          tile::wgmma_ss<P::kHalfKeys>(sq, s_regs, QTile::descriptor(sq, 0, kk),
                                       KTile::descriptor(stage_k(stage), group * P::kHalfKeys, kk), kk > 0);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_operand(s_regs);
        s.scale(scale_log2);
        softmax.mask_and_publish_max(s, row_end, range.lo + static_cast<i64>(t) * kBN + group * P::kHalfKeys);
        __syncthreads();  // both halves' maxima
        softmax.exponentiate<T>(s, [&](int r, int c) { return PTile::at(sp, r, group * P::kHalfKeys + c); });
        fence_proxy_async_shared();  // P's plain stores become visible to wgmma's async proxy
        __syncthreads();             // P and α of every row

        // O = O·α + P·V over this warpgroup's latent columns.
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) o.scale_row(0, h, s_alpha[row0 + 8 * h + (lane >> 2)]);
        wgmma_fence_operand(o_regs);
        wgmma_fence();
        RUDNN_UNROLL
        for (int kk = 0; kk < kBN; kk += 16)
          tile::wgmma_ss<P::kValueCols, false, true>(sp, o_regs, PTile::descriptor(sp, 0, kk),
                                                     VTile::descriptor(stage_k(stage), kk, value_col0), true);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_operand(o_regs);
      }

      // Epilogue: row sum = the two halves' sums (in that order), max from warpgroup 0.
      __syncthreads();  // every warp is past the last tile's reads of s_half and s_alpha
      softmax.publish_totals();
      __syncthreads();
      mla::store<T>(
          o, [&](int, int h) { return row0 + 8 * h + (lane >> 2); }, s_half, s_alpha, rows, g0, q_heads, kR,
          value_col0 + 2 * (lane & 3), group == 0 && (lane & 3) == 0, out, parts, split);
    }
  }
}

}  // namespace rudnn::paged
