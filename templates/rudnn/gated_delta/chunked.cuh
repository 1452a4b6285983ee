#pragma once
// Gated delta rule, chunked prefill (SPEC §7). Same result as gated_delta_recurrent (to rounding),
// computed C steps at a time in the WY form. For one chunk with start state S₀ (K×V) and steps
// i = 0..C−1 (keys k_i, scaled queries q̂_i = query_scale·q_i, values v_i, β_i, g_i):
//   γ_i  = Σ_{j ≤ i} g_j                                   cumulative decay (decay_scan.cuh)
//   A_ij = β_i e^{γ_i−γ_j} k_i·k_j  for j < i, else 0        strictly lower
//   T    = (I + A)⁻¹                                       blocked by 16 (unit_lower_inverse)
//   U    = T · diag(β) (V − diag(e^γ) K S₀)                 the chunk's u_t, all at once
//   O    = diag(e^γ) Q̂ S₀ + (Q̂ Kᵀ ⊙ M) U,  M_ij = e^{γ_i−γ_j} for j ≤ i, else 0
//   S₁   = e^{γ_last} S₀ + Kᵀ diag(e^{γ_last−γ}) U
// (Unrolling the recurrence inside the chunk gives u_i + Σ_{j<i} A_ij u_j = β_i (v_i − e^{γ_i} S₀ᵀk_i),
// i.e. (I + A) U = diag(β)(V − diag(e^γ) K S₀). The usual W = T·diag(β e^γ) K term is applied as
// T·(diag(β e^γ) K S₀): the same product, associated so that no C×K matrix W is ever stored.)
// The tail chunk is zero-padded on chip (padded steps are exact no-ops, stage.cuh); only real rows
// are stored, nothing past the sequence is read.
//
// Why one kernel per (b, h, 32..64-column V slice) that walks the chunks in order with the state in
// shared memory, rather than FLA's split (per-chunk WY in parallel → sequential state pass that
// stores every chunk's K×V state → output pass): on an H200 the op is memory-bound at the
// traffic floor of reading q, k, v once and writing o once (~1 KiB per token and head for K = V =
// 128 in bf16). The split design writes and re-reads a K×V FP32 state per chunk (64 KiB per 64
// tokens at K = V = 128, another ~1 KiB per token each way, plus the WY matrices), which alone puts
// it at ≥ 2–3× the floor. Here q/k/v are read once per V slice (the ⌈V/BV⌉ slices of one head run
// concurrently and share q/k through L2), o is written once, the state never leaves the chip
// between chunks, and the only HBM state traffic is initial/final state. Parallelism is
// B·H·⌈V/BV⌉ blocks (e.g. 32k tokens as 8×4k, H = 16, V = 128, BV = 32: 512 blocks). The cost is
// that the key-only work (A, T, Q̂Kᵀ) is repeated per V slice, compute that tensor cores absorb.
// When B·H is too small to fill the GPU, a later variant can split the sequence.
//
// Two paths, chosen by the policy:
//   plain (ChunkPolicy<threads, columns>, any T): every product in FP32 on the plain cores
//     (block_gemm.cuh). The only path for f32 inputs.
//   tensor cores (ChunkPolicy<threads, columns, true>, T = f16 or bf16 only): A's K·Kᵀ, Q̂·Kᵀ,
//     K·S₀, Q̂·S₀ and the state update's Kᵀ·W by mma.sync m16n8k16 with FP32 accumulation, one
//     16×16 output block per warp job (chunk_mma.cuh). Keys and queries are kept on chip as stored
//     (exact; query_scale is applied to the FP32 results), the state stays FP32 and enters the MMAs
//     as a power-of-two-scaled three-term split hi + mid + lo in T (exact for bf16, ≤ 2⁻³⁹·max|S|
//     per element for f16; Q̂·S₀, which only feeds the rounded output, uses hi + mid): the final
//     state keeps the plain path's FP32 accuracy (chunk_mma.cuh has the argument; rounding S₀ to
//     bf16 instead measured ~1e-4 relative state error against the FP32 path's ~1e-7). The state
//     update's W = diag(e^{γ_last−γ}) U carries the state too, so it enters as the same kind of
//     split, made in registers from the FP32 U (split_b_pair; σ from max |W|, published with U).
//     The triangular solve, the decay scan, U = T·R and P·U stay FP32 on the plain cores (T and P
//     are not 16-bit values, and U is not rounded). The chunk's rows are padded to Cp = 16⌈C/16⌉ on
//     chip (the extra steps are zero, exact no-ops), the key dim to Kr = 16⌈K/16⌉ (zero columns),
//     so any C and K work.
//
// Per chunk: 5 barriers, phases (1) stage k, q̂, v slice, β; decay scan; [tensor cores: split
// S₀] (2) A; R = β(V − e^γ K S₀); Q̂S₀ e^γ (3) T (4) U = T R; P = Q̂Kᵀ ⊙ M (5) O = Q̂S₀e^γ + P U
// → global; S ← e^{γ_last} S + Kᵀ(e^{γ_last−γ} U) [tensor cores: and the slice's max |S|; max |W|
// is published in (4)].
// A, T and P share one C×C array: T is unit lower triangular, so the solve writes it transposed
// into A's upper triangle (unit_lower_inverse.cuh) and P then replaces A below the diagonal while
// U = T R still reads T above it; block_gemm's triangular shapes never read across. The solve's
// scratch is the values buffer, free between (2) and (4). One C×C array less (16 KiB at C = 64)
// is what lets Qwen3-Next's chunk 64 at K = 128 run on sm_86/sm_89's 99 KiB (tensor cores, BV = 16).
//
// Parameters (launch order): query, key [B, H, T, K] T; value [B, H, T, V] T; beta, log_decay
// [B, H, T] G (G = T or float); initial_state [B, H, K, V] float (nullptr = zeros; only read);
// output [B, H, T, V] T; final_state [B, H, K, V] float; batch, heads, seq (T), key_dim (K),
// value_dim (V), chunk (C) as i64; query_scale float.
// Decays the WY form cannot take: it forms e^{γ_i−γ_j}, e^{γ_i} and e^{γ_last−γ_i}, which are ≤ 1 only
// while γ is finite and non-increasing. A positive log_decay makes them grow (e^{γ_i} overflows
// FP32 once γ > 88, e.g. after 64 steps of +1.5, where the recurrence stays finite because each
// update replaces the state along k), and −inf (a full reset) gives γ_i − γ_j = −inf − (−inf) =
// NaN. So a window of C steps holding any log_decay that is not finite and ≤ 0 (positive, ±inf,
// NaN) is taken one step at a time (chunks of length 1, the rest of the window padded), until the
// window is clean again. A one-step chunk forms no growing exponential: only e^{g} itself, as
// the recurrence does, and decay factors between equal γ (the diagonal, the padding; decay_between)
// are exactly 1, never e^{−inf − (−inf)}. The check is one __syncthreads_or per chunk (its global
// read issued one chunk ahead: ChunkWalk). Every log_decay is accepted and the chunked form equals
// the recurrence (to rounding) for all of them (docs/gated_delta.md); a non-decaying window costs up
// to C one-step passes.
// Requirements: K ≥ 1, V ≥ 1, C ≥ 1 (any value; 16/32/64 are the intended ones), contiguous
// row-major tensors, T = 0 copies initial_state to final_state. final_state may alias
// initial_state, nothing else.
// Launch: block = Policy::kThreads (x only); grid = any ≥ 1 (B·H·⌈V/BV⌉ fills it); dynamic shared
// memory = Policy::shared_bytes(C, K) = shared_memory::gated_delta_chunk bytes, with values
// V = max(C·ld, 256·(⌈C/16⌉ − 1)) floats (C rows of ld = BV; tensor cores Cp rows of BV + 4; the
// 256·… is the solve's scratch, more only when BV < 16):
//   plain:        8·C + 4·(2·C·K + V + 2·C·BV + C² + K·BV + 3·C)
//   tensor cores: 8·Cp + 4·Cp·(Kr + 8) + 6·Kr·(BV + 8) + 4·(V + 2·Cp·BV + Cp² + K·BV + 3·Cp + 64)
//                 with Cp = 16⌈C/16⌉, Kr = 16⌈K/16⌉ (γ FP64 [Cp]; keys and queries 16-bit
//                 [Cp][Kr + 8]; the split 3 × 16-bit [Kr][BV + 8]; FP32 values/U [Cp][BV + 4],
//                 R, Q̂S₀ [Cp][BV], A | T then P | T [Cp][Cp], state [K][BV], β, e^γ, e^{γ_last−γ}
//                 [Cp], 2 × 32 warp maxima).
//   e.g. C = 64, K = 128: BV = 32 plain 124160, tensor cores 125440; tensor cores BV = 16 92672;
//   K = 256, BV = 32: 206080 / 205312.
#include "rudnn/grid.cuh"
#include "rudnn/gated_delta/block_gemm.cuh"
#include "rudnn/gated_delta/chunk_mma.cuh"
#include "rudnn/gated_delta/decay_scan.cuh"
#include "rudnn/gated_delta/stage.cuh"
#include "rudnn/gated_delta/unit_lower_inverse.cuh"
#include "rudnn/shared_memory.h"

