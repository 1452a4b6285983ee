#pragma once
// Epilogue of the tensor-core flash attention kernel: O / ℓ converted to T and written to the output.
// The warp stages its rows through its own Q rows in shared memory (no other warp reads them, so
// __syncwarp suffices) and then stores whole 16-byte row chunks: each row of the output is written
// by contiguous 16-byte accesses instead of the 4-byte pieces the C fragment layout would give.
#include "rudnn/numeric.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::attention::flash_mma {

// staging: the warp's first row in shared memory (row stride kLd ≥ 8·kDI); out_row(r): where the
// warp's row r starts in the output (16-byte aligned); rows at or past rows_left are not stored.
// inv: per-row normalizers from OnlineSoftmax::finish.
template <class T, int kMI, int kDI, int kLd, class RowOf>
RUDNN_DEVICE void store_output(T* staging, const RowOf& out_row, i64 rows_left, const float (&o)[kMI][kDI][4],
                               const float (&inv)[kMI][2], int lane) {
  __syncwarp();  // every lane of the warp is done reading its Q rows (the last warp_scores)
  RUDNN_UNROLL
  for (int mi = 0; mi < kMI; ++mi) RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) {
    T* row = staging + (16 * mi + 8 * h + (lane >> 2)) * kLd + 2 * (lane & 3);
    RUDNN_UNROLL
    for (int d = 0; d < kDI; ++d) {
      Vec<T, 2> pair;
      pair.words[0] = pack2_from_float<T>(o[mi][d][2 * h] * inv[mi][h], o[mi][d][2 * h + 1] * inv[mi][h]);
      store_vec<T, 2>(row + 8 * d, pair);
    }
  }
  __syncwarp();
  constexpr int kChunks = 16 * kMI * kDI;  // 16-byte chunks of the warp's rows
  static_assert(kChunks % 32 == 0, "store_output: whole chunks per lane");
  RUDNN_UNROLL
  for (int i = 0; i < kChunks / 32; ++i) {
    const int c = lane + 32 * i;
    const int r = c / kDI;
    const int col = (c - r * kDI) * 8;
    if (r < rows_left) store_vec<T, 8>(out_row(r) + col, load_vec<T, 8>(staging + r * kLd + col));
  }
}

}  // namespace rudnn::attention::flash_mma
