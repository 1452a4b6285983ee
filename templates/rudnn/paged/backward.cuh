#pragma once
// Paged attention and MLA backward on plain cores, the atomic path (SPEC §9): any float dtype, D + Pr
// and Dv up to 1024 + 256. Probabilities are recomputed from the row's log-sum-exp, which the kernel
// recomputes itself (decision: the forward saves nothing; docs/paged_attention.md); the score matrix is
// never stored.
//
// Work items: (query row, query head), one warp each, lanes along the columns (column c of a row is
// held by lane c mod 32: coalesced row reads). Per item, over the keys the row sees (its sequence's
// length, or its position + 1 when causal), gathered through the page table:
//   pass 1  s_j = scale·q·k_j; online softmax: m, ℓ and O = Σ_j e^(s_j − m) v_j (registers);
//           then lse = m + ln ℓ and δ = dO·O / ℓ (= rowsum(P ⊙ dP))
//   pass 2  p_j = e^(s_j − lse), dp_j = dO·v_j, ds_j = p_j (dp_j − δ);
//           dq += scale·ds_j·k_j (registers), dk_j += scale·ds_j·q and dv_j += p_j·dO (FP32 atomics
//           into the history scratch: many rows and heads reach one key)
// A row that sees no key gets dq = 0 and adds nothing.
//
// MLA (kValueFromKey): the key rows are (latent [R], key_rope [Pr]) and the values are the latent rows,
// so the value gradient p_j·dO lands in dk's first R columns (dlatent holds both contributions) and dv
// is unused. Attention: key_rope, query_rope, dq_rope and dk_rope are null with rope_dim 0.
//
// Then paged_round_gradients turns the FP32 scratch into the T gradients (slots no visible key reaches
// stay 0: the scratch is zeroed by paged_zero first). The atomics make the history gradients'
// summation order, and so their last bits, depend on scheduling: not bitwise deterministic (SPEC §9;
// the ordered path is the deterministic one). dq is deterministic.
//
// Parameters (launch order): q, q_rope, k, k_rope, v, grad_out, page_table, lengths, sequence_ids,
// positions, dq, dq_rope, dk, dk_rope, dv, queries, q_heads, kv_heads, head_dim, rope_dim, value_dim,
// page_size, table_stride, causal (i64), scale (float).
// Launch: Policy::kThreads threads; grid ⌈queries · Hq / kWarps⌉ (strided over the linear block index);
// no shared memory. Requirements: head_dim + rope_dim ≤ 32·kKeyPerLane and value_dim ≤
// 32·kValuePerLane (else trap); MLA value_dim ≤ head_dim.
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/paged/schedule.cuh"
#include "rudnn/reduce.cuh"

