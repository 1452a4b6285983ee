#pragma once
// Paged attention on tensor cores (SPEC §8): mma.sync m16n8k16 for f16/bf16 with D = Dv ∈ {64, 96,
// 128, 256}, FP32 online softmax in the log2 domain. The flash kernel's parts (attention/flash_mma*)
// with the K/V tiles gathered from the physical pages:
//
//   query tile  the rows that start a query tile (Schedule::starts_tile, R = max(1, kBlockM / group)
//               rows of one sequence at consecutive positions); its panel rows are (row, head of the
//               kv head's group), served kBlockM at a time (a group wider than kBlockM in chunks)
//   prologue    Q rows and key tile 0 (K and V rows through the page table) by cp.async
//   key tile t  wait; barrier; prefetch tile t + 1 into the other stage; per warp S = Q·Kᵀ
//               (warp_scores), scale, −inf past each row's visible end (its sequence's length, or
//               its position + 1 when causal, within the split's range), online softmax, O += P·V
//   epilogue    O / ℓ to the output rows (T), or, split, FP32 partials and log2-sum-exps
//
// Key tiles start at the split's first key, so a row's result does not depend on the rest of the
// batch. Work items: (query row, kv head, split); a row that does not start a tile skips.
//
// Decode (a query tile of at most 16 panel rows: one row's group of heads, group ≤ 16) would leave
// three of the four warps' m16 tiles empty, so such a tile splits the keys instead: every warp takes
// the 16 rows and a quarter of each key tile (kBN / 4 keys, whole k16 steps: kBN = 64) with its own
// online softmax; at the end the four (max, sum, O) states meet in the idle K/V stages and merge in
// warp order (max of maxima, sums and outputs rescaled by exp2(m_w − m)) — deterministic, and a
// function of the query tile alone, so batch invariance holds. Same loads, same barriers: the
// pipeline does not know. Tiles with kBN = 32 (D = 256) serve decode in rows mode.
//
// Parameters (launch order): q, k, v, page_table, lengths, sequence_ids, positions, out, partial,
// queries, q_heads, kv_heads, head_dim, value_dim, page_size, table_stride, splits, causal (i64),
// scale (float). Launch: 128 threads (anything else traps); grid queries · Hkv · splits (strided
// over the linear block index); dynamic shared memory shared_memory::flash_mma(kBlockM, kBlockN, D).
// Requirements: q, k, v 16-byte aligned, head_dim = value_dim = kHeadDim (else trap).
#include "rudnn/attention/flash_mma.cuh"
#include "rudnn/paged/schedule.cuh"

namespace rudnn::paged {

template <int kHeadDim, int kBlockM, int kBlockN>
struct MmaPolicy : attention::FlashMmaPolicy<kHeadDim, kBlockM, kBlockN> {};

namespace mma_detail {

// cp.async 16-byte copies of kRows rows of kD elements into `dst` (row stride kD + 8): row r <
// `valid_rows` from `row_src(r)`, the others zero-filled (reading nothing; `fallback` is the address
// such a copy names). The rows are gathered, so each chunk finds its row's address itself.
template <class T, int kRows, int kD, int kThreads, class RowSrc>
RUDNN_DEVICE void gather_rows_async(T* dst, i64 valid_rows, int tid, const T* fallback, RowSrc row_src) {
  constexpr int kLd = kD + 8, kChunksPerRow = kD / 8, kChunks = kRows * kChunksPerRow;
  for (int c = tid; c < kChunks; c += kThreads) {
    const int r = c / kChunksPerRow, col = (c - r * kChunksPerRow) * 8;
    const bool ok = r < valid_rows;
    cp_async_cg16(dst + r * kLd + col, ok ? row_src(r) + col : fallback, ok ? 16u : 0u);
  }
}

// One query tile (a work item that starts one) with everything its chunks need.
template <class T, class P>
struct Item {
  using Smem = typename P::Smem;
  static constexpr int kD = P::kD, kBM = P::kBM, kBN = P::kBN, kMI = P::kMI, kDI = P::kDI, kLd = P::kLd;
  static constexpr int kWarps = P::kThreads / 32;
  // Split keys needs quarters of whole k16 steps and one m16 tile per warp.
  static constexpr bool kCanSplitKeys = kMI == 1 && kBN % (16 * kWarps) == 0;

