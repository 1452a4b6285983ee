#pragma once
// Depthwise data and weight backward: groups = C (one input channel per group), O = m·C, output
// channel o = c·m + j reads input channel c only (the forward's mapping, depthwise.cuh). Layouts as
// geometry.cuh: x/dx [n, D, H, W, C], w/dw [O, KD, KH, KW, 1], dy [n, OD, OH, OW, O]. Policy:
// DepthwisePolicy<TileH, TileW, Channels>; its 256 threads as DepthwiseLanes (depthwise.cuh) lay them out.
//
// conv_dgrad_depthwise<T, G, P>(dy, w, dx, n): dx[c] = Σ_{kd, kh, kw, j} dy[o(i, k), c·m + j] ·
//   w[c·m + j, k], where the output position o = (i + pad − k·dil) / stride counts only when the
//   division is exact and in range (the transposed gather). A block computes a TileH × TileW tile
//   of dx of one (image, id) for Channels consecutive input channels. For each kd slice whose output
//   depth exists (block-uniform) it stages the slice's weights (FP32 [KH·KW][m][Channels]) and the dy
//   halo that the tile reads, dgrad_halo = ((tile − 1) + (k − 1)·dil) / stride + 1 output rows and
//   columns × m·Channels channels (zeros outside dy), each dy element read from global memory once
//   per tile with consecutive threads on consecutive output channels — 16-byte vectors of them, and
//   as many dx channels per thread, under the forward's rule (kDepthwiseVector). FP32 sums in the order kd,
//   kh, kw, j, rounded to T once. Work items: n·D·⌈H/TileH⌉·⌈W/TileW⌉·⌈C/Channels⌉ (any grid).
//   Shared: shared_memory::depthwise_dgrad(KH, KW, SH, SW, DH, DW, m, TileH, TileW, Channels,
//   sizeof T) = P::kDgradSharedBytes<T, G>.
//
// conv_wgrad_depthwise<T, G, P>(x, dy, partial, n, splits): partial[s][o][tap] = Σ over the rows r
//   of split s of x[r's input position at tap, o / m] · dy[r, o] in FP32; rows = n·OutPixels are cut
//   into `splits` contiguous ranges of ⌈rows / splits⌉. A work item is (chunk of Channels
//   consecutive OUTPUT channels, split s): lane = a channel, or a 16-byte vector of them under the
//   forward's rule (kDepthwiseVector; dy loads coalesced along o, x loads along c), slot q sums rows
//   begin + q, begin + q + slots, ... in ascending order for up to kTapBlock taps at a time (the
//   taps in balanced blocks of at most min(32, 72 / vector), so registers stay bounded), then the
//   slots are combined by a fixed tree in shared memory ([threads · vector] floats). Every item
//   writes all its partial sums (zeros for an empty range). conv_split_reduce<T, void>
//   (implicit_gemm.cuh) then sums the splits in order: dw[o][tap] = Σ_s partial[s][o][tap].
//   Deterministic, no atomics. Work items: ⌈O/Channels⌉·splits (any grid). Shared:
//   shared_memory::depthwise_wgrad(threads, vector) = kDepthwiseWgradSharedBytes<T, G, P>.
#include "rudnn/conv/depthwise.cuh"

