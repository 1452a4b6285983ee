#pragma once
// The gradients of the MoE combine (SPEC §10): out[t] = Σ_j w[t, j] · y[slots[t, j]] gives
//   dexpert[slots[t, j]] = w[t, j] · grad_output[t]                      (T)
//   dweights[t, j]       = Σ_h grad_output[t, h] · y[slots[t, j], h]    (FP32)
// The dweights reduction over H: kPlane = false (Serial) — thread j walks h in order; kPlane = true
// (Plane) — warp j % warps takes h lane-strided, then a butterfly over its lanes. Both fixed-order:
// deterministic. An assignment with slot kNoSlot has no row: dweights 0.
//
// Parameters: expert_output [rows, H] T, grad_output [T, H] T, weights [T, top_k] W, slots
// [T·top_k] u32, dexpert [rows, H] T, dweights [T, top_k] f32, tokens, top_k, hidden.
// Launch: kThreads threads, grid tokens (strided), no shared memory.
#include "rudnn/grid.cuh"
#include "rudnn/moe/dispatch.cuh"

namespace rudnn::moe {

template <class T, class W, int kThreads, bool kPlane>
RUDNN_DEVICE void combine_backward(const T* expert_output, const T* grad_output, const W* weights, const u32* slots,
                                   T* dexpert, float* dweights, i64 tokens, i64 top_k, i64 hidden) {
  static_assert(kThreads % 32 == 0, "combine_backward: whole warps");
  constexpr int kWarps = kThreads / 32;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  for (i64 t = linear_block(); t < tokens; t += block_count()) {
    const T* g = grad_output + t * hidden;
    for (i64 j = 0; j < top_k; ++j) {
      const u32 slot = slots[t * top_k + j];
      if (slot == kNoSlot) continue;
      const float w = to_float(weights[t * top_k + j]);
      T* d = dexpert + static_cast<i64>(slot) * hidden;
      for (i64 h = tid; h < hidden; h += kThreads) d[h] = from_float<T>(w * to_float(g[h]));
    }
    if (kPlane) {
      for (i64 j = warp; j < top_k; j += kWarps) {
        const u32 slot = slots[t * top_k + j];
        float acc = 0.0f;
        if (slot != kNoSlot) {
          const T* y = expert_output + static_cast<i64>(slot) * hidden;
          for (i64 h = lane; h < hidden; h += 32) acc += to_float(g[h]) * to_float(y[h]);
        }
        RUDNN_UNROLL
        for (int m = 16; m >= 1; m /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, m);
        if (lane == 0) dweights[t * top_k + j] = acc;
      }
    } else {
      for (i64 j = tid; j < top_k; j += kThreads) {
        const u32 slot = slots[t * top_k + j];
        float acc = 0.0f;
        if (slot != kNoSlot) {
          const T* y = expert_output + static_cast<i64>(slot) * hidden;
          for (i64 h = 0; h < hidden; ++h) acc += to_float(g[h]) * to_float(y[h]);
        }
        dweights[t * top_k + j] = acc;
      }
    }
  }
}

// The gradient of dispatch: out[t] = Σ_j drows[slots[t, j]] in FP32, j order (no routing weight).
// Parameters: drows [rows, H] T, slots [T·top_k] u32, out [T, H] T, tokens, top_k, hidden.
// Launch: kThreads threads, grid tokens (strided), no shared memory.
template <class T, int kThreads>
RUDNN_DEVICE void dispatch_backward(const T* drows, const u32* slots, T* out, i64 tokens, i64 top_k, i64 hidden) {
  for (i64 t = linear_block(); t < tokens; t += block_count())
    for (i64 h = threadIdx.x; h < hidden; h += kThreads) {
      float acc = 0.0f;
      for (i64 j = 0; j < top_k; ++j) {
        const u32 slot = slots[t * top_k + j];
        if (slot != kNoSlot) acc += to_float(drows[static_cast<i64>(slot) * hidden + h]);
      }
      out[t * hidden + h] = from_float<T>(acc);
    }
}

}  // namespace rudnn::moe
