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

}  // namespace rudnn::compiler
