#pragma once
// Softmax top-k routing (SPEC §3): one warp per token row, kRowsPerBlock rows per block, grid
// stride over rows; any number of experts E (each lane walks the row in strides of 32).
//
//   p_i = expf(x_i − max) / Σ_j expf(x_j − max): the FP32 softmax, one expression (route_prob).
//   indices: the top_k experts by p, ties to the smaller index. The selection ranks these FP32
//            probabilities themselves, not the logits: two logits whose probabilities round to the
//            same float (both underflowing to 0, say) tie, as SPEC §3 (softmax, then top-k)
//            says. Ranking the logits would order them by a difference the weights cannot show.
//   weights: p_i, or p_i / Σ_selected p_j with renormalize (summed in selection order), converted
//            to T. Without renormalize the weight is bit for bit the value that was ranked.
//   A row containing NaN or +inf, or all −inf: weights NaN and indices 0, 1, ..., top_k − 1
//   (documented, well defined; no uniform fallback).
//
// Shared memory: none. Parameters (the launch's argument order):
//   logits [rows, experts] T, indices [rows, top_k] u32, weights [rows, top_k] T,
//   rows, experts, top_k, renormalize (0/1, long long).
#include "rudnn/grid.cuh"
#include "rudnn/moe/route_common.cuh"

namespace rudnn::moe {

template <int kRowsPerBlock>
struct RoutePolicy {
  static_assert(kRowsPerBlock >= 1 && kRowsPerBlock <= 32, "RoutePolicy: 1..32 warps per block");
  static constexpr int kRowsPerBlockV = kRowsPerBlock;
  static constexpr int kThreads = 32 * kRowsPerBlock;
};

// The FP32 probability of logit x in a row with max mx and denominator sum. The selection and the
// weights both call this, so the ranked value and the returned weight are the same float.
RUDNN_DEVICE float route_prob(float x, float mx, float sum) { return expf(x - mx) / sum; }

template <class T, class Policy>
RUDNN_DEVICE void route_softmax_topk(const T* logits, u32* indices, T* weights, i64 rows, i64 experts, i64 top_k,
                                     i64 renormalize) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int slot = static_cast<int>(threadIdx.x) >> 5;
  const i64 row_step = block_count() * Policy::kRowsPerBlockV;
  // Each warp runs its own rows: only warp-level synchronization below.
  for (i64 row = linear_block() * Policy::kRowsPerBlockV + slot; row < rows; row += row_step) {
    const T* x = logits + row * experts;
    u32* out_i = indices + row * top_k;
    T* out_w = weights + row * top_k;

    // Pass 1: max and poison (NaN or +inf) detection.
    float mx = negative_infinity();
    int bad = 0;
    RUDNN_MOE_ROLLED
    for (i64 e = lane; e < experts; e += 32) {
      const float v = to_float(x[e]);
      if (is_nan(v) || (is_inf(v) && v > 0.0f)) bad = 1;
      mx = fmaxf(mx, v);
    }
    RUDNN_UNROLL
    for (int m = 16; m >= 1; m /= 2) {
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, m));
      bad |= __shfl_xor_sync(0xffffffffu, bad, m);
    }
    // NaN/+inf present, or every logit −inf: NaN weights, indices 0..top_k−1. Uniform in the warp.
    const bool poisoned = bad || is_inf(mx);

    // The softmax denominator (skipped for a poisoned row).
    float sum = 0.0f;
    RUDNN_MOE_ROLLED
    for (i64 e = poisoned ? experts : lane; e < experts; e += 32) sum += expf(to_float(x[e]) - mx);
    RUDNN_UNROLL
    for (int m = 16; m >= 1; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);

    // Selection: top_k rounds of a warp-wide best probability among the candidates behind the
    // last pick (p is recomputed per round: no shared memory, and expf is cheap next to the
    // experts). Lane 0 keeps the pick and the running sum of the selected p (selection order).
    float last_v = 0.0f;
    u32 last_i = kNone;
    float selected_sum = 0.0f;
    RUDNN_MOE_ROLLED
    for (i64 j = 0; j < top_k; ++j) {
      float bv = 0.0f;
      u32 bi = kNone;
      RUDNN_MOE_ROLLED
      for (i64 e = poisoned ? experts : lane; e < experts; e += 32) {
        const float v = route_prob(to_float(x[e]), mx, sum);
        const u32 i = static_cast<u32>(e);
        if (route_after(v, i, last_v, last_i) && route_ahead(bv, bi, v, i)) {
          bv = v;
          bi = i;
        }
      }
      warp_best(bv, bi);
      last_v = bv;
      last_i = bi;
      if (lane == 0) {
        out_i[j] = poisoned ? static_cast<u32>(j) : bi;
        selected_sum += poisoned ? 0.0f : bv;
      }
    }
    // Weights: lane 0 reads back the indices it wrote. selected_sum > 0: the row's max has p ≥ 1/E
    // and is always selected first.
    if (lane == 0) {
      RUDNN_MOE_ROLLED
      for (i64 j = 0; j < top_k; ++j) {
        const float p = poisoned ? route_nan() : route_prob(to_float(x[out_i[j]]), mx, sum);
        out_w[j] = from_float<T>(renormalize ? p / selected_sum : p);
      }
    }
    __syncwarp(0xffffffffu);
  }
}

}  // namespace rudnn::moe
