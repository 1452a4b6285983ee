#pragma once
// Gated delta rule, token-by-token recurrence (SPEC §7; the decode path and the reference form the
// chunked kernel is tested against). Per (b, h) and time step t, with S the K×V FP32 state:
//   S ← e^{g_t} S;  u_t = β_t (v_t − Sᵀ k_t);  S ← S + k_t u_tᵀ;  o_t = Sᵀ (query_scale · q_t).
// The step is evaluated as one fused reduction: with S' = e^{g_t} S (decayed, before the update),
//   r = S'ᵀ k,  p = S'ᵀ q̂,  κ = k·q̂  (q̂ = query_scale · q)
//   u = β (v − r),  o = p + κ u    (= (S' + k uᵀ)ᵀ q̂, no second pass over S),  S ← S' + k uᵀ,
// so a step costs one read-modify-write of the on-chip state and one block reduction.
//
// Work split: one block owns S[:, 32-column slice] of one (b, h) (SPEC: split V across blocks, so
// any K, V ≤ 256 fits on chip). Blocks grid-stride over the B·H·⌈V/32⌉ slices; any grid works.
// Inside a block, lane = tv + 8·(tk mod 4) and warp = tk / 4: tv (0..7) owns columns 4tv..4tv+3
// of the slice (16-byte state accesses, 128 contiguous bytes per row per warp), tk (0..4·kWarps-1)
// owns rows k = tk + 4·kWarps·i, i < kRowsPerThread. The state lives in registers:
// 4·kRowsPerThread floats per thread. Rows ≥ K and columns ≥ V hold zeros and are never stored.
// The column sums over K are a 2-level shuffle (lanes 8 and 16 apart) and, for kWarps > 1, a sum
// of the warps' partials through shared memory taken by every thread in the same order (so all
// threads that hold a column use bit-identical u and o). The partials alternate between two
// buffers, so one barrier per step suffices (a warp can only overwrite a buffer after everyone
// passed the next step's barrier, i.e. finished reading it).
//
// Inputs are staged kSteps time steps at a time (stage.cuh): keys, scaled queries, the value slice,
// beta and log_decay of kSteps steps as FP32 in shared memory, read with coalesced loads.
//
// Parameters (launch order): query, key [B, H, T, K] T; value [B, H, T, V] T; beta, log_decay
// [B, H, T] G (G = T or float: the template accepts either; all math is FP32); initial_state
// [B, H, K, V] float (nullptr = zeros; only read); output [B, H, T, V] T; final_state [B, H, K, V]
// float; batch, heads, seq (T), key_dim (K), value_dim (V) as i64; query_scale float.
// Requirements: 1 ≤ K ≤ Policy::kMaxK, V ≥ 1, all tensors contiguous and row-major; T = 0 copies
// initial_state to final_state. final_state may alias initial_state (a block reads its slice
// before it writes it) but must not overlap anything else. No log_decay sign requirement here.
// Launch: block = Policy::kThreads threads (x only), grid = any ≥ 1 (B·H·⌈V/32⌉ fills it),
// dynamic shared memory = Policy::kSharedBytes (a constant of the policy, independent of sizes).
#include "rudnn/grid.cuh"
#include "rudnn/gated_delta/stage.cuh"
#include "rudnn/shared_memory.h"
#include "rudnn/vector.cuh"

