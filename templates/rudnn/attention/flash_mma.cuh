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
//   FlashMmaPolicy< 64, 128, 64>  229-240 / 233-241   55296 B   default D = 64
//   FlashMmaPolicy< 96, 128, 32>  242-245 / 244-248   53248 B   default D = 96
//   FlashMmaPolicy< 96,  64, 64>  159-164 / 127-134   79872 B   alternative D = 96 (kMI = 1)
//   FlashMmaPolicy<128,  64, 64>  162-165 / 130-165   87040 B   default D = 128 (kMI = 1)
//   FlashMmaPolicy<256,  64, 32>  238-242 / 241-242  101376 B   default D = 256
//   FlashMmaPolicy<256,  64, 64>  (not registered)   168960 B   D = 256, sm_90 only (> sm_80's 163 KiB)
// FlashMmaPolicy<128, 128, 64> does NOT fit (S and O need ~200 registers before addresses; ptxas
// spills 56-168 bytes). Since the kernel takes strides (rows a runtime stride apart), neither do
// <128, 128, 32> (4-12 bytes in every formulation tried: it sat at 247 of 255 registers before) nor
// <96, 128, 64> (12-40 bytes): D = 128 runs 64-row tiles, D = 96 32-key tiles. Each policy also
// builds with kHeadPanels (one head per panel), equally spill-free. The register counts are what ptxas chose
// with the full 255 available (it spends the slack on early ldmatrix); at 2 blocks of 128 threads
// per SM that costs no occupancy. Keep new variants spill-free: the margins are small.
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
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::attention::flash_attention_mma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != kD || value_dim != kD)
    trap("rudnn::attention::flash_attention_mma: head_dim and value_dim must equal Policy::kHeadDim");
  if (v_batch_stride != k_batch_stride || v_head_stride != k_head_stride || v_token_stride != k_token_stride)
    trap("rudnn::attention::flash_attention_mma: value strides must equal key strides");
  if (q_len <= 0 || batch <= 0 || q_heads <= 0) return;
  if (kv_heads < 1 || kv_heads > q_heads || q_heads >= (i64{1} << 31) ||
      q_heads != flash_mma::div32(q_heads, kv_heads) * kv_heads)
    trap("rudnn::attention::flash_attention_mma: q_heads must be a multiple of kv_heads");

  T* smem = dynamic_shared<T>();
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp_row0 = (tid >> 5) * 16 * kMI;
  const i64 group = flash_mma::div32(q_heads, kv_heads);
  // Panels. By default a panel holds the group's heads, which needs their rows evenly spaced in q
  // and in out (dense heads; or decode, Tq = 1, whose rows are the heads): the group then shares
  // every K/V tile. Policy::kPerHeadPanels takes any strides (token-major prefill with GQA), one head
  // per panel, each streaming its K/V. Either way row m of a panel is at base + m·step, with no
  // division on the copies: D = 128 has no registers to spare for one, nor for choosing the panel
  // kind at run time.
  constexpr bool kHeadPanels = P::kPerHeadPanels;
  const i64 q_step = q_len == 1 ? q_head_stride : q_token_stride;
  const i64 out_step = q_len == 1 ? out_head_stride : out_token_stride;
  if (!kHeadPanels && group > 1 && q_len > 1 &&
      (q_head_stride != q_len * q_token_stride || out_head_stride != q_len * out_token_stride))
    trap(
        "rudnn::attention::flash_attention_mma: group panels need q and out heads Tq rows apart (else kPerHeadPanels)");
  const i64 panels_per_batch = kHeadPanels ? q_heads : kv_heads;
  const i64 panel_rows = (kHeadPanels ? 1 : group) * q_len;
  const i64 m_blocks = (panel_rows + kBM - 1) / kBM;
  const i64 items = batch * panels_per_batch * m_blocks;
  if (panel_rows >= (i64{1} << 31) || items >= (i64{1} << 31))
    trap("rudnn::attention::flash_attention_mma: group·Tq and the work items must be < 2^31");
  // The work loop in 32 bits (w < items < 2^31 and step ≤ 2^31: no overflow): a 64-bit bound and
  // counter would be three more registers live across the key loop.
  const u32 items32 = static_cast<u32>(items);
  const i64 blocks = block_count();
  const u32 step = static_cast<u32>(blocks < items ? blocks : items);
  const i64 first = linear_block();
  const float scale_log2 = scale * kLog2e;
  const Variant<MB, BB> variant(mask, bias, mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride,
                                q_len, kv_len, causal);

  for (u32 w = first < items ? static_cast<u32>(first) : items32; w < items32; w += step) {
    // ---- work item: panel p (batch b, query heads from head0, kv head kvh), rows [m0, m0 + rows) of
    // it. 32-bit where the checks above allow: fewer registers live across the key loop.
    const int p = static_cast<int>(w / static_cast<u32>(m_blocks));
    const int m0 = static_cast<int>(m_blocks - 1 - (w - p * m_blocks)) * kBM;  // heaviest (last) block first
    const int rows = panel_rows - m0 < kBM ? static_cast<int>(panel_rows - m0) : kBM;
    const i64 b = flash_mma::div32(p, panels_per_batch), panel = p - b * panels_per_batch;
    const i64 kvh = kHeadPanels ? flash_mma::div32(panel, group) : panel;
    const i64 head0 = kHeadPanels ? panel : panel * group;

    const auto mods = variant.panel(b, head0);
    // Keys the tile reads at all, and the leading key tiles that every row of the tile sees whole
    // (inside Tk and causally visible): those skip the per-element work unless a mask or bias is
    // present.
    const i64 key_end = mods.key_end(flash_mma::last_position(m0, m0 + rows, q_len));
    const i64 key_end_all = mods.key_end(flash_mma::first_position(m0, m0 + rows, q_len));
    const int n_tiles = key_end > 0 ? static_cast<int>((key_end + kBN - 1) / kBN) : 0;
    const int whole_tiles = mods.elementwise() || key_end_all <= 0 ? 0 : static_cast<int>(key_end_all / kBN);
    // Key (and value) row n of the panel: kv_offset + n · k_token_stride.
    const i64 kv_offset = b * k_batch_stride + kvh * k_head_stride;
    auto key_rows = [&](i64 n0) { return [=](int r) { return k + kv_offset + (n0 + r) * k_token_stride; }; };
    auto value_rows = [&](i64 n0) { return [=](int r) { return v + kv_offset + (n0 + r) * k_token_stride; }; };

    // ---- prologue
    __syncthreads();  // every warp is done with the previous item's shared memory
    if (n_tiles > 0) {
      const T* q_panel = q + b * q_batch_stride + head0 * q_head_stride;
      flash_mma::copy_rows_async<T, kBM, kD, P::kThreads>(
          Smem::q(smem), [&](int r) { return q_panel + (m0 + r) * q_step; }, rows, tid);
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
        flash_mma::apply_variant(mods, s, m0 + warp_row0 + (lane >> 2), static_cast<i64>(t) * kBN, panel_rows, lane);
      softmax.update(s, o);
      flash_mma::warp_accumulate<T, kMI, kNI, kDI, kLd>(o, s, Smem::v(smem, stage) + lo.b_kn);
    }

    // ---- epilogue
    float inv[kMI][2];
    softmax.finish(inv);
    T* const out_rows = out + b * out_batch_stride + head0 * out_head_stride + (m0 + warp_row0) * out_step;
    flash_mma::store_output<T, kMI, kDI, kLd>(
        Smem::q(smem) + warp_row0 * kLd, [&](int r) { return out_rows + r * out_step; }, rows - warp_row0, o.c, inv,
        lane);
  }
}

}  // namespace rudnn::attention
