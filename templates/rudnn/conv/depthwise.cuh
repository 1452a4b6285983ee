#pragma once
// Depthwise forward convolution: groups = C (one input channel per group) and O = m·C for a channel
// multiplier m ≥ 1; output channel o = c·m + j reads input channel c only. Layouts as geometry.cuh:
// x [n, D, H, W, C], w [O, KD, KH, KW, 1], y [n, OD, OH, OW, O]; y = conv(x, w) + bias (B void: no
// bias, the pointer is null). FP32 sums in the order kd, kh, kw, then + bias, rounded to T once.
//
// Why a kernel of its own: a depthwise output reads KD·KH·KW inputs and does as many FMAs, so a
// one-thread-per-output kernel is bound by re-reading each input up to KH·KW times. Here a block
// computes a TileH × TileW output tile of one (image, od) for Channels consecutive input channels
// (all m outputs of each): it stages the block's weights (FP32, [taps][m][Channels]) once, then for
// each kd slice the input halo ((TileH − 1)·SH + (KH − 1)·DH + 1) × ((TileW − 1)·SW + (KW − 1)·DW + 1)
// × Channels in T, read from global memory ONCE per tile (zeros for padding and for channels ≥ C),
// and computes every output of the tile from shared memory. Consecutive threads take consecutive
// channels, so the halo loads, the shared reads (no bank conflicts) and the stores are coalesced.
//
// Launch: block DepthwisePolicy::kThreads = 256 threads = Channels lanes × (256 / Channels) pixel
// slots; each thread computes TileH·TileW·Channels / 256 output pixels (× m channels) of the tile.
// Grid any: blocks stride by linear_block() over n · OD · ceil(OH/TileH) · ceil(OW/TileW) ·
// ceil(C/Channels) tiles (the natural grid has one block per tile). Shared: P::kSharedBytes<T, G> =
// shared_memory::depthwise(KD, KH, KW, SH, SW, DH, DW, m, TileH, TileW, Channels, sizeof(T)).
// Parameters: x, w, bias, y, n.
//
// Registered tiles (shared bytes are for m = 1; the host checks the formula against the device limit):
//   DepthwiseTile8x8   = <8, 8, 32>:  2-D/3-D with kernels up to 5×5 in any dtype, and 7×7 stride 1/2
//                                     in 16-bit types (7×7 s2 bf16: 34 KiB; f32: 61 KiB, over 48 KiB).
//   DepthwiseTile4x8   = <4, 8, 32>:  large kernels and strides: 7×7 stride 2 f32 takes 40 KiB.
//   DepthwiseTile1x64  = <1, 64, 32>: 1-D convolutions and outputs one row high (OH = 1), where a
//                                     taller tile would stage and compute rows that do not exist.
#include "rudnn/conv/geometry.cuh"
#include "rudnn/conv/shared_memory.h"
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::conv {

template <int TileH, int TileW, int Channels>
struct DepthwisePolicy {
  static constexpr int kThreads = 256;
  static_assert(TileH >= 1 && TileW >= 1, "DepthwisePolicy: a tile of at least one output");
  static_assert(Channels >= 1 && kThreads % Channels == 0, "DepthwisePolicy: Channels must divide 256");
  static constexpr int kTileH = TileH, kTileW = TileW, kChannels = Channels;
  static constexpr int kSlots = kThreads / Channels;  // threads per channel, over the tile's pixels
  static constexpr int kPixels = TileH * TileW;
  static constexpr int kPixelsPerThread = (kPixels + kSlots - 1) / kSlots;
  template <class T, class G>
  static constexpr long long kSharedBytes = shared_memory::depthwise(G::kKD, G::kKH, G::kKW, G::kSH, G::kSW, G::kDH,
                                                                     G::kDW, G::kO / G::kC, TileH, TileW, Channels,
                                                                     static_cast<long long>(sizeof(T)));
};

using DepthwiseTile8x8 = DepthwisePolicy<8, 8, 32>;
using DepthwiseTile4x8 = DepthwisePolicy<4, 8, 32>;
using DepthwiseTile1x64 = DepthwisePolicy<1, 64, 32>;

template <class T, class B, class G, class P>
RUDNN_DEVICE void conv_fprop_depthwise(const T* x, const T* w, const B* bias, T* y, i64 n) {
  static_assert(G::kGroups == G::kC, "depthwise: groups must equal the input channels (C/G = 1)");
  static_assert(G::kO % G::kC == 0 && G::kO >= G::kC, "depthwise: O must be m·C with a multiplier m >= 1");
  constexpr int kM = static_cast<int>(G::kO / G::kC);
  constexpr int kCh = P::kChannels;
  constexpr i64 kHaloH = shared_memory::depthwise_halo(P::kTileH, G::kKH, G::kSH, G::kDH);
  constexpr i64 kHaloW = shared_memory::depthwise_halo(P::kTileW, G::kKW, G::kSW, G::kDW);
  constexpr i64 kTilesH = (G::kOH + P::kTileH - 1) / P::kTileH, kTilesW = (G::kOW + P::kTileW - 1) / P::kTileW;
  constexpr i64 kChunks = (G::kC + kCh - 1) / kCh;
  constexpr i64 kWeights = kCh * kM * G::kTaps;  // the block's weights

  float* const ws = dynamic_shared<float>();             // [taps][m][Channels]
  T* const xs = reinterpret_cast<T*>(ws + kWeights);     // [halo_h][halo_w][Channels]
  const int cl = static_cast<int>(threadIdx.x) % kCh;    // this thread's channel in the chunk
  const int slot = static_cast<int>(threadIdx.x) / kCh;  // its first pixel in the tile
  const i64 items = n * G::kOD * kTilesH * kTilesW * kChunks;
  for (i64 item = linear_block(); item < items; item += block_count()) {
    i64 q = item;
    const i64 c0 = q % kChunks * kCh;
    q /= kChunks;
    const i64 ow0 = q % kTilesW * P::kTileW;
    q /= kTilesW;
    const i64 oh0 = q % kTilesH * P::kTileH;
    q /= kTilesH;
    const i64 od = q % G::kOD, img = q / G::kOD;

    __syncthreads();  // the previous tile's readers of ws and xs are done
    // The chunk's output channels [c0·m, (c0 + Channels)·m) are consecutive weight rows of `taps`
    // elements: read them in memory order (coalesced), store them transposed for the compute loop.
    for (i64 idx = threadIdx.x; idx < kWeights; idx += P::kThreads) {
      const i64 o_local = idx / G::kTaps, tap = idx % G::kTaps;
      const i64 c_local = o_local / kM, j = o_local % kM;
      ws[(tap * kM + j) * kCh + c_local] = c0 + c_local < G::kC ? to_float(w[c0 * kM * G::kTaps + idx]) : 0.0f;
    }

    float acc[P::kPixelsPerThread][kM];
    RUDNN_UNROLL
    for (int k = 0; k < P::kPixelsPerThread; ++k) RUDNN_UNROLL
    for (int j = 0; j < kM; ++j) acc[k][j] = 0.0f;

    const i64 ih0 = oh0 * G::kSH - G::kPH, iw0 = ow0 * G::kSW - G::kPW;
    for (i64 kd = 0; kd < G::kKD; ++kd) {
      const i64 id = od * G::kSD - G::kPD + kd * G::kDD;
      if (id < 0 || id >= G::kD) continue;  // the same for the whole block: barriers stay uniform
      __syncthreads();                      // the previous slice's readers of xs are done
      const T* x_slice = x + (img * G::kD + id) * G::kH * G::kW * G::kC;
      for (i64 idx = threadIdx.x; idx < kHaloH * kHaloW * kCh; idx += P::kThreads) {
        const i64 cc = idx % kCh, pix = idx / kCh;
        const i64 ih = ih0 + pix / kHaloW, iw = iw0 + pix % kHaloW, c = c0 + cc;
        xs[idx] = ih >= 0 && ih < G::kH && iw >= 0 && iw < G::kW && c < G::kC ? x_slice[(ih * G::kW + iw) * G::kC + c]
                                                                              : from_float<T>(0.0f);
      }
      __syncthreads();
      RUDNN_UNROLL
      for (int k = 0; k < P::kPixelsPerThread; ++k) {
        const int p = slot + k * P::kSlots;
        if (p >= P::kPixels) break;
        const i64 row = p / P::kTileW * G::kSH, col = p % P::kTileW * G::kSW;
        for (i64 kh = 0; kh < G::kKH; ++kh)
          for (i64 kw = 0; kw < G::kKW; ++kw) {
            const float v = to_float(xs[((row + kh * G::kDH) * kHaloW + col + kw * G::kDW) * kCh + cl]);
            const float* wp = ws + ((kd * G::kKH + kh) * G::kKW + kw) * kM * kCh + cl;
            RUDNN_UNROLL
            for (int j = 0; j < kM; ++j) acc[k][j] += v * wp[j * kCh];
          }
      }
    }

    const i64 c = c0 + cl;
    if (c >= G::kC) continue;  // no barrier before the loop's next one
    RUDNN_UNROLL
    for (int k = 0; k < P::kPixelsPerThread; ++k) {
      const int p = slot + k * P::kSlots;
      const i64 oh = oh0 + p / P::kTileW, ow = ow0 + p % P::kTileW;
      if (p >= P::kPixels || oh >= G::kOH || ow >= G::kOW) continue;
      T* yp = y + (((img * G::kOD + od) * G::kOH + oh) * G::kOW + ow) * G::kO + c * kM;
      RUDNN_UNROLL
      for (int j = 0; j < kM; ++j) {
        float v = acc[k][j];
        if constexpr (!IsVoid<B>::value) v += to_float(bias[c * kM + j]);
        yp[j] = from_float<T>(v);
      }
    }
  }
}

}  // namespace rudnn::conv
