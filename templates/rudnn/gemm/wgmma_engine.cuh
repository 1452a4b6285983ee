#pragma once
// One BM × BN block tile of C = A·B over a run of K blocks on Hopper's warpgroup MMA (sm_90a): the
// block-engine contract of gemm/block_engine.cuh (run, store_rows, each, kSharedBytes, the loaders'
// tile layouts) with wgmma.mma_async instead of mma.sync, so a kernel written against one engine
// runs on the other by its policy (EngineFor).
//
// WgmmaPolicy<BM, BN, BK, Stages>: BM / 64 warpgroups (128 threads each) stacked along M; warpgroup g
// owns rows [64g, 64g + 64) and all BN columns, one m64nBNk16 wgmma per k16 step (BN ∈ {64, 128, 256}
// accumulators: BN / 2 floats per thread). BK is a multiple of 64 (whole swizzle lines).
// Operands (tile/wgmma.cuh): an operand stored with its rows along M (or N), K contiguous, is
// SwizzledKMajor; one stored with its rows along K ("K-major" in block_engine's words) is
// SwizzledMNMajor, read with wgmma's transpose flag. The loaders place chunks through
// ALayout::at / BLayout::at (gemm::GatherTile's Layout).
// Pipeline: gemm::CpAsyncPipeline with the async-proxy fence. Each step's wgmma are committed as one
// group; with four stages or more (and BN < 256) one group stays in flight (wait_group<1>, the
// pipeline's lag of one: the tensor cores run block kb's products while the warps issue block
// kb + 1's, and the stage refilled is the one two blocks back), so the copies of the next
// Stages − 2 K blocks overlap the products; otherwise each group is retired in its own step.
// Shared memory: shared_memory::block_gemm_wgmma (its alignment slack puts the first stage at a
// swizzle atom, tile::swizzle_aligned).
// Sums: each accumulator adds its K blocks in order, each block's k16 steps in order; within a k16
// step the tensor core's order is its own (the PTX ISA leaves it unspecified), the same on every run,
// so results are deterministic and independent of the grid.
#include "rudnn/gemm/block_engine.cuh"
#include "rudnn/gemm/pipeline.cuh"
#include "rudnn/gemm/tile_store.cuh"
#include "rudnn/shared_memory.h"
#include "rudnn/tile/wgmma.cuh"

