#pragma once
// Router weights for training (SPEC §10): the weights of given selected experts as a function of
// the logits, and their gradient. One warp per token row (kWarps rows per block).
//
//   forward   u_j = softmax(x)[i_j] (Softmax: max and sum over all E) or sigmoid(x[i_j]) (Sigmoid);
//             w_j = scale · u_j / S with S = Σ_j u_j when renormalizing (else S = 1)
//   backward  g̃_j = scale · g_j;  h_j = (g̃_j − Σ_m g̃_m u_m / S) / S when renormalizing, else g̃_j;
//             H_e = Σ_{j: i_j = e} h_j (repeated indices add up);
//             dx_e = p_e · (H_e − Σ_j h_j u_j)  (Softmax; the sum is 0 when renormalizing)
//             or   H_e · σ(x_e)(1 − σ(x_e))  (Sigmoid)
//
// FP32 throughout; every sum runs in a fixed order (lane-strided partials, then a butterfly over
// the warp; the j sums in j order), so results are bitwise reproducible. A row with an index < 0 or
// ≥ E is NaN in both results; only in-range indices are ever dereferenced.
//
// Parameters: router_weights(logits, indices, weights, tokens, experts, top_k, sigmoid, renormalize,
// scale); router_backward(logits, indices, grad_weights, grad_logits, tokens, experts, top_k, sigmoid,
// renormalize, scale). top_k ≤ 64. Launch: 32·kWarps threads, grid ⌈tokens / kWarps⌉ (strided);
// router_backward takes shared_memory::router_backward(kWarps) bytes (its per-warp h_j and i_j).
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/shared_memory.h"

