#pragma once
// Grouped, limited sigmoid routing (SPEC §4, DeepSeek-V3 style): one warp per token row,
// kRowsPerBlock rows per block, grid stride over rows; experts ≤ 1024, groups ≤ 128, top_k ≤ 64.
//
//   s = sigmoid(FP32 logit); c = s + bias (bias optional; selection only).
//   group score = sum of the two largest c in the group (group_top_two) or the largest c.
//   The selected_groups best groups are kept (ties → smaller group index; a NaN group score, i.e.
//   +inf + −inf from an infinite bias, ranks above every number: group_ahead), then the top_k
//   experts by c among them (ties → smaller expert index). ±inf in c are ordinary scores.
//   weights = s_i, or s_i / Σ_selected s_j (renormalize; summed in selection order), × scale, to T.
//   A row whose s or c holds a NaN: weights NaN, indices 0, 1, ..., top_k − 1.
//
// Dynamic shared memory: kRowsPerBlock × (experts + 2 × groups) floats
// (shared_memory::route_grouped, bytes). Parameters (the launch's argument order):
//   logits [rows, experts] T, bias [experts] f32 or null, indices [rows, top_k] u32,
//   weights [rows, top_k] T, rows, experts, top_k, groups, selected_groups, group_top_two (0/1, long long),
//   renormalize (0/1, long long), scale.
#include "rudnn/moe/route_common.cuh"
#include "rudnn/moe/route_softmax_topk.cuh"  // RoutePolicy

namespace rudnn::moe {

template <class T, class Policy>
RUDNN_DEVICE void route_sigmoid_grouped(const T* logits, const float* bias, u32* indices, T* weights, i64 rows,
                                        i64 experts, i64 top_k, i64 groups, i64 selected_groups, i64 group_top_two,
                                        i64 renormalize, float scale) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int slot = static_cast<int>(threadIdx.x) >> 5;
  float* c = dynamic_shared<float>() + slot * (experts + 2 * groups);
  float* gscore = c + experts;
  float* gkeep = gscore + groups;  // 1.0f: the group is selected
  const i64 per_group = experts / groups;
  const i64 row_step = static_cast<i64>(gridDim.x) * Policy::kRowsPerBlockV;
  for (i64 row = static_cast<i64>(blockIdx.x) * Policy::kRowsPerBlockV + slot; row < rows; row += row_step) {
    const T* x = logits + row * experts;
    u32* out_i = indices + row * top_k;
    T* out_w = weights + row * top_k;

    // Corrected scores into shared memory; NaN detection.
    int bad = 0;
    for (i64 e = lane; e < experts; e += 32) {
      const float s = 1.0f / (1.0f + expf(-to_float(x[e])));
      const float ce = bias != nullptr ? s + bias[e] : s;
      if (is_nan(s) || is_nan(ce)) bad = 1;
      c[e] = ce;
    }
    RUDNN_UNROLL
    for (int m = 16; m >= 1; m /= 2) bad |= __shfl_xor_sync(0xffffffffu, bad, m);
    if (bad) {
      for (i64 j = lane; j < top_k; j += 32) {
        out_i[j] = static_cast<u32>(j);
        out_w[j] = from_float<T>(route_nan());
      }
      __syncwarp(0xffffffffu);
      continue;
    }
    __syncwarp(0xffffffffu);

    // Group scores.
    for (i64 g = lane; g < groups; g += 32) {
      float top1 = negative_infinity(), top2 = top1;
      for (i64 e = g * per_group; e < (g + 1) * per_group; ++e) {
        const float v = c[e];
        if (v > top1) {
          top2 = top1;
          top1 = v;
        } else if (v > top2) {
          top2 = v;
        }
      }
      gscore[g] = group_top_two ? top1 + top2 : top1;
    }
    __syncwarp(0xffffffffu);

    // Group selection by rank: kept when fewer than selected_groups groups are ahead of it. The
    // order is total (NaN included), so exactly selected_groups groups are kept.
    for (i64 g = lane; g < groups; g += 32) {
      const float v = gscore[g];
      i64 ahead = 0;
      for (i64 h = 0; h < groups; ++h) ahead += group_ahead(gscore[h], h, v, g) ? 1 : 0;
      gkeep[g] = ahead < selected_groups ? 1.0f : 0.0f;
    }
    __syncwarp(0xffffffffu);

    // top_k experts by c among the kept groups.
    float last_v = 0.0f;
    u32 last_i = kNone;
    for (i64 j = 0; j < top_k; ++j) {
      float bv = 0.0f;
      u32 bi = kNone;
      for (i64 e = lane; e < experts; e += 32) {
        if (gkeep[e / per_group] == 0.0f) continue;
        const float v = c[e];
        const u32 i = static_cast<u32>(e);
        if (route_after(v, i, last_v, last_i) && route_ahead(bv, bi, v, i)) {
          bv = v;
          bi = i;
        }
      }
      warp_best(bv, bi);
      last_v = bv;
      last_i = bi;
      if (lane == 0) out_i[j] = bi;
    }
    if (lane == 0) {
      float sum = 0.0f;
      if (renormalize)
        for (i64 j = 0; j < top_k; ++j) sum += 1.0f / (1.0f + expf(-to_float(x[out_i[j]])));
      for (i64 j = 0; j < top_k; ++j) {
        const float s = 1.0f / (1.0f + expf(-to_float(x[out_i[j]])));
        out_w[j] = from_float<T>((renormalize ? s / sum : s) * scale);
      }
    }
    __syncwarp(0xffffffffu);
  }
}

}  // namespace rudnn::moe
