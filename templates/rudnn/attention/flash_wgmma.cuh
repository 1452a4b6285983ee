#pragma once
// FlashBlackboxAccelerated (SPEC §5) on Hopper's warpgroup MMA (sm_90a): flash_attention_mma's
// algorithm, contract and launch (attention/flash_mma.cuh: layouts, variants, panels, causal, the
// work decomposition) with the two products on wgmma, for T ∈ {f16, bf16} and D = Dv ∈ {64, 128,
// 256} (whole 64-column swizzle panels; D = 96 stays on mma.sync). At D = 256 O alone is 128
// registers per thread: with S and P of 64-key tiles beside it ptxas spilled, so D = 256 takes
// 32-key tiles (m64n32 for S).
//
//   S = Q·Kᵀ   SS wgmma: Q a SwizzledKMajor<BM, D> tile (A: each warpgroup's 64 rows), K a
//              SwizzledKMajor<BN, D> tile (B, N = BN); D / 16 wgmma per key tile
//   O += P·V   RS wgmma: P from S's registers (tile::pack_a_from_accumulator: a warp's wgmma A
//              registers are mma.sync's A fragment), V a SwizzledMNMajor<BN, D> tile read with the
//              transpose flag (N = D); BN / 16 wgmma per key tile
// One warpgroup per 64 query rows, warp w of it owning 16 of them: S and O are the m64nN
// accumulators, whose register i is mma.sync's C fragment of n8 tile i / 4 (tile/wgmma.cuh), so
// they are tile::Accumulator<1, ·> and the score variant, the online softmax and the row arithmetic
// of flash_mma_*.cuh run on them unchanged. Each product's group is retired before the registers
// are touched again (wait_group 0; no group in flight).
// Key tiles stream through two cp.async stages as in flash_attention_mma, with
// fence_proxy_async_shared() between the wait and the barrier (wgmma reads through the async
// proxy). The epilogue stores O / ℓ as column pairs straight to global memory (the swizzled Q tile
// cannot stage rows as flash_mma's padded one does).
//
// Launch: block (Policy::kThreads = 128·BM/64, 1, 1), anything else traps; grid as
// flash_attention_mma; dynamic shared memory Policy::kSharedBytes = shared_memory::flash_wgmma
// (Q + two stages of K and V, plus the alignment slack). Requirements as
// flash_attention_mma's.
#include "rudnn/attention/flash_mma.cuh"
#include "rudnn/gemm/gather_tile.cuh"
#include "rudnn/tile/wgmma.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::attention {

template <int kHeadDim, int kBlockM, int kBlockN, bool kHeadPanels = false>
struct FlashWgmmaPolicy {
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "FlashWgmmaPolicy: D = 64, 128 or 256");
  static_assert(kBlockM == 64 || kBlockM == 128, "FlashWgmmaPolicy: one or two warpgroups of 64 query rows");
  static_assert(kBlockN == 32 || kBlockN == 64 || kBlockN == 128, "FlashWgmmaPolicy: key tiles of 32, 64 or 128");
  static constexpr int kD = kHeadDim;
  static constexpr bool kPerHeadPanels = kHeadPanels;
  static constexpr int kBM = kBlockM;
  static constexpr int kBN = kBlockN;
  static constexpr int kThreads = 128 * (kBlockM / 64);
  static constexpr int kNI = kBlockN / 8;   // n8 key tiles of S
  static constexpr int kDI = kHeadDim / 8;  // n8 value tiles of O
  using QTile = tile::SwizzledKMajor<kBlockM, kHeadDim>;
  using KTile = tile::SwizzledKMajor<kBlockN, kHeadDim>;
  using VTile = tile::SwizzledMNMajor<kBlockN, kHeadDim>;
  static constexpr int kStageElems = KTile::kElems + VTile::kElems;
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::flash_wgmma(kBlockM, kBlockN, kHeadDim));
  static_assert(kSharedBytes == (QTile::kElems + 2 * kStageElems) * 2 + shared_memory::kWgmmaAlignmentSlack,
                "FlashWgmmaPolicy: the layout disagrees with shared_memory::flash_wgmma");
};