  // The call.
  const T *q, *k, *v;
  T* out;
  float* partial;
  Schedule sched;
  SplitPartials parts;
  i64 q_heads, kv_heads, group, causal;
  float scale_log2;
  // The query tile being served (Schedule::query_tile).
  QueryTile work;

  RUDNN_DEVICE i64 panel() const { return (work.run1 - work.run0) * group; }
  // The panel row m of the tile: query row run0 + m / group, head kv_head·group + m % group.
  RUDNN_DEVICE i64 q_row(i64 m) const {
    return (work.run0 + div32(m, group)) * q_heads + work.kv_head * group + mod32(m, group);
  }
  RUDNN_DEVICE const T* key_src(const T* cache, i64 key) const {
    return cache + sched.cache_row(work.sequence, key) * (kv_heads * kD) + work.kv_head * kD;
  }
  // One past the last key panel row m sees (none, for m at or past `rows_end`).
  RUDNN_DEVICE i64 visible_end(i64 m, i64 rows_end) const {
    const KeyRange& range = work.keys;
    if (m >= rows_end) return range.lo;
    return causal ? min_i64(range.hi, sched.position(work.run0 + div32(m, group)) + 1) : range.hi;
  }

  // One chunk of up to kBM panel rows from m0. Rows mode: warp w owns panel rows 16·kMI·w.. and
  // every key of a tile. Split keys: every warp owns panel rows 0..15 and keys kWarpKeys·w.. of
  // each tile.
  template <bool kSplitKeys>
  RUDNN_DEVICE void serve(i64 m0) const {
    constexpr int kWarpKeys = kSplitKeys ? kBN / kWarps : kBN, kNI = kWarpKeys / 8;
    T* const smem = dynamic_shared<T>();
    const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
    const tile::LaneOffsets lo = tile::lane_offsets<kLd>(lane);
    const i64 split = work.split, stop = work.stop, panel_rows = panel();
    const KeyRange& range = work.keys;
    const int n_tiles = stop > range.lo ? static_cast<int>((stop - range.lo + kBN - 1) / kBN) : 0;
    const int warp_row0 = kSplitKeys ? 0 : warp * 16 * kMI, warp_key0 = kSplitKeys ? warp * kWarpKeys : 0;
    const i64 rows = min_i64(kBM, panel_rows - m0);
    // This lane's rows (16·mi + 8·h + lane/4 of its warp's tile): their visible end.
    i64 row_end[kMI][2];
    RUDNN_UNROLL
    for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) row_end[mi][h] = visible_end(m0 + warp_row0 + 16 * mi + 8 * h + (lane >> 2), m0 + rows);

    __syncthreads();  // every warp is done with the previous chunk's shared memory
    if (n_tiles > 0) {
      // Split keys: only the 16 rows the warps read.
      mma_detail::gather_rows_async<T, kSplitKeys ? 16 : kBM, kD, P::kThreads>(
          Smem::q(smem), rows, tid, q, [&](int r) { return q + q_row(m0 + r) * kD; });
      const i64 keys0 = min_i64(kBN, stop - range.lo);
      mma_detail::gather_rows_async<T, kBN, kD, P::kThreads>(Smem::k(smem, 0), keys0, tid, k,
                                                             [&](int r) { return key_src(k, range.lo + r); });
      mma_detail::gather_rows_async<T, kBN, kD, P::kThreads>(Smem::v(smem, 0), keys0, tid, v,
                                                             [&](int r) { return key_src(v, range.lo + r); });
    }
    cp_async_commit();

