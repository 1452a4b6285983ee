#pragma once
// Direct convolution on plain cores: forward, data gradient, weight gradient and bias gradient for
// every Geometry (1-D/2-D/3-D, any stride, padding, dilation, groups). It is what the strategies fall
// back to (3-D F32, grouped ImplicitGemm), so it favours generality and determinism over speed.
// Layouts (geometry.cuh): x [n, D, H, W, C], w [O, KD, KH, KW, C/G], y/dy [n, OD, OH, OW, O]. T is
// float, f16 or bf16; every sum is FP32 in a fixed order and rounded to T (db: kept in FP32) once.
//
// conv_fprop_direct<T, B, G, P>(x, w, bias, y, n): y = conv(x, w) + bias (B void: no bias, bias null).
//   One thread per output element of [n, OD, OH, OW, O], consecutive threads on consecutive o: y is
//   written coalesced, x is read as a broadcast (all o of a group read the same input), each thread
//   walks its own weight row (L1/L2 resident: the whole filter is reused by every pixel).
//   Order: taps (kd, kh, kw), then the group's input channels, then + bias.
// conv_dgrad_direct<T, G, P>(dy, w, dx, n): dx = ∂(Σ y·dy)/∂x, the transposed gather.
//   One thread per input element of [n, D, H, W, C] (consecutive threads on consecutive c: w and dx
//   coalesced, dy broadcast). For each tap, the output position (i + pad − k·dil)/stride counts only
//   when the division is exact and in range; then the output channels of the channel's group.
// conv_wgrad_direct<T, G, P>(x, dy, dw, n): dw [O, KD, KH, KW, C/G] = Σ over n·OutPixels of x·dy.
//   A work item is (a set of S output channels of one group, 32 consecutive filter positions f =
//   tap·C/G + c of their rows), S = shared_memory::wgrad_direct_channel_set(O/G). Lane l owns f0 + l
//   (consecutive lanes read consecutive input channels), warp w sums rows r = w, w + warps, ... in
//   ascending order, then the warps' partials are combined by a fixed tree in shared memory. The
//   result depends on neither the grid nor the thread schedule. n = 0 writes dw = 0 (empty sum).
// conv_bias_grad<T, P>(dy, db, rows, channels): db[o] = Σ_r dy[r, o] in FP32 (rows = n·OutPixels);
//   the same structure as wgrad with work items of 32 channels. rows = 0 writes db = 0.
//
// Launch (DirectPolicy<Threads>, Threads ∈ {128, 256}): block P::kThreads threads; grid any (blocks
// stride over the work by linear_block()). Natural grids: fprop ceil(n·OutPixels·O / Threads),
// dgrad ceil(n·InPixels·C / Threads), wgrad wgrad_direct_items(O, G, KD·KH·KW·C/G) =
// (O / S)·ceil(KD·KH·KW·C/G / 32), bias bias_grad_blocks(channels) = ceil(channels / 32).
// Shared bytes (conv/shared_memory.h): fprop, dgrad 0; wgrad wgrad_direct(Threads) (P::kWgradSharedBytes);
// bias grad bias_grad(Threads) (P::kBiasGradSharedBytes).
#include "rudnn/conv/geometry.cuh"
#include "rudnn/conv/shared_memory.h"
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::conv {

template <int Threads>
struct DirectPolicy {
  static_assert(Threads == 128 || Threads == 256, "DirectPolicy: 128 or 256 threads");
  static constexpr int kThreads = Threads;
  static constexpr int kWarps = Threads / 32;
  static constexpr long long kWgradSharedBytes = shared_memory::wgrad_direct(Threads);
  static constexpr long long kBiasGradSharedBytes = shared_memory::bias_grad(Threads);
};

namespace direct_detail {

// The global index of this thread's first item and the grid's stride, for one-thread-per-element
// kernels.
template <class P>
RUDNN_DEVICE i64 first_item() {
  return linear_block() * P::kThreads + static_cast<i64>(threadIdx.x);
}
template <class P>
RUDNN_DEVICE i64 item_stride() {
  return block_count() * P::kThreads;
}

// Sums kSets × 32 lanes of per-thread partials over the block's warps with a fixed tree (warp w adds
// warp w + half, half = warps/2, ..., 1) and returns warp 0's totals in `out` (meaningful in warp
// 0 only). Every thread of the block calls it. Slot (s, warp, lane) is written only by that warp
// before the first barrier and read by a lower warp before a later one, so calling it again for the
// next work item needs no extra barrier.
template <int kWarps, int kSets>
RUDNN_DEVICE void tree_sum(float* part, const float (&acc)[kSets], float (&out)[kSets]) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  RUDNN_UNROLL
  for (int s = 0; s < kSets; ++s) part[(s * kWarps + warp) * 32 + lane] = acc[s];
  __syncthreads();
  RUDNN_UNROLL
  for (int half = kWarps / 2; half >= 1; half /= 2) {
    if (warp < half) RUDNN_UNROLL
    for (int s = 0; s < kSets; ++s)
      part[(s * kWarps + warp) * 32 + lane] += part[(s * kWarps + warp + half) * 32 + lane];
    __syncthreads();
  }
  RUDNN_UNROLL
  for (int s = 0; s < kSets; ++s) out[s] = part[s * kWarps * 32 + lane];
}

}  // namespace direct_detail