namespace rudnn::gated_delta {

// kThreads per block; kColumns (BV) state columns per block; kTensorCore: the chunk's key-only and
// state products on tensor cores (f16/bf16 only; see the header and chunk_mma.cuh).
template <int kThreads, int kColumns, bool kTensorCore = false>
struct ChunkPolicy {
  static_assert(kThreads % 32 == 0 && kThreads >= 32 && kThreads <= 1024, "ChunkPolicy: whole warps");
  static_assert(kColumns % 4 == 0 && kColumns >= 4, "ChunkPolicy: columns in fours");
  static_assert(!kTensorCore || kColumns % 16 == 0, "ChunkPolicy: tensor-core slices are whole n16 blocks");
  static constexpr int kThreadsV = kThreads;
  static constexpr int kBV = kColumns;
  static constexpr bool kMma = kTensorCore;
  static constexpr int kTM = 4;  // register tile of the other block_gemm products
  static constexpr int kTN = 4;
  // Register tile of the triangular products U = T·R and P·U (C × BV outputs, depth up to C): 2×2,
  // so that a C = 64 chunk has 512 tiles for 256 threads (4×4: 128, and 64 at BV = 16), dealt in
  // mirrored row pairs where tiles outnumber threads (block_gemm). The slowest warp's
  // instructions per product at C = 64, estimated as Σ over its tiles of the deepest lane's depth ×
  // instructions per step (4×4: 16 FFMA + 8 LDS; 2×2: 4 + 4): 256 threads, BV = 32: 1536 → 544;
  // BV = 16: 1536 → 512; 128 threads, BV = 16: 1536 → 576. Each output's sum keeps its order.
  static constexpr int kTriTM = 2;
  static constexpr int kTriTN = 2;
#if !defined(__CUDACC_RTC__)
  // Host side only (launch rules, tests; NVRTC allows no host functions): bytes of dynamic shared
  // memory for chunk C and key dim K (the header's formulas).
  static constexpr long long shared_bytes(long long c, long long k) {
    return shared_memory::gated_delta_chunk(c, k, kColumns, kTensorCore);
  }
#endif
};

namespace chunked_detail {

// Can the WY form take this step's log_decay (finite and ≤ 0)? NaN is not.
RUDNN_DEVICE bool wy_decay(float g) { return g <= 0.0f && !is_inf(g); }

// The chunks of one (b, h) row of `seq` steps: length(t0) is the chunk's real steps, C, or 1 when
// the window holds a log_decay the WY form cannot take (a non-decay: one-step chunks, header). The
// check sits at each chunk's start, before anything is staged, so it is on the chunk's critical
// path: each thread's first value of a window is loaded one chunk early (a register first used at
// the next chunk's start), so the check waits on no global read when C ≤ threads; values past the
// first (C > threads) are read at the check.
template <class G>
struct ChunkWalk {
  const G* log_decay;  // the row's first step
  i64 seq;
  int C;
  float first;  // log_decay[t0 + tid] of the next window (0, a decay, past its end)