namespace rudnn::gated_delta {

// kWarps warps per block, each thread holding kRowsPerThread rows × 4 columns of the state;
// kSteps time steps staged per shared-memory fill.
template <int kWarps, int kRowsPerThread, int kSteps = 8>
struct RecurrentPolicy {
  static_assert(kWarps >= 1 && kWarps <= 16, "RecurrentPolicy: 1..16 warps");
  static_assert(kRowsPerThread >= 1 && kSteps >= 1, "RecurrentPolicy: positive sizes");
  static constexpr int kWarpsV = kWarps;
  static constexpr int kRows = kRowsPerThread;
  static constexpr int kStepsV = kSteps;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kRowGroups = 4 * kWarps;  // threads along K
  static constexpr int kMaxK = kRowGroups * kRowsPerThread;
  static constexpr int kColumns = 32;  // state columns per block: 8 lanes × 4
  // One staged step: keys [kMaxK], scaled queries [kMaxK], values [32], beta, log_decay.
  static constexpr int kStageStride = 2 * kMaxK + kColumns + 2;
  static constexpr int kReduceValues = 9;  // 4 of r, 4 of p, κ
  static constexpr int kReduceFloats = kWarps > 1 ? 2 * kWarps * 8 * kReduceValues : 0;
  static constexpr int kSharedFloats = kSteps * kStageStride + kReduceFloats;
  static constexpr int kSharedBytes =
      static_cast<int>(shared_memory::gated_delta_recurrent(kWarps, kRowsPerThread, kSteps));
  static_assert(kSharedBytes == 4 * kSharedFloats, "RecurrentPolicy: the layout disagrees with shared_memory");
};

namespace recurrent_detail {

// Loads (or zero-fills) this thread's 4 columns of one state row. `vec`: V % 4 == 0, so the four
// columns are either all in range and 16-byte aligned, or all out of range.
RUDNN_DEVICE void load_state_row(float (&s)[4], const float* row, i64 c0, i64 value_dim, bool vec) {
  if (vec && c0 < value_dim) {
    const Vec<float, 4> x = load_vec<float, 4>(row + c0);
    RUDNN_UNROLL
    for (int j = 0; j < 4; ++j) s[j] = x.get_float(j);
    return;
  }
  RUDNN_UNROLL
  for (int j = 0; j < 4; ++j) s[j] = c0 + j < value_dim ? row[c0 + j] : 0.0f;
}

RUDNN_DEVICE void store_state_row(float* row, const float (&s)[4], i64 c0, i64 value_dim, bool vec) {
  if (vec && c0 < value_dim) {
    Vec<float, 4> x;
    x.set_floats(s);
    store_vec<float, 4>(row + c0, x);
    return;
  }
  RUDNN_UNROLL
  for (int j = 0; j < 4; ++j)
    if (c0 + j < value_dim) row[c0 + j] = s[j];
}

template <class T>
RUDNN_DEVICE void store_output(T* row, const float (&o)[4], i64 c0, i64 value_dim, bool vec) {
  if (vec && c0 < value_dim) {
    Vec<T, 4> x;
    x.set_floats(o);
    store_vec<T, 4>(row + c0, x);
    return;
  }
  RUDNN_UNROLL
  for (int j = 0; j < 4; ++j)
    if (c0 + j < value_dim) row[c0 + j] = from_float<T>(o[j]);
}

}  // namespace recurrent_detail

template <class T, class G, class Policy>
RUDNN_DEVICE void gated_delta_recurrent(const T* RUDNN_RESTRICT query, const T* RUDNN_RESTRICT key,
                                        const T* RUDNN_RESTRICT value, const G* RUDNN_RESTRICT beta,
                                        const G* RUDNN_RESTRICT log_decay, const float* initial_state,
                                        T* RUDNN_RESTRICT output, float* final_state, i64 batch, i64 heads, i64 seq,
                                        i64 key_dim, i64 value_dim, float query_scale) {
  using P = Policy;
  constexpr int kRows = P::kRows;
  constexpr int kSteps = P::kStepsV;
  float* stage = dynamic_shared<float>();
  float* partials = stage + kSteps * P::kStageStride;

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int tv = lane & 7;
  const int tk = (lane >> 3) + 4 * warp;
  const int kdim = static_cast<int>(key_dim);
  const bool vec = value_dim % 4 == 0;
  const i64 slices = (value_dim + P::kColumns - 1) / P::kColumns;
  const i64 items = batch * heads * slices;

  for (i64 item = linear_block(); item < items; item += block_count()) {
    const i64 bh = item / slices;
    const i64 v0 = (item - bh * slices) * P::kColumns;
    const i64 c0 = v0 + 4 * tv;  // this thread's first column

    float s[kRows][4];
    RUDNN_UNROLL
    for (int i = 0; i < kRows; ++i) {
      const int r = tk + P::kRowGroups * i;
      if (initial_state != nullptr && r < kdim) {
        recurrent_detail::load_state_row(s[i], initial_state + (bh * key_dim + r) * value_dim, c0, value_dim, vec);
      } else {
        RUDNN_UNROLL
        for (int j = 0; j < 4; ++j) s[i][j] = 0.0f;
      }
    }

    int parity = 0;
    for (i64 t0 = 0; t0 < seq; t0 += kSteps) {
      const int n = static_cast<int>(min_i64(kSteps, seq - t0));
      const i64 row0 = bh * seq + t0;  // first (b, h, t) row of this stage
      __syncthreads();                 // the previous stage (or item) has been consumed
      stage_rows(stage, P::kStageStride, key + row0 * key_dim, key_dim, n, kdim, kSteps, P::kMaxK, 1.0f, tid,
                 P::kThreads);
      stage_rows(stage + P::kMaxK, P::kStageStride, query + row0 * key_dim, key_dim, n, kdim, kSteps, P::kMaxK,
                 query_scale, tid, P::kThreads);
      stage_rows(stage + 2 * P::kMaxK, P::kStageStride, value + row0 * value_dim + v0, value_dim, n,
                 static_cast<int>(min_i64(P::kColumns, value_dim - v0)), kSteps, P::kColumns, 1.0f, tid, P::kThreads);
      stage_rows(stage + 2 * P::kMaxK + P::kColumns, P::kStageStride, beta + row0, 1, n, 1, kSteps, 1, 1.0f, tid,
                 P::kThreads);
      stage_rows(stage + 2 * P::kMaxK + P::kColumns + 1, P::kStageStride, log_decay + row0, 1, n, 1, kSteps, 1, 1.0f,
                 tid, P::kThreads);
      __syncthreads();

      for (int st = 0; st < n; ++st) {
        const float* sk = stage + st * P::kStageStride;
        const float* sq = sk + P::kMaxK;
        const float* sv = sq + P::kMaxK;
        const float b = sv[P::kColumns];
        const float decay = expf(sv[P::kColumns + 1]);

        // Partial r, p over this thread's rows of the decayed state, and κ over its keys.
        float red[P::kReduceValues];
        RUDNN_UNROLL
        for (int x = 0; x < P::kReduceValues; ++x) red[x] = 0.0f;
        RUDNN_UNROLL
        for (int i = 0; i < kRows; ++i) {
          const int r = tk + P::kRowGroups * i;
          const float kr = sk[r];
          const float qr = sq[r];
          RUDNN_UNROLL
          for (int j = 0; j < 4; ++j) {
            s[i][j] *= decay;
            red[j] += s[i][j] * kr;
            red[4 + j] += s[i][j] * qr;
          }
          red[8] += kr * qr;
        }
        // Sum over the 4 row groups of the warp (lanes 8 and 16 apart share tv).
        RUDNN_UNROLL
        for (int m = 8; m <= 16; m *= 2) {
          RUDNN_UNROLL
          for (int x = 0; x < P::kReduceValues; ++x) red[x] += __shfl_xor_sync(0xffffffffu, red[x], m);
        }
        if constexpr (P::kWarpsV > 1) {
          float* buf = partials + parity * (P::kWarpsV * 8 * P::kReduceValues);
          parity ^= 1;
          if (lane < 8) {
            RUDNN_UNROLL
            for (int x = 0; x < P::kReduceValues; ++x) buf[(warp * 8 + tv) * P::kReduceValues + x] = red[x];
          }
          __syncthreads();
          RUDNN_UNROLL
          for (int x = 0; x < P::kReduceValues; ++x) red[x] = buf[tv * P::kReduceValues + x];
          for (int w = 1; w < P::kWarpsV; ++w) {
            RUDNN_UNROLL
            for (int x = 0; x < P::kReduceValues; ++x) red[x] += buf[(w * 8 + tv) * P::kReduceValues + x];
          }
        }

        float u[4], o[4];
        RUDNN_UNROLL
        for (int j = 0; j < 4; ++j) {
          u[j] = b * (sv[4 * tv + j] - red[j]);
          o[j] = red[4 + j] + red[8] * u[j];
        }
        if (tk == 0) recurrent_detail::store_output(output + (row0 + st) * value_dim, o, c0, value_dim, vec);
        RUDNN_UNROLL
        for (int i = 0; i < kRows; ++i) {
          const float kr = sk[tk + P::kRowGroups * i];
          RUDNN_UNROLL
          for (int j = 0; j < 4; ++j) s[i][j] += kr * u[j];
        }
      }
    }

    RUDNN_UNROLL
    for (int i = 0; i < kRows; ++i) {
      const int r = tk + P::kRowGroups * i;
      if (r < kdim)
        recurrent_detail::store_state_row(final_state + (bh * key_dim + r) * value_dim, s[i], c0, value_dim, vec);
    }
  }
}

}  // namespace rudnn::gated_delta
