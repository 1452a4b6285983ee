#pragma once
// The kernel configuration spaces of the MoE dispatch, combine and expert kernels
// (templates/rudnn/moe/{dispatch,combine,experts_scalar,experts_mma}.cuh), shared by the op
// verifiers, rudnn-select-kernel-config, the lowering and the variant registry. The shared-memory
// formulas mirror the templates' policies (their header comments say the same).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "contracts/arch.h"
#include "rudnn/dtype.h"
#include "rudnn/shared_memory.h"

namespace rudnn::dialect::moe_config {

// --- rudnn.dispatch: {rank_threads, threads, vector_width}
//   dispatch_rank<DispatchPolicy<rank_threads>>: one block; dispatch_scatter<T, RowCopyPolicy<threads,
//   vector_width>>: one block per assignment.
inline constexpr const char* kRankThreads = "rank_threads";
inline constexpr const char* kThreads = "threads";
inline constexpr const char* kVectorWidth = "vector_width";
inline constexpr std::array<std::int64_t, 3> kRankThreadsChoices = {256, 512, 1024};
inline constexpr std::array<std::int64_t, 3> kRowThreadsChoices = {64, 128, 256};

// --- rudnn.combine: {threads, vector_width} (combine<T, W, RowCopyPolicy<threads, vector_width>>).

// Vector widths (elements, ≤ 16 bytes) that divide h, largest first (as the normalization family).
std::vector<std::int64_t> rowVectorWidths(DType dtype, std::int64_t h);

struct RowCopyConfig {
  std::int64_t threads = 128, vectorWidth = 1;
};
std::optional<std::string> checkRowCopyConfig(const RowCopyConfig& c, DType dtype, std::int64_t h);

// round_up((experts + 1) · 4, 16): the per-expert counters of dispatch_rank.
inline std::int64_t dispatchRankSharedBytes(std::int64_t experts) { return shared_memory::dispatch_rank(experts); }

// --- rudnn.swiglu_experts: a tile of the grouped GEMMs.
//   tensor_core = 0: ScalarGemmPolicy<block_m, block_n, block_k, thread_m, thread_n>
//   tensor_core = 1: MmaGemmPolicy<block_m, block_n, block_k, warps_m, warps_n, stages>
//   tensor_core = 1, wgmma = 1 (the key omitted when 0): WgmmaExpertsPolicy<block_m, block_n,
//                    block_k, stages> on Hopper's warpgroup MMA (warps_m = block_m / 16, warps_n = 1;
//                    sm_90a only, contracts::has_wgmma)
// Only the registered tiles below are legal (each verified spill-free for sm_80 and sm_90a; the
// wgmma tiles for sm_90a).
inline constexpr const char* kTensorCore = "tensor_core";
inline constexpr const char* kBlockM = "block_m";
inline constexpr const char* kBlockN = "block_n";
inline constexpr const char* kBlockK = "block_k";
inline constexpr const char* kThreadM = "thread_m";
inline constexpr const char* kThreadN = "thread_n";
inline constexpr const char* kWarpsM = "warps_m";
inline constexpr const char* kWarpsN = "warps_n";
inline constexpr const char* kStages = "stages";
inline constexpr const char* kWgmma = contracts::kWgmmaConfigKey;

struct ExpertTile {
  bool tensorCore = false;
  std::int64_t blockM = 0, blockN = 0, blockK = 0;
  std::int64_t a = 0, b = 0;  // thread_m, thread_n (scalar) or warps_m, warps_n (tensor core)
  std::int64_t stages = 0;    // tensor core only
  bool wgmma = false;         // forward moe::WgmmaExpertsPolicy, backward gemm::WgmmaPolicy<block_m, block_n,
                              // block_k, stages> (warps_m = block_m / 16, warps_n = 1)

  std::int64_t threads() const { return tensorCore ? 32 * a * b : (blockM / a) * (blockN / b); }
  bool operator==(const ExpertTile&) const = default;
};

const std::vector<ExpertTile>& scalarTiles();
// The forward's tensor-core tiles: 0-2 on mma.sync, then the wgmma tiles.
const std::vector<ExpertTile>& tensorCoreTiles();

// The tiles of rudnn.swiglu_experts_backward, its {tile} index: 0-2 the forward's scalar tiles
// (ScalarGemmPolicy, moe/experts_backward_scalar.cuh), 3-4 tensor-core tiles
// (gemm::BlockPolicy<block_m, block_n, block_k, warps_m, warps_n, stages, true>,
// moe/experts_backward_mma.cuh; warp tiles of 32 × 32 because the hidden pass holds three
// accumulators), 5 Hopper's warpgroup MMA (gemm::WgmmaPolicy<128, 64, 64, 4>: two warpgroups, the
// hidden pass's three accumulators 32 registers each; sm_90a only, contracts::has_wgmma).
const std::vector<ExpertTile>& backwardTiles();
inline constexpr std::int64_t kBackwardScalarTile = 1;      // 32 x 64 x 16, 128 threads
inline constexpr std::int64_t kBackwardTensorCoreTile = 3;  // 64 x 64 x 32, 4 warps
inline constexpr std::int64_t kBackwardWgmmaTile = 5;       // 128 x 64 x 64, 2 warpgroups

// Dynamic shared memory of the two expert kernels (gate+up fused, then down).
std::int64_t gateUpSharedBytes(const ExpertTile& t);
std::int64_t downSharedBytes(const ExpertTile& t);

// Why `t` is not a registered tile, or nothing.
std::optional<std::string> checkExpertTile(const ExpertTile& t);

// "scalar 32x64x16 t4x4" / "tensor_core 64x64x32 w2x2 s3" / "wgmma 128x64x64 s4"
std::string describe(const ExpertTile& t);

}  // namespace rudnn::dialect::moe_config
