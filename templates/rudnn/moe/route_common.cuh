#pragma once
// Shared pieces of the routing templates: the warp-wide "best candidate" reduction used by the
// top-k selections. Order: larger value first; equal values → smaller index first. A lane with no
// candidate holds kNone and loses to every real candidate.
#include "rudnn/prelude.cuh"
#include "rudnn/numeric.cuh"

// Keeps the scans over experts rolled on the GPU: unrolled, they keep several candidates live and
// ptxas spilled a few bytes in some softmax routing variants.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_MOE_ROLLED _Pragma("unroll 1")
#else
#define RUDNN_MOE_ROLLED
#endif

namespace rudnn::moe {

inline constexpr u32 kNone = 0xffffffffu;

// Is (v2, i2) ahead of (v1, i1) in the selection order?
RUDNN_DEVICE bool route_ahead(float v1, u32 i1, float v2, u32 i2) {
  if (i2 == kNone) return false;
  if (i1 == kNone) return true;
  return v2 > v1 || (v2 == v1 && i2 < i1);
}

// Eligible after the previously selected (last_v, last_i): strictly behind it in the order.
RUDNN_DEVICE bool route_after(float v, u32 i, float last_v, u32 last_i) {
  if (last_i == kNone) return true;
  return v < last_v || (v == last_v && i > last_i);
}

// Every lane ends with the warp's best (v, i).
RUDNN_DEVICE void warp_best(float& v, u32& i) {
  RUDNN_UNROLL
  for (int m = 16; m >= 1; m /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, m);
    const u32 oi = __shfl_xor_sync(0xffffffffu, i, m);
    if (route_ahead(v, i, ov, oi)) {
      v = ov;
      i = oi;
    }
  }
}

// Group order of the grouped routing: is group (w, h) ahead of group (v, g)? Larger score first,
// ties → smaller group index, and a NaN score ahead of every number (NaNs among themselves by
// index). A NaN group score only arises as +inf + (−inf) under group_top_two (a group holding
// both an expert biased to +inf and one biased to −inf); ranking it first keeps the order total, so
// exactly selected_groups groups are kept, and matches torch.sort / torch.topk (NaN as the
// largest value), which DeepSeek-V3's reference grouped routing uses. See docs/moe.md.
RUDNN_DEVICE bool group_ahead(float w, i64 h, float v, i64 g) {
  const bool wn = is_nan(w), vn = is_nan(v);
  if (wn != vn) return wn;
  if (!wn && w != v) return w > v;
  return h < g;
}

RUDNN_DEVICE float route_nan() { return bits_as_float(0x7fc00000u); }

}  // namespace rudnn::moe
