#pragma once
// One BM × BN block tile of C = A·B over a run of K blocks, FP32 accumulation in registers, operand
// tiles staged in shared memory through the cp.async pipeline of gemm/pipeline.cuh by loaders the
// kernel supplies (usually gemm::GatherTile, gemm/gather_tile.cuh). Two ways to multiply, chosen by the
// policy (BlockPolicy<BM, BN, BK, WarpsM, WarpsN, Stages, TensorCore>):
//   tensor cores (f16/bf16)  mma.sync m16n8k16 on ldmatrix fragments (tile/mma_fragment.cuh,
//                            tile/accumulator.cuh); warps form a WarpsM × WarpsN grid, warp (wm, wn)
//                            owns rows [wm·BM/WarpsM, ...) and columns [wn·BN/WarpsN, ...) — the
//                            same register layout as gemm::NtMainloop, so accumulators of the two
//                            engines with equal tiles combine element by element
//   plain FMA (any T)        threads form an (8·WarpsM) × (4·WarpsN) grid; thread (tm, tn) owns rows
//                            tm + 8·WarpsM·i and columns tn + 4·WarpsN·j (strided, so a warp's
//                            shared reads and global stores spread over consecutive addresses)
// Operand layouts in shared memory (PaddedTile rows), the engine's two booleans:
//   A  M-major [BM][BK] (rows = GEMM rows, K contiguous: plain ldmatrix) or K-major [BK][BM]
//      (rows = K, ldmatrix.trans);  B  N-major [BN][BK] ("NT") or K-major [BK][BN] ("KN", .trans).
// Shared memory: Stages · (A tile + B tile) elements (shared_memory::block_gemm).
// The sum over K runs in one fixed order (K blocks in sequence, k16 steps or single k in sequence
// within a block), independent of the grid and of thread scheduling.
// store_rows writes a tile through shared memory in 16-byte row chunks (the convolution passes);
// gemm/wgmma_engine.cuh is the same contract on Hopper's warpgroup MMA.
// Users: the implicit-GEMM convolution (conv/implicit_gemm.cuh), the MoE experts backward
// (moe/experts_backward_mma.cuh).
#include "rudnn/gemm/gather_tile.cuh"
#include "rudnn/gemm/pipeline.cuh"
#include "rudnn/gemm/tile_store.cuh"
#include "rudnn/shared_memory.h"
#include "rudnn/tile/accumulator.cuh"
#include "rudnn/tile/mma_fragment.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::gemm {

template <int BM, int BN, int BK, int WarpsM, int WarpsN, int Stages, bool TensorCore>
struct BlockPolicy {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kWarpsM = WarpsM, kWarpsN = WarpsN, kStages = Stages;
  static constexpr bool kTensorCore = TensorCore;
  static constexpr bool kWgmma = false;
  static constexpr int kThreads = 32 * WarpsM * WarpsN;
  static_assert(Stages >= 2, "BlockPolicy: at least two pipeline stages");
  static_assert(WarpsM * WarpsN <= 32, "BlockPolicy: at most 1024 threads");
  static_assert(!TensorCore || (BM % (16 * WarpsM) == 0 && BN % (16 * WarpsN) == 0),
                "BlockPolicy: each warp's tile is whole m16 rows and n16 column pairs");
  static_assert(!TensorCore || BK % 32 == 0, "BlockPolicy: tensor-core BK is a multiple of 32");
  static_assert(TensorCore || (BM % (8 * WarpsM) == 0 && BN % (4 * WarpsN) == 0 && BK % 8 == 0),
                "BlockPolicy: the plain thread grid (8·WarpsM) × (4·WarpsN) must divide the tile");
};

template <int kTM, int kTN>
struct PlainAccumulator {
  float c[kTM][kTN];
  RUDNN_DEVICE void zero() {
    RUDNN_UNROLL
    for (int i = 0; i < kTM; ++i) RUDNN_UNROLL
    for (int j = 0; j < kTN; ++j) c[i][j] = 0.0f;
  }
};

// kAKMajor: A is stored [BK][BM]; kBKMajor: B is stored [BK][BN].
template <class T, class P, bool kAKMajor, bool kBKMajor>
struct BlockEngine {
  static constexpr int kBM = P::kBM, kBN = P::kBN, kBK = P::kBK, kThreads = P::kThreads;
  using ATile = PaddedTile<T, kAKMajor ? kBK : kBM, kAKMajor ? kBM : kBK>;
  using BTile = PaddedTile<T, kBKMajor ? kBK : kBN, kBKMajor ? kBN : kBK>;
  using ALayout = ATile;  // where the loaders put A's and B's chunks (GatherTile's Layout)
  using BLayout = BTile;
  static constexpr int kStageElems = ATile::kElems + BTile::kElems;
  static constexpr int kSharedBytes = P::kStages * kStageElems * static_cast<int>(sizeof(T));
  static_assert(!P::kTensorCore || sizeof(T) == 2, "BlockPolicy: tensor cores take f16/bf16 only");
  static_assert(kSharedBytes == shared_memory::block_gemm(P::kStages, kBM, kBN, kBK, sizeof(T), kAKMajor, kBKMajor),
                "BlockEngine and shared_memory::block_gemm disagree");