template <class T, class B, class G, class P>
RUDNN_DEVICE void conv_fprop_direct(const T* x, const T* w, const B* bias, T* y, i64 n) {
  const i64 total = n * G::kOutPixels * G::kO;
  for (i64 e = direct_detail::first_item<P>(); e < total; e += direct_detail::item_stride<P>()) {
    const i64 o = e % G::kO;
    i64 r = e / G::kO;
    const i64 ow = r % G::kOW;
    r /= G::kOW;
    const i64 oh = r % G::kOH;
    r /= G::kOH;
    const i64 od = r % G::kOD, img = r / G::kOD;
    const T* x_img = x + img * G::kInPixels * G::kC + (o / G::kOg) * G::kCg;  // the group's channels
    const T* w_row = w + o * G::kFilter;
    float acc = 0.0f;
    for (i64 kd = 0; kd < G::kKD; ++kd) {
      const i64 id = od * G::kSD - G::kPD + kd * G::kDD;
      if (id < 0 || id >= G::kD) continue;
      for (i64 kh = 0; kh < G::kKH; ++kh) {
        const i64 ih = oh * G::kSH - G::kPH + kh * G::kDH;
        if (ih < 0 || ih >= G::kH) continue;
        for (i64 kw = 0; kw < G::kKW; ++kw) {
          const i64 iw = ow * G::kSW - G::kPW + kw * G::kDW;
          if (iw < 0 || iw >= G::kW) continue;
          const T* xp = x_img + ((id * G::kH + ih) * G::kW + iw) * G::kC;
          const T* wp = w_row + ((kd * G::kKH + kh) * G::kKW + kw) * G::kCg;
          for (i64 c = 0; c < G::kCg; ++c) acc += to_float(xp[c]) * to_float(wp[c]);
        }
      }
    }
    if constexpr (!IsVoid<B>::value) acc += to_float(bias[o]);
    y[e] = from_float<T>(acc);
  }
}

template <class T, class G, class P>
RUDNN_DEVICE void conv_dgrad_direct(const T* dy, const T* w, T* dx, i64 n) {
  const i64 total = n * G::kInPixels * G::kC;
  for (i64 e = direct_detail::first_item<P>(); e < total; e += direct_detail::item_stride<P>()) {
    const i64 c = e % G::kC;
    i64 r = e / G::kC;
    const i64 iw = r % G::kW;
    r /= G::kW;
    const i64 ih = r % G::kH;
    r /= G::kH;
    const i64 id = r % G::kD, img = r / G::kD;
    const i64 group = c / G::kCg, c_in_group = c % G::kCg;
    const T* dy_img = dy + img * G::kOutPixels * G::kO + group * G::kOg;
    const T* w_group = w + group * G::kOg * G::kFilter + c_in_group;
    float acc = 0.0f;
    for (i64 kd = 0; kd < G::kKD; ++kd) {
      // The output position whose tap kd reads depth id: od·SD − PD + kd·DD = id.
      const i64 td = id + G::kPD - kd * G::kDD;
      if (td < 0 || td % G::kSD != 0 || td / G::kSD >= G::kOD) continue;
      const i64 od = td / G::kSD;
      for (i64 kh = 0; kh < G::kKH; ++kh) {
        const i64 th = ih + G::kPH - kh * G::kDH;
        if (th < 0 || th % G::kSH != 0 || th / G::kSH >= G::kOH) continue;
        const i64 oh = th / G::kSH;
        for (i64 kw = 0; kw < G::kKW; ++kw) {
          const i64 tw = iw + G::kPW - kw * G::kDW;
          if (tw < 0 || tw % G::kSW != 0 || tw / G::kSW >= G::kOW) continue;
          const i64 ow = tw / G::kSW;
          const T* dyp = dy_img + ((od * G::kOH + oh) * G::kOW + ow) * G::kO;
          const T* wp = w_group + ((kd * G::kKH + kh) * G::kKW + kw) * G::kCg;
          for (i64 oo = 0; oo < G::kOg; ++oo) acc += to_float(dyp[oo]) * to_float(wp[oo * G::kFilter]);
        }
      }
    }
    dx[e] = from_float<T>(acc);
  }
}

