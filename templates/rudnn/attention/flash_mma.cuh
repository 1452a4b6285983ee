#pragma once
// FlashBlackboxAccelerated (SPEC §5): a FlashAttention-2-class forward kernel on tensor cores, for
// T ∈ {f16, bf16} and D = Dv ∈ {64, 96, 128, 256}.
//
//   out = softmax(scale · Q·Kᵀ + bias, excluded keys removed) · V      FP32 accumulation, output T
//
// Layout: query [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv], out [B, Hq, Tq, Dv], the
// last dims dense and the others stepping by the (batch, head, token) strides of each (the last 12
// parameters; attention/problem.cuh); Hq % Hkv == 0, query head h reads kv head h / (Hq/Hkv). Mask (u8, nonzero =
// excluded) and bias (float or T), both optional and logically [B, Hq, Tq, Tk] with element strides (batch_stride,
// head_stride, Tk, 1), 0 = broadcast; see attention/variant.cuh for MB/BB (void = not compiled in) and the score
// variant (Variant, default DefaultVariant). Causal is bottom-right aligned: query i sees key j iff j ≤ i + Tk − Tq. A
// row with no kept key outputs zeros.
//
// Work decomposition. The group = Hq/Hkv query heads of one kv head are consecutive, so for each
// (b, kv head) — a "panel" — their group·Tq query rows form one block of Q and of out. A block takes a
// tile of kBM panel rows (all sharing one K/V stream: with GQA the group's heads share every K/V
// tile, and decode (Tq = 1) fills a tile with the group's rows) and walks the key tiles:
//   prologue   Q tile + key tile 0 (K and V) by cp.async, one commit group
//   key tile t wait for tile t; __syncthreads (tile t visible; all warps are done with tile t−1,
//              whose stage is refilled next); prefetch tile t+1 into the other stage; then per warp:
//              S = Q·Kᵀ (warp_scores) → scale, then the variant (apply_variant) → online softmax
//              (OnlineSoftmax) → O += P·V (warp_accumulate)
//   epilogue   O / ℓ → T, staged through the warp's Q rows, 16-byte stores (store_output)
// Each of the 4 warps owns 16·kMI consecutive rows of the tile and needs no other warp's data after
// the loads: one barrier per key tile. Under causal, key tiles past the tile's last visible key are
// never loaded, and tiles fully visible to every row of the tile (and inside Tk) skip the
// per-element masking. Tiles are taken heaviest first (the query blocks nearest the end of a
// panel see the most keys under causal). The main loop (loads + warp_scores + warp_accumulate) is
// the part a Hopper wgmma/TMA version replaces; scores, softmax and epilogue only touch registers.
//
// Launch (the integrator mirrors this):
//   block  (Policy::kThreads = 128, 1, 1); anything else traps.
//   grid   (B·Hkv·ceil(group·Tq / kBlockM), 1, 1); any grid is correct (blocks stride over the
//          work items by their linear index over x, y and z).
//   dynamic shared memory  Policy::kSharedBytes = shared_memory::flash_mma = (kBlockM + 4·kBlockN)·(kHeadDim + 8)·2
//   bytes
//          (over 48 KiB: set cudaFuncAttributeMaxDynamicSharedMemorySize).
// Requirements: head_dim == value_dim == kHeadDim, 1 ≤ kv_heads, q_heads % kv_heads == 0,
// q_heads < 2^31, group·Tq < 2^31 and B·Hkv·ceil(group·Tq / kBlockM) < 2^31 (each else trap); q, k,
// v, out 16-byte aligned and every stride a multiple of 8 elements (cp.async and 16-byte stores of
// whole rows); value strides equal to the key strides (one offset and one row step serve both
// streams: a second set would cost the registers D = 96 does not have; the launcher passes 0 for
// the stride of an extent-1 dim, so only stepped dims can differ); finite scale.
// Tq = 0 or B·Hq = 0 writes nothing; Tk = 0 writes zeros.
//
// Policies (4 warps; kMI = kBlockM/64 m16 row tiles per warp) checked with NVRTC 13 under
// RUDNN_LAUNCH_BOUNDS(128), f16 and bf16, MB/BB ∈ {void/void, u8/float}, group panels and
// kHeadPanels, sm_80 and sm_90a: no spills, no stack frame, no static shared memory. Registers per
// thread (sm_80 / sm_90a, range over those builds) and dynamic shared memory:
//   FlashMmaPolicy< 64, 128, 64>  229-239 / 233-241   55296 B   default D = 64
//   FlashMmaPolicy< 96, 128, 32>  241-244 / 243-247   53248 B   default D = 96
//   FlashMmaPolicy< 96,  64, 64>  159-165 / 128-166   79872 B   alternative D = 96 (kMI = 1)
//   FlashMmaPolicy<128,  64, 64>  162-164 / 130-156   87040 B   default D = 128 (kMI = 1)
//   FlashMmaPolicy<256,  64, 32>  236-241 / 239-242  101376 B   default D = 256
//   FlashMmaPolicy<256,  64, 64>  (not registered)   168960 B   D = 256, sm_90 only (> sm_80's 163 KiB)
// FlashMmaPolicy<128, 128, 64> does NOT fit (S and O need ~200 registers before addresses; ptxas
// spills 56-168 bytes). Since the kernel takes strides (rows a runtime stride apart), neither do
// <128, 128, 32> (4-12 bytes in every formulation tried: it sat at 247 of 255 registers before) nor
// <96, 128, 64> (12-40 bytes): D = 128 runs 64-row tiles, D = 96 32-key tiles. Each policy also
// builds with kHeadPanels (one head per panel), equally spill-free. The register counts are what ptxas chose
// with the full 255 available (it spends the slack on early ldmatrix); at 2 blocks of 128 threads
// per SM that costs no occupancy. Keep new variants spill-free: the margins are small. (ptxas picks
// 128 registers for some D = 96 and 128 builds on sm_90a and then spills where a few more were
// needed: the 64-bit counts of the work decomposition did that to D = 96 with a mask, which is why
// WorkPlan keeps them in 32 bits.)
#include "rudnn/attention/flash_mma_epilogue.cuh"
#include "rudnn/attention/flash_mma_scores.cuh"
#include "rudnn/attention/flash_mma_smem.cuh"
#include "rudnn/attention/flash_mma_softmax.cuh"
#include "rudnn/attention/flash_mma_warp.cuh"
#include "rudnn/grid.cuh"
#include "rudnn/shared_memory.h"