  RUDNN_DEVICE ChunkWalk(const G* row, i64 steps, int chunk, int tid) : log_decay(row), seq(steps), C(chunk) {
    read_ahead(0, tid);
  }
  // Every thread of the block calls it (a barrier).
  RUDNN_DEVICE int length(i64 t0, int tid, int nthreads) {
    int L = static_cast<int>(min_i64(C, seq - t0));
    int odd = wy_decay(first) ? 0 : 1;
    for (int i = tid + nthreads; i < L; i += nthreads) odd |= wy_decay(to_float(log_decay[t0 + i])) ? 0 : 1;
    if (__syncthreads_or(odd) != 0) L = 1;
    read_ahead(t0 + L, tid);
    return L;
  }

 private:
  RUDNN_DEVICE void read_ahead(i64 t0, int tid) {
    first = tid < min_i64(C, seq - t0) ? to_float(log_decay[t0 + tid]) : 0.0f;
  }
};

// The plain-core path: every product in FP32 (block_gemm.cuh). Parameters as gated_delta_chunked.
template <class T, class G, class Policy>
RUDNN_DEVICE void run_plain(const T* RUDNN_RESTRICT query, const T* RUDNN_RESTRICT key, const T* RUDNN_RESTRICT value,
                            const G* RUDNN_RESTRICT beta, const G* RUDNN_RESTRICT log_decay, const float* initial_state,
                            T* RUDNN_RESTRICT output, float* final_state, i64 batch, i64 heads, i64 seq, i64 key_dim,
                            i64 value_dim, i64 chunk, float query_scale) {
  using P = Policy;
  constexpr int BV = P::kBV;
  constexpr int NT = P::kThreadsV;
  const int C = static_cast<int>(chunk);
  const int K = static_cast<int>(key_dim);
  const int tid = static_cast<int>(threadIdx.x);

  // Shared memory (see the formula above): γ in FP64 first (8-byte aligned), then FP32 arrays.
  double* const sgamma = dynamic_shared<double>();                        // [C] γ (decay_scan.cuh: why FP64)
  float* const sk = reinterpret_cast<float*>(sgamma + C);                 // [C][K]  keys
  float* const sq = sk + C * K;                                           // [C][K]  scaled queries
  float* const su = sq + C * K;                                           // [C][BV] values, the solve's scratch, U
  float* const sr = su + shared_memory::gated_delta_chunk_values(C, BV);  // [C][BV] R = β(V − e^γ K S₀)
  float* const so = sr + C * BV;                                          // [C][BV] e^γ Q̂ S₀
  float* const sa = so + C * BV;                                          // [C][C]  A | T, then P | T (T above)
  float* const ss = sa + C * C;                                           // [K][BV] state slice
  float* const sbeta = ss + K * BV;                                       // [C]
  float* const sexp = sbeta + C;                                          // [C]     e^γ
  float* const send = sexp + C;                                           // [C]     e^{γ_last − γ}

  const i64 slices = (value_dim + BV - 1) / BV;
  const i64 items = batch * heads * slices;
  for (i64 item = linear_block(); item < items; item += block_count()) {
    const i64 bh = item / slices;
    const i64 v0 = (item - bh * slices) * BV;
    const int cols = static_cast<int>(min_i64(BV, value_dim - v0));  // real columns of the slice

    // The state slice (columns past V are zero and stay zero: their values are zero-padded).
    // Loaded and stored with the same thread mapping, so a following item (or T = 0) needs no
    // barrier between the store and the next load.
    for (int idx = tid; idx < K * BV; idx += NT) {
      const int r = idx / BV, j = idx - (idx / BV) * BV;
      ss[idx] = initial_state != nullptr && j < cols ? initial_state[(bh * key_dim + r) * value_dim + v0 + j] : 0.0f;
    }

    ChunkWalk<G> walk(log_decay + bh * seq, seq, C, tid);
    int L = 0;  // this chunk's real steps
    for (i64 t0 = 0; t0 < seq; t0 += L) {
      L = walk.length(t0, tid, NT);
      const i64 row0 = bh * seq + t0;

      // (1) Stage the chunk (zero-padded to C steps) and its cumulative decay.
      stage_rows(sk, K, key + row0 * key_dim, key_dim, L, K, C, K, 1.0f, tid, NT);
      stage_rows(sq, K, query + row0 * key_dim, key_dim, L, K, C, K, query_scale, tid, NT);
      stage_rows(su, BV, value + row0 * value_dim + v0, value_dim, L, cols, C, BV, 1.0f, tid, NT);
      stage_rows(sbeta, 1, beta + row0, 1, L, 1, C, 1, 1.0f, tid, NT);
      if (tid < 32) decay_scan(log_decay + row0, L, C, sgamma, sexp, send, tid);
      __syncthreads();

      // (2) A (strictly lower), R = β(V − e^γ K S₀), e^γ Q̂ S₀.
      block_gemm<P::kTM, P::kTN, true, LeftShape::Full>(
          C, C, K, [&](int i, int p) { return sk[i * K + p]; }, [&](int p, int j) { return sk[j * K + p]; },
          [&](int i, int j, float acc) {
            if (j < i) sa[i * C + j] = sbeta[i] * decay_between(sgamma[i], sgamma[j]) * acc;
          },
          tid, NT);
      block_gemm<P::kTM, P::kTN, false, LeftShape::Full>(
          C, BV, K, [&](int i, int p) { return sk[i * K + p]; }, [&](int p, int j) { return ss[p * BV + j]; },
          [&](int i, int j, float acc) { sr[i * BV + j] = sbeta[i] * (su[i * BV + j] - sexp[i] * acc); }, tid, NT);
      block_gemm<P::kTM, P::kTN, false, LeftShape::Full>(
          C, BV, K, [&](int i, int p) { return sq[i * K + p]; }, [&](int p, int j) { return ss[p * BV + j]; },
          [&](int i, int j, float acc) { so[i * BV + j] = sexp[i] * acc; }, tid, NT);
      __syncthreads();

      // (3) T = (I + A)⁻¹ into A's upper triangle, with the values (now free) as scratch.
      unit_lower_inverse(sa, su, C, tid, NT);
      __syncthreads();

      // (4) U = T R = R + (T − I) R (over the values); P = Q̂Kᵀ ⊙ M on and below the diagonal (over
      // A, now free; T above it is still being read).
      block_gemm<P::kTriTM, P::kTriTN, false, LeftShape::StrictlyLower>(
          C, BV, C, [&](int i, int p) { return sa[unit_lower_at(i, p, C)]; },
          [&](int p, int j) { return sr[p * BV + j]; },
          [&](int i, int j, float acc) { su[i * BV + j] = sr[i * BV + j] + acc; }, tid, NT);
      block_gemm<P::kTM, P::kTN, true, LeftShape::Full>(
          C, C, K, [&](int i, int p) { return sq[i * K + p]; }, [&](int p, int j) { return sk[j * K + p]; },
          [&](int i, int j, float acc) {
            if (j <= i) sa[i * C + j] = decay_between(sgamma[i], sgamma[j]) * acc;
          },
          tid, NT);
      __syncthreads();

      // (5) Outputs of the real rows, and the state carried to the next chunk.
      const float decay_all = sexp[L - 1];  // e^{γ_last}: the whole chunk's decay
      block_gemm<P::kTriTM, P::kTriTN, false, LeftShape::Lower>(
          C, BV, C, [&](int i, int p) { return sa[i * C + p]; }, [&](int p, int j) { return su[p * BV + j]; },
          [&](int i, int j, float acc) {
            if (i < L && j < cols) output[(row0 + i) * value_dim + v0 + j] = from_float<T>(so[i * BV + j] + acc);
          },
          tid, NT);
      block_gemm<P::kTM, P::kTN, false, LeftShape::Full>(
          K, BV, C, [&](int i, int p) { return sk[p * K + i] * send[p]; }, [&](int p, int j) { return su[p * BV + j]; },
          [&](int i, int j, float acc) { ss[i * BV + j] = decay_all * ss[i * BV + j] + acc; }, tid, NT);
      __syncthreads();
    }

    for (int idx = tid; idx < K * BV; idx += NT) {
      const int r = idx / BV, j = idx - (idx / BV) * BV;
      if (j < cols) final_state[(bh * key_dim + r) * value_dim + v0 + j] = ss[idx];
    }
  }
}

// The tensor-core path (f16/bf16): A = K·Kᵀ, K·S₀, Q·S₀, Q·Kᵀ and the state update Kᵀ·W by mma.sync
// (chunk_mma.cuh), the rest as run_plain. Chunk rows are padded to Cp = 16⌈C/16⌉ on chip (padded
// steps are exact no-ops), keys and queries kept as stored in 16 bits, the state in FP32 plus its
// split.
template <class T, class G, class Policy>
RUDNN_DEVICE void run_tensor_core(const T* RUDNN_RESTRICT query, const T* RUDNN_RESTRICT key,
                                  const T* RUDNN_RESTRICT value, const G* RUDNN_RESTRICT beta,
                                  const G* RUDNN_RESTRICT log_decay, const float* initial_state,
                                  T* RUDNN_RESTRICT output, float* final_state, i64 batch, i64 heads, i64 seq,
                                  i64 key_dim, i64 value_dim, i64 chunk, float query_scale) {
  using P = Policy;
  constexpr int BV = P::kBV;
  constexpr int NT = P::kThreadsV;
  constexpr int kWarps = NT / 32;
  constexpr int kColBlocks = BV / 16;
  constexpr int ld_s = BV + 8;                                          // split row stride (elements)
  constexpr int ld_u = shared_memory::gated_delta_values_ld(BV, true);  // values/U row stride
  const int step = static_cast<int>(chunk);                             // real steps per chunk
  const int C = round_up_16(step);                                      // rows on chip
  const int K = static_cast<int>(key_dim);
  const int Kr = round_up_16(K);  // key dim in whole k16 steps
  const int ld_k = Kr + 8;        // key/query row stride (elements)
  const int plane = Kr * ld_s;
  const int nb = C / 16;
  const int tri = nb * (nb + 1) / 2;       // lower 16×16 blocks of a C×C product
  const int state_jobs = nb * kColBlocks;  // 16×16 blocks of K·S₀ (and Q·S₀)
  const int key_blocks = Kr / 16;          // 16-row blocks of the state (Kᵀ·W)
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;

  // Shared memory (the header's formula): γ in FP64, the 16-bit operands (16-byte aligned: every
  // size before them is a multiple of 16 bytes), then FP32 arrays.
  double* const sgamma = dynamic_shared<double>();                          // [C]
  T* const sk = reinterpret_cast<T*>(sgamma + C);                           // [C][ld_k] keys as stored
  T* const sq = sk + C * ld_k;                                              // [C][ld_k] queries as stored (unscaled)
  T* const split = sq + C * ld_k;                                           // [3][Kr][ld_s] S₀/σ = hi + mid + lo
  float* const su = reinterpret_cast<float*>(split + kStateTerms * plane);  // [C][ld_u] values, scratch, U
  float* const sr = su + shared_memory::gated_delta_chunk_values(C, ld_u);  // [C][BV] R = β(V − e^γ K S₀)
  float* const so = sr + C * BV;                                            // [C][BV] e^γ Q̂ S₀
  float* const sa = so + C * BV;                                            // [C][C]  A | T, then P | T
  float* const ss = sa + C * C;                                             // [K][BV] state slice (FP32, the truth)
  float* const sbeta = ss + K * BV;                                         // [C]
  float* const sexp = sbeta + C;                                            // [C]
  float* const send = sexp + C;                                             // [C]
  float* const smax = send + C;                                             // [32] per-warp max |S| (σ of the split)
  float* const smax_w = smax + 32;                                          // [32] per-warp max |W| (σ of its split)

  const i64 slices = (value_dim + BV - 1) / BV;
  const i64 items = batch * heads * slices;
  for (i64 item = linear_block(); item < items; item += block_count()) {
    const i64 bh = item / slices;
    const i64 v0 = (item - bh * slices) * BV;
    const int cols = static_cast<int>(min_i64(BV, value_dim - v0));

    float local_max = 0.0f;
    for (int idx = tid; idx < K * BV; idx += NT) {
      const int r = idx / BV, j = idx - (idx / BV) * BV;
      const float x =
          initial_state != nullptr && j < cols ? initial_state[(bh * key_dim + r) * value_dim + v0 + j] : 0.0f;
      ss[idx] = x;
      local_max = fmaxf(local_max, fabsf(x));
    }
    publish_warp_max(local_max, smax, tid);
    __syncthreads();  // the first split reads every thread's state entries and maxima

    ChunkWalk<G> walk(log_decay + bh * seq, seq, step, tid);
    int L = 0;  // this chunk's real steps
    for (i64 t0 = 0; t0 < seq; t0 += L) {
      L = walk.length(t0, tid, NT);
      const i64 row0 = bh * seq + t0;

      // (1) The state's split, the chunk (zero-padded to C steps) and its cumulative decay.
      float inv_sigma;
      const float sigma = split_scale(block_max(smax, kWarps), inv_sigma);
      split_state<T>(ss, K, BV, inv_sigma, split, plane, ld_s, Kr, tid, NT);
      stage_rows_raw(sk, ld_k, key + row0 * key_dim, key_dim, L, K, C, Kr, tid, NT);
      stage_rows_raw(sq, ld_k, query + row0 * key_dim, key_dim, L, K, C, Kr, tid, NT);
      stage_rows(su, ld_u, value + row0 * value_dim + v0, value_dim, L, cols, C, BV, 1.0f, tid, NT);
      stage_rows(sbeta, 1, beta + row0, 1, L, 1, C, 1, 1.0f, tid, NT);
      if (tid < 32) decay_scan(log_decay + row0, L, C, sgamma, sexp, send, tid);
      __syncthreads();

      // (2) On tensor cores, one 16×16 block per warp job: R = β(V − e^γ K S₀) with e^γ Q̂ S₀ (the
      // costlier jobs first), then A (strictly lower; diagonal blocks mask their upper half).
      for (int job = warp; job < state_jobs + tri; job += kWarps) {
        if (job < state_jobs) {
          const int r0 = (job / kColBlocks) * 16, c0 = (job - (job / kColBlocks) * kColBlocks) * 16;
          Block16 ks, qs;
          ks.zero();
          qs.zero();
          warp_state_blocks<T>(ks, qs, sk, sq, ld_k, split, plane, ld_s, r0, c0, Kr, lane);
          ks.each(lane, [&](int i, int j, float acc) {
            i += r0;
            j += c0;
            sr[i * BV + j] = sbeta[i] * (su[i * ld_u + j] - sexp[i] * (sigma * acc));
          });
          qs.each(lane, [&](int i, int j, float acc) {
            i += r0;
            j += c0;
            so[i * BV + j] = query_scale * sexp[i] * (sigma * acc);
          });
        } else {
          int bi, bj;
          lower_block(job - state_jobs, bi, bj);
          Block16 a;
          a.zero();
          warp_block_nt<T>(a, sk, sk, ld_k, 16 * bi, 16 * bj, Kr, lane);
          a.each(lane, [&](int i, int j, float acc) {
            i += 16 * bi;
            j += 16 * bj;
            if (j < i) sa[i * C + j] = sbeta[i] * decay_between(sgamma[i], sgamma[j]) * acc;
          });
        }
      }
      __syncthreads();

      // (3) T = (I + A)⁻¹ into A's upper triangle (the solve reads A below the diagonal only), with
      // the values (now free) as scratch.
      unit_lower_inverse(sa, su, C, tid, NT);
      __syncthreads();

      // (4) U = R + (T − I) R (FP32) with max |W| = max |e^{γ_last−γ} U| (the scale of W's split in
      // (5)); P = Q̂Kᵀ ⊙ M on tensor cores, on and below the diagonal only (T above it is being read).
      float w_max = 0.0f;
      block_gemm<P::kTriTM, P::kTriTN, false, LeftShape::StrictlyLower>(
          C, BV, C, [&](int i, int p) { return sa[unit_lower_at(i, p, C)]; },
          [&](int p, int j) { return sr[p * BV + j]; },
          [&](int i, int j, float acc) {
            const float u = sr[i * BV + j] + acc;
            su[i * ld_u + j] = u;
            w_max = fmaxf(w_max, fabsf(u * send[i]));
          },
          tid, NT);
      for (int job = warp; job < tri; job += kWarps) {
        int bi, bj;
        lower_block(job, bi, bj);
        Block16 p;
        p.zero();
        warp_block_nt<T>(p, sq, sk, ld_k, 16 * bi, 16 * bj, Kr, lane);
        p.each(lane, [&](int i, int j, float acc) {
          i += 16 * bi;
          j += 16 * bj;
          if (j <= i) sa[i * C + j] = query_scale * decay_between(sgamma[i], sgamma[j]) * acc;
        });
      }
      publish_warp_max(w_max, smax_w, tid);
      __syncthreads();

      // (5) Outputs of the real rows; the state S ← e^{γ_last} S + Kᵀ W, W = diag(e^{γ_last−γ}) U, on
      // tensor cores (W split in registers, scaled by σ_W), one 16×16 state block per warp job; and
      // the state's new max for the next split.
      const float decay_all = sexp[L - 1];
      block_gemm<P::kTriTM, P::kTriTN, false, LeftShape::Lower>(
          C, BV, C, [&](int i, int p) { return sa[i * C + p]; }, [&](int p, int j) { return su[p * ld_u + j]; },
          [&](int i, int j, float acc) {
            if (i < L && j < cols) output[(row0 + i) * value_dim + v0 + j] = from_float<T>(so[i * BV + j] + acc);
          },
          tid, NT);
      float inv_sigma_w;
      const float sigma_w = split_scale(block_max(smax_w, kWarps), inv_sigma_w);
      local_max = 0.0f;
      for (int job = warp; job < key_blocks * kColBlocks; job += kWarps) {
        const int r0 = (job / kColBlocks) * 16, c0 = (job - (job / kColBlocks) * kColBlocks) * 16;
        Block16 update;
        update.zero();
        warp_state_update<T>(update, sk, ld_k, su, ld_u, send, inv_sigma_w, r0, c0, C, lane);
        update.each(lane, [&](int i, int j, float acc) {
          i += r0;
          j += c0;
          if (i < K) {
            const float x = decay_all * ss[i * BV + j] + sigma_w * acc;
            ss[i * BV + j] = x;
            local_max = fmaxf(local_max, fabsf(x));
          }
        });
      }
      publish_warp_max(local_max, smax, tid);  // read after the barrier by (1); last read before (1)
      __syncthreads();
    }

    for (int idx = tid; idx < K * BV; idx += NT) {
      const int r = idx / BV, j = idx - (idx / BV) * BV;
      if (j < cols) final_state[(bh * key_dim + r) * value_dim + v0 + j] = ss[idx];
    }
  }
}

}  // namespace chunked_detail

template <class T, class G, class Policy>
RUDNN_DEVICE void gated_delta_chunked(const T* RUDNN_RESTRICT query, const T* RUDNN_RESTRICT key,
                                      const T* RUDNN_RESTRICT value, const G* RUDNN_RESTRICT beta,
                                      const G* RUDNN_RESTRICT log_decay, const float* initial_state,
                                      T* RUDNN_RESTRICT output, float* final_state, i64 batch, i64 heads, i64 seq,
                                      i64 key_dim, i64 value_dim, i64 chunk, float query_scale) {
  if constexpr (Policy::kMma) {
    static_assert(sizeof(T) == 2, "gated_delta_chunked: tensor-core policies need f16 or bf16 inputs");
    chunked_detail::run_tensor_core<T, G, Policy>(query, key, value, beta, log_decay, initial_state, output,
                                                  final_state, batch, heads, seq, key_dim, value_dim, chunk,
                                                  query_scale);
  } else {
    chunked_detail::run_plain<T, G, Policy>(query, key, value, beta, log_decay, initial_state, output, final_state,
                                            batch, heads, seq, key_dim, value_dim, chunk, query_scale);
  }
}

}  // namespace rudnn::gated_delta
