#pragma once
// Paged attention backward on tensor cores (SPEC §9), mma.sync m16n8k16 for f16/bf16 with D = Dv ∈
// {64, 96, 128}: FlashAttention-2's backward over the forward's query tiles, with the K/V tiles
// gathered through the page tables. A drop-in for paged_attention_backward_unit (same parameters and
// outputs: dq in T, the history gradients as FP32 atomics into the zeroed scratch, or, with the
// history outputs null, the ordered path's row statistics), for attention (MLA: mla_backward_mma.cuh).
//
// Work items: (query row, kv head) as the forward's query tiles (Schedule::query_tile, at most
// 64 / group consecutive rows of one sequence; panel rows (row, head of the kv head's group)), in
// chunks of 64 panel rows; warp w owns panel rows 16w.. Per chunk, two passes over the key tiles
// (two cp.async stages of K and V; key tiles from key 0 to the last key any row sees):
//   pass 1  the forward (S = Q·Kᵀ, online softmax, O += P·V): each row's log2-sum-exp L and
//           δ = dO·O / ℓ (= rowsum(P ⊙ dP)), kept in the lanes that hold the row
//   pass 2  S again, P = exp2(S − L); dP = dO·Vᵀ; dS = P ⊙ (dP − δ); dQ += dS·K (registers: P and
//           dS never leave the warp for dQ); then P and dS (rounded to T) go to shared memory and
//           the block computes the key tile's dK = scale·dSᵀ·Q and dV = Pᵀ·dO — warp w the keys
//           16·(w % 2).. and the columns (w / 2)·D/2.. — and adds them to the FP32 scratch with
//           atomics (one add per key, column and query tile, not per query row as on plain cores)
// Warps whose panel rows all lie past the chunk's (decode) skip their products. Then dq = scale·dQ.
// The history sums' order depends on scheduling (the atomic path; the ordered
// path calls this kernel with dk/dv null for dq and the statistics only). A row that sees no key
// gets dq = 0, statistics (0, 0) and adds nothing.
//
// Parameters (launch order, paged_attention_backward_unit's): q, q_rope (null), k, k_rope (null),
// v, grad_out, page_table, lengths, sequence_ids, positions, dq, dq_rope (null), dk, dk_rope (null),
// dv, row_stats, queries, q_heads, kv_heads, head_dim, rope_dim, value_dim, page_size, table_stride,
// causal (i64), scale (float). Null dq, dk, dv: not computed.
// Launch: 128 threads (else trap); grid queries · Hkv items (strided over the linear block index);
// dynamic shared memory shared_memory::paged_backward_mma(kBlockN, D). Requirements: q, k, v,
// grad_out 16-byte aligned; head_dim = value_dim = kHeadDim, rope_dim = 0 (else trap).
#include "rudnn/attention/flash_mma_softmax.cuh"
#include "rudnn/attention/flash_mma_warp.cuh"
#include "rudnn/grid.cuh"
#include "rudnn/paged/gather.cuh"
#include "rudnn/paged/history_readers.cuh"
#include "rudnn/paged/schedule.cuh"
#include "rudnn/paged/shared_memory.h"
#include "rudnn/tile/accumulator.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::paged {

template <int kHeadDim, int kBlockN>
struct BackwardMmaPolicy {
  static_assert(kHeadDim == 64 || kHeadDim == 96 || kHeadDim == 128, "BackwardMmaPolicy: D = Dv in {64, 96, 128}");
  static_assert(kBlockN == 32, "BackwardMmaPolicy: 32-key tiles (two m16 key blocks for dK and dV)");
  static constexpr int kD = kHeadDim, kBM = 64, kBN = kBlockN, kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kDI = kD / 8;             // n8 tiles of O and dQ per warp
  static constexpr int kNI = kBN / 8;            // n8 tiles of S and dP per warp
  static constexpr int kHistoryTiles = kD / 16;  // n8 tiles of a warp's dK / dV block (D / 2 columns)
  static constexpr int kLd = kD + 8, kLdS = kBN + 8;
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::paged_backward_mma(kBlockN, kHeadDim));
};

