#pragma once
// Reductions of one float across threads: within a warp (shuffle butterfly) and across a group of
// consecutive warps (a row served by several warps) through dynamic shared memory.
//
// The butterfly (xor) pattern leaves the result in every lane, and since a + b == b + a exactly in
// IEEE arithmetic, every lane holds the same bits: all threads of a row see identical statistics.
#include "rudnn/numeric.cuh"

namespace rudnn {

struct SumOp {
  RUDNN_DEVICE static float identity() { return 0.0f; }
  RUDNN_DEVICE static float combine(float a, float b) { return a + b; }
};
struct MaxOp {
  RUDNN_DEVICE static float identity() { return negative_infinity(); }  // -inf
  // fmaxf ignores a NaN operand; callers that must propagate NaN do so through a later sum.
  RUDNN_DEVICE static float combine(float a, float b) { return fmaxf(a, b); }
};

// Reduces over aligned segments of kLanes lanes (power of two, <= 32); every lane of a segment gets
// the segment's result. All 32 lanes of the warp must call it together.
template <class Op, int kLanes = 32>
RUDNN_DEVICE float warp_reduce(float v) {
  static_assert(kLanes >= 1 && kLanes <= 32 && (kLanes & (kLanes - 1)) == 0,
                "warp_reduce: kLanes must be a power of two <= 32");
  RUDNN_UNROLL
  for (int m = kLanes / 2; m >= 1; m /= 2) v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}
RUDNN_DEVICE float warp_sum(float v) { return warp_reduce<SumOp>(v); }
RUDNN_DEVICE float warp_max(float v) { return warp_reduce<MaxOp>(v); }

// Reduction over kWarps consecutive warps that serve one group (e.g. one row). Uses 2 * kWarps
// floats of shared memory per group (none when kWarps == 1): partials go to one of two buffers in
// turn, so a reduction never overwrites a buffer that a slower warp may still be reading from the
// previous reduction; one barrier per reduction is then enough.
//
// reduce() contains __syncthreads() when kWarps > 1: every thread of the block must call it the
// same number of times (threads with nothing to contribute pass Op::identity()).
template <int kWarps>
class GroupReducer {
 public:
  static_assert(kWarps >= 1 && kWarps <= 32 && (kWarps & (kWarps - 1)) == 0,
                "GroupReducer: 1..32 warps, a power of two");
  static constexpr int kSharedFloats = 2 * kWarps;

  // `slots`: this group's 2 * kWarps floats; `thread_in_group`: 0 .. 32 * kWarps - 1.
  RUDNN_DEVICE GroupReducer(float* slots, int thread_in_group)
      : slots_(slots), lane_(thread_in_group & 31), warp_(thread_in_group >> 5) {}

  template <class Op>
  RUDNN_DEVICE float reduce(float v) {
    v = warp_reduce<Op>(v);
    if constexpr (kWarps == 1) {
      return v;
    } else {
      float* buffer = slots_ + parity_ * kWarps;
      parity_ ^= 1;
      if (lane_ == 0) buffer[warp_] = v;
      __syncthreads();
      // Lane l takes warp (l mod kWarps)'s partial; a butterfly over kWarps-lane segments then
      // gives every lane the group's total.
      return warp_reduce<Op, kWarps>(buffer[lane_ & (kWarps - 1)]);
    }
  }

 private:
  float* slots_;
  int lane_;
  int warp_;
  int parity_ = 0;
};

}  // namespace rudnn
