#pragma once
// T = (I + A)⁻¹ for a strictly lower-triangular C×C matrix A in shared memory (the WY solve of the
// chunked gated delta rule, SPEC §7), blocked by 16 rows and columns (the last block may be short):
//   (1) the diagonal blocks T_II = (I + A_II)⁻¹ by forward substitution, one column per thread:
//         T[m][m] = 1, T[i][m] = −Σ_{m ≤ j < i} A[i][j]·T[j][m]  (i > m, i and m in block I);
//   (2) the blocks below the diagonal by their distance d = I − J = 1, 2, … (each needs only blocks
//       nearer the diagonal):
//         X_IJ = Σ_{J ≤ L < I} A_IL·T_LJ,   then   T_IJ = −T_II·X_IJ,
//       every element of every block of one distance spread over all threads.
// Why blocked: a column-per-thread forward substitution over the whole chunk is a chain of up to
// C²/2 dependent multiply-adds on one thread (2016 at C = 64, on 64 of the block's threads) that
// every chunk of the sequence waits for. Blocked, the longest chain is a 16-row solve (≤ 120) plus
// ≤ 16·d + 16 per element and distance, on all threads: ~300 at C = 64, for the same C³/6 work.
// Each element of T is the same sum forward substitution forms, grouped by blocks (rounding differs).
// X_IJ is kept in A's strictly upper part, at the transposed block (J, I) (A is strictly lower: that
// part is never read as A), so no scratch memory is needed: the caller's A loses its upper part.
// Every T entry is written (zeros above the diagonal). Barriers: 2·(⌈C/16⌉ − 1) inside, so every
// thread of the block calls it; the caller places one before T is read and after A is written.
// `a` and `t` must not overlap.
#include "rudnn/prelude.cuh"

namespace rudnn::gated_delta {

RUDNN_DEVICE void unit_lower_inverse(float* a, float* t, int c, int tid, int nthreads) {
  constexpr int kB = 16;
  // (1) Diagonal blocks, and zeros above them: column m writes rows [0, end of its block).
  for (int m = tid; m < c; m += nthreads) {
    const int first = m / kB * kB, end = first + kB < c ? first + kB : c;
    for (int i = 0; i < m; ++i) t[i * c + m] = 0.0f;
    t[m * c + m] = 1.0f;
    for (int i = m + 1; i < end; ++i) {
      const float* ai = a + i * c;
      float x = ai[m];  // T[m][m] = 1
      for (int j = m + 1; j < i; ++j) x += ai[j] * t[j * c + m];
      t[i * c + m] = -x;
    }
  }
  // (2) Blocks below the diagonal, nearest first. Block I covers rows [16·I, min(16·I + 16, c)).
  const int blocks = (c + kB - 1) / kB;
  for (int d = 1; d < blocks; ++d) {
    const int pairs = blocks - d;  // (I, J) = (J + d, J), J = 0 .. pairs − 1
    __syncthreads();               // T's blocks at distance < d are written
    // X_IJ[r][s] → a[(16J + s)·c + 16I + r] (the transposed block, strictly above the diagonal).
    for (int e = tid; e < pairs * kB * kB; e += nthreads) {
      const int pair = e / (kB * kB), r = e / kB % kB, s = e % kB;
      const int row = (pair + d) * kB + r, col = pair * kB + s;
      if (row >= c) continue;  // past a short last block
      const float* ar = a + row * c;
      float x = 0.0f;
      for (int q = col - s; q < (pair + d) * kB; ++q) x += ar[q] * t[q * c + col];
      a[col * c + row] = x;
    }
    __syncthreads();  // X complete
    // T_IJ = −T_II·X_IJ, T_II unit lower: T[row][col] = −(X[row][col] + Σ_{first ≤ q < row} T[row][q]·X[q][col]).
    for (int e = tid; e < pairs * kB * kB; e += nthreads) {
      const int pair = e / (kB * kB), r = e / kB % kB, s = e % kB;
      const int first = (pair + d) * kB, row = first + r, col = pair * kB + s;
      if (row >= c) continue;
      const float* tr = t + row * c;
      float x = a[col * c + row];
      for (int q = first; q < row; ++q) x += tr[q] * a[col * c + q];
      t[row * c + col] = -x;
    }
  }
}

}  // namespace rudnn::gated_delta
