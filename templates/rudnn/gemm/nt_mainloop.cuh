#pragma once
// The K loop of one block tile of an "NT" GEMM with kOperands B matrices that share A:
//   C_o[BM, BN] = A[BM, K] · B_oᵀ        A rows and B_o rows K-contiguous (row stride K),
// FP32 accumulation in registers. A kStages-deep cp.async pipeline (gemm/pipeline.cuh) keeps
// kStages - 1 K blocks in flight while the warps run the MMAs of the oldest one.
//
// Shared memory: kStages · (BM + kOperands·BN) · (BK + 8) · 2 bytes from `smem` (SmemTile layout).
// The warps form a kWarpsM x kWarpsN grid; warp (wm, wn) owns rows [wm·BM/kWarpsM, ...) and columns
// [wn·BN/kWarpsN, ...) of each C_o (tile/accumulator.cuh: the register layout).
#include "rudnn/gemm/cp_async_tile.cuh"
#include "rudnn/gemm/pipeline.cuh"
#include "rudnn/tile/accumulator.cuh"
#include "rudnn/tile/mma_fragment.cuh"

namespace rudnn::gemm {

template <class T, int kBM, int kBN, int kBK, int kWarpsM, int kWarpsN, int kStages, int kOperands>
struct NtMainloop {
  static_assert(kStages >= 2, "NtMainloop: at least two pipeline stages");
  static_assert(kBM % (16 * kWarpsM) == 0, "NtMainloop: each warp's rows are whole m16 tiles");
  static_assert(kBN % (16 * kWarpsN) == 0, "NtMainloop: each warp's columns are whole n16 pairs");
  static_assert(kOperands == 1 || kOperands == 2, "NtMainloop: one or two B operands");

  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kWarpM = kBM / kWarpsM;
  static constexpr int kWarpN = kBN / kWarpsN;
  static constexpr int kMI = kWarpM / 16;
  static constexpr int kNI = kWarpN / 8;
  using ATile = SmemTile<kBM, kBK>;
  using BTile = SmemTile<kBN, kBK>;
  static constexpr int kStageElems = ATile::kElems + kOperands * BTile::kElems;
  static constexpr int kSharedBytes = kStages * kStageElems * 2;
  using Acc = tile::Accumulator<kMI, kNI>;
  using ALoader = AsyncTileLoader<T, kBM, kBK, kThreads>;
  using BLoader = AsyncTileLoader<T, kBN, kBK, kThreads>;

  // This warp's place in the block tile.
  RUDNN_DEVICE static int warp_row0() { return (static_cast<int>(threadIdx.x) >> 5) / kWarpsN * kWarpM; }
  RUDNN_DEVICE static int warp_col0() { return (static_cast<int>(threadIdx.x) >> 5) % kWarpsN * kWarpN; }

  // a: the tile's first A row, rows [0, a_rows) valid; b[o]: the tile's first row of B_o, rows
  // [0, b_rows) valid; k: the reduction length and the row stride of A and B (k % 8 == 0).
  RUDNN_DEVICE static void run(Acc (&acc)[kOperands], T* smem, const T* a, i64 a_rows, const T* const (&b)[kOperands],
                               i64 b_rows, i64 k) {
    const int tid = static_cast<int>(threadIdx.x);
    ALoader a_loader;
    a_loader.init(a, k, a_rows, tid);
    BLoader b_loader[kOperands];
    RUDNN_UNROLL
    for (int o = 0; o < kOperands; ++o) b_loader[o].init(b[o], k, b_rows, tid);
    RUDNN_UNROLL
    for (int o = 0; o < kOperands; ++o) acc[o].zero();

    const i64 k_blocks = (k + kBK - 1) / kBK;
    CpAsyncPipeline<kStages>::run(
        k_blocks, [&](int stage, i64 kb) { load_stage(smem + stage * kStageElems, a_loader, b_loader, kb * kBK, k); },
        [&](int stage) { compute_stage(acc, smem + stage * kStageElems); });
  }

 private:
  RUDNN_DEVICE static void load_stage(T* stage, const ALoader& a_loader, const BLoader (&b_loader)[kOperands], i64 k0,
                                      i64 k) {
    a_loader.load(stage, k0, k);
    RUDNN_UNROLL
    for (int o = 0; o < kOperands; ++o) b_loader[o].load(stage + ATile::kElems + o * BTile::kElems, k0, k);
  }

  RUDNN_DEVICE static void compute_stage(Acc (&acc)[kOperands], const T* stage) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int row0 = warp_row0(), col0 = warp_col0();
    RUDNN_UNROLL
    for (int kk = 0; kk < kBK; kk += 16) {
      u32 af[kMI][4];
      tile::load_a_rows<kMI, ATile::kLd>(af, stage, row0, kk, lane);
      RUDNN_UNROLL
      for (int o = 0; o < kOperands; ++o) {
        u32 bf[kNI][2];
        tile::load_b_cols_nt<kNI, BTile::kLd>(bf, stage + ATile::kElems + o * BTile::kElems, col0, kk, lane);
        acc[o].template mma<T>(af, bf);
      }
    }
  }
};

}  // namespace rudnn::gemm
