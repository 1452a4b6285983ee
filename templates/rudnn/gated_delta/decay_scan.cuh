#pragma once
// Cumulative decay of one chunk (SPEC §7, chunked form): γ_i = Σ_{j ≤ i} g_j over the chunk's
// steps, computed by one warp with a shuffle scan in 32-step pieces plus the carry of the earlier
// pieces. Steps past `valid` count as g = 0 (padding).
//
// Why FP64: the kernel needs e^{γ_i − γ_j} for nearby i, j, but |γ| itself grows with the chunk
// (≈ 1300 after 64 steps of log_decay −20). An FP32 γ has an ulp of ~1e-4 there, so the
// difference of two FP32 prefix sums — and a scan that groups the terms differently for different
// lanes — would put ~1e-4 relative error into weights that are exactly 1 (i = j, or the last real
// step's weight to the chunk end). In FP64 the differences are exact to ~1e-13, then rounded to
// FP32 once. The cost is C double additions per chunk.
//
// Writes, for i < c: gamma[i] = γ_i (FP64), exp_gamma[i] = e^{γ_i}, to_end[i] = e^{γ_last − γ_i}
// with γ_last = γ_{valid−1} (the chunk's last real step; the decay from step i to the chunk's end,
// as one exponential of the difference: e^{γ_last} and e^{−γ_i} separately could underflow or
// overflow where their product does not; decay_between: 1 where they are equal).
// All 32 lanes of the calling warp must call it with the same arguments (1 ≤ valid ≤ c); no
// block barrier inside.
#include "rudnn/numeric.cuh"

namespace rudnn::gated_delta {

// e^{γ_i − γ_j}, exactly 1 when γ_i = γ_j: the diagonal and the padded steps (g = 0) after a
// one-step chunk whose γ is ±inf, where the difference itself would be NaN (chunked.cuh header).
// Identical to expf(0) = 1 for finite γ.
RUDNN_DEVICE float decay_between(double gi, double gj) { return gi == gj ? 1.0f : expf(static_cast<float>(gi - gj)); }

template <class G>
RUDNN_DEVICE void decay_scan(const G* log_decay, int valid, int c, double* gamma, float* exp_gamma, float* to_end,
                             int lane) {
  double carry = 0.0;
  for (int base = 0; base < c; base += 32) {
    const int i = base + lane;
    double x = i < valid ? static_cast<double>(to_float(log_decay[i])) : 0.0;
    RUDNN_UNROLL
    for (int d = 1; d < 32; d *= 2) {
      const double y = __shfl_up_sync(0xffffffffu, x, d);
      if (lane >= d) x += y;
    }
    x += carry;
    if (i < c) gamma[i] = x;
    carry = __shfl_sync(0xffffffffu, x, 31);
  }
  __syncwarp(0xffffffffu);  // gamma[valid − 1] was written by another lane
  const double last = gamma[valid - 1];
  for (int i = lane; i < c; i += 32) {
    exp_gamma[i] = expf(static_cast<float>(gamma[i]));
    to_end[i] = decay_between(last, gamma[i]);
  }
}

}  // namespace rudnn::gated_delta