namespace rudnn::gemm {

template <int BM, int BN, int BK, int Stages>
struct WgmmaPolicy {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kStages = Stages;
  static constexpr int kWarpgroups = BM / 64;
  static constexpr int kThreads = 128 * kWarpgroups;
  static constexpr bool kTensorCore = true;
  static constexpr bool kWgmma = true;
  // wgmma groups a K step leaves running: one from four stages on (two blocks of copies still in
  // flight beside it). Not with three: ptxas serialized the MoE experts' wgmma at 128 × 128 × 64 with
  // three stages and a group in flight ("non wgmma instructions defining accumulator registers"),
  // and clean with four or with none in flight. Not with a 256-wide accumulator: its 128 registers
  // per thread leave ptxas too few to keep a group in flight beside the gathers' state (it
  // serializes the data backward's wgmma at 128 × 256). Those tiles retire each group in its step.
  static constexpr int kGroupsInFlight = Stages >= 4 && BN < 256 ? 1 : 0;
  static_assert(BM % 64 == 0 && BM >= 64 && BM <= 256, "WgmmaPolicy: BM is 1 to 4 warpgroups of 64 rows");
  static_assert(BN == 64 || BN == 128 || BN == 256, "WgmmaPolicy: BN is one wgmma's N (64, 128 or 256)");
  static_assert(BK % 64 == 0, "WgmmaPolicy: BK is whole 64-element swizzle lines");
  static_assert(Stages >= 2, "WgmmaPolicy: at least two pipeline stages");
};

// kAKMajor: A is stored [BK][BM]; kBKMajor: B is stored [BK][BN] (as in BlockEngine).
// kBOperands: 1, or 2 B matrices that share A (C_o = A·B_o, as gemm::NtMainloop's gate/up product):
// a stage holds A and both B tiles, each k16 step issues one wgmma per B with A's descriptor, and
// the A tile is loaded once for both.
template <class T, class P, bool kAKMajor, bool kBKMajor, int kBOperands = 1>
struct WgmmaEngine {
  static_assert(sizeof(T) == 2, "WgmmaEngine: f16/bf16 operands");
  static_assert(kBOperands == 1 || kBOperands == 2, "WgmmaEngine: one or two B operands");
  static constexpr int kBM = P::kBM, kBN = P::kBN, kBK = P::kBK, kThreads = P::kThreads;
  using ALayout = typename Select<kAKMajor, tile::SwizzledMNMajor<kBK, kBM>, tile::SwizzledKMajor<kBM, kBK>>::type;
  using BLayout = typename Select<kBKMajor, tile::SwizzledMNMajor<kBK, kBN>, tile::SwizzledKMajor<kBN, kBK>>::type;
  static constexpr int kStageElems = ALayout::kElems + kBOperands * BLayout::kElems;
  static constexpr int kStageBColumns = kBOperands * kBN;  // a stage's B tiles together
  static constexpr int kSharedBytes = static_cast<int>(
      shared_memory::block_gemm_wgmma(P::kStages, kBM, kStageBColumns, kBK, static_cast<long long>(sizeof(T))));
  static_assert(kSharedBytes == P::kStages * kStageElems * 2 + shared_memory::kWgmmaAlignmentSlack,
                "WgmmaEngine and shared_memory disagree");

  using Smem = T;
  struct Acc {
    float d[kBN / 2];
    RUDNN_DEVICE void zero() {
      RUDNN_UNROLL
      for (int i = 0; i < kBN / 2; ++i) d[i] = 0.0f;
    }
  };

  // The first stage.
  RUDNN_DEVICE static T* stages(T* smem) { return tile::swizzle_aligned(smem); }

  // acc = the product over k_blocks K blocks; load_a(tile, kb) / load_b(tile, kb) issue the copies of
  // K block kb into an A / B tile (through ALayout / BLayout). Ends with a barrier (smem free again).
  template <class LoadA, class LoadB>
  RUDNN_DEVICE static void run(Acc& acc, T* smem, i64 k_blocks, const LoadA& load_a, const LoadB& load_b) {
    static_assert(kBOperands == 1, "WgmmaEngine::run: one B operand (run2 for two)");
    pipeline([&](int) -> Acc& { return acc; }, smem, k_blocks, load_a, [&](T* tile, int kb, int) { load_b(tile, kb); });
  }

  // acc0 = A·B_0 and acc1 = A·B_1 over k_blocks K blocks, A loaded once: load_b0 / load_b1 fill the
  // two B tiles of K block kb.
  template <class LoadA, class LoadB0, class LoadB1>
  RUDNN_DEVICE static void run2(Acc& acc0, Acc& acc1, T* smem, i64 k_blocks, const LoadA& load_a, const LoadB0& load_b0,
                                const LoadB1& load_b1) {
    static_assert(kBOperands == 2, "WgmmaEngine::run2: two B operands");
    pipeline([&](int o) -> Acc& { return o == 0 ? acc0 : acc1; }, smem, k_blocks, load_a,
             [&](T* tile, int kb, int o) {
               if (o == 0)
                 load_b0(tile, kb);
               else
                 load_b1(tile, kb);
             });
  }

  template <class U, bool kVector, class Value, class RowAt>
  RUDNN_DEVICE static void store_rows(const Acc& acc, T* smem, int cols, const Value& value, const RowAt& row_at) {
    gemm::store_rows<WgmmaEngine, U, kVector>(acc, smem, cols, value, row_at);
  }

