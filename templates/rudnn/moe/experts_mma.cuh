#pragma once
// Tensor-core SwiGLU experts of the MoE forward (SPEC §3): two grouped "NT" GEMMs over compact
// per-expert rows (rows [N, H]; expert e owns rows [offsets[e], offsets[e+1]), offsets u32 [E+1]).
//
//   swiglu_gate_up_mma  act[r, i] = silu(Σ_h x[r,h]·gate[e,i,h]) · (Σ_h x[r,h]·up[e,i,h])
//                       gate, up [E, I, H]. Each block computes the gate and the up tile of the
//                       same BN columns (two accumulator sets sharing the A fragments), applies
//                       silu·mul in FP32 registers and stores act once as T; nothing else is written.
//   expert_down_mma     out[r, h] = Σ_i act[r,i]·down[e,h,i]      down [E, H, I]
// FP32 accumulation: mma.sync m16n8k16 (MmaGemmPolicy), or on sm_90a Hopper's warpgroup MMA
// (WgmmaExpertsPolicy: gate and up in one K loop of a two-B gemm::WgmmaEngine, the x tile loaded once
// for both; the down projection on a one-B engine). silu(z) = z / (1 + e^−z) in FP32 with IEEE expf.
// Sums: each output adds its K blocks in order (deterministic, independent of the grid); the two
// engines agree to FP32 rounding of the sums, not bit for bit.
//
// Launch (the integrator mirrors this): block = Policy::kThreads threads (32·kWarpsM·kWarpsN, or
// 128 per warpgroup);
// grid.x = ceil(cols / kBlockN) (cols = inter for gate_up, hidden for down), grid.y =
// ceil(n_rows / kBlockM) (the kernels grid-stride over both, so any grid is correct; the exact
// number of M tiles is Σ_e ceil(count_e / kBlockM) ≤ ceil(n_rows / kBlockM) + E, and tiles past
// the ceil(n_rows / kBlockM) of the formula are reached by the stride).
// Dynamic shared memory (bytes): mma.sync, 16-bit elements, K rows padded by 8 elements:
//   kSharedBytesGateUp = kStages · (kBlockM + 2·kBlockN) · (kBlockK + 8) · 2
//   kSharedBytesDown   = kStages · (kBlockM +   kBlockN) · (kBlockK + 8) · 2
// wgmma: shared_memory::experts_wgmma (swizzled, unpadded stages plus 1024 bytes of alignment).
// (over 48 KiB needs the opt-in attribute cudaFuncAttributeMaxDynamicSharedMemorySize).
// Requirements: hidden % 8 == 0 and inter % 8 == 0 (16-byte cp.async rows), rows/weights/act/out
// 16-byte aligned (4-byte suffices for act/out of gate_up/down stores; cp.async sources need 16),
// offsets non-decreasing with offsets[E] = n_rows ≤ 2^32 − 1. The kernels stay in bounds even with
// bad offsets (clamped to [0, n_rows], see gemm/expert_tiles.cuh). Rows of an expert past its
// count and the K tail are zero-filled in shared memory, never read; n_rows = 0, experts without
// rows and a single expert holding every row need nothing special. A block whose blockDim.x is
// not Policy::kThreads traps.
//
// Variants checked spill-free (no stack, no static shared memory) under RUDNN_LAUNCH_BOUNDS(kThreads)
// on sm_80 and sm_90a, f16 and bf16 (registers gate_up / down, CUDA 13 NVRTC):
//   MmaGemmPolicy< 16,  64, 64, 1, 4, 3>  decode-like loads     ~162 / 92    smem 62208 / 34560 B
//   MmaGemmPolicy< 64,  64, 32, 2, 2, 4>  mid-size              ~168 / 127   smem 61440 / 40960 B
//   MmaGemmPolicy<128, 128, 32, 2, 4, 3>  prefill (8 warps, 64x32 warp tiles, 128x256 effective
//                                         gate/up tile)         ~244 / 158   smem 92160 / 61440 B
// The wgmma tiles (sm_90a only; MoEConfig.cpp tensorCoreTiles()): registers and shared memory in
// docs/wgmma.md.
#include "rudnn/gemm/expert_tiles.cuh"
#include "rudnn/gemm/gather_tile.cuh"
#include "rudnn/gemm/nt_mainloop.cuh"
#include "rudnn/gemm/wgmma_engine.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/shared_memory.h"
#include "rudnn/vector.cuh"

