#pragma once
// Compact MoE dispatch (SPEC §3): the routing's expert indices [T, top_k] become
//   offsets u32 [experts + 1]: offsets[0] = 0, offsets[e + 1] = offsets[e] + (assignments to e);
//   slots   u32 [assignments]: for assignment a = t·top_k + j, its row in the compact array.
// Expert e's assignments occupy exactly rows [offsets[e], offsets[e + 1]); their order inside an
// expert comes from atomic ranking and is not guaranteed (the slots remember it for the combine).
// Then dispatch_scatter copies input row t = a / top_k to compact row slots[a].
//
// An index ≥ experts is never produced by routing; it is still harmless here: it is not counted and
// its slot is kNoSlot (0xffffffff), which the scatter and the combine skip.
//
// dispatch_rank — one block does everything (grid (1,1,1); blocks other than the first return):
//   dynamic shared memory: dispatch_rank_shared_bytes(experts) = round_up((experts + 1)·4, 16).
//   Parameters: indices, offsets, slots, assignments, experts.
// dispatch_scatter — grid.x = assignments (grid stride), block = kThreads, no shared memory.
//   Parameters: input [T, H], slots, rows [assignments, H], assignments, top_k, hidden.
//   kVec must divide hidden; input and rows aligned to kVec·sizeof(T) bytes.
#include "rudnn/moe/route_common.cuh"  // RUDNN_MOE_ROLLED
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/shared_memory.h"
#include "rudnn/vector.cuh"

namespace rudnn::moe {

// Slot of an assignment whose expert index is out of range (not counted, not copied).
inline constexpr u32 kNoSlot = 0xffffffffu;

template <int kThreads>
struct DispatchPolicy {
  static_assert(kThreads >= 32 && kThreads <= 1024 && kThreads % 32 == 0,
                "DispatchPolicy: a whole number of warps, at most 1024 threads");
  static constexpr int kThreadsV = kThreads;
};

// Bytes of dynamic shared memory dispatch_rank needs: one counter per expert plus offsets[0].
RUDNN_DEVICE constexpr i64 dispatch_rank_shared_bytes(i64 experts) { return shared_memory::dispatch_rank(experts); }

namespace dispatch_detail {

// Warp 0 turns s[1..n] (counts) into their exclusive prefix sums, in chunks of 32 with a running
// carry. One warp is plenty for the expert counts routing produces, and it needs no scratch memory
// and no barrier of its own (the caller's barriers order it with the other warps).
RUDNN_DEVICE void warp_exclusive_scan(u32* s, i64 n, int lane) {
  u32 carry = 0;
  RUDNN_MOE_ROLLED
  for (i64 base = 0; base < n; base += 32) {
    const i64 i = base + lane;
    const u32 count = i < n ? s[i] : 0u;
    u32 inclusive = count;
    RUDNN_UNROLL
    for (int d = 1; d < 32; d *= 2) {
      const u32 up = __shfl_up_sync(0xffffffffu, inclusive, d);
      if (lane >= d) inclusive += up;
    }
    if (i < n) s[i] = carry + inclusive - count;
    carry += __shfl_sync(0xffffffffu, inclusive, 31);
  }
}

}  // namespace dispatch_detail

template <class Policy>
RUDNN_DEVICE void dispatch_rank(const u32* indices, u32* offsets, u32* slots, i64 assignments, i64 experts) {
  constexpr int kThreads = Policy::kThreadsV;
  // The whole computation needs one block's shared counters; extra blocks have nothing to do.
  if (blockIdx.x != 0 || blockIdx.y != 0 || blockIdx.z != 0) return;
  const int tid = static_cast<int>(threadIdx.x);
  // s[e + 1] counts expert e, then holds its start, then (after ranking) its end = start of e + 1.
  // s[0] stays 0, so at the end s is exactly `offsets`.
  u32* s = dynamic_shared<u32>();

  RUDNN_MOE_ROLLED
  for (i64 e = tid; e <= experts; e += kThreads) s[e] = 0u;
  __syncthreads();

  // Histogram. Shared-memory atomics: contention only between assignments of the same expert.
  RUDNN_MOE_ROLLED
  for (i64 a = tid; a < assignments; a += kThreads) {
    const u32 e = indices[a];
    if (e < static_cast<u64>(experts)) atomicAdd(&s[e + 1], 1u);
  }
  __syncthreads();

  if (tid < 32) dispatch_detail::warp_exclusive_scan(s + 1, experts, tid);
  __syncthreads();

  // Ranking: each assignment takes the next free row of its expert.
  RUDNN_MOE_ROLLED
  for (i64 a = tid; a < assignments; a += kThreads) {
    const u32 e = indices[a];
    slots[a] = e < static_cast<u64>(experts) ? atomicAdd(&s[e + 1], 1u) : kNoSlot;
  }
  __syncthreads();

  RUDNN_MOE_ROLLED
  for (i64 e = tid; e <= experts; e += kThreads) offsets[e] = s[e];
}

// Row copies and the combine: kThreads per row, kVec elements per vector access.
template <int kThreads, int kVec>
struct RowCopyPolicy {
  static_assert(kThreads >= 32 && kThreads <= 1024 && kThreads % 32 == 0,
                "RowCopyPolicy: a whole number of warps, at most 1024 threads");
  static_assert(kVec >= 1 && kVec <= 16 && (kVec & (kVec - 1)) == 0, "RowCopyPolicy: kVec is a power of two");
  static constexpr int kThreadsV = kThreads;
  static constexpr int kVecV = kVec;
  // The vector access of element type T must fit one 16-byte memory instruction.
  template <class T>
  static constexpr bool fits = static_cast<int>(sizeof(T)) * kVec <= 16;
};

template <class T, class Policy>
RUDNN_DEVICE void dispatch_scatter(const T* input, const u32* slots, T* rows, i64 assignments, i64 top_k, i64 hidden) {
  constexpr int kVec = Policy::kVecV;
  static_assert(Policy::template fits<T>, "dispatch_scatter: kVec·sizeof(T) must be ≤ 16 bytes");
  const i64 vectors = hidden / kVec;
  for (i64 a = linear_block(); a < assignments; a += block_count()) {
    const u32 slot = slots[a];  // uniform in the block: the skip below never splits a barrier
    if (slot == kNoSlot) continue;
    const T* src = input + (a / top_k) * hidden;
    T* dst = rows + static_cast<i64>(slot) * hidden;
    for (i64 v = threadIdx.x; v < vectors; v += Policy::kThreadsV)
      store_vec<T, kVec>(dst + v * kVec, load_vec<T, kVec>(src + v * kVec));
  }
}

}  // namespace rudnn::moe
