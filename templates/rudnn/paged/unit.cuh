#pragma once
// Paged attention and MLA on plain cores (SPEC §8): one kernel for packed variable-length prefill
// and decode rows, any float dtype, D + Pr and Dv up to 1024. FP32 online softmax in the log2
// domain, as FlashUnit (attention/flash_unit.cuh), whose per-row state it shares.
//
// Work items. An item is (query row, kv head, split); the rows that start a query tile
// (Schedule::starts_tile, at most R = max(1, kBlockM / group) rows of one sequence at consecutive
// positions, group = Hq / Hkv) are served, the others skip. A tile's panel rows are (row, head of
// the kv head's group), all group heads of a row side by side, so decode with GQA fills the block
// with the heads that share a K/V tile and each key tile is read once for all of them. When the
// group alone exceeds kBlockM the panel is served in chunks of kBlockM (each re-reads the tiles).
// Keys are gathered from the physical pages row by row (paged/schedule.cuh) into FP32 tiles of
// kBlockN keys, from the split's first key, so a row's key tiles — and its result, bit for bit —
// do not depend on the other rows of its group or the batch. A key a row does not see (past its
// sequence's length or, causal, past its position) scores −inf.
//
// MLA is the same kernel with a second (rope) part on the query and key rows: scores =
// scale · (q·latent + qp·kp); the values are the latent rows, i.e. the staged keys' first Dv columns
// (kValueFromKey: no value tile).
//
// Output: unsplit, out [queries, Hq, Dv] in T (a row that sees no key is zeros); split, the FP32
// partials of paged/schedule.cuh's SplitPartials, merged by paged/merge.cuh.
//
// Parameters (launch order): q, q_rope, k, k_rope, v, page_table, lengths, sequence_ids, positions,
// out, partial, queries, q_heads, kv_heads, head_dim, rope_dim, value_dim, page_size, table_stride,
// splits, causal (i64), scale (float). q_rope/k_rope are null with rope_dim 0; v is null with
// kValueFromKey; partial is null unsplit, out null split.
//
// Launch geometry: Policy::kThreads threads; grid queries · Hkv · splits items (strided over the
// linear block index); dynamic shared memory shared_memory::paged_unit (paged/shared_memory.h).
#include "rudnn/attention/flash_unit.cuh"
#include "rudnn/paged/schedule.cuh"
#include "rudnn/paged/shared_memory.h"

namespace rudnn::paged {

template <int kBlockM, int kBlockN, int kThreadsPerRow, int kMaxValueDim, bool kValueFromKey>
struct UnitPolicy {
  static_assert(kThreadsPerRow >= 1 && kThreadsPerRow <= 32 && (kThreadsPerRow & (kThreadsPerRow - 1)) == 0,
                "paged::UnitPolicy: a row's threads are a power of two within one warp");
  static_assert(kBlockN % kThreadsPerRow == 0 && kBlockN % 4 == 0,
                "paged::UnitPolicy: the key tile splits evenly over a row's threads, in fours");
  static_assert(kMaxValueDim % kThreadsPerRow == 0 && kMaxValueDim <= 1024 && kMaxValueDim / kThreadsPerRow <= 64,
                "paged::UnitPolicy: at most 64 value columns per thread (paged_config::kMaxValuesPerLane)");
  static constexpr int kBM = kBlockM, kBN = kBlockN, kTPR = kThreadsPerRow, kMaxDv = kMaxValueDim;
  static constexpr bool kValueIsKey = kValueFromKey;
  static constexpr int kThreads = kBlockM * kThreadsPerRow;
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "paged::UnitPolicy: whole warps, at most 1024 threads");
  static constexpr int kKeysPerThread = kBlockN / kThreadsPerRow;
  static constexpr int kValuesPerThread = kMaxValueDim / kThreadsPerRow;
  static constexpr int kStrideP = kBlockN + 4;

  RUDNN_DEVICE static constexpr i64 shared_bytes(i64 head_dim, i64 rope_dim, i64 value_dim) {
    return shared_memory::paged_unit(kBlockM, kBlockN, head_dim, rope_dim, value_dim, kValueFromKey);
  }
};