namespace rudnn::attention {

// kHeadPanels: a work item's panel (attention/problem.cuh) is one query head rather than the group of
// a kv head; see "Panels" in flash_attention_mma.
template <int kHeadDim, int kBlockM, int kBlockN, bool kHeadPanels = false>
struct FlashMmaPolicy {
  static constexpr int kWarps = 4;
  static_assert(kHeadDim % 16 == 0 && kHeadDim >= 16 && kHeadDim <= 256,
                "FlashMmaPolicy: head dim a multiple of 16, at most 256");
  static_assert(kBlockM == 64 || kBlockM == 128, "FlashMmaPolicy: 64 or 128 query rows per block");
  static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 128, "FlashMmaPolicy: key tile of whole k16 steps");

  static constexpr int kD = kHeadDim;
  static constexpr bool kPerHeadPanels = kHeadPanels;
  static constexpr int kBM = kBlockM;
  static constexpr int kBN = kBlockN;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kMI = kBlockM / (16 * kWarps);  // m16 row tiles per warp
  static constexpr int kNI = kBlockN / 8;              // n8 key tiles of S
  static constexpr int kDI = kHeadDim / 8;             // n8 value tiles of O
  using Smem = flash_mma::SmemLayout<kBlockM, kBlockN, kHeadDim>;
  static constexpr int kLd = Smem::kLd;
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::flash_mma(kBlockM, kBlockN, kHeadDim));
  static_assert(kSharedBytes == Smem::kBytes, "FlashMmaPolicy: the layout disagrees with shared_memory::flash_mma");
};

// The per-D default policies (see the table at the top).
template <int kHeadDim>
struct FlashMmaDefault;
template <>
struct FlashMmaDefault<64> {
  using type = FlashMmaPolicy<64, 128, 64>;
};
template <>
struct FlashMmaDefault<96> {
  using type = FlashMmaPolicy<96, 128, 32>;  // 64-key tiles spill once the kernel takes strides
};
template <>
struct FlashMmaDefault<128> {
  using type = FlashMmaPolicy<128, 64, 64>;  // 128-row tiles spill (see the table)
};
template <>
struct FlashMmaDefault<256> {
  using type = FlashMmaPolicy<256, 64, 32>;  // 64-key tiles: 168960 B, over sm_80's 163 KiB
};