namespace rudnn::conv {

template <class T, class G, class P>
inline constexpr long long kDepthwiseDgradSharedBytes =
    shared_memory::depthwise_dgrad(G::kKH, G::kKW, G::kSH, G::kSW, G::kDH, G::kDW, G::kO / G::kC, P::kTileH, P::kTileW,
                                   P::kChannels, static_cast<long long>(sizeof(T)));
template <class T, class G, class P>
inline constexpr long long kDepthwiseWgradSharedBytes = shared_memory::depthwise_wgrad(P::kThreads,
                                                                                       kDepthwiseVector<T, G, P>);

namespace depthwise_detail {
// floor(a / b) for b > 0 and any sign of a.
RUDNN_DEVICE i64 floor_div(i64 a, i64 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace depthwise_detail

template <class T, class G, class P>
RUDNN_DEVICE void conv_dgrad_depthwise(const T* dy, const T* w, T* dx, i64 n) {
  static_assert(G::kGroups == G::kC, "depthwise: groups must equal the input channels (C/G = 1)");
  static_assert(G::kO % G::kC == 0 && G::kO >= G::kC, "depthwise: O must be m·C with a multiplier m >= 1");
  constexpr int kM = static_cast<int>(G::kO / G::kC);
  constexpr int kCh = P::kChannels;
  using L = DepthwiseLanes<T, G, P>;  // channels per thread: the forward's rule
  constexpr int kVec = L::kVec, kLanes = L::kLanes, kSlots = L::kSlots, kPixelsPerThread = L::kPixelsPerThread;
  constexpr int kHaloH = static_cast<int>(shared_memory::depthwise_dgrad_halo(P::kTileH, G::kKH, G::kSH, G::kDH));
  constexpr int kHaloW = static_cast<int>(shared_memory::depthwise_dgrad_halo(P::kTileW, G::kKW, G::kSW, G::kDW));
  constexpr i64 kTilesH = (G::kH + P::kTileH - 1) / P::kTileH, kTilesW = (G::kW + P::kTileW - 1) / P::kTileW;
  constexpr i64 kChunks = (G::kC + kCh - 1) / kCh;
  constexpr int kPlane = static_cast<int>(G::kKH * G::kKW);
  constexpr int kWeights = kCh * kM * kPlane;
  constexpr int kHaloLanes = kCh * kM / kVec;  // staged dy loads per halo pixel
  constexpr int kSH = static_cast<int>(G::kSH), kSW = static_cast<int>(G::kSW);
  using V = Vec<T, kVec>;

  float* const ws = dynamic_shared<float>();          // [KH·KW][m][Channels]
  T* const ys = reinterpret_cast<T*>(ws + kWeights);  // [halo_h][halo_w][m][Channels]
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kLanes;  // channels lane·kVec .. + kVec of the chunk
  const int slot = tid / kLanes;
  const i64 items = n * G::kD * kTilesH * kTilesW * kChunks;
  for (i64 item = linear_block(); item < items; item += block_count()) {
    i64 q = item;
    const i64 c0 = q % kChunks * kCh;
    q /= kChunks;
    const int iw0 = static_cast<int>(q % kTilesW) * P::kTileW;
    q /= kTilesW;
    const int ih0 = static_cast<int>(q % kTilesH) * P::kTileH;
    q /= kTilesH;
    const i64 id = q % G::kD, img = q / G::kD;
    // The first output row/column the tile can read: ceil((i0 + pad − (k − 1)·dil) / stride).
    const int oh_lo = static_cast<int>(-depthwise_detail::floor_div(-(ih0 + G::kPH - (G::kKH - 1) * G::kDH), G::kSH));
    const int ow_lo = static_cast<int>(-depthwise_detail::floor_div(-(iw0 + G::kPW - (G::kKW - 1) * G::kDW), G::kSW));

    float acc[kPixelsPerThread][kVec];
    RUDNN_UNROLL
    for (int k = 0; k < kPixelsPerThread; ++k) RUDNN_UNROLL
    for (int e = 0; e < kVec; ++e) acc[k][e] = 0.0f;

    for (i64 kd = 0; kd < G::kKD; ++kd) {
      const i64 num_d = id + G::kPD - kd * G::kDD;
      if (num_d < 0 || num_d % G::kSD != 0 || num_d / G::kSD >= G::kOD) continue;  // block-uniform
      const i64 od = num_d / G::kSD;
      __syncthreads();  // the previous slice's (or tile's) readers are done
      for (int idx = tid; idx < kWeights; idx += P::kThreads) {
        const int o_local = idx / kPlane, t = idx % kPlane;
        const int c_local = o_local / kM, j = o_local % kM;
        ws[(t * kM + j) * kCh + c_local] =
            c0 + c_local < G::kC ? to_float(w[(c0 * kM + o_local) * G::kTaps + kd * kPlane + t]) : 0.0f;
      }
      const T* dy_slice = dy + (img * G::kOD + od) * G::kOH * G::kOW * G::kO;
      for (int idx = tid; idx < kHaloH * kHaloW * kHaloLanes; idx += P::kThreads) {
        // Consecutive threads: consecutive output channels (a vector of kVec of them where m = 1).
        const int o_local = idx % kHaloLanes * kVec, pix = idx / kHaloLanes;
        const int c_local = o_local / kM, j = o_local % kM;
        const int oh = oh_lo + pix / kHaloW, ow = ow_lo + pix % kHaloW;
        const bool inside = oh >= 0 && oh < G::kOH && ow >= 0 && ow < G::kOW && c0 + c_local < G::kC;
        V v = V::zeros();
        if (inside) v = load_vec<T, kVec>(dy_slice + (static_cast<i64>(oh) * G::kOW + ow) * G::kO + c0 * kM + o_local);
        store_vec<T, kVec>(ys + (pix * kM + j) * kCh + c_local, v);
      }
      __syncthreads();
      RUDNN_UNROLL
      for (int k = 0; k < kPixelsPerThread; ++k) {
        const int p = slot + k * kSlots;
        if (p >= P::kPixels) break;
        const int ih = ih0 + p / P::kTileW, iw = iw0 + p % P::kTileW;
        for (int kh = 0; kh < G::kKH; ++kh) {
          // ≥ 0 for every tap the tile reads; exact multiples of the stride only.
          const int rh = ih + static_cast<int>(G::kPH) - kh * static_cast<int>(G::kDH) - oh_lo * kSH;
          if (rh < 0 || rh % kSH != 0) continue;
          for (int kw = 0; kw < G::kKW; ++kw) {
            const int rw = iw + static_cast<int>(G::kPW) - kw * static_cast<int>(G::kDW) - ow_lo * kSW;
            if (rw < 0 || rw % kSW != 0) continue;
            const T* yp = ys + ((rh / kSH) * kHaloW + rw / kSW) * kM * kCh + lane * kVec;
            const float* wp = ws + (kh * static_cast<int>(G::kKW) + kw) * kM * kCh + lane * kVec;
            if constexpr (kVec > 1) {  // m = 1
              const V v = load_vec<T, kVec>(yp);
              float wv[kVec];
              load_floats<kVec>(wv, wp);
              RUDNN_UNROLL
              for (int e = 0; e < kVec; ++e) acc[k][e] += v.get_float(e) * wv[e];
            } else {
              RUDNN_UNROLL
              for (int j = 0; j < kM; ++j) acc[k][0] += to_float(yp[j * kCh]) * wp[j * kCh];
            }
          }
        }
      }
    }

    const i64 c = c0 + lane * kVec;
    if (c >= G::kC) continue;  // no barrier before the loop's next one
    RUDNN_UNROLL
    for (int k = 0; k < kPixelsPerThread; ++k) {
      const int p = slot + k * kSlots;
      const int ih = ih0 + p / P::kTileW, iw = iw0 + p % P::kTileW;
      if (p >= P::kPixels || ih >= G::kH || iw >= G::kW) continue;
      T* out = dx + (((img * G::kD + id) * G::kH + ih) * G::kW + iw) * G::kC + c;
      if constexpr (kVec > 1) {
        V v;
        v.set_floats(acc[k]);
        store_vec<T, kVec>(out, v);
      } else {
        *out = from_float<T>(acc[k][0]);
      }
    }
  }
}

template <class T, class G, class P>
RUDNN_DEVICE void conv_wgrad_depthwise(const T* x, const T* dy, float* partial, i64 n, i64 splits) {
  static_assert(G::kGroups == G::kC, "depthwise: groups must equal the input channels (C/G = 1)");
  static_assert(G::kO % G::kC == 0 && G::kO >= G::kC, "depthwise: O must be m·C with a multiplier m >= 1");
  constexpr i64 kM = G::kO / G::kC;
  constexpr int kCh = P::kChannels;
  using L = DepthwiseLanes<T, G, P>;  // output channels per thread: the forward's rule
  constexpr int kVec = L::kVec, kLanes = L::kLanes, kSlots = L::kSlots;
  static_assert((kSlots & (kSlots - 1)) == 0, "depthwise wgrad: the slot count must be a power of two (tree)");
  // Taps per pass: at most 32, and at most 72 / kVec so the kTapBlock × kVec sums stay in registers
  // (3×3 with 16-bit vectors: all 9 taps in one pass).
  constexpr int kTapCap = 72 / kVec < 32 ? 72 / kVec : 32;
  constexpr i64 kTapBlocks = (G::kTaps + kTapCap - 1) / kTapCap;
  constexpr int kTapBlock = static_cast<int>((G::kTaps + kTapBlocks - 1) / kTapBlocks);
  constexpr i64 kChunks = (G::kO + kCh - 1) / kCh;
  constexpr int kOutPixels = static_cast<int>(G::kOutPixels);
  using V = Vec<T, kVec>;

  float* const red = dynamic_shared<float>();  // [slots][lanes][kVec]
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kLanes;
  const int slot = tid / kLanes;
  const i64 rows = n * G::kOutPixels;
  const i64 per_split = (rows + splits - 1) / splits;
  const i64 items = kChunks * splits;
  for (i64 item = linear_block(); item < items; item += block_count()) {
    const i64 o0 = item % kChunks * kCh, s = item / kChunks;
    const i64 o = o0 + lane * kVec;  // this thread's output channels o .. o + kVec (all < O or none)
    const bool live = o < G::kO;
    const i64 c = o / kM;
    const i64 begin = s * per_split, end = begin + per_split < rows ? begin + per_split : rows;
    for (i64 t0 = 0; t0 < G::kTaps; t0 += kTapBlock) {
      float acc[kTapBlock][kVec];
      RUDNN_UNROLL
      for (int k = 0; k < kTapBlock; ++k) RUDNN_UNROLL
      for (int e = 0; e < kVec; ++e) acc[k][e] = 0.0f;
      if (live) {
        // Row r = (image, pixel) advanced by kSlots per step: no 64-bit division per row.
        i64 img = (begin + slot) / G::kOutPixels;
        int pixel = static_cast<int>(begin + slot - img * G::kOutPixels);
        for (i64 r = begin + slot; r < end; r += kSlots) {
          const int ow = pixel % static_cast<int>(G::kOW),
                    oh = pixel / static_cast<int>(G::kOW) % static_cast<int>(G::kOH);
          const int od = pixel / static_cast<int>(G::kOW * G::kOH);
          const V g = load_vec<T, kVec>(dy + r * G::kO + o);
          const T* x_img = x + img * G::kInPixels * G::kC + c;
          RUDNN_UNROLL
          for (int k = 0; k < kTapBlock; ++k) {
            const int t = static_cast<int>(t0) + k;
            if (t >= G::kTaps) break;
            const int kw = t % static_cast<int>(G::kKW), kh = t / static_cast<int>(G::kKW) % static_cast<int>(G::kKH);
            const int kd = t / static_cast<int>(G::kKW * G::kKH);
            const int id = od * static_cast<int>(G::kSD) - static_cast<int>(G::kPD) + kd * static_cast<int>(G::kDD);
            const int ih = oh * static_cast<int>(G::kSH) - static_cast<int>(G::kPH) + kh * static_cast<int>(G::kDH);
            const int iw = ow * static_cast<int>(G::kSW) - static_cast<int>(G::kPW) + kw * static_cast<int>(G::kDW);
            if (id < 0 || id >= G::kD || ih < 0 || ih >= G::kH || iw < 0 || iw >= G::kW) continue;
            const V xv = load_vec<T, kVec>(x_img + ((static_cast<i64>(id) * G::kH + ih) * G::kW + iw) * G::kC);
            RUDNN_UNROLL
            for (int e = 0; e < kVec; ++e) acc[k][e] += xv.get_float(e) * g.get_float(e);
          }
          pixel += kSlots;
          while (pixel >= kOutPixels) {
            pixel -= kOutPixels;
            ++img;
          }
        }
      }
      // The slots' sums of each tap, combined by a fixed tree: slot q += slot q + half, halving.
      RUDNN_UNROLL
      for (int k = 0; k < kTapBlock; ++k) {
        const i64 t = t0 + k;
        if (t >= G::kTaps) break;  // uniform: t0 and k are the same in every thread
        __syncthreads();           // the previous tap's readers are done
        RUDNN_UNROLL
        for (int e = 0; e < kVec; ++e) red[tid * kVec + e] = acc[k][e];
        __syncthreads();
        RUDNN_UNROLL
        for (int half = kSlots / 2; half >= 1; half /= 2) {
          if (slot < half) {
            RUDNN_UNROLL
            for (int e = 0; e < kVec; ++e) red[tid * kVec + e] += red[(tid + half * kLanes) * kVec + e];
          }
          __syncthreads();
        }
        if (slot == 0 && live) {
          RUDNN_UNROLL
          for (int e = 0; e < kVec; ++e) partial[(s * G::kO + o + e) * G::kTaps + t] = red[lane * kVec + e];
        }
      }
    }
  }
}

}  // namespace rudnn::conv