namespace unit_detail {

// Two source segments of one staged row: `a` [len_a] then `b` [len_b] (b may be null when len_b = 0).
template <class T>
struct RowSource {
  const T* a;
  const T* b;
};

// Stages kRows rows into FP32 rows of `stride` floats: row r < count from `source(r)` (columns
// [0, len_a) from a, [len_a, len_a + len_b) from b), zeros in columns up to `padded` and in rows
// [count, kRows). One warp per row at a time, lanes along the row.
template <int kRows, int kThreads, class T, class Source>
RUDNN_DEVICE void stage(float* dst, i64 stride, i64 count, i64 len_a, i64 len_b, i64 padded, int tid, Source source) {
  const int lane = tid & 31;
  for (int r = tid >> 5; r < kRows; r += kThreads / 32) {
    float* d = dst + r * stride;
    if (r < count) {
      const RowSource<T> s = source(r);
      for (i64 c = lane; c < padded; c += 32)
        d[c] = c < len_a ? to_float(s.a[c]) : c < len_a + len_b ? to_float(s.b[c - len_a]) : 0.0f;
    } else {
      for (i64 c = lane; c < padded; c += 32) d[c] = 0.0f;
    }
  }
}

}  // namespace unit_detail

template <class T, class P>
RUDNN_DEVICE void paged_attention_unit(const T* q, const T* q_rope, const T* k, const T* k_rope, const T* v,
                                       const i32* page_table, const i32* lengths, const i32* sequence_ids,
                                       const i32* positions, T* out, float* partial, i64 queries, i64 q_heads,
                                       i64 kv_heads, i64 head_dim, i64 rope_dim, i64 value_dim, i64 page_size,
                                       i64 table_stride, i64 splits, i64 causal, float scale) {
  using unit_detail::RowSource;
  // Columns past kMaxValueDim would have no accumulator: refuse rather than drop them.
  if (value_dim > P::kMaxDv) trap("paged_attention_unit: value_dim exceeds the policy's kMaxValueDim");
  const Schedule sched{page_table, lengths, sequence_ids, positions, table_stride, page_size};
  const SplitPartials parts{partial, queries, q_heads, value_dim, splits};
  const i64 D = head_dim, Pr = rope_dim, Dk = head_dim + rope_dim, Dv = value_dim;
  const i64 group = div32(q_heads, kv_heads);
  const i64 ds = shared_memory::flash_unit_stride_qk(Dk);
  const i64 dk_padded = (Dk + 3) / 4 * 4;
  const float scale_log2 = scale * kLog2e;
  const i64 rows_per_tile = max_i64(1, div32(P::kBM, group));
  const i64 items = queries * kv_heads * splits;

  float* sq = dynamic_shared<float>();    // [kBM][ds]
  float* sk = sq + P::kBM * ds;           // [kBN][ds]
  float* sp = sk + P::kBN * ds;           // [kBM][kStrideP]
  float* sv = sp + P::kBM * P::kStrideP;  // [kBN][Dv], or the keys' first Dv columns
  const i64 v_stride = P::kValueIsKey ? ds : Dv;
  if (P::kValueIsKey) sv = sk;

  const int tid = static_cast<int>(threadIdx.x);
  const int row = tid / P::kTPR;  // row of the block tile
  const int sub = tid % P::kTPR;  // lane within the row's group
  const int values = static_cast<int>((Dv - sub + P::kTPR - 1) / P::kTPR);

  for (i64 item = linear_block(); item < items; item += block_count()) {
    QueryTile work;
    if (!sched.query_tile(item, queries, kv_heads, splits, rows_per_tile, causal, work)) continue;  // uniform
    {
      const i64 split = work.split, kvh = work.kv_head, run0 = work.run0, seq = work.sequence, stop = work.stop;
      const KeyRange& range = work.keys;
      const i64 panel = (work.run1 - run0) * group;
      for (i64 m0 = 0; m0 < panel; m0 += P::kBM) {
        const i64 rows = min_i64(P::kBM, panel - m0);
        const bool live = row < rows;
        const i64 my_row = run0 + div32(m0 + (live ? row : 0), group);
        const i64 my_head = kvh * group + mod32(m0 + (live ? row : 0), group);
        const i64 my_end = causal ? min_i64(range.hi, sched.position(my_row) + 1) : range.hi;

        __syncthreads();  // the previous chunk's readers of sq are done
        unit_detail::stage<P::kBM, P::kThreads, T>(sq, ds, rows, D, Pr, dk_padded, tid, [&](int r) {
          const i64 qr = run0 + div32(m0 + r, group), h = kvh * group + mod32(m0 + r, group);
          return RowSource<T>{q + (qr * q_heads + h) * D, Pr ? q_rope + (qr * q_heads + h) * Pr : nullptr};
        });

        attention::flash_unit_detail::OnlineRow<P::kTPR> state;
        float acc[P::kValuesPerThread];
        RUDNN_UNROLL
        for (int u = 0; u < P::kValuesPerThread; ++u) acc[u] = 0.0f;

        for (i64 key0 = range.lo; key0 < stop; key0 += P::kBN) {
          const i64 keys = min_i64(P::kBN, stop - key0);
          __syncthreads();  // sk, sv and sp of the previous key tile have been read
          unit_detail::stage<P::kBN, P::kThreads, T>(sk, ds, keys, D, Pr, dk_padded, tid, [&](int r) {
            const i64 cache_row = sched.head_row(seq, key0 + r, kv_heads, kvh);
            return RowSource<T>{k + cache_row * D, Pr ? k_rope + cache_row * Pr : nullptr};
          });
          if (!P::kValueIsKey)
            unit_detail::stage<P::kBN, P::kThreads, T>(sv, Dv, keys, Dv, 0, Dv, tid, [&](int r) {
              const i64 cache_row = sched.head_row(seq, key0 + r, kv_heads, kvh);
              return RowSource<T>{v + cache_row * Dv, nullptr};
            });
          __syncthreads();

          // Scores of this lane's keys key0 + sub + t·kTPR, in the log2 domain.
          float s[P::kKeysPerThread];
          RUDNN_UNROLL
          for (int t = 0; t < P::kKeysPerThread; ++t) s[t] = 0.0f;
          const float* qrow = sq + row * ds;
          RUDNN_ROLLED
          for (i64 d = 0; d < dk_padded; d += 4) {
            const Floats4 qv = load_floats4(qrow + d);
            RUDNN_UNROLL
            for (int t = 0; t < P::kKeysPerThread; ++t) {
              const Floats4 kv = load_floats4(sk + (sub + t * P::kTPR) * ds + d);
              s[t] += qv.v[0] * kv.v[0] + qv.v[1] * kv.v[1] + qv.v[2] * kv.v[2] + qv.v[3] * kv.v[3];
            }
          }
          RUDNN_UNROLL
          for (int t = 0; t < P::kKeysPerThread; ++t) {
            const i64 key = key0 + sub + t * P::kTPR;
            s[t] = live && key < my_end ? s[t] * scale_log2 : negative_infinity();
          }

          const float rescale = state.absorb(s);
          RUDNN_UNROLL
          for (int u = 0; u < P::kValuesPerThread; ++u) acc[u] *= rescale;

          // Hand the row's probabilities to all its lanes, then acc[u] += Σ_j p_j · V[j, sub + u·kTPR].
          float* prow = sp + row * P::kStrideP;
          RUDNN_UNROLL
          for (int t = 0; t < P::kKeysPerThread; ++t) prow[sub + t * P::kTPR] = s[t];
          __syncwarp(0xffffffffu);
          RUDNN_ROLLED
          for (int j = 0; j < P::kBN; j += 4) {
            const Floats4 p4 = load_floats4(prow + j);
            RUDNN_UNROLL
            for (int jj = 0; jj < 4; ++jj) {
              const float* vrow = sv + (j + jj) * v_stride + sub;
              RUDNN_UNROLL
              for (int u = 0; u < P::kValuesPerThread; ++u)
                if (u < values) acc[u] += p4.v[jj] * vrow[u * P::kTPR];
            }
          }
        }

        // Epilogue: divide by the row sum; a row that kept no key (sum 0) writes zeros (and, split,
        // a log-sum-exp of −inf so that the merge gives it no weight).
        if (live) {
          const float inv = state.sum > 0.0f ? 1.0f / state.sum : 0.0f;
          if (partial) {
            float* orow = parts.output(split, my_row, my_head);
            RUDNN_UNROLL
            for (int u = 0; u < P::kValuesPerThread; ++u)
              if (u < values) orow[sub + u * P::kTPR] = acc[u] * inv;
            if (sub == 0)
              *parts.lse(split, my_row, my_head) =
                  state.sum > 0.0f ? state.max + log2f(state.sum) : negative_infinity();
          } else {
            T* orow = out + (my_row * q_heads + my_head) * Dv;
            RUDNN_UNROLL
            for (int u = 0; u < P::kValuesPerThread; ++u)
              if (u < values) orow[sub + u * P::kTPR] = from_float<T>(acc[u] * inv);
          }
        }
      }
    }
  }
}

}  // namespace rudnn::paged
