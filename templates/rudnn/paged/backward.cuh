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
// Outputs not asked for (SPEC §9's selected outputs) are null and skipped; row_stats, when not null,
// receives each (row, head)'s (lse, δ) for the ordered path's history kernel (below).
//
// Parameters (launch order): q, q_rope, k, k_rope, v, grad_out, page_table, lengths, sequence_ids,
// positions, dq, dq_rope, dk, dk_rope, dv, row_stats, queries, q_heads, kv_heads, head_dim, rope_dim,
// value_dim, page_size, table_stride, causal (i64), scale (float).
// Launch: Policy::kThreads threads; grid ⌈queries · Hq / kWarps⌉ (strided over the linear block index);
// no shared memory. Requirements: head_dim + rope_dim ≤ 32·kKeyPerLane and value_dim ≤
// 32·kValuePerLane (else trap); MLA value_dim ≤ head_dim.
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/paged/schedule.cuh"
#include "rudnn/paged/shared_memory.h"
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

// (a, b)[c] += f·x[c] (FP32 atomics); a null segment (an output not asked for) is skipped.
template <int kPerLane>
RUDNN_DEVICE void add_row(float* a, i64 len_a, float* b, i64 len_b, const float (&x)[kPerLane], float f, int lane) {
  RUDNN_UNROLL
  for (int i = 0; i < kPerLane; ++i) {
    const i64 c = lane + 32 * i;
    if (c < len_a) {
      if (a) atomicAdd(a + c, f * x[i]);
    } else if (c < len_a + len_b) {
      if (b) atomicAdd(b + c - len_a, f * x[i]);
    }
  }
}

// The history kernel's visiting (row, head) item: its q row (D + Pr columns) and dO row (Dv), read
// from global memory or from the shared stage (the same floats either way).
template <class T>
struct GlobalItem {
  const T* q;       // the row's head columns
  const T* q_rope;  // its rope columns (null without)
  const T* grad_out;
  i64 head_dim, width, value_dim;
  RUDNN_DEVICE float q_at(i64 c) const {
    return c < head_dim ? to_float(q[c]) : c < width ? to_float(q_rope[c - head_dim]) : 0.0f;
  }
  RUDNN_DEVICE float go_at(i64 c) const { return c < value_dim ? to_float(grad_out[c]) : 0.0f; }
};
struct StagedItem {
  const float* item;
  int value_offset;
  RUDNN_DEVICE float q_at(i64 c) const { return item[c]; }
  RUDNN_DEVICE float go_at(i64 c) const { return item[value_offset + c]; }
};

// One visit of a key by a (row, head) item: p = e^(scale·q·k − lse), ds = p(dO·v − δ);
// dkey += scale·ds·q, and p·dO into dvalue (into dkey's first Dv columns when the values are the
// keys).
template <class P, class Item>
RUDNN_DEVICE void visit_item(const Item& it, float lse, float delta, float scale, const float (&key)[P::kKeyColumns],
                             const float (&value)[P::kValueColumns], float (&dkey)[P::kKeyColumns],
                             float (&dvalue)[P::kValueColumns], int lane) {
  float sp = 0.0f, dpp = 0.0f;
  RUDNN_UNROLL
  for (int i = 0; i < P::kKeyColumns; ++i) sp += it.q_at(lane + 32 * i) * key[i];
  RUDNN_UNROLL
  for (int i = 0; i < P::kValueColumns; ++i) dpp += it.go_at(lane + 32 * i) * value[i];
  const float p = expf(scale * warp_sum(sp) - lse);
  const float ds = p * (warp_sum(dpp) - delta);
  RUDNN_UNROLL
  for (int i = 0; i < P::kKeyColumns; ++i) dkey[i] += scale * ds * it.q_at(lane + 32 * i);
  RUDNN_UNROLL
  for (int i = 0; i < P::kValueColumns; ++i) {
    if (P::kValueIsKey)
      dkey[i] += p * it.go_at(lane + 32 * i);
    else
      dvalue[i] += p * it.go_at(lane + 32 * i);
  }
}

}  // namespace backward_detail

template <class T, class P>
RUDNN_DEVICE void paged_attention_backward_unit(const T* q, const T* q_rope, const T* k, const T* k_rope, const T* v,
                                                const T* grad_out, const i32* page_table, const i32* lengths,
                                                const i32* sequence_ids, const i32* positions, T* dq, T* dq_rope,
                                                float* dk, float* dk_rope, float* dv, float* row_stats, i64 queries,
                                                i64 q_heads, i64 kv_heads, i64 head_dim, i64 rope_dim, i64 value_dim,
                                                i64 page_size, i64 table_stride, i64 causal, float scale) {
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
    auto key_of = [&](i64 j) { return sched.head_row(seq, j, kv_heads, kvh); };
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
    if (row_stats && lane == 0) {
      row_stats[2 * qi] = lse;
      row_stats[2 * qi + 1] = delta;
    }
    if (!dq && !dq_rope && !dk && !dk_rope && !dv) continue;  // the statistics were all that was asked

    // Pass 2: the gradients.
    RUDNN_UNROLL
    for (int i = 0; i < kK; ++i) acc[i] = 0.0f;  // now dq
    const bool value_grad = P::kValueIsKey ? dk != nullptr : dv != nullptr;
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
      add_row(dk ? dk + cache * head_dim : nullptr, head_dim, dk_rope ? dk_rope + cache * rope_dim : nullptr, rope_dim,
              qv, scale * ds, lane);
      if (value_grad)
        add_row(P::kValueIsKey ? dk + cache * head_dim : dv + cache * value_dim, value_dim,
                static_cast<float*>(nullptr), 0, go, p, lane);
    }
    RUDNN_UNROLL
    for (int i = 0; i < kK; ++i) {
      const i64 c = lane + 32 * i;
      if (c < head_dim) {
        if (dq) dq[qi * head_dim + c] = from_float<T>(acc[i]);
      } else if (c < head_dim + rope_dim) {
        if (dq_rope) dq_rope[qi * rope_dim + c - head_dim] = from_float<T>(acc[i]);
      }
    }
  }
}

