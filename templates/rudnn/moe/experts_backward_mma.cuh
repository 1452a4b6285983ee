#pragma once
// The SwiGLU experts' backward on tensor cores (SPEC §10 "TensorCore"), f16/bf16 operands, FP32
// accumulation: the same three passes as the plain-core backward (moe/experts_backward_scalar.cuh,
// whose header gives the algebra) with mma.sync products (below), or wgmma (Policy). For expert e's
// compact rows X:
//   swiglu_backward_hidden_mma  A = X·gateᵀ, B = X·upᵀ (gemm::NtMainloop, the forward's fused
//                               gate/up product) and dHh = dY·down_e (gemm::BlockEngine, down_e
//                               [H, I] staged K-major); then dA = dHh ⊙ B ⊙ silu'(A),
//                               dB = dHh ⊙ silu(A), Hh = silu(A) ⊙ B, each stored as T [N, I]
//   swiglu_backward_input_mma   dX = dA·gate_e + dB·up_e: one K loop over 2·⌈I/BK⌉ blocks, the
//                               first half from (dA, gate), the second from (dB, up) → T [N, H]
//   experts_weight_grad_mma     out_e = P_eᵀ·Q_e over the expert's rows in token order (the row list
//                               of expert_row_order): both operands K-major, gathered row by row
//                               through the list; dgate = dAᵀX, dup = dBᵀX, ddown = dYᵀHh (FP32)
// dA, dB and Hh are rounded to T between the passes (the tensor-core operands are 16-bit; the forward
// rounds its activation the same way), where the plain-core backward keeps them in FP32: the two
// strategies agree to T's rounding, not bit for bit. Each is deterministic on its own: every output
// is one block tile's fixed-order sum (K blocks in sequence), no atomics, any grid.
//
// Policy: gemm::BlockPolicy<BM, BN, BK, WarpsM, WarpsN, Stages, true>, or on sm_90a
// gemm::WgmmaPolicy<BM, BN, BK, Stages> (Hopper's warpgroup MMA, gemm/wgmma_engine.cuh; registered
// tiles: moe_config::backwardTiles(), MoEConfig.h). The input and weight passes take the engine their
// policy names (gemm::EngineFor). On wgmma the hidden pass runs x·gateᵀ and x·upᵀ in one K loop of a
// two-B WgmmaEngine (x loaded once) and dHh in another; their accumulators line up register by
// register for the epilogue. Launch: block = P::kThreads threads (another block size
// traps); hidden: grid.x = ⌈I/BN⌉, grid.y = ⌈N/BM⌉; input: grid.x = ⌈H/BN⌉, grid.y = ⌈N/BM⌉ (both
// stride over the expert tiles as the forward does, gemm/expert_tiles.cuh); weight_grad: grid.x = the
// M × K2 tiles, grid.y = E (both strided). Any grid is correct.
// Dynamic shared memory (bytes): hidden shared_memory::experts_backward_hidden_mma, input
// block_gemm(.., 2, false, true), weight_grad block_gemm(.., 2, true, true); on wgmma hidden
// experts_backward_hidden_wgmma, input and weight_grad block_gemm_wgmma(Stages, BM, BN, BK, 2).
// Requirements (contracts::check_tensor_core_experts): H % 8 == 0 and I % 8 == 0 (16-byte chunks of
// every operand row), 16-byte aligned tensors. Tails of M, N and K are zero-filled in shared memory
// and masked at the stores; experts without rows get zero weight gradients.
#include "rudnn/gemm/expert_tiles.cuh"
#include "rudnn/gemm/gather_tile.cuh"
#include "rudnn/gemm/nt_mainloop.cuh"
#include "rudnn/gemm/wgmma_engine.cuh"
#include "rudnn/moe/experts_mma.cuh"  // experts_detail::store_tile, gate_up_wgmma
#include "rudnn/shared_memory.h"