namespace backward_mma_detail {

// The panel rows' operands and the key tiles in shared memory.
template <class T, class P>
struct Smem {
  T* base;
  RUDNN_DEVICE T* q() const { return base; }
  RUDNN_DEVICE T* dout() const { return base + P::kBM * P::kLd; }
  RUDNN_DEVICE T* k(int stage) const { return base + (2 * P::kBM + 2 * stage * P::kBN) * P::kLd; }
  RUDNN_DEVICE T* v(int stage) const { return k(stage) + P::kBN * P::kLd; }
  RUDNN_DEVICE T* p() const { return base + (2 * P::kBM + 4 * P::kBN) * P::kLd; }
  RUDNN_DEVICE T* ds() const { return p() + P::kBM * P::kLdS; }
};

// c[j][·] of a 1 × kNI accumulator, rounded to T, into rows 8h + lane/4 of a [16][kLdS] block.
template <class T, int kNI, int kLdS>
RUDNN_DEVICE void store_rows(T* block, const tile::Accumulator<1, kNI>& a, int lane) {
  RUDNN_UNROLL
  for (int h = 0; h < 2; ++h) RUDNN_UNROLL
  for (int j = 0; j < kNI; ++j) {
    Vec<T, 2> pair;
    pair.words[0] = pack2_from_float<T>(a.c[0][j][2 * h], a.c[0][j][2 * h + 1]);
    store_vec<T, 2>(block + (8 * h + (lane >> 2)) * kLdS + 8 * j + 2 * (lane & 3), pair);
  }
}

// acc[16 keys × kTiles·8 columns] += Aᵀ·B over the first `rows16` panel rows (a multiple of 16: the
// active warps' rows): A [rows][kLdS] (P or dS) from key column key0, B [rows][kLd] (dO or Q) from
// column col0 (both stored row-major, read with ldmatrix.trans).
template <class T, int kTiles, int kLdS, int kLd>
RUDNN_DEVICE void add_transposed_product(tile::Accumulator<1, kTiles>& acc, const T* a, int key0, const T* b, int col0,
                                         int rows16, int lane) {
  for (int r0 = 0; r0 < rows16; r0 += 16) {
    u32 frag[4];
    tile::load_a_kn(frag, a, kLdS, r0, key0, lane);
    RUDNN_UNROLL
    for (int j = 0; j < kTiles; j += 2) {
      u32 b2[2][2];
      tile::load_b_pair_kn(b2, b, kLd, r0, col0 + 8 * j, lane);
      acc.template mma_pair<T>(0, j, frag, b2);
    }
  }
}

}  // namespace backward_mma_detail

