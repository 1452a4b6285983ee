#pragma once
// A warp's FP32 accumulator tile of m16n8 MMA outputs, and the row reductions over it.
//
// Accumulator<kMI, kNI>: kMI row blocks (m16) × kNI column tiles (n8); c[i][j][v] is, per the PTX C
// layout, row 16·i + lane/4 + 8·(v/2), column 8·j + 2·(lane%4) + v%2 of the warp's tile. So a lane
// holds 2·kMI rows ("half rows" h = v/2), each as 2·kNI columns, and the 4 lanes of a quad
// (lane/4 equal) share a row: a row reduction is a reduction over the lane's own columns followed
// by two xor shuffles across the quad (quad_max / quad_sum).
//
// Used by the MoE experts' NT mainloop (gemm/nt_mainloop.cuh), flash attention's S and O
// (attention/flash_mma*.cuh) and the chunked gated delta rule's 16×16 blocks (Accumulator<1, 2>).
#include "rudnn/numeric.cuh"
#include "rudnn/prelude.cuh"
#include "rudnn/tile/mma_fragment.cuh"

namespace rudnn::tile {

// The value of x reduced over the 4 lanes of this lane's quad (all 32 lanes must call).
RUDNN_DEVICE float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
RUDNN_DEVICE float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Where accumulator element c[i][j][2h + e] sits in the warp's tile.
RUDNN_DEVICE int accumulator_row(int i, int h, int lane) { return 16 * i + (lane >> 2) + 8 * h; }
RUDNN_DEVICE int accumulator_col(int j, int lane) { return 8 * j + 2 * (lane & 3); }

template <int kMI, int kNI>
struct Accumulator {
  static constexpr int kRowBlocks = kMI, kColTiles = kNI;
  float c[kMI][kNI][4];

  RUDNN_DEVICE void zero() {
    RUDNN_UNROLL
    for (int i = 0; i < kMI; ++i) RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
    for (int v = 0; v < 4; ++v) c[i][j][v] = 0.0f;
  }

  // Every element times f.
  RUDNN_DEVICE void scale(float f) {
    RUDNN_UNROLL
    for (int i = 0; i < kMI; ++i) RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
    for (int v = 0; v < 4; ++v) c[i][j][v] *= f;
  }

  // The elements of half row (i, h) times f.
  RUDNN_DEVICE void scale_row(int i, int h, float f) {
    RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j) {
      c[i][j][2 * h] *= f;
      c[i][j][2 * h + 1] *= f;
    }
  }

  // The maximum of `init` and this lane's elements of half row (i, h) (not yet across the quad).
  RUDNN_DEVICE float lane_row_max(int i, int h, float init) const {
    float m = init;
    RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j) m = fmaxf(m, fmaxf(c[i][j][2 * h], c[i][j][2 * h + 1]));
    return m;
  }
  // The maximum of `init` and the whole row (i, h) (across the quad).
  RUDNN_DEVICE float row_max(int i, int h, float init) const { return quad_max(lane_row_max(i, h, init)); }

  // c[i][j] += a[i]·b[j] for the whole tile, from one k16 step's fragments.
  template <class T>
  RUDNN_DEVICE void mma(const u32 (&a)[kMI][4], const u32 (&b)[kNI][2]) {
    RUDNN_UNROLL
    for (int i = 0; i < kMI; ++i) RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j) mma_16816<T>(c[i][j], a[i], b[j]);
  }
  // Row block i, n8 tiles j and j + 1 from one A fragment and a B pair.
  template <class T>
  RUDNN_DEVICE void mma_pair(int i, int j, const u32 (&a)[4], const u32 (&b)[2][2]) {
    mma_16816<T>(c[i][j], a, b[0]);
    mma_16816<T>(c[i][j + 1], a, b[1]);
  }

  // f(row, col, value) for every element this lane holds, (row, col) in the warp's tile.
  template <class F>
  RUDNN_DEVICE void each(int lane, const F& f) const {
    RUDNN_UNROLL
    for (int i = 0; i < kMI; ++i) RUDNN_UNROLL
    for (int j = 0; j < kNI; ++j) RUDNN_UNROLL
    for (int v = 0; v < 4; ++v) f(16 * i + (lane >> 2) + 8 * (v >> 1), 8 * j + 2 * (lane & 3) + (v & 1), c[i][j][v]);
  }
};

// One warp's 16×16 output block: two n8 tiles.
using Block16 = Accumulator<1, 2>;

}  // namespace rudnn::tile
