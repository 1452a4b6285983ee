#pragma once
// Paged attention on Hopper's warpgroup MMA (sm_90a): paged_attention_mma's algorithm, contract,
// launch and work decomposition (paged/mma.cuh: query tiles, kv head, split, 64 panel rows per
// chunk, the per-row visible ends, the epilogue) with the two products on wgmma, for T ∈ {f16,
// bf16} and D = Dv ∈ {64, 128, 256} (whole 64-column swizzle panels; D = 96 stays on mma.sync).
//
//   S = Q·Kᵀ   SS wgmma: the chunk's Q rows (computed addresses, not paged) in a
//              SwizzledKMajor<64, D> tile, the key tile's rows gathered through the page table
//              into a SwizzledKMajor<BN, D> tile; D / 16 wgmma per key tile
//   O += P·V   RS wgmma: P from S's registers, the value rows in a SwizzledMNMajor<BN, D> tile
//              read with the transpose flag; BN / 16 wgmma per key tile
// The kernel's 4 warps are one warpgroup: warp w owns panel rows 16w..16w+15 of the chunk, which
// are also its rows of the m64nN accumulators (tile/wgmma.cuh), so the mask, the online softmax
// and the epilogue are paged_attention_mma's (paged::rows). Each product's group is retired
// before its registers are touched again (no group in flight), as in flash_attention_wgmma.
//
// A warpgroup MMA needs all four warps, so a chunk of ≤ 48 panel rows (decode: the group's heads of
// one row) still issues the m64 products; its idle warps skip the mask, the softmax and the
// stores (their rows are zero-filled Q and are never written). Every row's arithmetic is its own
// whatever the tile holds (no reduction across rows): batch invariance as on mma.sync. Each kernel
// rounds the same products differently, so the two do not agree bitwise; a plan uses one.
//
// D = 256: O alone is 128 registers per thread, so key tiles of 32 (S an m64n32 accumulator), as
// flash_attention_wgmma's.
//
// Parameters and launch: paged_attention_mma's (128 threads, else trap), dynamic shared memory
// Policy::kSharedBytes = shared_memory::flash_wgmma(64, BN, D) (Q and two stages of K and V, plus
// the alignment slack). Requirements: q, k, v 16-byte aligned, head_dim = value_dim = kHeadDim.
#include "rudnn/attention/flash_wgmma.cuh"
#include "rudnn/paged/mma.cuh"

namespace rudnn::paged {

// One warpgroup of 64 panel rows: the flash kernel's policy at BM = 64 (its tiles, stages, shared
// memory and thread count), as MmaPolicy is the mma.sync flash policy's.
template <int kHeadDim, int kBlockN>
struct WgmmaPolicy : attention::FlashWgmmaPolicy<kHeadDim, 64, kBlockN> {};

template <class T, class P>
RUDNN_DEVICE void paged_attention_wgmma(const T* q, const T* k, const T* v, const i32* page_table, const i32* lengths,
                                        const i32* sequence_ids, const i32* positions, T* out, float* partial,
                                        i64 queries, i64 q_heads, i64 kv_heads, i64 head_dim, i64 value_dim,
                                        i64 page_size, i64 table_stride, i64 splits, i64 causal, float scale) {
  using QTile = typename P::QTile;
  using KTile = typename P::KTile;
  using VTile = typename P::VTile;
  constexpr int kD = P::kD, kBM = P::kBM, kBN = P::kBN, kNI = P::kNI, kDI = P::kDI, kThreads = P::kThreads;
  if (blockDim.x != static_cast<unsigned>(kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_attention_wgmma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != kD || value_dim != kD)
    trap("rudnn::paged::paged_attention_wgmma: head_dim and value_dim must equal Policy::kHeadDim");
  const Schedule sched{page_table, lengths, sequence_ids, positions, table_stride, page_size};
  const SplitPartials parts{partial, queries, q_heads, value_dim, splits};
  T* const q_s = tile::swizzle_aligned(dynamic_shared<T>());
  auto k_s = [&](int stage) { return q_s + QTile::kElems + stage * P::kStageElems; };
  auto v_s = [&](int stage) { return k_s(stage) + KTile::kElems; };
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp_row0 = (tid >> 5) * 16;
  const i64 group = div32(q_heads, kv_heads);
  const i64 rows_per_tile = max_i64(1, div32(kBM, group));
  const i64 items = queries * kv_heads * splits;
  const float scale_log2 = scale * kLog2e;

  for (i64 item = linear_block(); item < items; item += block_count()) {
    QueryTile work;
    if (!sched.query_tile(item, queries, kv_heads, splits, rows_per_tile, causal, work)) continue;  // uniform
    const i64 kvh = work.kv_head, seq = work.sequence, stop = work.stop;
    const KeyRange& range = work.keys;
    const int n_tiles = work.key_tiles(kBN);
    const rows::Panel panel{work.run0, group, q_heads, kvh};
    const i64 panel_rows = work.panel_rows(group);
    auto cache_rows = [&](const T* cache, i64 key0) {
      return [=](int r) { return cache + sched.head_row(seq, key0 + r, kv_heads, kvh) * kD; };
    };
    auto load_keys = [&](int stage, i64 key0) {
      const i64 keys = min_i64(kBN, stop - key0);
      attention::flash_wgmma::copy_rows<T, kBN, kD, kThreads, KTile>(k_s(stage), cache_rows(k, key0), keys);
      attention::flash_wgmma::copy_rows<T, kBN, kD, kThreads, VTile>(v_s(stage), cache_rows(v, key0), keys);
    };

    for (i64 m0 = 0; m0 < panel_rows; m0 += kBM) {
      const i64 rows = min_i64(kBM, panel_rows - m0);
      i64 row_end[1][2];
      rows::visible_ends(row_end, sched, work, panel, m0, rows, warp_row0, lane, causal);

      __syncthreads();  // every warp is done with the previous chunk's shared memory
      if (n_tiles > 0) {
        attention::flash_wgmma::copy_rows<T, kBM, kD, kThreads, QTile>(
            q_s, [&](int r) { return q + panel.q_row(m0 + r) * kD; }, rows);
        load_keys(0, range.lo);
      }
      cp_async_commit();

      tile::Accumulator<1, kDI> o;
      o.zero();
      attention::flash_mma::OnlineSoftmax<1> softmax;
      softmax.init();
      // A warp whose rows all lie past the chunk's issues the products (they are the warpgroup's)
      // but skips the mask, the softmax and the stores; its P is S (zero rows), never stored.
      const bool idle = warp_row0 >= rows;

      for (int t = 0; t < n_tiles; ++t) {
        const int stage = t & 1;
        cp_async_wait<0>();
        fence_proxy_async_shared();  // the copies become visible to wgmma's async proxy
        __syncthreads();
        if (t + 1 < n_tiles) load_keys(stage ^ 1, range.lo + static_cast<i64>(t + 1) * kBN);
        cp_async_commit();

        tile::Accumulator<1, kNI> s;
        attention::flash_wgmma::scores<QTile, KTile, kD, kBN>(s, q_s, 0, k_s(stage));
        if (!idle) {  // warp-uniform
          s.scale(scale_log2);
          rows::mask_past_ends(s, row_end, range.lo + static_cast<i64>(t) * kBN, lane);
          softmax.update(s, o);
        }
        attention::flash_wgmma::accumulate<VTile, kD, kBN>(o, s, v_s(stage));
      }

      rows::store<T>(o, softmax, panel, m0, rows, warp_row0, lane, out, parts, work.split);
    }
  }
}

}  // namespace rudnn::paged