template <class T, class G, class P>
RUDNN_DEVICE void conv_wgrad_direct(const T* x, const T* dy, T* dw, i64 n) {
  constexpr int kSets = static_cast<int>(shared_memory::wgrad_direct_channel_set(G::kOg));
  constexpr i64 kChunks = (G::kFilter + 31) / 32;  // 32 filter positions per work item
  constexpr i64 kItems = G::kO / kSets * kChunks;
  float* const part = dynamic_shared<float>();  // [kSets][warps][32]
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const i64 rows = n * G::kOutPixels;
  for (i64 item = linear_block(); item < kItems; item += block_count()) {
    const i64 o0 = item / kChunks * kSets, f = item % kChunks * 32 + lane;
    const bool active = f < G::kFilter;
    const i64 tap = active ? f / G::kCg : 0, c = f % G::kCg;
    const i64 kw = tap % G::kKW, kh = tap / G::kKW % G::kKH, kd = tap / (G::kKW * G::kKH);
    const T* x_ch = x + (o0 / G::kOg) * G::kCg + c;  // input channel c of the set's group
    float acc[kSets];
    RUDNN_UNROLL
    for (int s = 0; s < kSets; ++s) acc[s] = 0.0f;
    for (i64 r = warp; active && r < rows; r += P::kWarps) {
      i64 q = r;
      const i64 ow = q % G::kOW;
      q /= G::kOW;
      const i64 oh = q % G::kOH;
      q /= G::kOH;
      const i64 od = q % G::kOD, img = q / G::kOD;
      const i64 id = od * G::kSD - G::kPD + kd * G::kDD;
      const i64 ih = oh * G::kSH - G::kPH + kh * G::kDH;
      const i64 iw = ow * G::kSW - G::kPW + kw * G::kDW;
      if (id < 0 || id >= G::kD || ih < 0 || ih >= G::kH || iw < 0 || iw >= G::kW) continue;
      const float xv = to_float(x_ch[(((img * G::kD + id) * G::kH + ih) * G::kW + iw) * G::kC]);
      const T* dyp = dy + r * G::kO + o0;
      RUDNN_UNROLL
      for (int s = 0; s < kSets; ++s) acc[s] += xv * to_float(dyp[s]);
    }
    float total[kSets];
    direct_detail::tree_sum<P::kWarps, kSets>(part, acc, total);
    if (warp == 0 && active) RUDNN_UNROLL
    for (int s = 0; s < kSets; ++s) dw[(o0 + s) * G::kFilter + f] = from_float<T>(total[s]);
  }
}

template <class T, class P>
RUDNN_DEVICE void conv_bias_grad(const T* dy, float* db, i64 rows, i64 channels) {
  float* const part = dynamic_shared<float>();  // [warps][32]
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const i64 items = (channels + 31) / 32;
  for (i64 item = linear_block(); item < items; item += block_count()) {
    const i64 o = item * 32 + lane;
    float acc[1] = {0.0f};
    if (o < channels)
      for (i64 r = warp; r < rows; r += P::kWarps) acc[0] += to_float(dy[r * channels + o]);
    float total[1];
    direct_detail::tree_sum<P::kWarps, 1>(part, acc, total);
    if (warp == 0 && o < channels) db[o] = total[0];
  }
}

}  // namespace rudnn::conv
