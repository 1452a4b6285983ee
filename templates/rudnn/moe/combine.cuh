#pragma once
// MoE combine (SPEC §3): back to token order, weighted by the routing.
//   out[t, h] = Σ_j FP32(weights[t, j]) · FP32(expert_rows[slots[t·top_k + j], h])
// summed in FP32 in j order (deterministic: no atomics, the same bits on every run), converted to T.
// A NaN weight propagates (a NaN routing row gives a NaN output row). An assignment with slot
// kNoSlot (an out-of-range expert index, never produced by routing) contributes nothing.
//
// Geometry: grid.x = tokens (grid stride), block = Policy::kThreads, no shared memory.
// Parameters: expert_rows [rows, H] T, slots [T·top_k] u32, weights [T, top_k] W, out [T, H] T,
//             tokens, top_k, hidden. kVec must divide hidden; expert_rows and out aligned to
//             kVec·sizeof(T) bytes. Policy = RowCopyPolicy (moe/dispatch.cuh).
#include "rudnn/grid.cuh"
#include "rudnn/moe/dispatch.cuh"

namespace rudnn::moe {

template <class T, class W, class Policy>
RUDNN_DEVICE void combine(const T* expert_rows, const u32* slots, const W* weights, T* out, i64 tokens, i64 top_k,
                          i64 hidden) {
  constexpr int kVec = Policy::kVecV;
  static_assert(Policy::template fits<T>, "combine: kVec·sizeof(T) must be ≤ 16 bytes");
  const i64 vectors = hidden / kVec;
  for (i64 t = linear_block(); t < tokens; t += block_count()) {
    const u32* slot_row = slots + t * top_k;
    const W* weight_row = weights + t * top_k;
    for (i64 v = threadIdx.x; v < vectors; v += Policy::kThreadsV) {
      float acc[kVec];
      RUDNN_UNROLL
      for (int i = 0; i < kVec; ++i) acc[i] = 0.0f;
      // Slots and weights are the same for every thread of the block: broadcast loads from cache.
      for (i64 j = 0; j < top_k; ++j) {
        const u32 slot = slot_row[j];
        if (slot == kNoSlot) continue;
        const float w = to_float(weight_row[j]);
        const Vec<T, kVec> x = load_vec<T, kVec>(expert_rows + static_cast<i64>(slot) * hidden + v * kVec);
        RUDNN_UNROLL
        for (int i = 0; i < kVec; ++i) acc[i] += w * x.get_float(i);
      }
      Vec<T, kVec> y;
      y.set_floats(acc);
      store_vec<T, kVec>(out + t * hidden + v * kVec, y);
    }
  }
}

}  // namespace rudnn::moe
