#pragma once
// cp.async gathers of whole rows into a shared-memory tile for the paged tensor-core kernels: the
// rows come from computed addresses (query rows of a panel, cache rows through the page table), so
// each 16-byte chunk finds its row's address itself. Rows at or past `valid_rows` are zero-filled
// through the src-size operand and read nothing (`fallback` is the address such a copy names). No
// commit: the caller groups copies.
#include "rudnn/prelude.cuh"

namespace rudnn::paged {

// kRows rows of kD elements into `dst` (row stride kLd): row r from row_src(r).
template <class T, int kRows, int kD, int kLd, int kThreads, class RowSrc>
RUDNN_DEVICE void gather_rows_async(T* dst, i64 valid_rows, int tid, const T* fallback, RowSrc row_src) {
  static_assert(sizeof(T) == 2 && kD % 8 == 0, "gather_rows_async: rows of whole 16-byte chunks of 16-bit elements");
  constexpr int kChunksPerRow = kD / 8, kChunks = kRows * kChunksPerRow;
  for (int c = tid; c < kChunks; c += kThreads) {
    const int r = c / kChunksPerRow, col = (c - r * kChunksPerRow) * 8;
    const bool ok = r < valid_rows;
    cp_async_cg16(dst + r * kLd + col, ok ? row_src(r) + col : fallback, ok ? 16u : 0u);
  }
}

// Rows of two segments (MLA's latent then rope columns): columns [0, kA) from a(r), [kA, kA + kB)
// from b(r).
template <class T, int kRows, int kA, int kB, int kLd, int kThreads, class SrcA, class SrcB>
RUDNN_DEVICE void gather_split_rows_async(T* dst, i64 valid_rows, int tid, const T* fallback, SrcA a, SrcB b) {
  static_assert(sizeof(T) == 2 && kA % 8 == 0 && kB % 8 == 0,
                "gather_split_rows_async: segments of whole 16-byte chunks of 16-bit elements");
  constexpr int kChunksPerRow = (kA + kB) / 8, kChunks = kRows * kChunksPerRow;
  for (int c = tid; c < kChunks; c += kThreads) {
    const int r = c / kChunksPerRow, col = (c - r * kChunksPerRow) * 8;
    const bool ok = r < valid_rows;
    const T* src = !ok ? fallback : col < kA ? a(r) + col : b(r) + (col - kA);
    cp_async_cg16(dst + r * kLd + col, src, ok ? 16u : 0u);
  }
}

}  // namespace rudnn::paged
