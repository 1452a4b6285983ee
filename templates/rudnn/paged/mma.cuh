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
// Decode (a tile of one row's group heads: group ≤ 16 fills one warp's m16 tile) leaves the other
// warps idle: they issue their share of the cp.async loads and meet the barriers but skip the MMAs,
// the softmax and the stores. A split-key decode tile (the four warps on quarters of each key tile,
// merged at the end) was built and dropped: the mode would follow the tile's size, which depends on
// how other sequences' rows interleave with this one's, and the two modes round differently — it
// broke batch invariance (docs/paged_attention.md).
//
// Parameters (launch order): q, k, v, page_table, lengths, sequence_ids, positions, out, partial,
// queries, q_heads, kv_heads, head_dim, value_dim, page_size, table_stride, splits, causal (i64),
// scale (float). Launch: 128 threads (anything else traps); grid queries · Hkv · splits (strided
// over the linear block index); dynamic shared memory shared_memory::flash_mma(kBlockM, kBlockN, D).
// Requirements: q, k, v 16-byte aligned, head_dim = value_dim = kHeadDim (else trap).
#include "rudnn/attention/flash_mma.cuh"
#include "rudnn/paged/gather.cuh"
#include "rudnn/paged/schedule.cuh"

namespace rudnn::paged {

template <int kHeadDim, int kBlockM, int kBlockN>
struct MmaPolicy : attention::FlashMmaPolicy<kHeadDim, kBlockM, kBlockN> {};

// What the tensor-core kernels (this one and paged/wgmma.cuh) share around their products: the
// panel of a query tile, each lane's visible key ends, the mask and the epilogue. Lane rows are
// mma.sync's C-fragment rows (16·mi + 8·h + lane/4 of the warp's tile), which are also a
// warpgroup MMA accumulator's rows.
namespace rows {

// The panel of a query tile: its row m is query row run0 + m / group, head kv_head·group + m % group.
struct Panel {
  i64 run0, group, q_heads, kv_head;
  RUDNN_DEVICE i64 q_row(i64 m) const { return (run0 + div32(m, group)) * q_heads + kv_head * group + mod32(m, group); }
};

// One past the last key each of this lane's rows sees (rows at or past `rows` of the chunk at m0
// see none: range.lo).
template <int kMI>
RUDNN_DEVICE void visible_ends(i64 (&row_end)[kMI][2], const Schedule& sched, const QueryTile& work, const Panel& panel,
                               i64 m0, i64 rows, int warp_row0, int lane, i64 causal) {
  RUDNN_UNROLL
  for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const i64 m = warp_row0 + 16 * mi + 8 * h + (lane >> 2);
    row_end[mi][h] = m >= rows ? work.keys.lo
                     : causal  ? min_i64(work.keys.hi, sched.position(panel.run0 + div32(m0 + m, panel.group)) + 1)
                               : work.keys.hi;
  }
}

// Keys past each row's visible end (and the key tile's zero-filled tail) get no weight: s is the
// tile of keys from key0.
template <int kMI, int kNI>
RUDNN_DEVICE void mask_past_ends(tile::Accumulator<kMI, kNI>& s, const i64 (&row_end)[kMI][2], i64 key0, int lane) {
  RUDNN_UNROLL
  for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const i64 visible = row_end[mi][h] - key0;
    RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
    for (int e = 0; e < 2; ++e)
      if (8 * j + 2 * (lane & 3) + e >= visible) s.c[mi][j][2 * h + e] = negative_infinity();
  }
}