namespace rudnn::moe {

template <int kBlockM, int kBlockN, int kBlockK, int kWarpsM, int kWarpsN, int kStages>
struct MmaGemmPolicy {
  static_assert(kBlockM % (16 * kWarpsM) == 0, "MmaGemmPolicy: kBlockM / kWarpsM must be a multiple of 16");
  static_assert(kBlockN % (16 * kWarpsN) == 0, "MmaGemmPolicy: kBlockN / kWarpsN must be a multiple of 16");
  static_assert(kBlockK % 32 == 0, "MmaGemmPolicy: kBlockK must be a multiple of 32");
  static_assert(kStages >= 2, "MmaGemmPolicy: kStages >= 2");
  static_assert(kWarpsM * kWarpsN <= 32, "MmaGemmPolicy: at most 1024 threads");

  static constexpr int kTileM = kBlockM;
  static constexpr int kTileN = kBlockN;
  static constexpr int kTileK = kBlockK;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr bool kWgmma = false;
  template <class T, int kOperands>
  using Mainloop = gemm::NtMainloop<T, kBlockM, kBlockN, kBlockK, kWarpsM, kWarpsN, kStages, kOperands>;

  static constexpr int kSharedBytesGateUp =
      static_cast<int>(shared_memory::experts_mma(kStages, kBlockM, kBlockN, kBlockK, 2));
  static constexpr int kSharedBytesDown =
      static_cast<int>(shared_memory::experts_mma(kStages, kBlockM, kBlockN, kBlockK, 1));
  static_assert(kSharedBytesGateUp == Mainloop<f16, 2>::kSharedBytes, "the mainloop disagrees with shared_memory");
  static_assert(kSharedBytesDown == Mainloop<f16, 1>::kSharedBytes, "the mainloop disagrees with shared_memory");
};

// The experts on Hopper's warpgroup MMA (sm_90a): gemm::WgmmaPolicy<BM, BN, BK, Stages> (BM / 64
// warpgroups of 128 threads) under the names the expert kernels read.
template <int kBlockM, int kBlockN, int kBlockK, int kStages>
struct WgmmaExpertsPolicy : gemm::WgmmaPolicy<kBlockM, kBlockN, kBlockK, kStages> {
  static constexpr int kTileM = kBlockM;
  static constexpr int kTileN = kBlockN;
  static constexpr int kTileK = kBlockK;
  static constexpr int kSharedBytesGateUp =
      static_cast<int>(shared_memory::experts_wgmma(kStages, kBlockM, kBlockN, kBlockK, 2));
  static constexpr int kSharedBytesDown =
      static_cast<int>(shared_memory::experts_wgmma(kStages, kBlockM, kBlockN, kBlockK, 1));
};

namespace experts_detail {

RUDNN_DEVICE float silu(float z) { return z / (1.0f + expf(-z)); }

// Stores two adjacent outputs (row, col), (row, col + 1) as one 4-byte word: col is even and the
// row stride even, so the word is aligned.
template <class T>
RUDNN_DEVICE void store_pair(T* p, float lo, float hi) {
  Vec<T, 2> v;
  v.words[0] = pack2_from_float<T>(lo, hi);
  store_vec<T, 2>(p, v);
}

// Writes the block tile's outputs: element (r, c) of the tile goes to out_tile[r·ld + c] when
// r < rows and c < cols. value(i, j, v) gives accumulator element v of the warp's m16n8 tile
// (i, j). One base pointer per lane and remaining-extent tests keep the 64-bit address math out
// of the unrolled loop (it cost ~30 registers when each store computed its own row address).
template <class T, class Loop, class Value>
RUDNN_DEVICE void store_tile(T* out_tile, i64 ld, i64 rows, i64 cols, Value value) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int r0 = Loop::warp_row0() + tile::accumulator_row(0, 0, lane);
  const int c0 = Loop::warp_col0() + tile::accumulator_col(0, lane);
  T* base = out_tile + r0 * ld + c0;
  const i64 rows_left = rows - r0, cols_left = cols - c0;
  RUDNN_UNROLL
  for (int i = 0; i < Loop::kMI; ++i) RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) {
    if (16 * i + 8 * h >= rows_left) continue;
    T* p = base + (16 * i + 8 * h) * ld;
    RUDNN_UNROLL
    for (int j = 0; j < Loop::kNI; ++j) {
      if (8 * j >= cols_left) continue;  // cols even: the pair is all in or all out
      store_pair(p + 8 * j, value(i, j, 2 * h), value(i, j, 2 * h + 1));
    }
  }
}