namespace rudnn::moe {

namespace mma_backward_detail {

template <class P>
RUDNN_DEVICE void check_block() {
  static_assert(P::kTensorCore, "the tensor-core experts backward takes a tensor-core BlockPolicy or a WgmmaPolicy");
  if (blockDim.x != static_cast<unsigned>(P::kThreads) || blockDim.y != 1u || blockDim.z != 1u)
    trap("rudnn::moe experts_backward_mma: blockDim must be (P::kThreads, 1, 1)");
}

// A kRows × kCols tile moved in 16-byte chunks (8 elements of T), placed as the engine's Layout.
template <class T, class P, int kRows, int kCols, class Layout>
using Chunked = gemm::GatherTile<T, kRows, kCols, P::kThreads, 8, Layout>;

RUDNN_DEVICE i64 blocks_of(i64 k, int bk) { return (k + bk - 1) / bk; }

// dA, dB and Hh from the recomputed pre-activations a = x·gateᵀ, b = x·upᵀ and g = dHh.
struct HiddenGrads {
  float da, db, hh;
  RUDNN_DEVICE static HiddenGrads of(float a, float b, float g) {
    const float s = 1.0f / (1.0f + expf(-a));
    return {g * b * (s * (1.0f + a * (1.0f - s))), g * a * s, a * s * b};
  }
};

// The K loop of dHh = dY·down_e over a block tile: rows k = h of down_e [H, I], columns n0..
// (K = hidden), dY's rows K-contiguous.
template <class T, class P, class E>
RUDNN_DEVICE void down_product(typename E::Acc& dh, T* smem, const T* dy, const T* down, const gemm::ExpertTile& tile,
                               i64 n0, i64 hidden, i64 inter) {
  using DyLoad = Chunked<T, P, P::kBM, P::kBK, typename E::ALayout>;
  using DownLoad = Chunked<T, P, P::kBK, P::kBN, typename E::BLayout>;
  const i64 m_rows = tile.end - tile.begin;
  const T* dy_tile = dy + tile.begin * hidden;
  const T* down_tile = down + tile.expert * hidden * inter + n0;
  E::run(
      dh, smem, blocks_of(hidden, P::kBK),
      [&](T* s, i64 kb) {
        DyLoad::load(s, dy, [&](int r, int c) -> const T* {
          const i64 k = kb * P::kBK + c;
          return r < m_rows && k < hidden ? dy_tile + r * hidden + k : nullptr;
        });
      },
      [&](T* s, i64 kb) {
        DownLoad::load(s, down, [&](int r, int c) -> const T* {
          const i64 k = kb * P::kBK + r;
          return k < hidden && n0 + c < inter ? down_tile + k * inter + c : nullptr;
        });
      });
}

// One block tile of the hidden pass on mma.sync: the forward's fused gate/up mainloop, then dHh.
template <class T, class P>
RUDNN_DEVICE void hidden_tile_mma(T* smem, const T* rows, const T* dy, const T* gate, const T* up, const T* down, T* da,
                                  T* db, T* hh, const gemm::ExpertTile& tile, i64 n0, i64 hidden, i64 inter) {
  using GateUp = gemm::NtMainloop<T, P::kBM, P::kBN, P::kBK, P::kWarpsM, P::kWarpsN, P::kStages, 2>;
  using Down = gemm::BlockEngine<T, P, false, true>;
  static_assert(GateUp::kMI == Down::kMI && GateUp::kNI == Down::kNI, "one accumulator layout for both engines");
  static_assert(shared_memory::experts_backward_hidden_mma(P::kStages, P::kBM, P::kBN, P::kBK) ==
                    (GateUp::kSharedBytes > Down::kSharedBytes ? GateUp::kSharedBytes : Down::kSharedBytes),
                "the hidden pass and shared_memory disagree");
  const i64 m_rows = tile.end - tile.begin;
  // A and B recomputed (K = hidden).
  const i64 weights = (tile.expert * inter + n0) * hidden;
  const T* const b[2] = {gate + weights, up + weights};
  typename GateUp::Acc ab[2];
  GateUp::run(ab, smem, rows + tile.begin * hidden, m_rows, b, inter - n0, hidden);
  typename Down::Acc dh;
  down_product<T, P, Down>(dh, smem, dy, down, tile, n0, hidden, inter);
  const i64 at = tile.begin * inter + n0;
  auto grads = [&](int i, int j, int v) { return HiddenGrads::of(ab[0].c[i][j][v], ab[1].c[i][j][v], dh.c[i][j][v]); };
  experts_detail::store_tile<T, GateUp>(da + at, inter, m_rows, inter - n0,
                                        [&](int i, int j, int v) { return grads(i, j, v).da; });
  experts_detail::store_tile<T, GateUp>(db + at, inter, m_rows, inter - n0,
                                        [&](int i, int j, int v) { return grads(i, j, v).db; });
  experts_detail::store_tile<T, GateUp>(hh + at, inter, m_rows, inter - n0,
                                        [&](int i, int j, int v) { return grads(i, j, v).hh; });
}

// One block tile of the hidden pass on wgmma: x·gateᵀ and x·upᵀ as the forward computes them
// (experts_detail::gate_up_wgmma), dHh in a second engine (down_e's rows along K), then the three
// gradients register by register.
template <class T, class P>
RUDNN_DEVICE void hidden_tile_wgmma(T* smem, const T* rows, const T* dy, const T* gate, const T* up, const T* down,
                                    T* da, T* db, T* hh, const gemm::ExpertTile& tile, i64 n0, i64 hidden, i64 inter) {
  using GateUp = experts_detail::GateUpWgmma<T, P>;
  using Down = gemm::WgmmaEngine<T, P, false, true>;
  static_assert(
      shared_memory::experts_backward_hidden_wgmma(P::kStages, P::kBM, P::kBN, P::kBK) == GateUp::kSharedBytes &&
          GateUp::kSharedBytes >= Down::kSharedBytes,
      "the hidden pass and shared_memory disagree");
  const i64 m_rows = tile.end - tile.begin;
  typename GateUp::Acc a, b;
  experts_detail::gate_up_wgmma<T, P>(a, b, smem, rows, gate, up, tile, n0, hidden, inter);
  typename Down::Acc dh;
  down_product<T, P, Down>(dh, smem, dy, down, tile, n0, hidden, inter);
  // Registers i, i + 1 (i even) are adjacent columns; inter and n0 are even, so a pair is all in or
  // all out and its 4 bytes are aligned.
  const i64 at = tile.begin * inter + n0;
  GateUp::each_register([&](int r, int c, int i) {
    if (i % 2 != 0 || r >= m_rows || n0 + c >= inter) return;
    const HiddenGrads lo = HiddenGrads::of(a.d[i], b.d[i], dh.d[i]);
    const HiddenGrads hi = HiddenGrads::of(a.d[i + 1], b.d[i + 1], dh.d[i + 1]);
    const i64 to = at + r * inter + c;
    experts_detail::store_pair(da + to, lo.da, hi.da);
    experts_detail::store_pair(db + to, lo.db, hi.db);
    experts_detail::store_pair(hh + to, lo.hh, hi.hh);
  });
}

}  // namespace mma_backward_detail

template <class T, class P>
RUDNN_DEVICE void swiglu_backward_hidden_mma(const T* rows, const T* dy, const u32* offsets, const T* gate, const T* up,
                                             const T* down, T* da, T* db, T* hh, i64 n_rows, i64 experts, i64 hidden,
                                             i64 inter) {
  using namespace mma_backward_detail;
  check_block<P>();
  T* smem = dynamic_shared<T>();
  const i64 n_blocks = blocks_of(inter, P::kBN);
  gemm::ExpertTileCursor cursor(offsets, experts, n_rows, P::kBM);
  gemm::ExpertTile tile;
  for (i64 t = blockIdx.y; cursor.seek(t, tile); t += gridDim.y) {
    for (i64 nb = blockIdx.x; nb < n_blocks; nb += gridDim.x) {
      if constexpr (P::kWgmma)
        hidden_tile_wgmma<T, P>(smem, rows, dy, gate, up, down, da, db, hh, tile, nb * P::kBN, hidden, inter);
      else
        hidden_tile_mma<T, P>(smem, rows, dy, gate, up, down, da, db, hh, tile, nb * P::kBN, hidden, inter);
    }
  }
}

template <class T, class P>
RUDNN_DEVICE void swiglu_backward_input_mma(const T* da, const T* db, const u32* offsets, const T* gate, const T* up,
                                            T* dx, i64 n_rows, i64 experts, i64 hidden, i64 inter) {
  using namespace mma_backward_detail;
  using E = gemm::EngineFor<T, P, false, true>;
  using ALoad = Chunked<T, P, P::kBM, P::kBK, typename E::ALayout>;
  using BLoad = Chunked<T, P, P::kBK, P::kBN, typename E::BLayout>;
  check_block<P>();
  T* smem = dynamic_shared<T>();
  const i64 n_blocks = blocks_of(hidden, P::kBN);
  const i64 half = blocks_of(inter, P::kBK);  // K blocks of each of the two products
  gemm::ExpertTileCursor cursor(offsets, experts, n_rows, P::kBM);
  gemm::ExpertTile tile;
  for (i64 t = blockIdx.y; cursor.seek(t, tile); t += gridDim.y) {
    const i64 m_rows = tile.end - tile.begin;
    const i64 weights = tile.expert * inter * hidden;
    for (i64 nb = blockIdx.x; nb < n_blocks; nb += gridDim.x) {
      const i64 n0 = nb * P::kBN;
      typename E::Acc acc;
      // K blocks [0, half) multiply (dA, gate_e), [half, 2·half) (dB, up_e); gate_e, up_e [I, H] are
      // read K-major (rows k = i, columns n0..).
      E::run(
          acc, smem, 2 * half,
          [&](T* s, i64 kb) {
            const bool second = kb >= half;
            const T* a = (second ? db : da) + tile.begin * inter;
            const i64 k0 = (second ? kb - half : kb) * P::kBK;
            ALoad::load(s, da, [&](int r, int c) -> const T* {
              return r < m_rows && k0 + c < inter ? a + r * inter + k0 + c : nullptr;
            });
          },
          [&](T* s, i64 kb) {
            const bool second = kb >= half;
            const T* b = (second ? up : gate) + weights + n0;
            const i64 k0 = (second ? kb - half : kb) * P::kBK;
            BLoad::load(s, gate, [&](int r, int c) -> const T* {
              return k0 + r < inter && n0 + c < hidden ? b + (k0 + r) * hidden + c : nullptr;
            });
          });
      T* out = dx + tile.begin * hidden + n0;
      E::each(acc, [&](int r, int c, float v) {
        if (r < m_rows && n0 + c < hidden) out[r * hidden + c] = from_float<T>(v);
      });
    }
  }
}

// out[e, m, k] = Σ_i p[r_i, m]·q[r_i, k] over expert e's rows r_i = order[offsets[e] + i] (token
// order; p [N, M], q [N, K2], M % 8 == 0, K2 % 8 == 0), FP32.
template <class T, class P>
RUDNN_DEVICE void experts_weight_grad_mma(const T* p, const T* q, const u32* offsets, const u32* order, float* out,
                                          i64 n_rows, i64 experts, i64 M, i64 K2) {
  using namespace mma_backward_detail;
  using E = gemm::EngineFor<T, P, true, true>;
  using ALoad = Chunked<T, P, P::kBK, P::kBM, typename E::ALayout>;
  using BLoad = Chunked<T, P, P::kBK, P::kBN, typename E::BLayout>;
  check_block<P>();
  T* smem = dynamic_shared<T>();
  const i64 m_tiles = blocks_of(M, P::kBM), n_tiles = blocks_of(K2, P::kBN);
  for (i64 e = blockIdx.y; e < experts; e += gridDim.y) {
    const i64 begin = offsets[e];
    i64 end = offsets[e + 1];
    if (end > n_rows) end = n_rows;  // offsets beyond the rows given: never read past them
    const i64 rows = end > begin ? end - begin : 0;
    const u32* list = order + begin;
    for (i64 t = blockIdx.x; t < m_tiles * n_tiles; t += gridDim.x) {
      const i64 m0 = (t / n_tiles) * P::kBM, n0 = (t % n_tiles) * P::kBN;
      typename E::Acc acc;
      E::run(
          acc, smem, blocks_of(rows, P::kBK),
          [&](T* s, i64 kb) {
            ALoad::load(s, p, [&](int r, int c) -> const T* {
              const i64 k = kb * P::kBK + r;
              return k < rows && m0 + c < M ? p + static_cast<i64>(list[k]) * M + m0 + c : nullptr;
            });
          },
          [&](T* s, i64 kb) {
            BLoad::load(s, q, [&](int r, int c) -> const T* {
              const i64 k = kb * P::kBK + r;
              return k < rows && n0 + c < K2 ? q + static_cast<i64>(list[k]) * K2 + n0 + c : nullptr;
            });
          });
      float* dst = out + (e * M + m0) * K2 + n0;
      E::each(acc, [&](int r, int c, float v) {
        if (m0 + r < M && n0 + c < K2) dst[r * K2 + c] = v;
      });
    }
  }
}

}  // namespace rudnn::moe
