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
#include "rudnn/gemm/gather_tile.cuh"  // copy_chunk: 16 bytes by cp.async, zero fill for null
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
// operands of the tensor-core products (chunk_mma.cuh, sm_80 and later), exact. Padding is +0.
// Where every 16 bytes of a row are whole chunks (cols, cols_total and both strides multiples of 8
// elements, both bases 16-byte aligned: keys and queries with K % 8 = 0), by 16-byte cp.async with
// zero fill, all of a thread's chunks in flight at once and no registers for the data (an element
// loop costs an index division and a dependent 2-byte load per element: keys and queries are most
// of a chunk's global reads). Waits for its own copies before returning; the caller's barrier then
// publishes them.
template <class T>
RUDNN_DEVICE void stage_rows_raw(T* dst, int dst_stride, const T* src, i64 src_stride, int rows, int cols,
                                 int rows_total, int cols_total, int tid, int nthreads) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  const bool chunks = cols % kVec == 0 && cols_total % kVec == 0 && dst_stride % kVec == 0 && src_stride % kVec == 0 &&
                      ((reinterpret_cast<u64>(src) | reinterpret_cast<u64>(dst)) & 15u) == 0;
  if (chunks) {
    // Offsets in 32 bits: a chunk's rows·stride is a few hundred thousand elements at most.
    const int per_row = cols_total / kVec, stride = static_cast<int>(src_stride);
    for (int idx = tid; idx < rows_total * per_row; idx += nthreads) {
      const int i = idx / per_row, j = (idx - i * per_row) * kVec;
      gemm::copy_chunk<T, kVec>(dst + (i * dst_stride + j), i < rows && j < cols ? src + (i * stride + j) : nullptr,
                                src);
    }
    cp_async_wait_all();
    return;
  }
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