namespace rudnn::moe {

namespace router_detail {

constexpr int kMaxTopK = 64;

RUDNN_DEVICE float warp_max(float v) {
  RUDNN_UNROLL
  for (int m = 16; m >= 1; m /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}
RUDNN_DEVICE float warp_sum(float v) {
  RUDNN_UNROLL
  for (int m = 16; m >= 1; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
RUDNN_DEVICE float quiet_nan() { return bits_as_float(0x7fc00000u); }
RUDNN_DEVICE float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// One token row: the softmax statistics (Softmax) and this lane's selected entries j = lane and
// lane + 32: index (−1 past top_k) and u_j.
template <class T, class I>
struct Row {
  const T* x;
  i64 experts;
  bool bad = false;         // an index out of [0, experts)
  float max = 0, sum = 1;   // Softmax: max and Σ exp(x − max) over all E
  i64 index[2] = {-1, -1};  // the lane's selected experts (−1: none)
  float u[2] = {0, 0};

  RUDNN_DEVICE Row(const T* logits, const I* indices, i64 experts_, i64 top_k, bool softmax, int lane)
      : x(logits), experts(experts_) {
    int any_bad = 0;
    RUDNN_UNROLL
    for (int s = 0; s < 2; ++s) {
      const i64 j = lane + 32 * s;
      if (j >= top_k) continue;
      const i64 e = static_cast<i64>(indices[j]);
      if (e < 0 || e >= experts)
        any_bad = 1;
      else
        index[s] = e;
    }
    bad = __any_sync(0xffffffffu, any_bad) != 0;
    if (bad) return;
    if (softmax) {
      float m = negative_infinity();
      for (i64 e = lane; e < experts; e += 32) m = fmaxf(m, to_float(x[e]));
      max = warp_max(m);
      float s = 0.0f;
      for (i64 e = lane; e < experts; e += 32) s += expf(to_float(x[e]) - max);
      sum = warp_sum(s);
    }
    RUDNN_UNROLL
    for (int s = 0; s < 2; ++s)
      if (index[s] >= 0) u[s] = softmax ? expf(to_float(x[index[s]]) - max) / sum : sigmoid(to_float(x[index[s]]));
  }
  // Σ_j v_j over the row's selected entries (lane-held pairs), in a fixed order.
  RUDNN_DEVICE static float total(float a, float b) { return warp_sum(a + b); }
};

}  // namespace router_detail

template <class T, class I, int kWarps>
RUDNN_DEVICE void router_weights(const T* logits, const I* indices, float* weights, i64 tokens, i64 experts, i64 top_k,
                                 i64 sigmoid, i64 renormalize, float scale) {
  using namespace router_detail;
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  for (i64 t = linear_block() * kWarps + warp; t < tokens; t += block_count() * kWarps) {
    const Row<T, I> row(logits + t * experts, indices + t * top_k, experts, top_k, !sigmoid, lane);
    float* w = weights + t * top_k;
    const float norm = row.bad ? 0.0f : renormalize ? Row<T, I>::total(row.u[0], row.u[1]) : 1.0f;
    RUDNN_UNROLL
    for (int s = 0; s < 2; ++s) {
      const i64 j = lane + 32 * s;
      if (j < top_k) w[j] = row.bad ? quiet_nan() : scale * (row.u[s] / norm);
    }
  }
}

template <class T, class I, int kWarps>
RUDNN_DEVICE void router_backward(const T* logits, const I* indices, const float* grad_weights, T* grad_logits,
                                  i64 tokens, i64 experts, i64 top_k, i64 sigmoid, i64 renormalize, float scale) {
  using namespace router_detail;
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  float* h_shared = dynamic_shared<float>() + warp * kMaxTopK;                                            // h_j
  i64* i_shared = reinterpret_cast<i64*>(dynamic_shared<float>() + kWarps * kMaxTopK) + warp * kMaxTopK;  // i_j
  for (i64 t = linear_block() * kWarps + warp; t < tokens; t += block_count() * kWarps) {
    const Row<T, I> row(logits + t * experts, indices + t * top_k, experts, top_k, !sigmoid, lane);
    T* dx = grad_logits + t * experts;
    if (row.bad) {
      for (i64 e = lane; e < experts; e += 32) dx[e] = from_float<T>(quiet_nan());
      continue;
    }
    const float* g = grad_weights + t * top_k;
    float gs[2];
    RUDNN_UNROLL
    for (int s = 0; s < 2; ++s) gs[s] = row.index[s] >= 0 ? scale * g[lane + 32 * s] : 0.0f;
    float h[2] = {gs[0], gs[1]};
    if (renormalize) {
      const float norm = Row<T, I>::total(row.u[0], row.u[1]);
      const float c = Row<T, I>::total(gs[0] * row.u[0], gs[1] * row.u[1]) / norm;
      RUDNN_UNROLL
      for (int s = 0; s < 2; ++s) h[s] = row.index[s] >= 0 ? (gs[s] - c) / norm : 0.0f;
    }
    // Σ_j h_j u_j: identically 0 after renormalization (the renormalized weights do not move when
    // every logit shifts together), so it is 0 exactly there rather than a rounding residue.
    const float a = sigmoid || renormalize ? 0.0f : Row<T, I>::total(h[0] * row.u[0], h[1] * row.u[1]);
    __syncwarp();  // the previous row's readers of h_shared / i_shared are done
    RUDNN_UNROLL
    for (int s = 0; s < 2; ++s) {
      h_shared[lane + 32 * s] = h[s];
      i_shared[lane + 32 * s] = row.index[s];
    }
    __syncwarp();
    for (i64 e = lane; e < experts; e += 32) {
      float he = 0.0f;
      for (i64 j = 0; j < top_k; ++j)
        if (i_shared[j] == e) he += h_shared[j];
      const float xe = to_float(row.x[e]);
      float d;
      if (sigmoid) {
        const float s = router_detail::sigmoid(xe);
        d = he * s * (1.0f - s);
      } else {
        d = expf(xe - row.max) / row.sum * (he - a);
      }
      dx[e] = from_float<T>(d);
    }
  }
}

}  // namespace rudnn::moe
