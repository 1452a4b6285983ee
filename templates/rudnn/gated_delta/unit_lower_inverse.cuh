#pragma once
// T = (I + A)⁻¹ for a strictly lower-triangular C×C matrix A in shared memory (the WY solve of the
// chunked gated delta rule, SPEC §7), by forward substitution, one column per thread:
//   T[m][m] = 1,  T[i][m] = 0 (i < m),  T[i][m] = −Σ_{m ≤ j < i} A[i][j] · T[j][m]  (i > m).
// Column m depends only on its own earlier entries, so the block's threads solve columns
// independently with no barrier (thread `tid` takes columns tid, tid + nthreads, ...). Column m
// costs ~(C − m)²/2 multiply-adds, at most ~C²/2: for C ≤ 64 that is short next to the chunk's
// matrix products, and it needs no synchronization at all.
// Only A[i][j] with j < i is read (the upper part may hold anything); every T entry is written.
// `a` and `t` must not overlap. No barrier inside; the caller places one before T is read.
#include "rudnn/prelude.cuh"

namespace rudnn::gated_delta {

RUDNN_DEVICE void unit_lower_inverse(const float* a, float* t, int c, int tid, int nthreads) {
  for (int m = tid; m < c; m += nthreads) {
    for (int i = 0; i < m; ++i) t[i * c + m] = 0.0f;
    t[m * c + m] = 1.0f;
    for (int i = m + 1; i < c; ++i) {
      const float* ai = a + i * c;
      float x = ai[m];  // T[m][m] = 1
      for (int j = m + 1; j < i; ++j) x += ai[j] * t[j * c + m];
      t[i * c + m] = -x;
    }
  }
}

}  // namespace rudnn::gated_delta