namespace flash_wgmma {

// Issues this thread's 16-byte copies of rows [0, kRows) × kD of a tile placed by Layout: row r
// from row(r) when r < valid_rows, else zeros.
template <class T, int kRows, int kD, int kThreads, class Layout, class RowOf>
RUDNN_DEVICE void copy_rows(T* tile, const RowOf& row, i64 valid_rows) {
  const T* first = row(0);
  gemm::GatherTile<T, kRows, kD, kThreads, 8, Layout>::load(
      tile, first, [&](int r, int c) -> const T* { return r < valid_rows ? row(r) + c : nullptr; });
}

// S = Q·Kᵀ of this warpgroup's 64 rows (from row q_row0 of the Q tile) and the key tile, retired.
// S is overwritten by the first k16 step (no accumulate), so it needs no zeroing.
template <class QTile, class KTile, int kD, int kBN, class T>
RUDNN_DEVICE void scores(tile::Accumulator<1, kBN / 8>& s, const T* q_tile, int q_row0, const T* k_tile) {
  auto& s_regs = reinterpret_cast<float(&)[kBN / 2]>(s.c);
  wgmma_fence();
  RUDNN_UNROLL
  for (int kk = 0; kk < kD; kk += 16)
    tile::wgmma_ss<kBN>(q_tile, s_regs, QTile::descriptor(q_tile, q_row0, kk), KTile::descriptor(k_tile, 0, kk),
                        kk > 0);
  wgmma_commit();
  wgmma_wait<0>();
  wgmma_fence_operand(s_regs);
}

// O += P·V with P (in T) packed from the probabilities in s and V the value tile (MN-major), retired:
// P stays live until the group that reads it is.
template <class VTile, int kD, int kBN, class T>
RUDNN_DEVICE void accumulate(tile::Accumulator<1, kD / 8>& o, const tile::Accumulator<1, kBN / 8>& s, const T* v_tile) {
  auto& o_regs = reinterpret_cast<float(&)[kD / 2]>(o.c);
  u32 a[kBN / 16][4];
  RUDNN_UNROLL
  for (int kk = 0; kk < kBN / 16; ++kk) tile::pack_a_from_accumulator<T>(a[kk], s.c, 0, kk);
  wgmma_fence_operand(o_regs);
  wgmma_fence();
  RUDNN_UNROLL
  for (int kk = 0; kk < kBN / 16; ++kk)
    tile::wgmma_rs<kD, true>(v_tile, o_regs, a[kk], VTile::descriptor(v_tile, 16 * kk, 0), true);
  wgmma_commit();
  wgmma_wait<0>();
  wgmma_fence_operand(o_regs);
}

}  // namespace flash_wgmma

