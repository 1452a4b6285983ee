#pragma once
// A block GEMM's output tile to global memory through shared memory, for outputs whose tile rows are
// runs of consecutive columns: each thread parks its accumulators as U in a [rows][BN + pad] stage,
// then the block copies each row in 16-byte chunks — consecutive threads take consecutive chunks of a
// row — where the accumulator layout would scatter 2- or 4-byte stores over eight rows per
// instruction. For every engine with the block-engine contract (E::kBM, kBN, kThreads,
// kSharedBytes, Acc, each(acc, f)): gemm/block_engine.cuh, gemm/wgmma_engine.cuh.
//   value(c, v): the stored U of an element in column c < cols (a bias added, rounded);
//   row_at(r):   the destination of tile row r's column 0, or null for a row past the matrix;
//   cols:        the tile's columns that exist (≤ BN);
//   kVector:     every row_at(r) is 16-byte aligned (else element copies; a chunk past `cols` is
//                copied element by element either way).
// In passes of rows when BM rows of U exceed the pipeline's shared memory (FP32 from 16-bit
// operands: 128 × 128 tiles, and the plain 64 × 64 × 16 tile's split sums).
// Call after the engine's run() (smem free); ends with a barrier.
#include "rudnn/numeric.cuh"
#include "rudnn/prelude.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::gemm {

template <class E, class U, bool kVector, class T, class Value, class RowAt>
RUDNN_DEVICE void store_rows(const typename E::Acc& acc, T* smem, int cols, const Value& value, const RowAt& row_at) {
  constexpr int kChunk = 16 / static_cast<int>(sizeof(U));
  constexpr int kLd = E::kBN + kChunk;  // a chunk of padding: rows stay 16-byte aligned, banks rotate
  constexpr int kFit = E::kSharedBytes / (kLd * static_cast<int>(sizeof(U)));
  constexpr int kPassRows = kFit < E::kBM ? kFit : E::kBM;
  static_assert(kPassRows >= 1 && E::kBN % kChunk == 0, "store_rows: a staged row must fit the pipeline's smem");
  constexpr int kChunksPerRow = E::kBN / kChunk;
  U* stage = reinterpret_cast<U*>(smem);
  const int tid = static_cast<int>(threadIdx.x);
  for (int r0 = 0; r0 < E::kBM; r0 += kPassRows) {
    E::each(acc, [&](int r, int c, float v) {
      if (r >= r0 && r < r0 + kPassRows && c < cols) stage[(r - r0) * kLd + c] = value(c, v);
    });
    __syncthreads();
    for (int i = tid; i < kPassRows * kChunksPerRow; i += E::kThreads) {
      const int rr = i / kChunksPerRow, c = i % kChunksPerRow * kChunk;
      if (r0 + rr >= E::kBM || c >= cols) continue;
      U* dst = row_at(r0 + rr);
      if (dst == nullptr) continue;
      const U* src = stage + rr * kLd + c;
      if (kVector && c + kChunk <= cols) {
        store_vec<U, kChunk>(dst + c, load_vec<U, kChunk>(src));
      } else {
        for (int j = 0; j < kChunk && c + j < cols; ++j) dst[c + j] = src[j];
      }
    }
    __syncthreads();
  }
}

}  // namespace rudnn::gemm