// Issues K block kb of an operand tile of kRows K-contiguous rows for a wgmma engine: row r < rows
// of the tile is base[r·depth ..], depth its K extent; other rows and the K tail are zero-filled.
template <class T, class P, int kRows, class Layout>
RUDNN_DEVICE void load_k_rows(T* tile, const T* base, i64 rows, i64 depth, i64 kb) {
  gemm::GatherTile<T, kRows, P::kBK, P::kThreads, 8, Layout>::load(tile, base, [&](int r, int c) -> const T* {
    const i64 k = kb * P::kBK + c;
    return r < rows && k < depth ? base + r * depth + k : nullptr;
  });
}

// The wgmma counterpart of store_tile: element (r, c) of the block tile goes to out_tile[r·ld + c]
// when r < rows and c < cols; value(i) gives accumulator register i. Registers i, i + 1 (i even) are
// adjacent columns; ld and cols are even, so a pair is all in or all out and its word aligned.
template <class E, class T, class Value>
RUDNN_DEVICE void store_register_pairs(T* out_tile, i64 ld, i64 rows, i64 cols, const Value& value) {
  E::each_register([&](int r, int c, int i) {
    if (i % 2 != 0 || r >= rows || c >= cols) return;
    store_pair(out_tile + r * ld + c, value(i), value(i + 1));
  });
}

template <class T, class P>
using GateUpWgmma = gemm::WgmmaEngine<T, P, false, false, 2>;

// g = x·gate_eᵀ and u = x·up_eᵀ over the block tile (the rows of `tile`, columns n0.. of inter) on
// wgmma: one K loop over hidden with the x tile loaded once for both; every operand K-contiguous.
// The experts backward recomputes its pre-activations through this too.
template <class T, class P>
RUDNN_DEVICE void gate_up_wgmma(typename GateUpWgmma<T, P>::Acc& g, typename GateUpWgmma<T, P>::Acc& u, T* smem,
                                const T* rows, const T* gate, const T* up, const gemm::ExpertTile& tile, i64 n0,
                                i64 hidden, i64 inter) {
  using E = GateUpWgmma<T, P>;
  const i64 m_rows = tile.end - tile.begin;
  const T* x_tile = rows + tile.begin * hidden;
  const i64 weights = (tile.expert * inter + n0) * hidden;
  const T* gate_tile = gate + weights;
  const T* up_tile = up + weights;
  E::run2(
      g, u, smem, (hidden + P::kBK - 1) / P::kBK,
      [&](T* s, i64 kb) { load_k_rows<T, P, P::kBM, typename E::ALayout>(s, x_tile, m_rows, hidden, kb); },
      [&](T* s, i64 kb) { load_k_rows<T, P, P::kBN, typename E::BLayout>(s, gate_tile, inter - n0, hidden, kb); },
      [&](T* s, i64 kb) { load_k_rows<T, P, P::kBN, typename E::BLayout>(s, up_tile, inter - n0, hidden, kb); });
}

// One block tile of swiglu_gate_up on mma.sync: the fused gate/up mainloop, then act = silu(g)·u
// straight from the two accumulator sets.
template <class T, class P>
RUDNN_DEVICE void gate_up_tile_mma(T* smem, const T* rows, const T* gate, const T* up, T* act,
                                   const gemm::ExpertTile& tile, i64 n0, i64 hidden, i64 inter) {
  using Loop = typename P::template Mainloop<T, 2>;
  const i64 m_rows = tile.end - tile.begin;
  const i64 weights = (tile.expert * inter + n0) * hidden;
  const T* const b[2] = {gate + weights, up + weights};
  typename Loop::Acc acc[2];
  Loop::run(acc, smem, rows + tile.begin * hidden, m_rows, b, inter - n0, hidden);
  store_tile<T, Loop>(act + tile.begin * inter + n0, inter, m_rows, inter - n0,
                      [&](int i, int j, int v) { return silu(acc[0].c[i][j][v]) * acc[1].c[i][j][v]; });
}

template <class T, class P>
RUDNN_DEVICE void gate_up_tile_wgmma(T* smem, const T* rows, const T* gate, const T* up, T* act,
                                     const gemm::ExpertTile& tile, i64 n0, i64 hidden, i64 inter) {
  using E = GateUpWgmma<T, P>;
  static_assert(E::kSharedBytes == P::kSharedBytesGateUp, "the gate/up engine and shared_memory disagree");
  typename E::Acc g, u;
  gate_up_wgmma<T, P>(g, u, smem, rows, gate, up, tile, n0, hidden, inter);
  store_register_pairs<E>(act + tile.begin * inter + n0, inter, tile.end - tile.begin, inter - n0,
                          [&](int i) { return silu(g.d[i]) * u.d[i]; });
}

