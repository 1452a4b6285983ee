#pragma once
// Shared memory of the tensor-core flash attention kernel (attention/flash_mma.cuh) and the cp.async
// copies that fill it.
//
// Layout, in 16-bit elements, every tile row-major with row stride kLd = kD + 8:
//   [ Q: kBM rows ][ stage 0: K kBN rows | V kBN rows ][ stage 1: K | V ]
// The 8-element (16-byte) pad shifts consecutive rows by 4 banks: the 8 row addresses of one ldmatrix
// 8x8 matrix (plain for Q and K, .trans for V) fall in 8 disjoint 4-bank groups for every head dim
// here (row stride 36, 52, 68 or 132 words), so no swizzle is needed and every row stays 16-byte
// aligned. The Q rows of a warp double as its output staging area in the epilogue (only that warp
// reads them).
// Bytes: (kBM + 4·kBN)·(kD + 8)·2.
//
// Two K/V stages: while the warps compute on key tile t in one stage, tile t + 1 streams into the
// other, so one barrier per key tile suffices (see the main loop in flash_mma.cuh).
#include "rudnn/numeric.cuh"
#include "rudnn/prelude.cuh"

namespace rudnn::attention::flash_mma {

template <int kBM, int kBN, int kD>
struct SmemLayout {
  static constexpr int kLd = kD + 8;
  static constexpr int kQElems = kBM * kLd;
  static constexpr int kTileElems = kBN * kLd;  // one K or V tile
  static constexpr int kStageElems = 2 * kTileElems;
  static constexpr int kStages = 2;
  static constexpr int kBytes = (kQElems + kStages * kStageElems) * 2;

  template <class T>
  RUDNN_DEVICE static T* q(T* base) {
    return base;
  }
  template <class T>
  RUDNN_DEVICE static T* k(T* base, int stage) {
    return base + kQElems + stage * kStageElems;
  }
  template <class T>
  RUDNN_DEVICE static T* v(T* base, int stage) {
    return base + kQElems + stage * kStageElems + kTileElems;
  }
};

// Issues this thread's share of the 16-byte cp.async copies of a kRows x kD tile into `dst` (row
// stride kD + 8); row r of the source starts at row(r) (16-byte aligned). Rows at or past
// `valid_rows` are zero-filled through the src-size operand and read nothing, so query and key
// tails need no other code: their scores come out as exact zeros (masked later) and their values
// multiply probabilities by exact zeros. No commit: the caller groups copies.
template <class T, int kRows, int kD, int kThreads, class RowOf>
RUDNN_DEVICE void copy_rows_async(T* dst, const RowOf& row, i64 valid_rows, int tid) {
  static_assert(sizeof(T) == 2, "copy_rows_async: 16-bit elements");
  static_assert(kD % 8 == 0, "copy_rows_async: rows are whole 16-byte chunks");
  constexpr int kLd = kD + 8;
  constexpr int kChunksPerRow = kD / 8;
  constexpr int kChunks = kRows * kChunksPerRow;
  constexpr int kPerThread = (kChunks + kThreads - 1) / kThreads;
  // A zero-fill copy still names an address: the tile's first row (never dereferenced).
  const T* first = row(0);
  if constexpr (kThreads % kChunksPerRow == 0) {
    // Each thread keeps one column and walks rows kRowStep apart.
    constexpr int kRowStep = kThreads / kChunksPerRow;
    const int r0 = tid / kChunksPerRow;
    const int col = (tid - r0 * kChunksPerRow) * 8;
    T* d = dst + r0 * kLd + col;
    RUDNN_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int r = r0 + i * kRowStep;
      if (kChunks % kThreads != 0 && r >= kRows) break;
      const bool ok = r < valid_rows;
      cp_async_cg16(d + i * kRowStep * kLd, ok ? row(r) + col : first, ok ? 16u : 0u);
    }
  } else {
    RUDNN_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int c = tid + i * kThreads;
      if (kChunks % kThreads != 0 && c >= kChunks) break;
      const int r = c / kChunksPerRow;
      const int col = (c - r * kChunksPerRow) * 8;
      const bool ok = r < valid_rows;
      cp_async_cg16(dst + r * kLd + col, ok ? row(r) + col : first, ok ? 16u : 0u);
    }
  }
}

}  // namespace rudnn::attention::flash_mma
