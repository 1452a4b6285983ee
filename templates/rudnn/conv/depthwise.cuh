#pragma once
// Depthwise forward convolution: groups = C (one input channel per group) and O = m·C for a channel
// multiplier m ≥ 1; output channel o = c·m + j reads input channel c only. Layouts as geometry.cuh:
// x [n, D, H, W, C], w [O, KD, KH, KW, 1], y [n, OD, OH, OW, O]; y = conv(x, w) + bias (B void: no
// bias, the pointer is null). FP32 sums in the order kd, kh, kw, then + bias, rounded to T once.
//
// Why a kernel of its own: a depthwise output reads KD·KH·KW inputs and does as many FMAs, so a
// one-thread-per-output kernel is bound by re-reading each input up to KH·KW times. Here a block
// computes a TileH × TileW output tile of one (image, od) for Channels consecutive input channels
// (all m outputs of each). For each kd slice it stages the slice's weights (FP32, [KH·KW][m]
// [Channels]) and the input halo ((TileH − 1)·SH + (KH − 1)·DH + 1) × ((TileW − 1)·SW + (KW − 1)·DW
// + 1) × Channels in T, each input element read from global memory ONCE per tile (zeros for padding
// and for channels ≥ C), then computes every output of the tile from shared memory. Consecutive
// threads take consecutive channels — a 16-byte vector of them each where m = 1 and C is whole
// vectors (kDepthwiseVector: 8 f16/bf16 or 4 f32 channels; single channels otherwise) — so the halo
// loads, the shared reads (no bank conflicts) and the stores are coalesced, and with vectors move
// 16 bytes per lane instead of 2 (the H200 run measured the single-channel kernel at 16 % of the
// copy bandwidth). Slices whose input depth is padding are skipped (block-uniform).
//
// Launch: block P::kThreads = shared_memory::depthwise_threads(...) = 256 threads = Channels / vector
// lanes × the rest pixel slots; each thread computes ⌈TileH·TileW / slots⌉ output pixels (× vector
// × m channels) of the tile. Grid any: blocks stride by linear_block() over n · OD · ceil(OH/TileH) ·
// ceil(OW/TileW) · ceil(C/Channels) tiles (the natural grid has one block per tile; note the channel
// chunks are over the INPUT channels C, so a grid counted over O = m·C has m times too many blocks,
// harmless). Shared: P::kSharedBytes<T, G> = shared_memory::depthwise(KH, KW, SH, SW, DH, DW, m,
// TileH, TileW, Channels, sizeof(T)), independent of KD. Parameters: x, w, bias, y, n.
//
// Registered tiles (those of the compiler's config space, dialect ConvConfig depthwiseTiles). Shared
// bytes for m = 1, 7×7 stride 2, 16-bit / f32; the runtime opts kernels in to the device's full
// shared memory (227 KiB on sm_90), so over 48 KiB is allowed there:
//   DepthwiseTile8x8x32  = <8, 8, 32>:  the default: 2-D/3-D with 3×3..5×5 in any dtype (3×3 s1:
//                                       8 KiB / 14 KiB), 7×7 s2 in 16-bit types under 48 KiB (34 KiB;
//                                       f32 61 KiB).
//   DepthwiseTile4x16x32 = <4, 16, 32>: wide, short outputs (OW ≫ OH, e.g. 2-D with few rows) where
//                                       an 8-row tile would compute rows that do not exist
//                                       (7×7 s2: 36 KiB / 66 KiB).
//   DepthwiseTile8x8x64  = <8, 8, 64>:  C ≥ 64 with small kernels (3×3: 16 KiB / 28 KiB): twice the
//                                       channels per block, half the blocks and weight loads per tile.
// 1-D convolutions (OH = 1) use any tile with TileH rows of which one is real; a <1, 64, 32> tile
// (tested) serves them best if the config space ever registers it.
// The data and weight backward of a depthwise convolution: depthwise_backward.cuh.
#include "rudnn/conv/geometry.cuh"
#include "rudnn/conv/shared_memory.h"
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::conv {

template <int TileH, int TileW, int Channels>
struct DepthwisePolicy {
  static constexpr int kThreads = static_cast<int>(shared_memory::depthwise_threads(TileH, TileW, Channels));
  static_assert(TileH >= 1 && TileW >= 1, "DepthwisePolicy: a tile of at least one output");
  static_assert(Channels >= 1 && kThreads % Channels == 0, "DepthwisePolicy: Channels must divide 256");
  static constexpr int kTileH = TileH, kTileW = TileW, kChannels = Channels;
  static constexpr int kPixels = TileH * TileW;
  template <class T, class G>
  static constexpr long long kSharedBytes = shared_memory::depthwise(G::kKH, G::kKW, G::kSH, G::kSW, G::kDH, G::kDW,
                                                                     G::kO / G::kC, TileH, TileW, Channels,
                                                                     static_cast<long long>(sizeof(T)));
};

using DepthwiseTile8x8x32 = DepthwisePolicy<8, 8, 32>;
using DepthwiseTile4x16x32 = DepthwisePolicy<4, 16, 32>;
using DepthwiseTile8x8x64 = DepthwisePolicy<8, 8, 64>;

// Channels per thread: one 16-byte vector (8 f16/bf16 or 4 f32 channels) where the multiplier is 1
// and every pixel's channel run and the block's chunk are whole vectors (the tensors are 16-byte
// aligned, SPEC §6), so the halo loads, the shared reads and the stores move 16 bytes a lane; else 1.
template <class T, class G, class P>
inline constexpr int kDepthwiseVector =
    static_cast<int>(shared_memory::depthwise_vector(G::kC, G::kO, P::kChannels, static_cast<long long>(sizeof(T))));

// How the three depthwise kernels' threads cover a block's chunk of Channels: kVec channels each
// (kDepthwiseVector), kLanes threads across the chunk, kSlots across the tile's pixels (or the weight
// backward's rows); thread tid is lane tid % kLanes of slot tid / kLanes, and takes the pixels slot,
// slot + kSlots, ... (kPixelsPerThread of them).
template <class T, class G, class P>
struct DepthwiseLanes {
  static constexpr int kVec = kDepthwiseVector<T, G, P>;
  static constexpr int kLanes = P::kChannels / kVec;
  static constexpr int kSlots = P::kThreads / kLanes;
  static constexpr int kPixelsPerThread = (P::kPixels + kSlots - 1) / kSlots;
};

template <class T, class B, class G, class P>
RUDNN_DEVICE void conv_fprop_depthwise(const T* x, const T* w, const B* bias, T* y, i64 n) {
  static_assert(G::kGroups == G::kC, "depthwise: groups must equal the input channels (C/G = 1)");
  static_assert(G::kO % G::kC == 0 && G::kO >= G::kC, "depthwise: O must be m·C with a multiplier m >= 1");
  constexpr int kM = static_cast<int>(G::kO / G::kC);
  constexpr int kCh = P::kChannels;
  using L = DepthwiseLanes<T, G, P>;
  constexpr int kVec = L::kVec, kLanes = L::kLanes, kSlots = L::kSlots, kPixelsPerThread = L::kPixelsPerThread;
  constexpr int kOut = kVec * kM;  // outputs per pixel of a thread
  constexpr int kHaloH = static_cast<int>(shared_memory::depthwise_halo(P::kTileH, G::kKH, G::kSH, G::kDH));
  constexpr int kHaloW = static_cast<int>(shared_memory::depthwise_halo(P::kTileW, G::kKW, G::kSW, G::kDW));
  constexpr i64 kTilesH = (G::kOH + P::kTileH - 1) / P::kTileH, kTilesW = (G::kOW + P::kTileW - 1) / P::kTileW;
  constexpr i64 kChunks = (G::kC + kCh - 1) / kCh;
  constexpr int kPlane = static_cast<int>(G::kKH * G::kKW);  // taps of one kd slice
  constexpr int kWeights = kCh * kM * kPlane;                // the block's weights of one kd slice
  using V = Vec<T, kVec>;

  float* const ws = dynamic_shared<float>();          // [KH·KW][m][Channels]
  T* const xs = reinterpret_cast<T*>(ws + kWeights);  // [halo_h][halo_w][Channels] (16-byte aligned: kCh % 4 == 0)
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kLanes;  // this thread's channels in the chunk: lane·kVec .. + kVec
  const int slot = tid / kLanes;  // its first pixel in the tile
  const i64 items = n * G::kOD * kTilesH * kTilesW * kChunks;
  for (i64 item = linear_block(); item < items; item += block_count()) {
    i64 q = item;
    const i64 c0 = q % kChunks * kCh;
    q /= kChunks;
    const int ow0 = static_cast<int>(q % kTilesW) * P::kTileW;
    q /= kTilesW;
    const int oh0 = static_cast<int>(q % kTilesH) * P::kTileH;
    q /= kTilesH;
    const i64 od = q % G::kOD, img = q / G::kOD;

    // acc[k][e·m + j]: pixel k, channel lane·kVec + e, multiplier j (the output channel order).
    float acc[kPixelsPerThread][kOut];
    RUDNN_UNROLL
    for (int k = 0; k < kPixelsPerThread; ++k) RUDNN_UNROLL
    for (int o = 0; o < kOut; ++o) acc[k][o] = 0.0f;

    const int ih0 = oh0 * static_cast<int>(G::kSH) - static_cast<int>(G::kPH);
    const int iw0 = ow0 * static_cast<int>(G::kSW) - static_cast<int>(G::kPW);
    for (i64 kd = 0; kd < G::kKD; ++kd) {
      const i64 id = od * G::kSD - G::kPD + kd * G::kDD;
      if (id < 0 || id >= G::kD) continue;  // the same for the whole block: barriers stay uniform
      __syncthreads();                      // the previous slice's (or tile's) readers are done
      // The chunk's output channels [c0·m, (c0 + Channels)·m) are consecutive weight rows; slice kd
      // is a run of KH·KW elements in each (coalesced reads), stored transposed for the compute loop.
      for (int idx = tid; idx < kWeights; idx += P::kThreads) {
        const int o_local = idx / kPlane, t = idx % kPlane;
        const int c_local = o_local / kM, j = o_local % kM;
        ws[(t * kM + j) * kCh + c_local] =
            c0 + c_local < G::kC ? to_float(w[(c0 * kM + o_local) * G::kTaps + kd * kPlane + t]) : 0.0f;
      }
      // The halo, a vector of kVec channels per load (a vector lies wholly inside or outside C).
      const T* x_slice = x + (img * G::kD + id) * G::kH * G::kW * G::kC;
      for (int idx = tid; idx < kHaloH * kHaloW * kLanes; idx += P::kThreads) {
        const int cv = idx % kLanes, pix = idx / kLanes;
        const int ih = ih0 + pix / kHaloW, iw = iw0 + pix % kHaloW;
        const i64 c = c0 + cv * kVec;
        const bool inside = ih >= 0 && ih < G::kH && iw >= 0 && iw < G::kW && c < G::kC;
        V v = V::zeros();
        if (inside) v = load_vec<T, kVec>(x_slice + (static_cast<i64>(ih) * G::kW + iw) * G::kC + c);
        store_vec<T, kVec>(xs + pix * kCh + cv * kVec, v);
      }
      __syncthreads();
      RUDNN_UNROLL
      for (int k = 0; k < kPixelsPerThread; ++k) {
        const int p = slot + k * kSlots;
        if (p >= P::kPixels) break;
        const int row = p / P::kTileW * static_cast<int>(G::kSH), col = p % P::kTileW * static_cast<int>(G::kSW);
        // Rolled over kh (unrolled, a 7×7 f32 tile's hoisted loads spilled): one filter row at a time.
        RUDNN_ROLLED
        for (int kh = 0; kh < G::kKH; ++kh)
          for (int kw = 0; kw < G::kKW; ++kw) {
            const V v = load_vec<T, kVec>(
                xs + ((row + kh * static_cast<int>(G::kDH)) * kHaloW + col + kw * static_cast<int>(G::kDW)) * kCh +
                lane * kVec);
            const float* wp = ws + (kh * static_cast<int>(G::kKW) + kw) * kM * kCh + lane * kVec;
            float wv[kOut];  // this tap's weights in acc order
            if constexpr (kVec > 1) {
              load_floats<kVec>(wv, wp);  // m = 1
            } else {
              RUDNN_UNROLL
              for (int j = 0; j < kM; ++j) wv[j] = wp[j * kCh];
            }
            RUDNN_UNROLL
            for (int e = 0; e < kVec; ++e) {
              const float xv = v.get_float(e);
              RUDNN_UNROLL
              for (int j = 0; j < kM; ++j) acc[k][e * kM + j] += xv * wv[e * kM + j];
            }
          }
      }
    }

    const i64 c = c0 + lane * kVec;
    if (c >= G::kC) continue;  // no barrier before the loop's next one
    RUDNN_UNROLL
    for (int k = 0; k < kPixelsPerThread; ++k) {
      const int p = slot + k * kSlots;
      const int oh = oh0 + p / P::kTileW, ow = ow0 + p % P::kTileW;
      if (p >= P::kPixels || oh >= G::kOH || ow >= G::kOW) continue;
      T* yp = y + (((img * G::kOD + od) * G::kOH + oh) * G::kOW + ow) * G::kO + c * kM;
      float out[kOut];
      RUDNN_UNROLL
      for (int o = 0; o < kOut; ++o) {
        out[o] = acc[k][o];
        if constexpr (!IsVoid<B>::value) out[o] += to_float(bias[c * kM + o]);
      }
      if constexpr (kVec > 1) {
        V v;
        v.set_floats(out);
        store_vec<T, kVec>(yp, v);
      } else {
        RUDNN_UNROLL
        for (int o = 0; o < kOut; ++o) yp[o] = from_float<T>(out[o]);
      }
    }
  }
}

}  // namespace rudnn::conv
