#pragma once
// T = (I + A)⁻¹ for a strictly lower-triangular C×C matrix A in shared memory (the WY solve of the
// chunked gated delta rule, SPEC §7), blocked by 16 rows and columns (the last block may be short):
//   (1) the diagonal blocks T_II = (I + A_II)⁻¹ by forward substitution, one column per thread:
//         T[i][m] = −(A[i][m] + Σ_{m < j < i} A[i][j]·T[j][m])  (i > m, i and m in block I);
//   (2) the blocks below the diagonal by their distance d = I − J = 1, 2, … (each needs only blocks
//       nearer the diagonal):
//         X_IJ = Σ_{J ≤ L < I} A_IL·T_LJ,   then   T_IJ = −T_II·X_IJ,
//       every element of every block of one distance spread over all threads.
// Why blocked: a column-per-thread forward substitution over the whole chunk is a chain of up to
// C²/2 dependent multiply-adds on one thread (2016 at C = 64, on 64 of the block's threads) that
// every chunk of the sequence waits for. Blocked, the longest chain is a 16-row solve (≤ 120) plus
// ≤ 16·d + 16 per element and distance, on all threads: ~300 at C = 64, for the same C³/6 work.
// Each element of T is the same sum forward substitution forms, grouped by blocks (rounding differs).
//
// In place: T is unit lower triangular, so its strictly lower part fits in A's strictly upper part,
// transposed — T[i][j] (j < i) at a[j·c + i] (unit_lower_at) — and A and T share one C×C array
// (16 KiB saved at C = 64). T's unit diagonal and its zeros above are not stored; the
// diagonal of `a` is neither read nor written. A's strictly lower part is only read. X_IJ goes to
// `scratch`, 16×16 floats per block pair of one distance: shared_memory::gated_delta_inverse_scratch(c)
// floats.
// Barriers: 2·(⌈C/16⌉ − 1) inside, so every thread of the block calls it; the caller places one
// before T is read and after A is written. `scratch` must not overlap `a`.
#include "rudnn/prelude.cuh"

namespace rudnn::gated_delta {

// Where T[i][j], j < i, lives: A's strictly upper part, transposed.
RUDNN_DEVICE int unit_lower_at(int i, int j, int c) { return j * c + i; }

RUDNN_DEVICE void unit_lower_inverse(float* a, float* scratch, int c, int tid, int nthreads) {
  constexpr int kB = 16;
  // (1) Diagonal blocks: column m of T is row m of a's upper part, [m + 1, end of its block).
  for (int m = tid; m < c; m += nthreads) {
    const int first = m / kB * kB, end = first + kB < c ? first + kB : c;
    float* tm = a + m * c;  // tm[j] = T[j][m]
    for (int i = m + 1; i < end; ++i) {
      const float* ai = a + i * c;
      float x = ai[m];  // T[m][m] = 1
      for (int j = m + 1; j < i; ++j) x += ai[j] * tm[j];
      tm[i] = -x;
    }
  }
  // (2) Blocks below the diagonal, nearest first. Block I covers rows [16·I, min(16·I + 16, c)).
  const int blocks = (c + kB - 1) / kB;
  for (int d = 1; d < blocks; ++d) {
    const int pairs = blocks - d;  // (I, J) = (J + d, J), J = 0 .. pairs − 1
    __syncthreads();               // T's blocks at distance < d are written
    // X_IJ[r][s] → scratch[(J·16 + r)·16 + s].
    for (int e = tid; e < pairs * kB * kB; e += nthreads) {
      const int pair = e / (kB * kB), r = e / kB % kB, s = e % kB;
      const int row = (pair + d) * kB + r, col = pair * kB + s;
      if (row >= c) continue;  // past a short last block
      const float* ar = a + row * c;
      const float* tc = a + col * c;  // tc[q] = T[q][col], q > col
      float x = ar[col];              // T[col][col] = 1
      for (int q = col + 1; q < (pair + d) * kB; ++q) x += ar[q] * tc[q];
      scratch[e] = x;
    }
    __syncthreads();  // X complete
    // T_IJ = −T_II·X_IJ, T_II unit lower: T[row][col] = −(X[row][col] + Σ_{first ≤ q < row} T[row][q]·X[q][col]).
    for (int e = tid; e < pairs * kB * kB; e += nthreads) {
      const int pair = e / (kB * kB), r = e / kB % kB, s = e % kB;
      const int first = (pair + d) * kB, row = first + r, col = pair * kB + s;
      if (row >= c) continue;
      const float* xs = scratch + pair * kB * kB + s;  // xs[q·16] = X[first + q][col]
      float x = xs[r * kB];
      for (int q = 0; q < r; ++q) x += a[unit_lower_at(row, first + q, c)] * xs[q * kB];
      a[unit_lower_at(row, col, c)] = -x;
    }
  }
}

}  // namespace rudnn::gated_delta
