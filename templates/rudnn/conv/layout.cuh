#pragma once
// swap_last_two: dst[i][k][j] = src[i][j][k] for src [a, b, s] (a bit-exact copy, any element type).
// The convolution entries use it for layout conversions:
//   NCHW → NHWC:            a = N, b = C,       s = spatial
//   NHWC → NCHW:            a = N, b = spatial, s = C
//   weight [O, C/G, taps] → [O, taps, C/G]: a = O, b = C/G, s = taps (and back with b, s swapped)
//
// Launch: block kSwapThreads = 256 threads (32 × 8); grid any: blocks stride by linear_block() over
// the a · ceil(b/32) · ceil(s/32) tiles of 32 × 32, so any grid is correct (the natural one has a
// block per tile). Shared: shared_memory::swap_last_two(sizeof(T)) bytes (conv/shared_memory.h).
// Parameters: src, dst, a, b, s.
//
// Why a tile through shared memory: reading src row-wise and writing dst row-wise keeps both global
// accesses coalesced (32 consecutive elements per warp); the transpose happens in shared memory, whose
// rows are padded to 33 elements so that the column-wise read of a warp hits 32 different banks.
//
// copy_channels: dst[r][j] = src[r][j] for j < min(src_c, dst_c), zero for src_c ≤ j < dst_c (rows of
// src_c elements → rows of dst_c: zero-padded when dst_c > src_c, cut when smaller). The implicit GEMM
// of a layer whose C is not whole 16-byte vectors (a C = 3 stem) runs on operands padded this way and
// cuts its padded result back (conv_config::gemmGeometry, docs/convolution.md). Launch: any block
// size and grid (blocks stride over the rows·dst_c elements; the natural grid is ⌈rows·dst_c/256⌉
// blocks of 256). Shared: none. Parameters: src, dst, rows, src_c, dst_c.
#include "rudnn/conv/shared_memory.h"
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::conv {

inline constexpr int kSwapThreads = 256;

template <class T>
RUDNN_DEVICE void swap_last_two(const T* src, T* dst, i64 a, i64 b, i64 s) {
  constexpr int kTile = 32, kPitch = kTile + 1, kRows = kSwapThreads / kTile;  // 8 rows per pass
  T* const tile = dynamic_shared<T>();                                         // [32][33]
  const int lane = static_cast<int>(threadIdx.x) % kTile;
  const int row = static_cast<int>(threadIdx.x) / kTile;
  const i64 tiles_b = (b + kTile - 1) / kTile, tiles_s = (s + kTile - 1) / kTile;
  const i64 tiles = a * tiles_b * tiles_s;
  for (i64 t = linear_block(); t < tiles; t += block_count()) {
    const i64 ts = t % tiles_s, tb = (t / tiles_s) % tiles_b, i = t / (tiles_s * tiles_b);
    const i64 b0 = tb * kTile, s0 = ts * kTile;
    const T* in = src + i * b * s;
    T* out = dst + i * b * s;
    // src rows b0.. (lanes along s): tile[j][k] = src[i][b0 + j][s0 + k].
    for (int j = row; j < kTile; j += kRows)
      if (b0 + j < b && s0 + lane < s) tile[j * kPitch + lane] = in[(b0 + j) * s + s0 + lane];
    __syncthreads();
    // dst rows s0.. (lanes along b): dst[i][s0 + k][b0 + j] = tile[j][k].
    for (int k = row; k < kTile; k += kRows)
      if (s0 + k < s && b0 + lane < b) out[(s0 + k) * b + b0 + lane] = tile[lane * kPitch + k];
    __syncthreads();  // the next tile overwrites what this one's readers still read
  }
}

template <class T>
RUDNN_DEVICE void copy_channels(const T* src, T* dst, i64 rows, i64 src_c, i64 dst_c) {
  const i64 threads = static_cast<i64>(blockDim.x), total = rows * dst_c;
  for (i64 e = linear_block() * threads + threadIdx.x; e < total; e += block_count() * threads) {
    const i64 r = e / dst_c, j = e - r * dst_c;
    dst[e] = j < src_c ? src[r * src_c + j] : from_float<T>(0.0f);
  }
}

}  // namespace rudnn::conv
