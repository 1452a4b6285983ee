#pragma once
// A small FP32 matrix product over operands in shared memory, spread over a block's threads in
// kTM×kTN register tiles: out(i, j) = Σ_{p < depth} a(i, p) · b(p, j) for an m×n output, handed to
// `store(i, j, acc)` for every in-range (i, j). The operands are functors, so one primitive serves
// every layout of the chunked gated delta rule (row-major, transposed, row-scaled) without copies.
//
//   kLowerOut: only entries with j ≤ i are needed; tiles lying wholly above the diagonal are
//              skipped (store is not called for them; stored tiles still see j > i entries, which
//              store must mask itself).
//   kLeft:     the left operand's shape. Lower: a(i, p) is zero for p > i; StrictlyLower: for
//              p ≥ i. block_gemm supplies those zeros and calls a(i, p) only where the shape can
//              be non-zero, so the other part of the array may hold anything, even data another
//              thread is writing (the chunked kernel keeps T and P in one array's two triangles);
//              a tile's depth stops at its last row + 1, and only its own diagonal block is
//              masked. When there are more tiles than threads (and the threads are whole rows of
//              column tiles), row tiles are dealt in mirrored pairs (top and bottom to one thread),
//              so the threads' depths even out.
//
// Rows/columns past m/n inside an edge tile are computed on clamped (valid) indices and dropped,
// so the inner loop has no predicates. No barrier inside; the caller separates phases.
#include "rudnn/prelude.cuh"

namespace rudnn::gated_delta {

enum class LeftShape { Full, Lower, StrictlyLower };

namespace block_gemm_detail {

// acc += a(rows, p) ⊗ b(p, cols): one depth step of a kTM×kTN register tile; a(i, p) read only
// where `keep(i)` (else 0).
template <int kTM, int kTN, class A, class B, class Keep>
RUDNN_DEVICE void step(float (&acc)[kTM][kTN], const int (&rows)[kTM], const int (&cols)[kTN], int p, const A& a,
                       const B& b, const Keep& keep) {
  float av[kTM], bv[kTN];
  RUDNN_UNROLL
  for (int x = 0; x < kTM; ++x) av[x] = keep(rows[x]) ? a(rows[x], p) : 0.0f;
  RUDNN_UNROLL
  for (int y = 0; y < kTN; ++y) bv[y] = b(p, cols[y]);
  RUDNN_UNROLL
  for (int x = 0; x < kTM; ++x) {
    RUDNN_UNROLL
    for (int y = 0; y < kTN; ++y) acc[x][y] += av[x] * bv[y];
  }
}

struct Always {
  RUDNN_DEVICE bool operator()(int) const { return true; }
};

// One kTM×kTN register tile at row tile `ti`, column tile `tj`.
template <int kTM, int kTN, bool kLowerOut, LeftShape kLeft, class A, class B, class Store>
RUDNN_DEVICE void tile(int ti, int tj, int m, int n, int depth, const A& a, const B& b, const Store& store) {
  const int i0 = ti * kTM, j0 = tj * kTN;
  if (kLowerOut && j0 >= i0 + kTM) return;
  int rows[kTM], cols[kTN];
  RUDNN_UNROLL
  for (int x = 0; x < kTM; ++x) rows[x] = i0 + x < m ? i0 + x : m - 1;
  RUDNN_UNROLL
  for (int y = 0; y < kTN; ++y) cols[y] = j0 + y < n ? j0 + y : n - 1;
  constexpr bool kTriangular = kLeft != LeftShape::Full;
  const int d = kTriangular && i0 + kTM < depth ? i0 + kTM : depth;
  const int dense = kTriangular && i0 < d ? i0 : d;  // p < i0 ≤ every row: strictly below the diagonal

  float acc[kTM][kTN];
  RUDNN_UNROLL
  for (int x = 0; x < kTM; ++x) {
    RUDNN_UNROLL
    for (int y = 0; y < kTN; ++y) acc[x][y] = 0.0f;
  }
  for (int p = 0; p < dense; ++p) step(acc, rows, cols, p, a, b, Always{});
  // The tile's own diagonal (triangular shapes only): the masked part.
  for (int p = dense; p < d; ++p)
    step(acc, rows, cols, p, a, b, [&](int i) { return kLeft == LeftShape::Lower ? p <= i : p < i; });
  RUDNN_UNROLL
  for (int x = 0; x < kTM; ++x) {
    RUDNN_UNROLL
    for (int y = 0; y < kTN; ++y)
      if (i0 + x < m && j0 + y < n) store(i0 + x, j0 + y, acc[x][y]);
  }
}

}  // namespace block_gemm_detail

template <int kTM, int kTN, bool kLowerOut, LeftShape kLeft, class A, class B, class Store>
RUDNN_DEVICE void block_gemm(int m, int n, int depth, const A& a, const B& b, const Store& store, int tid,
                             int nthreads) {
  const int tiles_m = (m + kTM - 1) / kTM;
  const int tiles_n = (n + kTN - 1) / kTN;
  if (kLeft != LeftShape::Full && tiles_m * tiles_n > nthreads && nthreads % tiles_n == 0) {
    // Folded: the threads of one column tile take row tile u and its mirror tiles_m − 1 − u, so
    // every thread's depths add up to ~depth + kTM and the warps finish together (row by row, a
    // thread's second tile would sit a whole pass further down). With no more tiles than threads,
    // one tile each (below) is better: folding would leave half the threads idle.
    const int half = (tiles_m + 1) / 2, rows_per_pass = nthreads / tiles_n;
    const int tj = tid % tiles_n;
    for (int u = tid / tiles_n; u < half; u += rows_per_pass) {
      block_gemm_detail::tile<kTM, kTN, kLowerOut, kLeft>(u, tj, m, n, depth, a, b, store);
      if (u < tiles_m - half)
        block_gemm_detail::tile<kTM, kTN, kLowerOut, kLeft>(tiles_m - 1 - u, tj, m, n, depth, a, b, store);
    }
    return;
  }
  for (int t = tid; t < tiles_m * tiles_n; t += nthreads)
    block_gemm_detail::tile<kTM, kTN, kLowerOut, kLeft>(t / tiles_n, t - (t / tiles_n) * tiles_n, m, n, depth, a, b,
                                                        store);
}

}  // namespace rudnn::gated_delta
