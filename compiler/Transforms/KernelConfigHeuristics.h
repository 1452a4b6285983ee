#pragma once
// Heuristic kernel configs (what rudnn-select-kernel-config attaches when autotune has not).
#include <cstdint>

#include "mlir/Support/LLVM.h"
#include "rudnn/Dialect/Rudnn/IR/GatedDeltaConfig.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/IR/MoEConfig.h"
#include "rudnn/Dialect/Rudnn/IR/NormConfig.h"

namespace rudnn::compiler {

// vector_width: the widest legal vector for (dtype, h), 1 when h < 0 (dynamic) or `unaligned`;
// threads_per_row = min(max threads, max(32, next_pow2(ceil(h / (vector_width * 4)))));
// rows_per_block = 4 when threads_per_row == 32, else 1.
dialect::norm_config::RowConfig heuristicRowConfig(DType dtype, std::int64_t h, bool unaligned,
                                                   std::int64_t maxThreadsPerBlock);

// Routing (rudnn.route, rudnn.route_sigmoid_grouped; one warp per token row): rows_per_block = 4,
// or 2 for grouped routing over more than 512 experts (shared memory per row grows with experts).
std::int64_t heuristicRouteRowsPerBlock(bool grouped, std::int64_t experts);

// Dispatch's scatter and combine (one block per row of h elements): the widest legal vector, then
// min(256, max(64, next_pow2(ceil(h / vector_width)))) threads.
dialect::moe_config::RowCopyConfig heuristicRowCopyConfig(DType dtype, std::int64_t h);

// The expert GEMM tile for about `rowsPerExpert` rows per expert (< 0: unknown): the smallest
// registered tile whose block_m covers it (decode-like loads waste no rows), the largest otherwise.
dialect::moe_config::ExpertTile heuristicExpertTile(bool tensorCore, std::int64_t rowsPerExpert);

// Gated delta: the smallest recurrence tile holding key_dim; chunked: 128 threads for key_dim ≤ 64,
// else 256, with 32 state columns per block, on tensor cores for f16/bf16.
dialect::gated_delta_config::RecurrentTile heuristicRecurrentTile(std::int64_t keyDim);
dialect::gated_delta_config::ChunkTile heuristicChunkTile(std::int64_t keyDim, bool tensorCores);

// Attention: the first registered tile of the op's strategy; for "autotune" (no tuned answer) the
// first strategy that fits in the order flash_mma, flash_unit, fallback.
mlir::FailureOr<dialect::attention_config::Tile> heuristicAttentionTile(dialect::AttentionOp op, const std::string& arch);

}  // namespace rudnn::compiler