// One block tile of expert_down: out = act·down_eᵀ, down_e [H, I] read by rows n0.. (K = inter
// contiguous in both operands).
template <class T, class P>
RUDNN_DEVICE void down_tile_mma(T* smem, const T* act, const T* down, T* out, const gemm::ExpertTile& tile, i64 n0,
                                i64 inter, i64 hidden) {
  using Loop = typename P::template Mainloop<T, 1>;
  const i64 m_rows = tile.end - tile.begin;
  const T* const b[1] = {down + (tile.expert * hidden + n0) * inter};
  typename Loop::Acc acc[1];
  Loop::run(acc, smem, act + tile.begin * inter, m_rows, b, hidden - n0, inter);
  store_tile<T, Loop>(out + tile.begin * hidden + n0, hidden, m_rows, hidden - n0,
                      [&](int i, int j, int v) { return acc[0].c[i][j][v]; });
}

template <class T, class P>
RUDNN_DEVICE void down_tile_wgmma(T* smem, const T* act, const T* down, T* out, const gemm::ExpertTile& tile, i64 n0,
                                  i64 inter, i64 hidden) {
  using E = gemm::WgmmaEngine<T, P, false, false>;
  static_assert(E::kSharedBytes == P::kSharedBytesDown, "the down engine and shared_memory disagree");
  const i64 m_rows = tile.end - tile.begin;
  const T* act_tile = act + tile.begin * inter;
  const T* down_tile = down + (tile.expert * hidden + n0) * inter;
  typename E::Acc acc;
  E::run(
      acc, smem, (inter + P::kBK - 1) / P::kBK,
      [&](T* s, i64 kb) { load_k_rows<T, P, P::kBM, typename E::ALayout>(s, act_tile, m_rows, inter, kb); },
      [&](T* s, i64 kb) { load_k_rows<T, P, P::kBN, typename E::BLayout>(s, down_tile, hidden - n0, inter, kb); });
  store_register_pairs<E>(out + tile.begin * hidden + n0, hidden, m_rows, hidden - n0, [&](int i) { return acc.d[i]; });
}

template <class Policy>
RUDNN_DEVICE void check_block() {
  if (blockDim.x != static_cast<unsigned>(Policy::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::moe experts_mma: blockDim must be (Policy::kThreads, 1, 1)");
}

}  // namespace experts_detail

template <class T, class Policy>
RUDNN_DEVICE void swiglu_gate_up_mma(const T* rows, const u32* offsets, const T* gate, const T* up, T* act, i64 n_rows,
                                     i64 experts, i64 hidden, i64 inter) {
  using namespace experts_detail;
  check_block<Policy>();
  T* smem = dynamic_shared<T>();
  const i64 n_blocks = (inter + Policy::kTileN - 1) / Policy::kTileN;
  gemm::ExpertTileCursor cursor(offsets, experts, n_rows, Policy::kTileM);
  gemm::ExpertTile tile;
  for (i64 t = blockIdx.y; cursor.seek(t, tile); t += gridDim.y)
    for (i64 nb = blockIdx.x; nb < n_blocks; nb += gridDim.x) {
      if constexpr (Policy::kWgmma)
        gate_up_tile_wgmma<T, Policy>(smem, rows, gate, up, act, tile, nb * Policy::kTileN, hidden, inter);
      else
        gate_up_tile_mma<T, Policy>(smem, rows, gate, up, act, tile, nb * Policy::kTileN, hidden, inter);
    }
}

template <class T, class Policy>
RUDNN_DEVICE void expert_down_mma(const T* act, const u32* offsets, const T* down, T* out, i64 n_rows, i64 experts,
                                  i64 inter, i64 hidden) {
  using namespace experts_detail;
  check_block<Policy>();
  T* smem = dynamic_shared<T>();
  const i64 n_blocks = (hidden + Policy::kTileN - 1) / Policy::kTileN;
  gemm::ExpertTileCursor cursor(offsets, experts, n_rows, Policy::kTileM);
  gemm::ExpertTile tile;
  for (i64 t = blockIdx.y; cursor.seek(t, tile); t += gridDim.y)
    for (i64 nb = blockIdx.x; nb < n_blocks; nb += gridDim.x) {
      if constexpr (Policy::kWgmma)
        down_tile_wgmma<T, Policy>(smem, act, down, out, tile, nb * Policy::kTileN, inter, hidden);
      else
        down_tile_mma<T, Policy>(smem, act, down, out, tile, nb * Policy::kTileN, inter, hidden);
    }
}

}  // namespace rudnn::moe