// ---- The ordered path (SPEC §9's deterministic backward): no floating-point atomics.
//
// paged_attention_backward_unit runs first with the history outputs null and row_stats set: it writes
// dq and each (row, head)'s (lse, δ). Then paged_attention_backward_history computes the history
// gradients key by key: one block per (physical page, kv head), its warps one slot of the page each
// (slots slot0 + warp, slot0 stepping by kWarps). A warp holds its key and value row and their
// gradients in registers and visits, in a fixed order, every (query row, head) that reads the slot:
// the page's readers (sequence s, logical page j) by ascending (s, j), then s's query rows
// ascending, then the kv group's heads ascending. A visit adds scale·ds·q to dk and p·dO to dv
// with p = e^(s − lse) and ds = p(dO·v − δ). The sum's order is the schedule's, never the
// scheduler's: the same bits on every run.
//
// The history index (built on the host, docs/paged_attention.md), I32, one array in sections:
//   reader_offsets [pages + 1] | row_offsets [sequences + 1] | rows [queries] | readers [2·n]
// readers[2e], readers[2e + 1] = (s, j) for e in [reader_offsets[p], reader_offsets[p + 1]):
// sequences with query rows whose valid length reaches logical page j, table[s][j] = p. rows lists
// the query rows of each sequence (row_offsets[s] .. row_offsets[s + 1]) in ascending order.
//
// kCompactHistory: block b takes page page_order[b / kv_heads], where page_order lists the active
// pages (those with readers) first, then the rest; without it, page b / kv_heads. Either way each
// page is one block's and the sum's order is the same: the switch moves no bit.
// kCacheRows: the visiting (row, head) items — q (D + Pr columns), dO (Dv), lse, δ as floats — are
// staged in shared memory in chunks of kStageItems and every warp of the block reads them there;
// without it each warp reads them from global memory. The same floats in the same order: again
// bitwise identical.
//
// Parameters (launch order): q, q_rope, k, k_rope, v, grad_out, lengths, positions, row_stats,
// history_index, page_order, dk, dk_rope, dv, queries, sequences, pages, q_heads, kv_heads, head_dim,
// rope_dim, value_dim, page_size, causal (i64), scale (float). Null history outputs are skipped.
// Launch: Policy::kThreads threads; grid pages · kv_heads (strided); dynamic shared memory
// shared_memory::paged_history(key_per_lane, value_per_lane, kCacheRows) bytes.
template <int kWarps, int kKeyPerLane, int kValuePerLane, bool kValueFromKey, bool kCacheRowsFlag,
          bool kCompactHistoryFlag>
struct HistoryPolicy : BackwardPolicy<kWarps, kKeyPerLane, kValuePerLane, kValueFromKey> {
  static_assert(!kValueFromKey || kValuePerLane <= kKeyPerLane,
                "paged::HistoryPolicy: the values are the keys' first columns, so they hold no more columns");
  static constexpr bool kCacheRows = kCacheRowsFlag, kCompactHistory = kCompactHistoryFlag;
  static constexpr int kItemFloats =
      static_cast<int>(shared_memory::paged_history_item_floats(kKeyPerLane, kValuePerLane));
  static constexpr int kStageItems =
      static_cast<int>(shared_memory::paged_history_stage_items(kKeyPerLane, kValuePerLane));
};

