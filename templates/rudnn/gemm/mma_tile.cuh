#pragma once
// Warp-level tensor-core tiles for "NT" products: A [M, K] and B [N, K], both K-contiguous in
// shared memory (SmemTile layout), C [M, N] += A · Bᵀ in FP32 registers, built from
// mma.sync.m16n8k16.row.col with fragments loaded by ldmatrix (no .trans: a K-contiguous row of B
// is exactly the ".col" B operand, lane l receiving (n = l/4, k = 2(l%4), 2(l%4)+1)).
//
// One warp owns a kWarpM x kWarpN block of C: kMI = kWarpM/16 row tiles times kNI = kWarpN/8
// column tiles, register-blocked so each A fragment feeds kNI MMAs and each B fragment kMI MMAs.
#include "rudnn/prelude.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::gemm {

// d = a·b + d with T's MMA flavour.
template <class T>
RUDNN_DEVICE void mma_16816(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]);
template <>
RUDNN_DEVICE void mma_16816<f16>(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  mma_m16n8k16_f16_f32(d, a, b, d);
}
template <>
RUDNN_DEVICE void mma_16816<bf16>(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  mma_m16n8k16_bf16_f32(d, a, b, d);
}

// A fragment of the 16x16 block at (row0, k0) of a row-major tile with stride kLd (elements).
// ldmatrix.x4 matrices 0..3 = (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
// (rows 8-15, k 8-15): registers a0..a3 of the m16n8k16 A layout. Lane l addresses row l%16 of
// the block at column 8·(l/16).
template <int kLd, class T>
RUDNN_DEVICE void load_a_fragment(u32 (&a)[4], const T* tile, int row0, int k0, int lane) {
  ldmatrix_x4(a, tile + (row0 + (lane & 15)) * kLd + k0 + ((lane >> 4) << 3));
}

// B fragments of two adjacent n8 tiles, (n0..n0+7) and (n0+8..n0+15), at k0 of a K-contiguous
// tile. Matrices 0..3 = (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15), so
// b[0] and b[1] are the .col B operands of the two tiles. Lane l addresses row n0 + 8·(l/16) + l%8
// at column k0 + 8·((l/8)%2).
template <int kLd, class T>
RUDNN_DEVICE void load_b_fragment_pair(u32 (&b)[2][2], const T* tile, int n0, int k0, int lane) {
  u32 r[4];
  ldmatrix_x4(r, tile + (n0 + ((lane >> 4) << 3) + (lane & 7)) * kLd + k0 + (((lane >> 3) & 1) << 3));
  b[0][0] = r[0];
  b[0][1] = r[1];
  b[1][0] = r[2];
  b[1][1] = r[3];
}

// A warp's FP32 accumulators: c[i][j] is the m16n8 tile (16·i, 8·j) of the warp's block; per the
// PTX C layout, lane l holds (row l/4, cols 2(l%4)+{0,1}) in c[..][0..1] and row l/4 + 8 in [2..3].
template <int kMI, int kNI>
struct WarpAccumulator {
  float c[kMI][kNI][4];
  RUDNN_DEVICE void zero() {
    RUDNN_UNROLL
    for (int i = 0; i < kMI; ++i)
      RUDNN_UNROLL
      for (int j = 0; j < kNI; ++j)
        RUDNN_UNROLL
        for (int v = 0; v < 4; ++v) c[i][j][v] = 0.0f;
  }
};

// Where lane `lane`'s accumulator pair c[i][j][2h], c[i][j][2h + 1] sits in the warp's block:
// row 16·i + l/4 + 8·h, columns 8·j + 2(l%4) and the next one.
RUDNN_DEVICE int accumulator_row(int i, int h, int lane) { return 16 * i + (lane >> 2) + 8 * h; }
RUDNN_DEVICE int accumulator_col(int j, int lane) { return 8 * j + 2 * (lane & 3); }

// The warp's A fragments for one k16 step: kMI row tiles starting at row0.
template <int kMI, int kLd, class T>
RUDNN_DEVICE void load_a_fragments(u32 (&a)[kMI][4], const T* tile, int row0, int k0, int lane) {
  RUDNN_UNROLL
  for (int i = 0; i < kMI; ++i) load_a_fragment<kLd>(a[i], tile, row0 + 16 * i, k0, lane);
}

// The warp's B fragments for one k16 step: kNI column tiles (kNI even) starting at n0.
template <int kNI, int kLd, class T>
RUDNN_DEVICE void load_b_fragments(u32 (&b)[kNI][2], const T* tile, int n0, int k0, int lane) {
  static_assert(kNI % 2 == 0, "load_b_fragments: column tiles come in pairs (ldmatrix.x4)");
  RUDNN_UNROLL
  for (int j = 0; j < kNI; j += 2) {
    u32 pair[2][2];
    load_b_fragment_pair<kLd>(pair, tile, n0 + 8 * j, k0, lane);
    b[j][0] = pair[0][0];
    b[j][1] = pair[0][1];
    b[j + 1][0] = pair[1][0];
    b[j + 1][1] = pair[1][1];
  }
}

// acc += A · Bᵀ for one k16 step from fragments already in registers.
template <class T, int kMI, int kNI>
RUDNN_DEVICE void warp_mma(WarpAccumulator<kMI, kNI>& acc, const u32 (&a)[kMI][4], const u32 (&b)[kNI][2]) {
  RUDNN_UNROLL
  for (int i = 0; i < kMI; ++i)
    RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j) mma_16816<T>(acc.c[i][j], a[i], b[j]);
}

}  // namespace rudnn::gemm
