#pragma once
// Split-KV merge (SPEC §8): each (query row, head) combines its splits' partial outputs o_s and
// log2-sum-exps l_s (paged/schedule.cuh SplitPartials) as o = Σ o_s·2^(l_s − m) / Σ 2^(l_s − m),
// m = max_s l_s — the SPEC's o = (o₁e^{s₁} + o₂e^{s₂}) / (e^{s₁} + e^{s₂}) in base 2. A row no split
// saw a key for (every l_s = −inf) is zeros. Splits are summed in order: deterministic.
//
// Parameters: partial, out, queries, heads, value_dim, splits. Launch: kThreads threads (columns),
// grid queries · heads rows (strided over the linear block index), no shared memory.
#include "rudnn/paged/schedule.cuh"

namespace rudnn::paged {

template <class T, int kThreads>
RUDNN_DEVICE void paged_merge(const float* partial, T* out, i64 queries, i64 heads, i64 value_dim, i64 splits) {
  const SplitPartials parts{const_cast<float*>(partial), queries, heads, value_dim, splits};
  const i64 rows = queries * heads;
  for (i64 rh = linear_block(); rh < rows; rh += block_count()) {
    const i64 r = div32(rh, heads), h = mod32(rh, heads);
    float top = negative_infinity();
    for (i64 s = 0; s < splits; ++s) top = fmaxf(top, *parts.lse(s, r, h));
    T* orow = out + rh * value_dim;
    if (top == negative_infinity()) {
      for (i64 c = threadIdx.x; c < value_dim; c += kThreads) orow[c] = from_float<T>(0.0f);
      continue;
    }
    float total = 0.0f;
    for (i64 s = 0; s < splits; ++s) total += exp2f(*parts.lse(s, r, h) - top);
    const float inv = 1.0f / total;
    for (i64 c = threadIdx.x; c < value_dim; c += kThreads) {
      float acc = 0.0f;
      for (i64 s = 0; s < splits; ++s) {
        const float w = exp2f(*parts.lse(s, r, h) - top);
        if (w > 0.0f) acc += w * parts.output(s, r, h)[c];
      }
      orow[c] = from_float<T>(acc * inv);
    }
  }
}

}  // namespace rudnn::paged