template <class T, class MB, class BB, class Policy, template <class, class> class Variant = DefaultVariant>
RUDNN_DEVICE void flash_attention_wgmma(const T* q, const T* k, const T* v, const MB* mask, const BB* bias, T* out,
                                        i64 batch, i64 q_heads, i64 kv_heads, i64 q_len, i64 kv_len, i64 head_dim,
                                        i64 value_dim, i64 mask_batch_stride, i64 mask_head_stride,
                                        i64 bias_batch_stride, i64 bias_head_stride, i64 causal, float scale,
                                        i64 q_batch_stride, i64 q_head_stride, i64 q_token_stride, i64 k_batch_stride,
                                        i64 k_head_stride, i64 k_token_stride, i64 v_batch_stride, i64 v_head_stride,
                                        i64 v_token_stride, i64 out_batch_stride, i64 out_head_stride,
                                        i64 out_token_stride) {
  using P = Policy;
  using QTile = typename P::QTile;
  using KTile = typename P::KTile;
  using VTile = typename P::VTile;
  constexpr int kD = P::kD, kBM = P::kBM, kBN = P::kBN, kNI = P::kNI, kDI = P::kDI;
  flash_mma::check_launch<P>(head_dim, value_dim, k_batch_stride, k_head_stride, k_token_stride, v_batch_stride,
                             v_head_stride, v_token_stride);
  if (q_len <= 0 || batch <= 0 || q_heads <= 0) return;
  const flash_mma::WorkPlan<P> plan(batch, q_heads, kv_heads, q_len, q_head_stride, q_token_stride, out_head_stride,
                                    out_token_stride);
  T* const q_s = tile::swizzle_aligned(dynamic_shared<T>());
  auto k_s = [&](int stage) { return q_s + QTile::kElems + stage * P::kStageElems; };
  auto v_s = [&](int stage) { return k_s(stage) + KTile::kElems; };
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int group_row0 = 64 * (tid / 128);                   // this warpgroup's first row of the tile
  const int warp_row0 = group_row0 + 16 * ((tid / 32) % 4);  // this warp's
  const float scale_log2 = scale * kLog2e;
  const Variant<MB, BB> variant(mask, bias, mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride,
                                q_len, kv_len, causal);

  for (u32 w = plan.first; w < plan.items; w += plan.step) {
    const flash_mma::WorkItem it = plan.item(w);
    const auto mods = variant.panel(it.b, it.head0);
    const flash_mma::KeyTiles tiles = flash_mma::key_tiles<kBN>(mods, it, q_len);
    const int n_tiles = tiles.count, whole_tiles = tiles.whole, m0 = it.m0, rows = it.rows;
    const i64 kv_offset = it.b * k_batch_stride + it.kvh * k_head_stride;
    auto key_rows = [&](i64 n0) { return [=](int r) { return k + kv_offset + (n0 + r) * k_token_stride; }; };
    auto value_rows = [&](i64 n0) { return [=](int r) { return v + kv_offset + (n0 + r) * k_token_stride; }; };
    auto load_keys = [&](int stage, i64 n0) {
      flash_wgmma::copy_rows<T, kBN, kD, P::kThreads, KTile>(k_s(stage), key_rows(n0), kv_len - n0);
      flash_wgmma::copy_rows<T, kBN, kD, P::kThreads, VTile>(v_s(stage), value_rows(n0), kv_len - n0);
    };

    // ---- prologue
    __syncthreads();  // every warpgroup is done with the previous item's shared memory
    if (n_tiles > 0) {
      const T* q_panel = q + it.b * q_batch_stride + it.head0 * q_head_stride;
      flash_wgmma::copy_rows<T, kBM, kD, P::kThreads, QTile>(
          q_s, [&](int r) { return q_panel + (m0 + r) * plan.q_step; }, rows);
      load_keys(0, 0);
    }
    cp_async_commit();

    tile::Accumulator<1, kDI> o;
    o.zero();
    flash_mma::OnlineSoftmax<1> softmax;
    softmax.init();

    // ---- main loop over key tiles
    for (int t = 0; t < n_tiles; ++t) {
      const int stage = t & 1;
      cp_async_wait<0>();
      fence_proxy_async_shared();
      __syncthreads();
      if (t + 1 < n_tiles) load_keys(stage ^ 1, static_cast<i64>(t + 1) * kBN);
      cp_async_commit();

      tile::Accumulator<1, kNI> s;
      flash_wgmma::scores<QTile, KTile, kD, kBN>(s, q_s, group_row0, k_s(stage));
      s.scale(scale_log2);
      if (t >= whole_tiles)
        flash_mma::apply_variant(mods, s, m0 + warp_row0 + (lane >> 2), static_cast<i64>(t) * kBN, plan.panel_rows,
                                 lane);
      softmax.update(s, o);
      flash_wgmma::accumulate<VTile, kD, kBN>(o, s, v_s(stage));
    }

    // ---- epilogue: O / ℓ as column pairs, rows past the panel not stored
    float inv[1][2];
    softmax.finish(inv);
    const i64 out_step = plan.out_step;
    T* const out_rows = out + it.b * out_batch_stride + it.head0 * out_head_stride + (m0 + warp_row0) * out_step;
    RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int r = (lane >> 2) + 8 * h;
      if (warp_row0 + r >= rows) continue;
      T* row = out_rows + r * out_step + 2 * (lane & 3);
      RUDNN_UNROLL
      for (int d = 0; d < kDI; ++d) {
        Vec<T, 2> pair;
        pair.words[0] = pack2_from_float<T>(o.c[0][d][2 * h] * inv[0][h], o.c[0][d][2 * h + 1] * inv[0][h]);
        store_vec<T, 2>(row + 8 * d, pair);
      }
    }
  }
}

}  // namespace rudnn::attention