    tile::Accumulator<kMI, kDI> o;
    o.zero();
    attention::flash_mma::OnlineSoftmax<kMI> softmax;
    softmax.init();
    const T* q_lane = Smem::q(smem) + warp_row0 * kLd + lo.a;

    for (int t = 0; t < n_tiles; ++t) {
      const int stage = t & 1;
      cp_async_wait<0>();
      __syncthreads();
      if (t + 1 < n_tiles) {
        const i64 key1 = range.lo + static_cast<i64>(t + 1) * kBN;
        const i64 keys1 = min_i64(kBN, stop - key1);
        mma_detail::gather_rows_async<T, kBN, kD, P::kThreads>(Smem::k(smem, stage ^ 1), keys1, tid, k,
                                                               [&](int r) { return key_src(k, key1 + r); });
        mma_detail::gather_rows_async<T, kBN, kD, P::kThreads>(Smem::v(smem, stage ^ 1), keys1, tid, v,
                                                               [&](int r) { return key_src(v, key1 + r); });
      }
      cp_async_commit();

      tile::Accumulator<kMI, kNI> s;
      attention::flash_mma::warp_scores<T, kMI, kNI, kD, kLd>(s, q_lane,
                                                              Smem::k(smem, stage) + warp_key0 * kLd + lo.b_nt);
      s.scale(scale_log2);
      // Keys past each row's visible end (and the tile's zero-filled tail) get no weight.
      const i64 key0 = range.lo + static_cast<i64>(t) * kBN + warp_key0;
      RUDNN_UNROLL
      for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        const i64 visible = row_end[mi][h] - key0;
        RUDNN_UNROLL
        for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
        for (int e = 0; e < 2; ++e)
          if (8 * j + 2 * (lane & 3) + e >= visible) s.c[mi][j][2 * h + e] = negative_infinity();
      }
      softmax.update(s, o);
      attention::flash_mma::warp_accumulate<T, kMI, kNI, kDI, kLd>(o, s,
                                                                   Smem::v(smem, stage) + warp_key0 * kLd + lo.b_kn);
    }