template <class T, class P>
RUDNN_DEVICE void paged_attention_backward_mma(const T* q, const T* /*q_rope*/, const T* k, const T* /*k_rope*/,
                                               const T* v, const T* grad_out, const i32* page_table, const i32* lengths,
                                               const i32* sequence_ids, const i32* positions, T* dq, T* /*dq_rope*/,
                                               float* dk, float* /*dk_rope*/, float* dv, float* row_stats, i64 queries,
                                               i64 q_heads, i64 kv_heads, i64 head_dim, i64 rope_dim, i64 value_dim,
                                               i64 page_size, i64 table_stride, i64 causal, float scale) {
  using backward_mma_detail::add_transposed_product;
  constexpr int kD = P::kD, kBM = P::kBM, kBN = P::kBN, kNI = P::kNI, kDI = P::kDI, kLd = P::kLd, kLdS = P::kLdS;
  constexpr int kHT = P::kHistoryTiles;
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_attention_backward_mma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != kD || value_dim != kD || rope_dim != 0)
    trap("rudnn::paged::paged_attention_backward_mma: head_dim = value_dim = Policy::kHeadDim, no rope");
  const Schedule sched{page_table, lengths, sequence_ids, positions, table_stride, page_size};
  const backward_mma_detail::Smem<T, P> sm{dynamic_shared<T>()};
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int warp_row0 = 16 * warp;
  const int hist_key0 = 16 * (warp & 1), hist_col0 = (warp >> 1) * (kD / 2);  // this warp's dK / dV block
  const i64 group = div32(q_heads, kv_heads);
  const i64 rows_per_tile = max_i64(1, div32(kBM, group));
  const i64 items = queries * kv_heads;
  const float scale_log2 = scale * kLog2e;
  const tile::LaneOffsets lo = tile::lane_offsets<kLd>(lane);
  const bool history = dk != nullptr || dv != nullptr;

  for (i64 item = linear_block(); item < items; item += block_count()) {
    QueryTile work;
    if (!sched.query_tile(item, queries, kv_heads, 1, rows_per_tile, causal, work)) continue;  // uniform
    const i64 kvh = work.kv_head, run0 = work.run0, seq = work.sequence, stop = work.stop;
    const KeyRange& range = work.keys;  // [0, length): unsplit
    const int n_tiles = work.key_tiles(kBN);
    const i64 panel = work.panel_rows(group);
    auto q_row = [&](i64 m) { return (run0 + div32(m, group)) * q_heads + kvh * group + mod32(m, group); };
    auto cache_row = [&](i64 key) { return sched.head_row(seq, key, kv_heads, kvh); };  // row of [·, Hkv, D]
    // Both passes start the K/V pipeline over: tile 0 into stage 0 (the caller has synchronized).
    auto load_tile = [&](int t, int stage) {
      const i64 key0 = range.lo + static_cast<i64>(t) * kBN, keys = min_i64(kBN, stop - key0);
      gather_rows_async<T, kBN, kD, kLd, P::kThreads>(sm.k(stage), keys, tid, k,
                                                      [&](int r) { return k + cache_row(key0 + r) * kD; });
      gather_rows_async<T, kBN, kD, kLd, P::kThreads>(sm.v(stage), keys, tid, v,
                                                      [&](int r) { return v + cache_row(key0 + r) * kD; });
    };

    for (i64 m0 = 0; m0 < panel; m0 += kBM) {
      const i64 rows = min_i64(kBM, panel - m0);
      // This lane's rows (warp_row0 + 8h + lane/4): their visible end.
      i64 row_end[2];
      RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        const i64 m = warp_row0 + 8 * h + (lane >> 2);
        row_end[h] = m >= rows ? range.lo
                     : causal  ? min_i64(range.hi, sched.position(run0 + div32(m0 + m, group)) + 1)
                               : range.hi;
      }
      auto mask = [&](tile::Accumulator<1, kNI>& s, int t) {
        const i64 key0 = range.lo + static_cast<i64>(t) * kBN;
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) RUDNN_UNROLL
        for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
        for (int e = 0; e < 2; ++e)
          if (8 * j + 2 * (lane & 3) + e >= row_end[h] - key0) s.c[0][j][2 * h + e] = negative_infinity();
      };
      const T* q_lane = sm.q() + warp_row0 * kLd + lo.a;
      const T* dout_lane = sm.dout() + warp_row0 * kLd + lo.a;
      // Warps whose rows all lie past the chunk's (decode: a group ≤ 16 fills warp 0's rows) load
      // and meet the barriers but compute nothing; the transposed products read only the active
      // warps' P and dS rows.
      const bool idle = warp_row0 >= rows;
      const int rows16 = static_cast<int>((rows + 15) / 16) * 16;

      // ---- Pass 1: the forward, for L and δ.
      __syncthreads();  // every warp is done with the previous chunk's shared memory
      if (n_tiles > 0) {
        gather_rows_async<T, kBM, kD, kLd, P::kThreads>(sm.q(), rows, tid, q,
                                                        [&](int r) { return q + q_row(m0 + r) * kD; });
        gather_rows_async<T, kBM, kD, kLd, P::kThreads>(sm.dout(), rows, tid, grad_out,
                                                        [&](int r) { return grad_out + q_row(m0 + r) * kD; });
        load_tile(0, 0);
      }
      cp_async_commit();
      tile::Accumulator<1, kDI> acc;  // O in pass 1, dQ in pass 2
      acc.zero();
      attention::flash_mma::OnlineSoftmax<1> softmax;
      softmax.init();
      for (int t = 0; t < n_tiles; ++t) {
        const int stage = t & 1;
        cp_async_wait<0>();
        __syncthreads();
        if (t + 1 < n_tiles) load_tile(t + 1, stage ^ 1);
        cp_async_commit();
        if (idle) continue;  // warp-uniform
        tile::Accumulator<1, kNI> s;
        attention::flash_mma::warp_scores<T, 1, kNI, kD, kLd>(s, q_lane, sm.k(stage) + lo.b_nt);
        s.scale(scale_log2);
        mask(s, t);
        softmax.update(s, acc);
        attention::flash_mma::warp_accumulate<T, 1, kNI, kDI, kLd>(acc, s, sm.v(stage) + lo.b_kn);
      }
      // L = m + log2 ℓ (+inf for a row without keys: every P is then 0); δ = dO·O / ℓ.
      float lse[2], delta[2];
      RUDNN_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int r = warp_row0 + 8 * h + (lane >> 2);
        const float l = tile::quad_sum(softmax.sum_[0][h]);
        float dot = 0.0f;
        if (n_tiles > 0) {
          RUDNN_UNROLL
          for (int d = 0; d < kDI; ++d) RUDNN_UNROLL
          for (int e = 0; e < 2; ++e)
            dot += acc.c[0][d][2 * h + e] * to_float(sm.dout()[r * kLd + 8 * d + 2 * (lane & 3) + e]);
        }
        dot = tile::quad_sum(dot);
        const bool kept = l > 0.0f;
        lse[h] = kept ? softmax.max_[0][h] + log2f(l) : bits_as_float(0x7f800000u);
        delta[h] = kept ? dot / l : 0.0f;
        if (row_stats && (lane & 3) == 0 && r < rows) {
          const i64 qi = q_row(m0 + r);  // the plain kernel's natural-log statistics
          row_stats[2 * qi] = kept ? lse[h] / kLog2e : 0.0f;
          row_stats[2 * qi + 1] = delta[h];
        }
      }
      if (!dq && !history) continue;  // the statistics were all that was asked

      // ---- Pass 2: the gradients.
      acc.zero();
      __syncthreads();  // every warp is past pass 1's reads of the stages
      if (n_tiles > 0) load_tile(0, 0);
      cp_async_commit();
      for (int t = 0; t < n_tiles; ++t) {
        const int stage = t & 1;
        cp_async_wait<0>();
        __syncthreads();  // tile t landed; every warp is past tile t − 1's dK / dV reads
        if (t + 1 < n_tiles) load_tile(t + 1, stage ^ 1);
        cp_async_commit();
        if (!idle) {
          tile::Accumulator<1, kNI> p, ds;
          attention::flash_mma::warp_scores<T, 1, kNI, kD, kLd>(p, q_lane, sm.k(stage) + lo.b_nt);
          p.scale(scale_log2);
          mask(p, t);
          attention::flash_mma::warp_scores<T, 1, kNI, kD, kLd>(ds, dout_lane, sm.v(stage) + lo.b_nt);  // dP
          RUDNN_UNROLL
          for (int h = 0; h < 2; ++h) RUDNN_UNROLL
          for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
          for (int e = 0; e < 2; ++e) {
            const float pr = exp2f(p.c[0][j][2 * h + e] - lse[h]);
            p.c[0][j][2 * h + e] = pr;
            ds.c[0][j][2 * h + e] = pr * (ds.c[0][j][2 * h + e] - delta[h]);
          }
          if (dq) attention::flash_mma::warp_accumulate<T, 1, kNI, kDI, kLd>(acc, ds, sm.k(stage) + lo.b_kn);
          if (history) {
            backward_mma_detail::store_rows<T, kNI, kLdS>(sm.p() + warp_row0 * kLdS, p, lane);
            backward_mma_detail::store_rows<T, kNI, kLdS>(sm.ds() + warp_row0 * kLdS, ds, lane);
          }
        }
        if (!history) continue;  // uniform
        __syncthreads();         // P and dS of every active panel row
        // This warp's 16 keys × D / 2 columns of dK = scale·dSᵀ·Q and dV = Pᵀ·dO, added atomically;
        // each key's scratch row found once for both.
        const i64 key0 = range.lo + static_cast<i64>(t) * kBN + hist_key0;
        i64 grad_row[2];  // −1: the tile's zero-filled tail
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) {
          const i64 key = key0 + 8 * h + (lane >> 2);
          grad_row[h] = key < stop ? cache_row(key) * kD + hist_col0 + 2 * (lane & 3) : -1;
        }
        auto add = [&](float* grad, const tile::Accumulator<1, kHT>& part, float f) {
          RUDNN_UNROLL
          for (int h = 0; h < 2; ++h) {
            if (grad_row[h] < 0) continue;
            float* row = grad + grad_row[h];
            RUDNN_UNROLL
            for (int j = 0; j < kHT; ++j) {
              atomicAdd(row + 8 * j, f * part.c[0][j][2 * h]);
              atomicAdd(row + 8 * j + 1, f * part.c[0][j][2 * h + 1]);
            }
          }
        };
        tile::Accumulator<1, kHT> part;
        if (dk) {
          part.zero();
          add_transposed_product<T, kHT, kLdS, kLd>(part, sm.ds(), hist_key0, sm.q(), hist_col0, rows16, lane);
          add(dk, part, scale);
        }
        if (dv) {
          part.zero();
          add_transposed_product<T, kHT, kLdS, kLd>(part, sm.p(), hist_key0, sm.dout(), hist_col0, rows16, lane);
          add(dv, part, 1.0f);
        }
      }

      if (dq) {
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) {
          const i64 m = warp_row0 + 8 * h + (lane >> 2);
          if (m >= rows) continue;
          T* row = dq + q_row(m0 + m) * kD + 2 * (lane & 3);
          RUDNN_UNROLL
          for (int d = 0; d < kDI; ++d) {
            Vec<T, 2> pair;
            pair.words[0] = pack2_from_float<T>(scale * acc.c[0][d][2 * h], scale * acc.c[0][d][2 * h + 1]);
            store_vec<T, 2>(row + 8 * d, pair);
          }
        }
      }
    }
  }
}

