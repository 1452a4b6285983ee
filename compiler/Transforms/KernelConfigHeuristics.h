#pragma once
// Heuristic kernel configs (what rudnn-select-kernel-config attaches when autotune has not).
#include <cstdint>

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

}  // namespace rudnn::compiler
