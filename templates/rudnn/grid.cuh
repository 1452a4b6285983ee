#pragma once
// Where a block sits in the grid. Kernels stride over their work items by the linear block index
// (x fastest, then y, then z), so any grid the launcher picks (it clamps and may spread the count
// over x, y and z) is correct.
#include "rudnn/prelude.cuh"

namespace rudnn {

// The block's index over the whole grid, x fastest.
RUDNN_DEVICE i64 linear_block() {
  return static_cast<i64>(blockIdx.x) +
         static_cast<i64>(gridDim.x) * (static_cast<i64>(blockIdx.y) + static_cast<i64>(gridDim.y) * blockIdx.z);
}

// The number of blocks in the grid.
RUDNN_DEVICE i64 block_count() {
  return static_cast<i64>(gridDim.x) * static_cast<i64>(gridDim.y) * static_cast<i64>(gridDim.z);
}

}  // namespace rudnn