// ---- The ordered path's history kernel on tensor cores (SPEC §9's deterministic backward).
//
// paged_attention_backward_history's schedule — one block per (physical page, kv head); the page's
// readers (s, j) by ascending (s, j), each one's (query row, head) items in the history index's
// order; no floating-point atomics — with the products on mma.sync. The page's slots go in key
// tiles of 32 (16 when the page holds at most 16 slots), K and V in shared memory; per tile the
// readers that reach it, their items in chunks of 64 panel rows (Q and dO gathered with cp.async,
// the next chunk's while this one computes). Per chunk, warp w takes panel rows 16w..: S = Q·Kᵀ
// and dP = dO·Vᵀ, P = exp2(scale·log2 e·S − L) from the unit kernel's row statistics (masked past
// the reader's valid length, the row's causal limit and the page), dS = P ⊙ (dP − δ); P and dS,
// rounded to T, go to shared memory, and after a barrier every warp adds its blocks of
// dK += dSᵀ·Q and dV += Pᵀ·dO to registers: with 32-key tiles keys 16·(w % 2).. and columns
// (w / 2)·D/2.. of both; with 16-key tiles columns (w % 2)·D/2.. of dK (warps 0, 1) or dV (2, 3).
// The sums' order is the schedule's: chunks in order, a chunk's rows in the mma's fixed k order,
// so every run gives the same bits. At the tile's end scale·dK and dV are rounded into the outputs
// (zeros in slots nobody reaches).
// kCompactHistory: as the plain kernel (page_order; moves no bit). The items are always staged in
// shared memory, so row caching (RUDA_PAGED_ORDERED_CACHE_ROWS) selects nothing here. Not the plain
// history kernel's bits: P and dS are rounded to T before the history products, as on the atomic
// tensor-core path.
//
// Parameters (launch order): paged_attention_backward_history's. Launch: 128 threads (else trap);
// grid pages · kv_heads (strided); dynamic shared memory shared_memory::paged_history_mma(D).
// Requirements: q, k, v, grad_out 16-byte aligned; head_dim = value_dim = kHeadDim, rope_dim = 0
// (else trap); row_stats from paged_attention_backward_mma.
template <int kHeadDim, bool kCompactHistoryFlag>
struct HistoryMmaPolicy : BackwardMmaPolicy<kHeadDim, 32> {
  static constexpr bool kCompactHistory = kCompactHistoryFlag;
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::paged_history_mma(kHeadDim));
};