    const int col0 = 2 * (lane & 3);
    if constexpr (kSplitKeys) {
      // Merge the warps' states through the (now idle) K/V stages: O [warps][16][kD] FP32, then
      // each row's maximum and sum per warp; then every thread finishes elements of the panel.
      static_assert(kWarps * 16 * (kD + 2) * 4 <= Smem::kStages * Smem::kStageElems * 2,
                    "paged_attention_mma: the warps' states fit in the K/V stages");
      float* merged = reinterpret_cast<float*>(Smem::k(smem, 0));
      float* row_max = merged + kWarps * 16 * kD;
      float* row_sum = row_max + kWarps * 16;
      __syncthreads();  // every warp is past the last tile's reads
      RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int r = 8 * h + (lane >> 2);
        const float l = tile::quad_sum(softmax.sum_[0][h]);
        if ((lane & 3) == 0) {
          row_max[warp * 16 + r] = softmax.max_[0][h];
          row_sum[warp * 16 + r] = l;
        }
        RUDNN_UNROLL
        for (int d = 0; d < kDI; ++d) {
          merged[(warp * 16 + r) * kD + 8 * d + col0] = o.c[0][d][2 * h];
          merged[(warp * 16 + r) * kD + 8 * d + col0 + 1] = o.c[0][d][2 * h + 1];
        }
      }
      __syncthreads();
      for (int e = tid; e < 16 * kD; e += P::kThreads) {
        const int r = e / kD, c = e - r * kD;
        if (r >= rows) break;
        float top = negative_infinity();
        RUDNN_UNROLL
        for (int w = 0; w < kWarps; ++w) top = fmaxf(top, row_max[w * 16 + r]);
        const float base = top == negative_infinity() ? 0.0f : top;
        float l = 0.0f, acc = 0.0f;
        RUDNN_UNROLL
        for (int w = 0; w < kWarps; ++w) {
          const float f = exp2f(row_max[w * 16 + r] - base);  // 0 for a warp that kept no key
          l += row_sum[w * 16 + r] * f;
          acc += merged[(w * 16 + r) * kD + c] * f;
        }
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        const i64 qr = q_row(m0 + r);
        if (partial) {
          const i64 row = div32(qr, q_heads), head = mod32(qr, q_heads);
          parts.output(split, row, head)[c] = acc * inv;
          if (c == 0) *parts.lse(split, row, head) = l > 0.0f ? top + log2f(l) : negative_infinity();
        } else {
          out[qr * kD + c] = from_float<T>(acc * inv);
        }
      }
    } else {
      // Each lane writes its two columns of every n8 tile of its rows.
      RUDNN_UNROLL
      for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        const i64 m = warp_row0 + 16 * mi + 8 * h + (lane >> 2);
        const float l = tile::quad_sum(softmax.sum_[mi][h]);
        if (m >= rows) continue;
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        const i64 qr = q_row(m0 + m);  // query row · Hq + head
        const i64 row = div32(qr, q_heads), head = mod32(qr, q_heads);
        if (partial) {
          float* orow = parts.output(split, row, head);
          RUDNN_UNROLL
          for (int d = 0; d < kDI; ++d) {
            orow[8 * d + col0] = o.c[mi][d][2 * h] * inv;
            orow[8 * d + col0 + 1] = o.c[mi][d][2 * h + 1] * inv;
          }
          if ((lane & 3) == 0)
            *parts.lse(split, row, head) = l > 0.0f ? softmax.max_[mi][h] + log2f(l) : negative_infinity();
        } else {
          T* orow = out + qr * kD;
          RUDNN_UNROLL
          for (int d = 0; d < kDI; ++d) {
            Vec<T, 2> pair;
            pair.words[0] = pack2_from_float<T>(o.c[mi][d][2 * h] * inv, o.c[mi][d][2 * h + 1] * inv);
            store_vec<T, 2>(orow + 8 * d + col0, pair);
          }
        }
      }
    }
  }
};

}  // namespace mma_detail

template <class T, class P>
RUDNN_DEVICE void paged_attention_mma(const T* q, const T* k, const T* v, const i32* page_table, const i32* lengths,
                                      const i32* sequence_ids, const i32* positions, T* out, float* partial,
                                      i64 queries, i64 q_heads, i64 kv_heads, i64 head_dim, i64 value_dim,
                                      i64 page_size, i64 table_stride, i64 splits, i64 causal, float scale) {
  using Item = mma_detail::Item<T, P>;
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_attention_mma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != P::kD || value_dim != P::kD)
    trap("rudnn::paged::paged_attention_mma: head_dim and value_dim must equal Policy::kHeadDim");
  const Schedule sched{page_table, lengths, sequence_ids, positions, table_stride, page_size};
  const i64 group = div32(q_heads, kv_heads);
  const i64 rows_per_tile = max_i64(1, div32(P::kBM, group));
  const i64 items = queries * kv_heads * splits;
  Item it{q,
          k,
          v,
          out,
          partial,
          sched,
          SplitPartials{partial, queries, q_heads, value_dim, splits},
          q_heads,
          kv_heads,
          group,
          causal,
          scale * kLog2e};

  for (i64 item = linear_block(); item < items; item += block_count()) {
    if (!sched.query_tile(item, queries, kv_heads, splits, rows_per_tile, causal, it.work)) continue;  // uniform
    if constexpr (Item::kCanSplitKeys) {
      if (it.panel() <= 16) {  // uniform: a function of the query tile
        it.template serve<true>(0);
        continue;
      }
    }
    for (i64 m0 = 0; m0 < it.panel(); m0 += P::kBM) it.template serve<false>(m0);
  }
}

}  // namespace rudnn::paged