template <class T, class P>
RUDNN_DEVICE void paged_attention_backward_history(const T* q, const T* q_rope, const T* k, const T* k_rope, const T* v,
                                                   const T* grad_out, const i32* lengths, const i32* positions,
                                                   const float* row_stats, const i32* history_index,
                                                   const i32* page_order, T* dk, T* dk_rope, T* dv, i64 queries,
                                                   i64 sequences, i64 pages, i64 q_heads, i64 kv_heads, i64 head_dim,
                                                   i64 rope_dim, i64 value_dim, i64 page_size, i64 causal,
                                                   float scale) {
  using namespace backward_detail;
  constexpr int kK = P::kKeyColumns, kV = P::kValueColumns, kF = P::kItemFloats;
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_attention_backward_history: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim + rope_dim > 32 * kK || value_dim > 32 * kV || (P::kValueIsKey && value_dim > head_dim))
    trap("rudnn::paged::paged_attention_backward_history: the row is wider than the policy's columns");
  float* stage = dynamic_shared<float>();  // shared_memory::paged_history (kCacheRows)
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const i64 group = div32(q_heads, kv_heads), width = head_dim + rope_dim;
  const i32* reader_offsets = history_index;
  const i32* row_offsets = reader_offsets + pages + 1;
  const i32* rows = row_offsets + sequences + 1;
  const i32* readers = rows + queries;
  const bool value_grad = P::kValueIsKey ? dk != nullptr : dv != nullptr;
  for (i64 block = linear_block(); block < pages * kv_heads; block += block_count()) {
    const i64 order = div32(block, kv_heads), kvh = block - order * kv_heads;
    const i64 page = P::kCompactHistory ? static_cast<i64>(page_order[order]) : order;
    const i64 first = reader_offsets[page], last = reader_offsets[page + 1];
    for (i64 slot0 = 0; slot0 < page_size; slot0 += P::kWarpsPerBlock) {
      const i64 slot = slot0 + warp;
      const bool mine = slot < page_size;
      const i64 cache = ((page * page_size + (mine ? slot : 0)) * kv_heads + kvh);
      float key[kK], value[kV], dkey[kK], dvalue[kV];
      const T* kr = k + cache * head_dim;
      const T* kpr = k_rope ? k_rope + cache * rope_dim : nullptr;
      const T* vr = P::kValueIsKey ? kr : v + cache * value_dim;
      RUDNN_UNROLL
      for (int i = 0; i < kK; ++i) {
        const i64 c = lane + 32 * i;
        key[i] = c < head_dim ? to_float(kr[c]) : c < width ? to_float(kpr[c - head_dim]) : 0.0f;
        dkey[i] = 0.0f;
      }
      RUDNN_UNROLL
      for (int i = 0; i < kV; ++i) {
        const i64 c = lane + 32 * i;
        value[i] = c < value_dim ? to_float(vr[c]) : 0.0f;
        dvalue[i] = 0.0f;
      }
      for (i64 e = first; e < last; ++e) {
        const i64 s = readers[2 * e], t = readers[2 * e + 1] * page_size + slot;  // this slot's key position
        const bool reached = mine && t < lengths[s];
        const i64 r0 = row_offsets[s], items = (row_offsets[s + 1] - r0) * group;
        // The u-th visiting item: row rows[r0 + u / group], head kvh·group + u % group.
        auto row_of = [&](i64 u) { return static_cast<i64>(rows[r0 + div32(u, group)]); };
        auto index_of = [&](i64 u) { return row_of(u) * q_heads + kvh * group + mod32(u, group); };
        auto global_item = [&](i64 qi) {
          return GlobalItem<T>{
              q + qi * head_dim, q_rope ? q_rope + qi * rope_dim : nullptr, grad_out + qi * value_dim, head_dim, width,
              value_dim};
        };
        if (!P::kCacheRows) {
          for (i64 u = 0; u < items; ++u) {
            if (!reached || (causal && positions[row_of(u)] < t)) continue;
            const i64 qi = index_of(u);
            visit_item<P>(global_item(qi), row_stats[2 * qi], row_stats[2 * qi + 1], scale, key, value, dkey, dvalue,
                          lane);
          }
        } else {
          for (i64 u0 = 0; u0 < items; u0 += P::kStageItems) {
            const i64 n = min_i64(P::kStageItems, items - u0);
            __syncthreads();  // the previous chunk's readers are done
            for (i64 f = threadIdx.x; f < n * kF; f += P::kThreads) {
              const i64 u = div32(f, kF), c = f - u * kF, qi = index_of(u0 + u);
              const GlobalItem<T> item = global_item(qi);
              stage[f] = c < 32 * kK          ? item.q_at(c)
                         : c < 32 * (kK + kV) ? item.go_at(c - 32 * kK)
                                              : row_stats[2 * qi + (c - 32 * (kK + kV))];
            }
            __syncthreads();
            for (i64 u = 0; u < n; ++u) {
              if (!reached || (causal && positions[row_of(u0 + u)] < t)) continue;
              const StagedItem item{stage + u * kF, 32 * kK};
              visit_item<P>(item, item.item[32 * (kK + kV)], item.item[32 * (kK + kV) + 1], scale, key, value, dkey,
                            dvalue, lane);
            }
          }
        }
      }
      if (!mine) continue;
      RUDNN_UNROLL
      for (int i = 0; i < kK; ++i) {
        const i64 c = lane + 32 * i;
        if (c < head_dim) {
          if (dk) dk[cache * head_dim + c] = from_float<T>(dkey[i]);
        } else if (c < width) {
          if (dk_rope) dk_rope[cache * rope_dim + c - head_dim] = from_float<T>(dkey[i]);
        }
      }
      if (!P::kValueIsKey && value_grad) {
        RUDNN_UNROLL
        for (int i = 0; i < kV; ++i) {
          const i64 c = lane + 32 * i;
          if (c < value_dim) dv[cache * value_dim + c] = from_float<T>(dvalue[i]);
        }
      }
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