namespace backward_mma_detail {

// The history kernel's shared memory: the key tile's K and V (up to 32 rows), two stages of the
// items' Q and dO, then P and dS.
template <class T, class P>
struct HistorySmem {
  T* base;
  RUDNN_DEVICE T* k() const { return base; }
  RUDNN_DEVICE T* v() const { return base + P::kBN * P::kLd; }
  RUDNN_DEVICE T* q(int stage) const { return base + (2 * P::kBN + 2 * stage * P::kBM) * P::kLd; }
  RUDNN_DEVICE T* dout(int stage) const { return q(stage) + P::kBM * P::kLd; }
  RUDNN_DEVICE T* p() const { return base + (2 * P::kBN + 4 * P::kBM) * P::kLd; }
  RUDNN_DEVICE T* ds() const { return p() + P::kBM * P::kLdS; }
};

// One (page, kv head) block's work: the history gradients of the page's slots, a key tile at a time.
template <class T, class P>
struct HistoryPage {
  HistoryReaders index;
  const T *q, *k, *v, *grad_out;
  const i32* positions;
  const float* row_stats;
  T *dk, *dv;
  i64 kv_heads, causal;
  float scale;
  i64 page = 0;
  HistorySmem<T, P> sm;
  int tid, lane, warp;
  tile::LaneOffsets lo;