  // f(row, col, i) for each accumulator register i of this thread, (row, col) in the block tile: the
  // same place in every Acc of this engine, so several accumulators combine element by element.
  // Registers i and i + 1 (i even) are columns col and col + 1 of one row.
  template <class F>
  RUDNN_DEVICE static void each_register(const F& f) {
    const int tid = static_cast<int>(threadIdx.x);
    const int row0 = 64 * (tid / 128);
    const auto map = tile::WgmmaAccumulatorMap::of(tid / 32, tid % 32);
    RUDNN_UNROLL
    for (int i = 0; i < kBN / 2; ++i) f(row0 + map.row(i), map.col(i), i);
  }

  // f(row, col, value) for each accumulator element of this thread, (row, col) in the block tile.
  template <class F>
  RUDNN_DEVICE static void each(const Acc& acc, const F& f) {
    each_register([&](int row, int col, int i) { f(row, col, acc.d[i]); });
  }

 private:
  // The K loop; acc_of(o) is B_o's accumulator, load_b(tile, kb, o) fills B_o's tile (o a constant
  // after unrolling, so the accumulators stay in registers).
  template <class AccOf, class LoadA, class LoadB>
  RUDNN_DEVICE static void pipeline(const AccOf& acc_of, T* smem, i64 k_blocks, const LoadA& load_a,
                                    const LoadB& load_b) {
    RUDNN_UNROLL
    for (int o = 0; o < kBOperands; ++o) acc_of(o).zero();
    T* base = stages(smem);
    CpAsyncPipeline<P::kStages, true, P::kGroupsInFlight>::run(
        k_blocks,
        [&](int stage, int kb) {
          T* s = base + stage * kStageElems;
          load_a(s, kb);
          RUDNN_UNROLL
          for (int o = 0; o < kBOperands; ++o) load_b(s + ALayout::kElems + o * BLayout::kElems, kb, o);
        },
        [&](int stage) { compute(acc_of, base + stage * kStageElems); },
        [&] {
          if constexpr (P::kGroupsInFlight > 0) {
            wgmma_wait<0>();
            RUDNN_UNROLL
            for (int o = 0; o < kBOperands; ++o) wgmma_fence_operand(acc_of(o).d);
          }
        });
  }

  template <class AccOf>
  RUDNN_DEVICE static void compute(const AccOf& acc_of, T* stage) {
    const T* a = stage;
    const int row0 = 64 * (static_cast<int>(threadIdx.x) / 128);
    RUDNN_UNROLL
    for (int o = 0; o < kBOperands; ++o) wgmma_fence_operand(acc_of(o).d);
    wgmma_fence();
    RUDNN_UNROLL
    for (int kk = 0; kk < kBK; kk += 16) {
      const u64 da = kAKMajor ? ALayout::descriptor(a, kk, row0) : ALayout::descriptor(a, row0, kk);
      RUDNN_UNROLL
      for (int o = 0; o < kBOperands; ++o) {
        const T* b = stage + ALayout::kElems + o * BLayout::kElems;
        const u64 db = kBKMajor ? BLayout::descriptor(b, kk, 0) : BLayout::descriptor(b, 0, kk);
        tile::wgmma_ss<kBN, kAKMajor, kBKMajor>(a, acc_of(o).d, da, db, true);
      }
    }
    wgmma_commit();
    wgmma_wait<P::kGroupsInFlight>();
    RUDNN_UNROLL
    for (int o = 0; o < kBOperands; ++o) wgmma_fence_operand(acc_of(o).d);
  }
};

// The engine a policy names: WgmmaEngine for a WgmmaPolicy, else BlockEngine.
template <class T, class P, bool kAKMajor, bool kBKMajor>
using EngineFor =
    typename Select<P::kWgmma, WgmmaEngine<T, P, kAKMajor, kBKMajor>, BlockEngine<T, P, kAKMajor, kBKMajor>>::type;

}  // namespace rudnn::gemm
