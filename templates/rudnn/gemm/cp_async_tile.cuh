#pragma once
// Shared-memory operand tiles of 16-bit elements and the cp.async loader that fills them.
//
// Layout (SmemTile): kRows rows of kCols K-contiguous elements, row stride kLd = kCols + 8
// elements. The 16-byte pad shifts consecutive rows by 4 banks (kCols a multiple of 32 gives a
// stride of 20 or 36 words), so the 8 row addresses of one ldmatrix 8x8 matrix hit 8 disjoint
// 4-bank groups: conflict-free without a swizzle, and every row start stays 16-byte aligned.
//
// AsyncTileLoader moves one kRows x kCols tile from a row-major global matrix (row stride `ld`
// elements) as 16-byte chunks (cp.async.cg: the tiles are consumed from shared memory only, no
// point in caching them in L1). Chunks of rows past `valid_rows` or columns past `k_end` are
// zero-filled through the src-size operand (src_bytes = 0) and read nothing, so tails need no
// separate code path and the MMA sees exact zeros there. A chunk is all-in or all-out because the
// caller guarantees k_end % 8 == 0 and 16-byte aligned rows (ld % 8 == 0, aligned base).
#include "rudnn/prelude.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::gemm {

template <int kRows, int kCols>
struct SmemTile {
  static_assert(kCols % 32 == 0, "SmemTile: kCols (the K block) must be a multiple of 32");
  static constexpr int kLd = kCols + 8;  // elements; the pad keeps ldmatrix conflict-free
  static constexpr int kElems = kRows * kLd;
  static constexpr int kBytes = kElems * 2;
  RUDNN_DEVICE static constexpr int offset(int row, int col) { return row * kLd + col; }
};

template <class T, int kRows, int kCols, int kThreads>
struct AsyncTileLoader {
  static_assert(sizeof(T) == 2, "AsyncTileLoader: 16-bit elements");
  using Tile = SmemTile<kRows, kCols>;
  static constexpr int kChunksPerRow = kCols / 8;
  static constexpr int kChunks = kRows * kChunksPerRow;
  static constexpr int kPerThread = (kChunks + kThreads - 1) / kThreads;

  // Per chunk of this thread: the global row start plus column (null when the row is outside the
  // matrix or the chunk outside the tile), its column in the tile and its shared offset.
  const T* src_[kPerThread];
  int col_[kPerThread];
  int dst_[kPerThread];
  bool in_tile_[kPerThread];
  const T* fallback_;  // a valid address for zero-fill copies (never dereferenced)

  // `rows` points at the tile's first row; rows [0, valid_rows) exist. (init rather than a
  // constructor so that kernels can keep arrays of loaders.)
  RUDNN_DEVICE void init(const T* rows, i64 ld, i64 valid_rows, int tid) {
    fallback_ = rows;
    RUDNN_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      const int c = tid + i * kThreads;
      const int r = c / kChunksPerRow;
      col_[i] = (c % kChunksPerRow) * 8;
      dst_[i] = Tile::offset(r, col_[i]);
      in_tile_[i] = (kChunks % kThreads == 0) || c < kChunks;
      src_[i] = in_tile_[i] && r < valid_rows ? rows + static_cast<i64>(r) * ld + col_[i] : nullptr;
    }
  }

  // Issues this thread's copies of columns [k0, k0 + kCols) into `tile` (no commit).
  RUDNN_DEVICE void load(T* tile, i64 k0, i64 k_end) const {
    RUDNN_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      if (!in_tile_[i]) continue;
      const bool ok = src_[i] != nullptr && k0 + col_[i] < k_end;
      cp_async_cg16(tile + dst_[i], ok ? src_[i] + k0 : fallback_, ok ? 16u : 0u);
    }
  }
};

}  // namespace rudnn::gemm