  RUDNN_DEVICE void load_chunk(i64 e, i64 m0, int stage) const {
    const i64 n = min_i64(P::kBM, index.items(e) - m0);
    gather_rows_async<T, P::kBM, P::kD, P::kLd, P::kThreads>(sm.q(stage), n, tid, q,
                                                             [&](int r) { return q + index.item(e, m0 + r) * P::kD; });
    gather_rows_async<T, P::kBM, P::kD, P::kLd, P::kThreads>(
        sm.dout(stage), n, tid, grad_out, [&](int r) { return grad_out + index.item(e, m0 + r) * P::kD; });
  }

  // The gradients of slots slot0 .. slot0 + kKeys − 1 (those below page_size).
  template <int kKeys>
  RUDNN_DEVICE void key_tile(i64 slot0) const {
    static_assert(kKeys == 16 || kKeys == 32, "HistoryPage::key_tile: 16 or 32 keys");
    constexpr int kD = P::kD, kBM = P::kBM, kLd = P::kLd, kLdS = P::kLdS, kHT = P::kHistoryTiles;
    constexpr int kNI = kKeys / 8;
    const i64 keys = min_i64(kKeys, index.page_size - slot0);
    // This warp's blocks of the tile's gradients: 16 keys × D / 2 columns of dK and/or dV.
    const int key0 = kKeys == 32 ? 16 * (warp & 1) : 0;
    const int col0 = (kKeys == 32 ? warp >> 1 : warp & 1) * (kD / 2);
    const bool my_dk = dk && (kKeys == 32 || warp < 2), my_dv = dv && (kKeys == 32 || warp >= 2);
    const float scale_log2 = scale * kLog2e;
    const int warp_row0 = 16 * warp;

    i64 e = index.reaching(index.first, slot0), m0 = 0;
    __syncthreads();  // every warp is done with the previous tile's shared memory
    if (e < index.last) {
      auto cache_row = [&](int r) { return ((page * index.page_size + slot0 + r) * kv_heads + index.kvh) * kD; };
      gather_rows_async<T, kKeys, kD, kLd, P::kThreads>(sm.k(), keys, tid, k, [&](int r) { return k + cache_row(r); });
      gather_rows_async<T, kKeys, kD, kLd, P::kThreads>(sm.v(), keys, tid, v, [&](int r) { return v + cache_row(r); });
      load_chunk(e, 0, 0);
    }
    cp_async_commit();
    tile::Accumulator<1, kHT> dkey, dvalue;
    dkey.zero();
    dvalue.zero();
    for (int stage = 0; e < index.last; stage ^= 1) {
      i64 next_e = e, next_m0 = m0 + kBM;  // the chunk after this one
      if (next_m0 >= index.items(e)) {
        next_e = index.reaching(e + 1, slot0);
        next_m0 = 0;
      }
      cp_async_wait<0>();
      __syncthreads();  // this chunk landed; every warp is past the previous chunk's reads
      if (next_e < index.last) load_chunk(next_e, next_m0, stage ^ 1);
      cp_async_commit();
      const i64 n = min_i64(kBM, index.items(e) - m0);
      if (warp_row0 < n) {  // warp-uniform: warps past the chunk's rows compute no P or dS
        // This lane's rows (warp_row0 + 8h + lane/4): L (log2), δ, and how many of the tile's keys
        // they see.
        float lse[2], delta[2];
        i64 seen[2];
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) {
          const i64 m = warp_row0 + 8 * h + (lane >> 2);
          lse[h] = delta[h] = 0.0f;
          seen[h] = 0;
          if (m < n) {
            const i64 qi = index.item(e, m0 + m);
            lse[h] = row_stats[2 * qi] * kLog2e;
            delta[h] = row_stats[2 * qi + 1];
            seen[h] = index.seen(e, m0 + m, slot0, keys, positions, causal);
          }
        }
        tile::Accumulator<1, kNI> p, ds;
        attention::flash_mma::warp_scores<T, 1, kNI, kD, kLd>(p, sm.q(stage) + warp_row0 * kLd + lo.a,
                                                              sm.k() + lo.b_nt);
        attention::flash_mma::warp_scores<T, 1, kNI, kD, kLd>(ds, sm.dout(stage) + warp_row0 * kLd + lo.a,
                                                              sm.v() + lo.b_nt);  // dP
        RUDNN_UNROLL
        for (int h = 0; h < 2; ++h) RUDNN_UNROLL
        for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
        for (int c = 0; c < 2; ++c) {
          const bool visible = 8 * j + 2 * (lane & 3) + c < seen[h];
          const float pr = visible ? exp2f(p.c[0][j][2 * h + c] * scale_log2 - lse[h]) : 0.0f;
          p.c[0][j][2 * h + c] = pr;
          ds.c[0][j][2 * h + c] = pr * (ds.c[0][j][2 * h + c] - delta[h]);
        }
        store_rows<T, kNI, kLdS>(sm.p() + warp_row0 * kLdS, p, lane);
        store_rows<T, kNI, kLdS>(sm.ds() + warp_row0 * kLdS, ds, lane);
      }
      __syncthreads();  // P and dS of every active panel row
      const int rows16 = static_cast<int>((n + 15) / 16) * 16;
      if (my_dk) add_transposed_product<T, kHT, kLdS, kLd>(dkey, sm.ds(), key0, sm.q(stage), col0, rows16, lane);
      if (my_dv) add_transposed_product<T, kHT, kLdS, kLd>(dvalue, sm.p(), key0, sm.dout(stage), col0, rows16, lane);
      e = next_e;
      m0 = next_m0;
    }
    RUDNN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const i64 key = key0 + 8 * h + (lane >> 2);
      if (key >= keys) continue;
      const i64 at = ((page * index.page_size + slot0 + key) * kv_heads + index.kvh) * kD + col0 + 2 * (lane & 3);
      RUDNN_UNROLL
      for (int j = 0; j < kHT; ++j) {
        Vec<T, 2> pair;
        if (my_dk) {
          pair.words[0] = pack2_from_float<T>(scale * dkey.c[0][j][2 * h], scale * dkey.c[0][j][2 * h + 1]);
          store_vec<T, 2>(dk + at + 8 * j, pair);
        }
        if (my_dv) {
          pair.words[0] = pack2_from_float<T>(dvalue.c[0][j][2 * h], dvalue.c[0][j][2 * h + 1]);
          store_vec<T, 2>(dv + at + 8 * j, pair);
        }
      }
    }
  }
};

}  // namespace backward_mma_detail