namespace rudnn::paged {

// kKeyPerLane: the columns of a query/key row (D + Pr) each lane holds; kValuePerLane: those of a
// value/output row (Dv).
template <int kWarps, int kKeyPerLane, int kValuePerLane, bool kValueFromKey>
struct BackwardPolicy {
  static_assert(kWarps >= 1 && kWarps <= 32, "paged::BackwardPolicy: 1..32 warps");
  static_assert(kKeyPerLane >= 1 && kKeyPerLane <= 40, "paged::BackwardPolicy: at most 40 key columns per lane");
  static_assert(kValuePerLane >= 1 && kValuePerLane <= 32, "paged::BackwardPolicy: at most 32 value columns per lane");
  static constexpr int kThreads = 32 * kWarps, kWarpsPerBlock = kWarps;
  static constexpr int kKeyColumns = kKeyPerLane, kValueColumns = kValuePerLane;
  static constexpr bool kValueIsKey = kValueFromKey;
};

namespace backward_detail {

// One row of two segments as a lane sees it: columns c = lane + 32·i, [0, len_a) from a, then
// [len_a, len_a + len_b) from b.
template <int kPerLane, class T>
RUDNN_DEVICE void load_row(float (&dst)[kPerLane], const T* a, i64 len_a, const T* b, i64 len_b, int lane) {
  RUDNN_UNROLL
  for (int i = 0; i < kPerLane; ++i) {
    const i64 c = lane + 32 * i;
    dst[i] = c < len_a ? to_float(a[c]) : c < len_a + len_b ? to_float(b[c - len_a]) : 0.0f;
  }
}

// Σ_c x[c]·(a, b)[c] over the warp.
template <int kPerLane, class T>
RUDNN_DEVICE float dot_row(const float (&x)[kPerLane], const T* a, i64 len_a, const T* b, i64 len_b, int lane) {
  float s = 0.0f;
  RUDNN_UNROLL
  for (int i = 0; i < kPerLane; ++i) {
    const i64 c = lane + 32 * i;
    if (c < len_a)
      s += x[i] * to_float(a[c]);
    else if (c < len_a + len_b)
      s += x[i] * to_float(b[c - len_a]);
  }
  return warp_sum(s);
}

// (a, b)[c] += f·x[c] (FP32 atomics).
template <int kPerLane>
RUDNN_DEVICE void add_row(float* a, i64 len_a, float* b, i64 len_b, const float (&x)[kPerLane], float f, int lane) {
  RUDNN_UNROLL
  for (int i = 0; i < kPerLane; ++i) {
    const i64 c = lane + 32 * i;
    if (c < len_a)
      atomicAdd(a + c, f * x[i]);
    else if (c < len_a + len_b)
      atomicAdd(b + c - len_a, f * x[i]);
  }
}

}  // namespace backward_detail

template <class T, class P>
RUDNN_DEVICE void paged_attention_backward_unit(const T* q, const T* q_rope, const T* k, const T* k_rope, const T* v,
                                                const T* grad_out, const i32* page_table, const i32* lengths,
                                                const i32* sequence_ids, const i32* positions, T* dq, T* dq_rope,
                                                float* dk, float* dk_rope, float* dv, i64 queries, i64 q_heads,
                                                i64 kv_heads, i64 head_dim, i64 rope_dim, i64 value_dim, i64 page_size,
                                                i64 table_stride, i64 causal, float scale) {
  using namespace backward_detail;
  constexpr int kK = P::kKeyColumns, kV = P::kValueColumns;
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_attention_backward_unit: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim + rope_dim > 32 * kK || value_dim > 32 * kV || (P::kValueIsKey && value_dim > head_dim))
    trap("rudnn::paged::paged_attention_backward_unit: the row is wider than the policy's columns");
  const Schedule sched{page_table, lengths, sequence_ids, positions, table_stride, page_size};
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const i64 group = div32(q_heads, kv_heads);
  const i64 items = queries * q_heads;
  for (i64 item = linear_block() * P::kWarpsPerBlock + warp; item < items;
       item += static_cast<i64>(block_count()) * P::kWarpsPerBlock) {
    const i64 row = div32(item, q_heads), head = item - row * q_heads, kvh = div32(head, group);
    const i64 seq = sched.sequence(row);
    const i64 length = sched.length(seq);
    const i64 stop = causal ? min_i64(length, sched.position(row) + 1) : length;
    const i64 qi = row * q_heads + head;
    float qv[kK], go[kV], acc[kK];  // acc: O (its first kV columns) in pass 1, dq in pass 2
    load_row(qv, q + qi * head_dim, head_dim, q_rope ? q_rope + qi * rope_dim : nullptr, rope_dim, lane);
    load_row(go, grad_out + qi * value_dim, value_dim, static_cast<const T*>(nullptr), 0, lane);
    auto key_of = [&](i64 j) { return sched.cache_row(seq, j) * kv_heads + kvh; };
    auto value_of = [&](i64 cache) -> const T* {
      return P::kValueIsKey ? k + cache * head_dim : v + cache * value_dim;
    };
    auto score = [&](i64 cache) {
      return scale *
             dot_row(qv, k + cache * head_dim, head_dim, k_rope ? k_rope + cache * rope_dim : nullptr, rope_dim, lane);
    };

    // Pass 1: the row's softmax statistics and its (unnormalized) output.
    float m = negative_infinity(), l = 0.0f;
    RUDNN_UNROLL
    for (int i = 0; i < kV; ++i) acc[i] = 0.0f;
    for (i64 j = 0; j < stop; ++j) {
      const i64 cache = key_of(j);
      const float s = score(cache);
      const float m_new = s > m ? s : m;
      const float alpha = expf(m - m_new), p = expf(s - m_new);
      l = l * alpha + p;
      const T* vr = value_of(cache);
      RUDNN_UNROLL
      for (int i = 0; i < kV; ++i) {
        const i64 c = lane + 32 * i;
        acc[i] = acc[i] * alpha + (c < value_dim ? p * to_float(vr[c]) : 0.0f);
      }
      m = m_new;
    }
    float delta_part = 0.0f;
    RUDNN_UNROLL
    for (int i = 0; i < kV; ++i) delta_part += go[i] * acc[i];
    const float delta = stop > 0 ? warp_sum(delta_part) / l : 0.0f;
    const float lse = stop > 0 ? m + logf(l) : 0.0f;

    // Pass 2: the gradients.
    RUDNN_UNROLL
    for (int i = 0; i < kK; ++i) acc[i] = 0.0f;  // now dq
    for (i64 j = 0; j < stop; ++j) {
      const i64 cache = key_of(j);
      const float p = expf(score(cache) - lse);
      const T* vr = value_of(cache);
      const float dp = dot_row(go, vr, value_dim, static_cast<const T*>(nullptr), 0, lane);
      const float ds = p * (dp - delta);
      const T* kr = k + cache * head_dim;
      const T* kpr = k_rope ? k_rope + cache * rope_dim : nullptr;
      RUDNN_UNROLL
      for (int i = 0; i < kK; ++i) {
        const i64 c = lane + 32 * i;
        const float kc = c < head_dim ? to_float(kr[c]) : c < head_dim + rope_dim ? to_float(kpr[c - head_dim]) : 0.0f;
        acc[i] += scale * ds * kc;
      }
      add_row(dk + cache * head_dim, head_dim, dk_rope ? dk_rope + cache * rope_dim : nullptr, rope_dim, qv, scale * ds,
              lane);
      if (P::kValueIsKey)
        add_row(dk + cache * head_dim, value_dim, static_cast<float*>(nullptr), 0, go, p, lane);
      else
        add_row(dv + cache * value_dim, value_dim, static_cast<float*>(nullptr), 0, go, p, lane);
    }
    RUDNN_UNROLL
    for (int i = 0; i < kK; ++i) {
      const i64 c = lane + 32 * i;
      if (c < head_dim)
        dq[qi * head_dim + c] = from_float<T>(acc[i]);
      else if (c < head_dim + rope_dim)
        dq_rope[qi * rope_dim + c - head_dim] = from_float<T>(acc[i]);
    }
  }
}

// out[e] = 0 for e < elements (the history scratch before the atomics). kThreads threads a block
// (another block size traps), any grid.
template <int kThreads>
RUDNN_DEVICE void paged_zero(float* out, i64 elements) {
  if (blockDim.x != static_cast<unsigned>(kThreads)) trap("rudnn::paged::paged_zero: blockDim must be kThreads");
  const i64 stride = static_cast<i64>(block_count()) * kThreads;
  for (i64 e = linear_block() * kThreads + threadIdx.x; e < elements; e += stride) out[e] = 0.0f;
}

// out[e] = scratch[e] rounded to T. kThreads threads a block, any grid.
template <class T, int kThreads>
RUDNN_DEVICE void paged_round_gradients(const float* scratch, T* out, i64 elements) {
  if (blockDim.x != static_cast<unsigned>(kThreads))
    trap("rudnn::paged::paged_round_gradients: blockDim must be kThreads");
  const i64 stride = static_cast<i64>(block_count()) * kThreads;
  for (i64 e = linear_block() * kThreads + threadIdx.x; e < elements; e += stride) out[e] = from_float<T>(scratch[e]);
}

}  // namespace rudnn::paged