// Epilogue: each lane writes its two columns of every n8 tile of its rows of the chunk at m0, as
// O / ℓ to `out` or, split, as FP32 partials and the log2-sum-exp.
template <class T, int kMI, int kDI>
RUDNN_DEVICE void store(const tile::Accumulator<kMI, kDI>& o, const attention::flash_mma::OnlineSoftmax<kMI>& softmax,
                        const Panel& panel, i64 m0, i64 rows, int warp_row0, int lane, T* out,
                        const SplitPartials& parts, i64 split) {
  constexpr int kD = 8 * kDI;
  RUDNN_UNROLL
  for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const i64 m = warp_row0 + 16 * mi + 8 * h + (lane >> 2);
    const float l = tile::quad_sum(softmax.sum_[mi][h]);
    if (m >= rows) continue;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    const i64 qr = panel.q_row(m0 + m);  // query row · Hq + head
    const i64 row = div32(qr, panel.q_heads), head = mod32(qr, panel.q_heads);
    const int col0 = 2 * (lane & 3);
    if (parts.base) {
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

}  // namespace rows

template <class T, class P>
RUDNN_DEVICE void paged_attention_mma(const T* q, const T* k, const T* v, const i32* page_table, const i32* lengths,
                                      const i32* sequence_ids, const i32* positions, T* out, float* partial,
                                      i64 queries, i64 q_heads, i64 kv_heads, i64 head_dim, i64 value_dim,
                                      i64 page_size, i64 table_stride, i64 splits, i64 causal, float scale) {
  using Smem = typename P::Smem;
  constexpr int kD = P::kD, kBM = P::kBM, kBN = P::kBN, kMI = P::kMI, kNI = P::kNI, kDI = P::kDI, kLd = P::kLd;
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_attention_mma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != kD || value_dim != kD)
    trap("rudnn::paged::paged_attention_mma: head_dim and value_dim must equal Policy::kHeadDim");
  const Schedule sched{page_table, lengths, sequence_ids, positions, table_stride, page_size};
  const SplitPartials parts{partial, queries, q_heads, value_dim, splits};
  T* smem = dynamic_shared<T>();
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp_row0 = (tid >> 5) * 16 * kMI;
  const i64 group = div32(q_heads, kv_heads);
  const i64 rows_per_tile = max_i64(1, div32(kBM, group));
  const i64 items = queries * kv_heads * splits;
  const float scale_log2 = scale * kLog2e;
  const tile::LaneOffsets lo = tile::lane_offsets<kLd>(lane);

  for (i64 item = linear_block(); item < items; item += block_count()) {
    QueryTile work;
    if (!sched.query_tile(item, queries, kv_heads, splits, rows_per_tile, causal, work)) continue;  // uniform
    const i64 kvh = work.kv_head, seq = work.sequence, stop = work.stop;
    const KeyRange& range = work.keys;
    const int n_tiles = work.key_tiles(kBN);
    const rows::Panel panel{work.run0, group, q_heads, kvh};
    const i64 panel_rows = work.panel_rows(group);
    auto key_src = [&](const T* cache, i64 key) { return cache + sched.head_row(seq, key, kv_heads, kvh) * kD; };

    for (i64 m0 = 0; m0 < panel_rows; m0 += kBM) {
      const i64 rows = min_i64(kBM, panel_rows - m0);
      i64 row_end[kMI][2];
      rows::visible_ends(row_end, sched, work, panel, m0, rows, warp_row0, lane, causal);

      __syncthreads();  // every warp is done with the previous chunk's shared memory
      if (n_tiles > 0) {
        gather_rows_async<T, kBM, kD, kLd, P::kThreads>(Smem::q(smem), rows, tid, q,
                                                        [&](int r) { return q + panel.q_row(m0 + r) * kD; });
        const i64 keys0 = min_i64(kBN, stop - range.lo);
        gather_rows_async<T, kBN, kD, kLd, P::kThreads>(Smem::k(smem, 0), keys0, tid, k,
                                                        [&](int r) { return key_src(k, range.lo + r); });
        gather_rows_async<T, kBN, kD, kLd, P::kThreads>(Smem::v(smem, 0), keys0, tid, v,
                                                        [&](int r) { return key_src(v, range.lo + r); });
      }
      cp_async_commit();

      tile::Accumulator<kMI, kDI> o;
      o.zero();
      attention::flash_mma::OnlineSoftmax<kMI> softmax;
      softmax.init();
      const T* q_lane = Smem::q(smem) + warp_row0 * kLd + lo.a;
      // A warp whose rows all lie past the chunk's (decode: the group's heads of one row fill only
      // the first 16·⌈group / 16⌉ rows) does no MMA, softmax or store. Every row's arithmetic stays
      // its own, whatever the tile holds: batch invariance.
      const bool idle = warp_row0 >= rows;

      for (int t = 0; t < n_tiles; ++t) {
        const int stage = t & 1;
        cp_async_wait<0>();
        __syncthreads();
        if (t + 1 < n_tiles) {
          const i64 key1 = range.lo + static_cast<i64>(t + 1) * kBN;
          const i64 keys1 = min_i64(kBN, stop - key1);
          gather_rows_async<T, kBN, kD, kLd, P::kThreads>(Smem::k(smem, stage ^ 1), keys1, tid, k,
                                                          [&](int r) { return key_src(k, key1 + r); });
          gather_rows_async<T, kBN, kD, kLd, P::kThreads>(Smem::v(smem, stage ^ 1), keys1, tid, v,
                                                          [&](int r) { return key_src(v, key1 + r); });
        }
        cp_async_commit();
        if (idle) continue;  // warp-uniform; the loads and barriers above are the block's

        tile::Accumulator<kMI, kNI> s;
        attention::flash_mma::warp_scores<T, kMI, kNI, kD, kLd>(s, q_lane, Smem::k(smem, stage) + lo.b_nt);
        s.scale(scale_log2);
        rows::mask_past_ends(s, row_end, range.lo + static_cast<i64>(t) * kBN, lane);
        softmax.update(s, o);
        attention::flash_mma::warp_accumulate<T, kMI, kNI, kDI, kLd>(o, s, Smem::v(smem, stage) + lo.b_kn);
      }

      rows::store<T>(o, softmax, panel, m0, rows, warp_row0, lane, out, parts, work.split);
    }
  }
}

}  // namespace rudnn::paged