template <class T, class P>
RUDNN_DEVICE void paged_attention_backward_history_mma(const T* q, const T* /*q_rope*/, const T* k, const T* /*k_rope*/,
                                                       const T* v, const T* grad_out, const i32* lengths,
                                                       const i32* positions, const float* row_stats,
                                                       const i32* history_index, const i32* page_order, T* dk,
                                                       T* /*dk_rope*/, T* dv, i64 queries, i64 sequences, i64 pages,
                                                       i64 q_heads, i64 kv_heads, i64 head_dim, i64 rope_dim,
                                                       i64 value_dim, i64 page_size, i64 causal, float scale) {
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::paged::paged_attention_backward_history_mma: blockDim must be (Policy::kThreads, 1, 1)");
  if (head_dim != P::kD || value_dim != P::kD || rope_dim != 0)
    trap("rudnn::paged::paged_attention_backward_history_mma: head_dim = value_dim = Policy::kHeadDim, no rope");
  const int tid = static_cast<int>(threadIdx.x);
  const i32* reader_offsets = history_index;
  const i32* row_offsets = reader_offsets + pages + 1;
  const i32* rows = row_offsets + sequences + 1;
  backward_mma_detail::HistoryPage<T, P> work{.index = {.lengths = lengths,
                                                        .row_offsets = row_offsets,
                                                        .rows = rows,
                                                        .readers = rows + queries,
                                                        .q_heads = q_heads,
                                                        .group = div32(q_heads, kv_heads),
                                                        .page_size = page_size},
                                              .q = q,
                                              .k = k,
                                              .v = v,
                                              .grad_out = grad_out,
                                              .positions = positions,
                                              .row_stats = row_stats,
                                              .dk = dk,
                                              .dv = dv,
                                              .kv_heads = kv_heads,
                                              .causal = causal,
                                              .scale = scale,
                                              .sm = {dynamic_shared<T>()},
                                              .tid = tid,
                                              .lane = tid & 31,
                                              .warp = tid >> 5,
                                              .lo = tile::lane_offsets<P::kLd>(tid & 31)};
  for (i64 block = linear_block(); block < pages * kv_heads; block += block_count()) {
    const i64 order = div32(block, kv_heads);
    work.index.kvh = block - order * kv_heads;
    work.page = P::kCompactHistory ? static_cast<i64>(page_order[order]) : order;
    work.index.first = reader_offsets[work.page];
    work.index.last = reader_offsets[work.page + 1];
    if (page_size <= 16) {
      work.template key_tile<16>(0);  // uniform
    } else {
      for (i64 slot0 = 0; slot0 < page_size; slot0 += 32) work.template key_tile<32>(slot0);
    }
  }
}

}  // namespace rudnn::paged