namespace flash_mma {

// Index arithmetic in 32 bits: a 64-bit division is a subroutine call in SASS, and ptxas spills the
// accumulators around calls. The kernel checks at entry that every quotient and dividend fits
// (work items and group·Tq < 2^31).
RUDNN_DEVICE i64 div32(i64 a, i64 b) { return static_cast<i64>(static_cast<u32>(a) / static_cast<u32>(b)); }

// Query position of the smallest and the largest i among panel rows [m0, m1): a range that crosses
// from one head of the group into the next contains both i = 0 and i = Tq − 1.
RUDNN_DEVICE i64 first_position(i64 m0, i64 m1, i64 q_len) {
  const i64 h = div32(m0, q_len);
  return h != div32(m1 - 1, q_len) ? 0 : m0 - h * q_len;
}
RUDNN_DEVICE i64 last_position(i64 m0, i64 m1, i64 q_len) {
  const i64 h = div32(m1 - 1, q_len);
  return div32(m0, q_len) != h ? q_len - 1 : m1 - 1 - h * q_len;
}

// One work item: panel rows [m0, m0 + rows) of batch b's panel, whose query heads start at head0 and
// read kv head kvh. 32-bit where the plan's checks allow: fewer registers live across the key loop.
struct WorkItem {
  int m0, rows;
  i64 b, kvh, head0;
};

// The launch requirements both flash kernels trap on (flash_attention_mma, flash_attention_wgmma).
template <class Policy>
RUDNN_DEVICE void check_launch(i64 head_dim, i64 value_dim, i64 k_batch_stride, i64 k_head_stride, i64 k_token_stride,
                               i64 v_batch_stride, i64 v_head_stride, i64 v_token_stride) {
  if (blockDim.x != static_cast<unsigned>(Policy::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::attention::flash_attention_{mma,wgmma}: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != Policy::kD || value_dim != Policy::kD)
    trap("rudnn::attention::flash_attention_{mma,wgmma}: head_dim and value_dim must equal Policy::kD");
  if (v_batch_stride != k_batch_stride || v_head_stride != k_head_stride || v_token_stride != k_token_stride)
    trap("rudnn::attention::flash_attention_{mma,wgmma}: value strides must equal key strides");
}

// The work decomposition of both flash kernels: the panels and their blocks of BM rows, for a call
// with Tq, B and Hq ≥ 1 (the kernels return before it on an empty call, so the compiler knows them
// positive in the loops). Built once per launch; the kernel walks w = first, first + step, ... <
// items and asks item(w). Traps on the call's remaining requirements.
// Panels. By default a panel holds the group's heads, which needs their rows evenly spaced in q and
// in out (dense heads; or decode, Tq = 1, whose rows are the heads): the group then shares every K/V
// tile. Policy::kPerHeadPanels takes any strides (token-major prefill with GQA), one head per panel,
// each streaming its K/V. Either way row m of a panel is at base + m·step, with no division on the
// copies: D = 128 has no registers to spare for one, nor for choosing the panel kind at run time.
template <class Policy>
struct WorkPlan {
  static constexpr bool kHeadPanels = Policy::kPerHeadPanels;
  i64 q_step, out_step;  // between a panel's rows in q and in out
  // The counts in 32 bits (each < 2^31 by the checks) and the work loop too (w < items < 2^31 and
  // step ≤ 2^31: no overflow): 64-bit ones would be more registers live across the key loop.
  int group, panels_per_batch, panel_rows, m_blocks;
  u32 items, step, first;

  RUDNN_DEVICE WorkPlan(i64 batch, i64 q_heads, i64 kv_heads, i64 q_len, i64 q_head_stride, i64 q_token_stride,
                        i64 out_head_stride, i64 out_token_stride) {
    if (kv_heads < 1 || kv_heads > q_heads || q_heads >= (i64{1} << 31) ||
        q_heads != div32(q_heads, kv_heads) * kv_heads)
      trap("rudnn::attention::flash_attention_{mma,wgmma}: q_heads must be a multiple of kv_heads");
    const i64 g = div32(q_heads, kv_heads);
    q_step = q_len == 1 ? q_head_stride : q_token_stride;
    out_step = q_len == 1 ? out_head_stride : out_token_stride;
    if (!kHeadPanels && g > 1 && q_len > 1 &&
        (q_head_stride != q_len * q_token_stride || out_head_stride != q_len * out_token_stride))
      trap(
          "rudnn::attention::flash_attention_{mma,wgmma}: group panels need q and out heads Tq rows apart (else "
          "kPerHeadPanels)");
    const i64 per_batch = kHeadPanels ? q_heads : kv_heads;
    const i64 rows = (kHeadPanels ? 1 : g) * q_len;
    const i64 blocks_m = (rows + Policy::kBM - 1) / Policy::kBM;
    const i64 all = batch * per_batch * blocks_m;
    if (rows >= (i64{1} << 31) || all >= (i64{1} << 31))
      trap("rudnn::attention::flash_attention_{mma,wgmma}: group·Tq and the work items must be < 2^31");
    group = static_cast<int>(g);
    panels_per_batch = static_cast<int>(per_batch);
    panel_rows = static_cast<int>(rows);
    m_blocks = static_cast<int>(blocks_m);
    items = static_cast<u32>(all);
    const i64 blocks = block_count();
    step = static_cast<u32>(blocks < all ? blocks : all);
    const i64 block = linear_block();
    first = block < all ? static_cast<u32>(block) : items;
  }

  RUDNN_DEVICE WorkItem item(u32 w) const {
    WorkItem it;
    const u32 p = w / static_cast<u32>(m_blocks);
    it.m0 = static_cast<int>(static_cast<u32>(m_blocks) - 1 - (w - p * static_cast<u32>(m_blocks))) *
            Policy::kBM;  // heaviest (last) block first
    it.rows = panel_rows - it.m0 < Policy::kBM ? panel_rows - it.m0 : Policy::kBM;
    const u32 b = p / static_cast<u32>(panels_per_batch);
    const int panel = static_cast<int>(p - b * static_cast<u32>(panels_per_batch));
    it.b = b;
    it.kvh = kHeadPanels ? static_cast<int>(static_cast<u32>(panel) / static_cast<u32>(group)) : panel;
    it.head0 = kHeadPanels ? panel : panel * group;
    return it;
  }
};

// The key tiles of BN keys an item reads at all (count), and the leading ones every row of it sees
// whole (inside Tk and causally visible), which skip the per-element work unless a mask or bias is
// present.
struct KeyTiles {
  int count, whole;
};
template <int kBN, class Mods>
RUDNN_DEVICE KeyTiles key_tiles(const Mods& mods, const WorkItem& it, i64 q_len) {
  const i64 key_end = mods.key_end(last_position(it.m0, it.m0 + it.rows, q_len));
  const i64 key_end_all = mods.key_end(first_position(it.m0, it.m0 + it.rows, q_len));
  return {key_end > 0 ? static_cast<int>((key_end + kBN - 1) / kBN) : 0,
          mods.elementwise() || key_end_all <= 0 ? 0 : static_cast<int>(key_end_all / kBN)};
}

}  // namespace flash_mma

template <class T, class MB, class BB, class Policy, template <class, class> class Variant = DefaultVariant>
RUDNN_DEVICE void flash_attention_mma(const T* q, const T* k, const T* v, const MB* mask, const BB* bias, T* out,
                                      i64 batch, i64 q_heads, i64 kv_heads, i64 q_len, i64 kv_len, i64 head_dim,
                                      i64 value_dim, i64 mask_batch_stride, i64 mask_head_stride, i64 bias_batch_stride,
                                      i64 bias_head_stride, i64 causal, float scale, i64 q_batch_stride,
                                      i64 q_head_stride, i64 q_token_stride, i64 k_batch_stride, i64 k_head_stride,
                                      i64 k_token_stride, i64 v_batch_stride, i64 v_head_stride, i64 v_token_stride,
                                      i64 out_batch_stride, i64 out_head_stride, i64 out_token_stride) {
  using P = Policy;
  using Smem = typename P::Smem;
  constexpr int kD = P::kD, kBM = P::kBM, kBN = P::kBN, kMI = P::kMI, kNI = P::kNI, kDI = P::kDI, kLd = P::kLd;
  flash_mma::check_launch<P>(head_dim, value_dim, k_batch_stride, k_head_stride, k_token_stride, v_batch_stride,
                             v_head_stride, v_token_stride);
  if (q_len <= 0 || batch <= 0 || q_heads <= 0) return;
  const flash_mma::WorkPlan<P> plan(batch, q_heads, kv_heads, q_len, q_head_stride, q_token_stride, out_head_stride,
                                    out_token_stride);
  T* smem = dynamic_shared<T>();
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp_row0 = (tid >> 5) * 16 * kMI;
  const float scale_log2 = scale * kLog2e;
  const Variant<MB, BB> variant(mask, bias, mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride,
                                q_len, kv_len, causal);

  for (u32 w = plan.first; w < plan.items; w += plan.step) {
    const flash_mma::WorkItem it = plan.item(w);
    const auto mods = variant.panel(it.b, it.head0);
    const flash_mma::KeyTiles tiles = flash_mma::key_tiles<kBN>(mods, it, q_len);
    const int n_tiles = tiles.count, whole_tiles = tiles.whole, m0 = it.m0, rows = it.rows;
    // Key (and value) row n of the panel: kv_offset + n · k_token_stride.
    const i64 kv_offset = it.b * k_batch_stride + it.kvh * k_head_stride;
    auto key_rows = [&](i64 n0) { return [=](int r) { return k + kv_offset + (n0 + r) * k_token_stride; }; };
    auto value_rows = [&](i64 n0) { return [=](int r) { return v + kv_offset + (n0 + r) * k_token_stride; }; };

    // ---- prologue
    __syncthreads();  // every warp is done with the previous item's shared memory
    if (n_tiles > 0) {
      const T* q_panel = q + it.b * q_batch_stride + it.head0 * q_head_stride;
      flash_mma::copy_rows_async<T, kBM, kD, P::kThreads>(
          Smem::q(smem), [&](int r) { return q_panel + (m0 + r) * plan.q_step; }, rows, tid);
      flash_mma::copy_rows_async<T, kBN, kD, P::kThreads>(Smem::k(smem, 0), key_rows(0), kv_len, tid);
      flash_mma::copy_rows_async<T, kBN, kD, P::kThreads>(Smem::v(smem, 0), value_rows(0), kv_len, tid);
    }
    cp_async_commit();

    tile::Accumulator<kMI, kDI> o;
    o.zero();
    flash_mma::OnlineSoftmax<kMI> softmax;
    softmax.init();
    const tile::LaneOffsets lo = tile::lane_offsets<kLd>(lane);
    const T* q_lane = Smem::q(smem) + warp_row0 * kLd + lo.a;

    // ---- main loop over key tiles
    for (int t = 0; t < n_tiles; ++t) {
      const int stage = t & 1;
      cp_async_wait<0>();
      __syncthreads();
      if (t + 1 < n_tiles) {
        const i64 n1 = static_cast<i64>(t + 1) * kBN;
        flash_mma::copy_rows_async<T, kBN, kD, P::kThreads>(Smem::k(smem, stage ^ 1), key_rows(n1), kv_len - n1, tid);
        flash_mma::copy_rows_async<T, kBN, kD, P::kThreads>(Smem::v(smem, stage ^ 1), value_rows(n1), kv_len - n1, tid);
      }
      cp_async_commit();

      tile::Accumulator<kMI, kNI> s;
      flash_mma::warp_scores<T, kMI, kNI, kD, kLd>(s, q_lane, Smem::k(smem, stage) + lo.b_nt);
      s.scale(scale_log2);
      if (t >= whole_tiles)
        flash_mma::apply_variant(mods, s, m0 + warp_row0 + (lane >> 2), static_cast<i64>(t) * kBN, plan.panel_rows,
                                 lane);
      softmax.update(s, o);
      flash_mma::warp_accumulate<T, kMI, kNI, kDI, kLd>(o, s, Smem::v(smem, stage) + lo.b_kn);
    }

    // ---- epilogue
    float inv[kMI][2];
    softmax.finish(inv);
    const i64 out_step = plan.out_step;
    T* const out_rows = out + it.b * out_batch_stride + it.head0 * out_head_stride + (m0 + warp_row0) * out_step;
    flash_mma::store_output<T, kMI, kDI, kLd>(
        Smem::q(smem) + warp_row0 * kLd, [&](int r) { return out_rows + r * out_step; }, rows - warp_row0, o.c, inv,
        lane);
  }
}

}  // namespace rudnn::attention
