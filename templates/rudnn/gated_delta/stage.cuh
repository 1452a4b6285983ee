#pragma once
// Staging of gated-delta inputs into shared memory as FP32 (SPEC §7). Both kernels read their
// per-step / per-chunk operands (keys, queries, a value slice, beta, log_decay) through this one
// copy so that every global read is coalesced (consecutive threads take consecutive elements of a
// row) and every 16-bit element is converted exactly once.
//
// Tails are zero-filled rather than skipped: a padded time step has k = q = v = beta = 0 and
// log_decay = 0, which makes it an exact no-op of the recurrence (state unchanged, nothing added),
// so the arithmetic after the copy never needs a bounds check. Nothing past `rows`/`cols` of the
// source is ever read.
#include "rudnn/numeric.cuh"

namespace rudnn::gated_delta {

RUDNN_DEVICE i64 min_i64(i64 a, i64 b) { return a < b ? a : b; }

// dst[i * dst_stride + j] = scale · src[i * src_stride + j] for i < rows, j < cols, and 0 for
// rows ≤ i < rows_total or cols ≤ j < cols_total. Every thread of the block calls it with the
// same arguments (tid in 0 .. nthreads-1); no barrier inside (the caller places one after).
template <class T>
RUDNN_DEVICE void stage_rows(float* dst, int dst_stride, const T* src, i64 src_stride, int rows, int cols,
                             int rows_total, int cols_total, float scale, int tid, int nthreads) {
  const int total = rows_total * cols_total;
  for (int idx = tid; idx < total; idx += nthreads) {
    const int i = idx / cols_total;
    const int j = idx - i * cols_total;
    float x = 0.0f;
    if (i < rows && j < cols) x = to_float(src[i * src_stride + j]) * scale;
    dst[i * dst_stride + j] = x;
  }
}

// The same copy of 16-bit elements as stored (no conversion, no scale) into a 16-bit array: the
// operands of the tensor-core products (chunk_mma.cuh), exact. Padding is +0.
template <class T>
RUDNN_DEVICE void stage_rows_raw(T* dst, int dst_stride, const T* src, i64 src_stride, int rows, int cols,
                                 int rows_total, int cols_total, int tid, int nthreads) {
  const int total = rows_total * cols_total;
  for (int idx = tid; idx < total; idx += nthreads) {
    const int i = idx / cols_total;
    const int j = idx - i * cols_total;
    T x{0};
    if (i < rows && j < cols) x = src[i * src_stride + j];
    dst[i * dst_stride + j] = x;
  }
}

}  // namespace rudnn::gated_delta