  // Tensor cores: warp tile and fragment counts.
  static constexpr int kWarpM = kBM / P::kWarpsM, kWarpN = kBN / P::kWarpsN;
  static constexpr int kMI = kWarpM / 16, kNI = kWarpN / 8;
  // Plain: thread grid and per-thread tile.
  static constexpr int kThreadsM = 8 * P::kWarpsM, kThreadsN = 4 * P::kWarpsN;
  static constexpr int kTM = kBM / kThreadsM, kTN = kBN / kThreadsN;

  using Smem = T;
  using Acc = typename Select<P::kTensorCore, tile::Accumulator<kMI, kNI>, PlainAccumulator<kTM, kTN>>::type;

  // acc = the product over k_blocks K blocks; load_a(tile, kb) / load_b(tile, kb) issue the copies of
  // K block kb into an A / B tile (GatherTile::load, gemm/gather_tile.cuh). Ends with a barrier (smem free again).
  template <class LoadA, class LoadB>
  RUDNN_DEVICE static void run(Acc& acc, T* smem, i64 k_blocks, const LoadA& load_a, const LoadB& load_b) {
    acc.zero();
    CpAsyncPipeline<P::kStages>::run(
        k_blocks,
        [&](int stage, int kb) {
          T* s = smem + stage * kStageElems;
          load_a(s, kb);
          load_b(s + ATile::kElems, kb);
        },
        [&](int stage) { compute(acc, smem + stage * kStageElems); });
  }

  // The tile to global memory through shared memory in 16-byte row chunks (gemm/tile_store.cuh).
  template <class U, bool kVector, class Value, class RowAt>
  RUDNN_DEVICE static void store_rows(const Acc& acc, T* smem, int cols, const Value& value, const RowAt& row_at) {
    gemm::store_rows<BlockEngine, U, kVector>(acc, smem, cols, value, row_at);
  }

  // f(row, col, value) for each accumulator element of this thread, (row, col) in the block tile.
  template <class F>
  RUDNN_DEVICE static void each(const Acc& acc, const F& f) {
    const int tid = static_cast<int>(threadIdx.x);
    if constexpr (P::kTensorCore) {
      const int warp = tid >> 5;
      const int row0 = warp / P::kWarpsN * kWarpM, col0 = warp % P::kWarpsN * kWarpN;
      acc.each(tid & 31, [&](int r, int c, float v) { f(row0 + r, col0 + c, v); });
    } else {
      const int tm = tid / kThreadsN, tn = tid % kThreadsN;
      RUDNN_UNROLL
      for (int i = 0; i < kTM; ++i) RUDNN_UNROLL
      for (int j = 0; j < kTN; ++j) f(tm + kThreadsM * i, tn + kThreadsN * j, acc.c[i][j]);
    }
  }

 private:
  RUDNN_DEVICE static void compute(Acc& acc, const T* stage) {
    const T* a = stage;
    const T* b = stage + ATile::kElems;
    const int tid = static_cast<int>(threadIdx.x);
    if constexpr (P::kTensorCore) {
      const int lane = tid & 31, warp = tid >> 5;
      const int row0 = warp / P::kWarpsN * kWarpM, col0 = warp % P::kWarpsN * kWarpN;
      RUDNN_UNROLL
      for (int kk = 0; kk < kBK; kk += 16) {
        u32 af[kMI][4];
        u32 bf[kNI][2];
        if constexpr (kAKMajor)
          tile::load_a_rows_kn<kMI, ATile::kLd>(af, a, row0, kk, lane);
        else
          tile::load_a_rows<kMI, ATile::kLd>(af, a, row0, kk, lane);
        if constexpr (kBKMajor)
          tile::load_b_cols_kn<kNI, BTile::kLd>(bf, b, col0, kk, lane);
        else
          tile::load_b_cols_nt<kNI, BTile::kLd>(bf, b, col0, kk, lane);
        acc.template mma<T>(af, bf);
      }
    } else {
      const int tm = tid / kThreadsN, tn = tid % kThreadsN;
      RUDNN_UNROLL
      for (int k = 0; k < kBK; ++k) {
        float av[kTM], bv[kTN];
        RUDNN_UNROLL
        for (int i = 0; i < kTM; ++i) {
          const int m = tm + kThreadsM * i;
          av[i] = to_float(a[kAKMajor ? k * ATile::kLd + m : m * ATile::kLd + k]);
        }
        RUDNN_UNROLL
        for (int j = 0; j < kTN; ++j) {
          const int n = tn + kThreadsN * j;
          bv[j] = to_float(b[kBKMajor ? k * BTile::kLd + n : n * BTile::kLd + k]);
        }
        RUDNN_UNROLL
        for (int i = 0; i < kTM; ++i) RUDNN_UNROLL
        for (int j = 0; j < kTN; ++j) acc.c[i][j] += av[i] * bv[j];
      }
    }
  }
};

}  // namespace rudnn::gemm
