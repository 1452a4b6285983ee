#pragma once
// The operand tiles of the implicit-GEMM convolution (conv/implicit_gemm.cuh) and the address logic of
// the im2col gather done on the fly: no im2col matrix ever exists in global memory.
//
// GatherTile<T, kRows, kCols, kThreads, kVec> moves one kRows × kCols shared tile (PaddedTile layout)
// in chunks of kVec consecutive columns whose global addresses a functor computes: addr(r, c) gives
// the address of tile element (r, c), c a multiple of kVec, or null when the whole chunk lies in the
// convolution's zero padding or outside the matrix (the chunk is then zero-filled). Chunk copies:
//   kVec·sizeof(T) == 16   cp.async.cg 16 bytes, zero-filled through src-size 0 (the fast path; the
//                          caller picks it only when the gathered rows are 16-byte runs: the
//                          contiguous extent, e.g. C for the input, is a multiple of kVec, so a chunk
//                          never straddles two taps, and the tensors are 16-byte aligned)
//   kVec == 1, 4-byte T    cp.async.ca 4 bytes (zero fill likewise)
//   kVec == 1, 16-bit T    a plain load and shared store (there is no 2-byte cp.async); the pipeline
//                          orders these like the copies (gemm/pipeline.cuh)
// Chunk c of the tile is moved by thread c mod kThreads: consecutive threads take consecutive chunks of
// a row, so global reads coalesce along the contiguous channel runs.
//
// The gathers (G = conv::Geometry; groups == 1, so a weight row holds Taps·C elements):
//   input_at_tap(x, m, k)        x at the input position that output pixel m (image·OutPixels + pixel)
//                                reaches through tap k / C, channel k % C; null in the padding.
//                                (fprop's A[m][k] and wgrad's B[p][j].)
//   grad_output_at_tap(dy, m, k) dy at the output position that input pixel m reaches through tap
//                                k / O, channel k % O: (i + pad − tap·dil) must be ≥ 0, divisible by
//                                the stride and below the output extent in every dim, else null.
//                                (dgrad's A; stride > 1 is masked per chunk, not split by phase.)
#include "rudnn/conv/geometry.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/prelude.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_NO_UNROLL _Pragma("unroll 1")
#else
#define RUDNN_NO_UNROLL
#endif

namespace rudnn::conv::igemm {

// kRows rows of kCols elements, each row padded by 16 bytes (16-byte aligned rows for cp.async and
// ldmatrix; with 16-bit elements and kCols % 32 == 0 the same layout as gemm::SmemTile, whose 4-bank
// row shift keeps ldmatrix conflict-free).
template <class T, int kRows, int kCols>
struct PaddedTile {
  static constexpr int kPad = 16 / static_cast<int>(sizeof(T));
  static constexpr int kLd = kCols + kPad;
  static constexpr int kElems = kRows * kLd;
  static_assert(kCols % kPad == 0, "PaddedTile: rows must stay 16-byte aligned");
};

// One chunk from `src` (null: zeros) to `dst`.
template <class T, int kVec>
RUDNN_DEVICE void copy_chunk(T* dst, const T* src, const T* fallback) {
  if constexpr (kVec * sizeof(T) == 16) {
    cp_async_cg16(dst, src != nullptr ? src : fallback, src != nullptr ? 16u : 0u);
  } else if constexpr (kVec == 1 && sizeof(T) == 4) {
    cp_async_ca<4>(dst, src != nullptr ? src : fallback, src != nullptr ? 4u : 0u);
  } else {
    static_assert(kVec == 1 && sizeof(T) == 2, "copy_chunk: 16-byte chunks or single elements");
    *dst = src != nullptr ? *src : T{0};
  }
}

template <class T, int kRows, int kCols, int kThreads, int kVec>
struct GatherTile {
  static_assert(kCols % kVec == 0, "GatherTile: whole chunks per row");
  using Layout = PaddedTile<T, kRows, kCols>;
  static constexpr int kChunksPerRow = kCols / kVec;
  static constexpr int kChunks = kRows * kChunksPerRow;
  static constexpr int kPerThread = (kChunks + kThreads - 1) / kThreads;

  // Fixed-column gathers (16-byte chunks, kThreads a multiple of the chunks per row): every chunk of a
  // thread lies in the same tile column, column(), in rows row(i) = row(0) + i·kRowStep,
  // i = 0..kPerThread−1 (rows ≥ kRows are skipped). The kernels keep per-row gather state for these
  // rows once per output tile and per-column state once per K block (conv/implicit_gemm.cuh), so the
  // per-chunk address is a few adds and compares instead of a full index decode.
  static constexpr bool kFixedColumn = kVec > 1 && kThreads % kChunksPerRow == 0;
  static constexpr int kRowStep = kFixedColumn ? kThreads / kChunksPerRow : 1;
  RUDNN_DEVICE static int row(int i) { return static_cast<int>(threadIdx.x) / kChunksPerRow + i * kRowStep; }
  RUDNN_DEVICE static int column() { return static_cast<int>(threadIdx.x) % kChunksPerRow * kVec; }

  // Issues this thread's chunks for a fixed-column gather: src(i) is the address of the chunk in row
  // row(i), column column(), or null (zero fill).
  template <class Src>
  RUDNN_DEVICE static void load_rows(T* tile, const T* fallback, const Src& src) {
    static_assert(kFixedColumn, "GatherTile::load_rows: fixed-column gathers only");
    T* dst = tile + row(0) * Layout::kLd + column();
    RUDNN_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      if (kChunks % kThreads != 0 && row(i) >= kRows) continue;
      copy_chunk<T, kVec>(dst + i * kRowStep * Layout::kLd, src(i), fallback);
    }
  }

  // Issues this thread's chunks of the tile (no commit). `fallback` is any valid global address: the
  // source operand of zero-fill copies, never read.
  template <class Addr>
  RUDNN_DEVICE static void load(T* tile, const T* fallback, const Addr& addr) {
    const int tid = static_cast<int>(threadIdx.x);
    if constexpr (kVec > 1) {
      RUDNN_UNROLL
      for (int i = 0; i < kPerThread; ++i) chunk(tile, fallback, addr, tid + i * kThreads);
    } else {
      // Element gathers: many chunks per thread, each with its own position arithmetic; unrolled they
      // keep every address live at once and spill (seen with C = 3, 128×32 tiles), so one at a time.
      RUDNN_NO_UNROLL
      for (int i = 0; i < kPerThread; ++i) chunk(tile, fallback, addr, tid + i * kThreads);
    }
  }

 private:
  template <class Addr>
  RUDNN_DEVICE static void chunk(T* tile, const T* fallback, const Addr& addr, int c) {
    if (kChunks % kThreads != 0 && c >= kChunks) return;
    const int r = c / kChunksPerRow, col = (c % kChunksPerRow) * kVec;
    copy_chunk<T, kVec>(tile + r * Layout::kLd + col, addr(r, col), fallback);
  }
};

// The chunk width of a gather whose contiguous runs are `run` elements long: 16 bytes when every run
// is whole 16-byte chunks, else single elements.
template <class T, i64 kRun>
inline constexpr int kChunkWidth = kRun % (16 / static_cast<i64>(sizeof(T))) == 0 ? 16 / static_cast<int>(sizeof(T))
                                                                                  : 1;

// Spatial position (d, h, w) of pixel p of an extent-(D, H, W) grid, and filter tap likewise.
struct Pos3 {
  int d, h, w;
};
template <i64 kH, i64 kW>
RUDNN_DEVICE Pos3 decode3(int p) {
  return {static_cast<int>(p / (kH * kW)), static_cast<int>(p / kW % kH), static_cast<int>(p % kW)};
}

template <class G, class T>
RUDNN_DEVICE const T* input_at_tap(const T* x, i64 m, int k) {
  const i64 image = m / G::kOutPixels;
  const Pos3 o = decode3<G::kOH, G::kOW>(static_cast<int>(m - image * G::kOutPixels));
  const int tap = static_cast<int>(k / G::kC), c = static_cast<int>(k - tap * G::kC);
  const Pos3 t = decode3<G::kKH, G::kKW>(tap);
  const i64 id = o.d * G::kSD - G::kPD + t.d * G::kDD;
  const i64 ih = o.h * G::kSH - G::kPH + t.h * G::kDH;
  const i64 iw = o.w * G::kSW - G::kPW + t.w * G::kDW;
  if (id < 0 || id >= G::kD || ih < 0 || ih >= G::kH || iw < 0 || iw >= G::kW) return nullptr;
  return x + ((image * G::kInPixels + (id * G::kH + ih) * G::kW + iw) * G::kC + c);
}

// The output coordinate that input coordinate i reaches through filter index t, or −1.
template <i64 kStride, i64 kPad, i64 kDil, i64 kOut>
RUDNN_DEVICE i64 output_coord(int i, int t) {
  const i64 num = i + kPad - t * kDil;
  if (num < 0 || num % kStride != 0) return -1;
  const i64 o = num / kStride;
  return o < kOut ? o : -1;
}

template <class G, class T>
RUDNN_DEVICE const T* grad_output_at_tap(const T* dy, i64 m, int k) {
  const i64 image = m / G::kInPixels;
  const Pos3 i = decode3<G::kH, G::kW>(static_cast<int>(m - image * G::kInPixels));
  const int tap = static_cast<int>(k / G::kO), o = static_cast<int>(k - tap * G::kO);
  const Pos3 t = decode3<G::kKH, G::kKW>(tap);
  const i64 od = output_coord<G::kSD, G::kPD, G::kDD, G::kOD>(i.d, t.d);
  const i64 oh = output_coord<G::kSH, G::kPH, G::kDH, G::kOH>(i.h, t.h);
  const i64 ow = output_coord<G::kSW, G::kPW, G::kDW, G::kOW>(i.w, t.w);
  if (od < 0 || oh < 0 || ow < 0) return nullptr;
  return dy + ((image * G::kOutPixels + (od * G::kOH + oh) * G::kOW + ow) * G::kO + o);
}

// ---- Incremental gather state (fixed-column gathers, see GatherTile::load_rows).
// A row's state is computed once per output tile, a column's (tap, channel) once per K block; the
// per-chunk work is then 32-bit adds, unsigned range checks and one 64-bit add. Rows past the matrix
// and columns past K carry kFar, a coordinate that fails every range check (two kFar still add up
// without overflow).
inline constexpr int kFar = 1 << 29;

// True when 0 <= v < n (one unsigned compare).
template <i64 kN>
RUDNN_DEVICE bool in_range(int v) {
  return static_cast<unsigned>(v) < static_cast<unsigned>(kN);
}

// fprop A / wgrad B: the input window of output pixel m. base = element offset of input position
// (d, h, w) = (od·SD − PD, oh·SH − PH, ow·SW − PW) of m's image, channel 0 (may lie outside x).
struct WindowRow {
  i64 base;
  int d, h, w;
};
template <class G>
RUDNN_DEVICE WindowRow window_row_at(i64 image, int pixel) {
  const Pos3 o = decode3<G::kOH, G::kOW>(pixel);
  const int d = static_cast<int>(o.d * G::kSD - G::kPD), h = static_cast<int>(o.h * G::kSH - G::kPH);
  const int w = static_cast<int>(o.w * G::kSW - G::kPW);
  return {(image * G::kInPixels + (static_cast<i64>(d) * G::kH + h) * G::kW + w) * G::kC, d, h, w};
}
template <class G>
RUDNN_DEVICE WindowRow window_row(i64 m, i64 rows) {
  if (m >= rows) return {0, -kFar, -kFar, -kFar};
  const i64 image = m / G::kOutPixels;
  return window_row_at<G>(image, static_cast<int>(m - image * G::kOutPixels));
}
// Column k = tap·C + c of im2col: the tap's displacement and element offset from the window origin.
struct WindowTap {
  i64 offset;
  int d, h, w;
};
template <class G>
RUDNN_DEVICE WindowTap window_tap(i64 k) {
  if (k >= G::kFilter) return {0, -kFar, -kFar, -kFar};
  const int kk = static_cast<int>(k), tap = static_cast<int>(kk / G::kC), c = static_cast<int>(kk - tap * G::kC);
  const Pos3 t = decode3<G::kKH, G::kKW>(tap);
  const int d = static_cast<int>(t.d * G::kDD), h = static_cast<int>(t.h * G::kDH), w = static_cast<int>(t.w * G::kDW);
  return {(static_cast<i64>(d) * G::kH * G::kW + static_cast<i64>(h) * G::kW + w) * G::kC + c, d, h, w};
}
// input_at_tap(x, m, k) from m's row state and k's tap state.
template <class G, class T>
RUDNN_DEVICE const T* window_at(const T* x, const WindowRow& r, const WindowTap& t) {
  // A 1-D or 2-D convolution has D = KD = 1, PD = 0: d is 0 on every valid row and tap, and invalid
  // rows and taps fail the h check already.
  constexpr bool kFlatD = G::kD == 1 && G::kKD == 1 && G::kPD == 0;
  if (!kFlatD && !in_range<G::kD>(r.d + t.d)) return nullptr;
  if (!in_range<G::kH>(r.h + t.h) || !in_range<G::kW>(r.w + t.w)) return nullptr;
  return x + (r.base + t.offset);
}

// dgrad A: input pixel m's numerators (i + pad per dim) and its image's offset in dy.
struct GradRow {
  i64 base;
  int d, h, w;
};
template <class G>
RUDNN_DEVICE GradRow grad_row(i64 m, i64 rows) {
  if (m >= rows) return {0, -kFar, -kFar, -kFar};
  const i64 image = m / G::kInPixels;
  const Pos3 i = decode3<G::kH, G::kW>(static_cast<int>(m - image * G::kInPixels));
  return {image * G::kOutPixels * G::kO, static_cast<int>(i.d + G::kPD), static_cast<int>(i.h + G::kPH),
          static_cast<int>(i.w + G::kPW)};
}
// Column k = tap·O + o: the tap's dilated displacement (kFar past K) and the channel o.
struct GradTap {
  int d, h, w, o;
};
template <class G>
RUDNN_DEVICE GradTap grad_tap(i64 k) {
  if (k >= G::kTaps * G::kO) return {kFar, kFar, kFar, 0};
  const int kk = static_cast<int>(k), tap = static_cast<int>(kk / G::kO), o = static_cast<int>(kk - tap * G::kO);
  const Pos3 t = decode3<G::kKH, G::kKW>(tap);
  return {static_cast<int>(t.d * G::kDD), static_cast<int>(t.h * G::kDH), static_cast<int>(t.w * G::kDW), o};
}
// The output coordinate num / stride when num = i + pad − t·dil is ≥ 0, divisible by the stride and
// below the output extent, else −1 (output_coord on precomputed numerators).
template <i64 kStride, i64 kOut>
RUDNN_DEVICE int grad_coord(int num) {
  if (static_cast<unsigned>(num) >= static_cast<unsigned>(kStride * kOut)) return -1;
  const unsigned u = static_cast<unsigned>(num);
  if (kStride > 1 && u % static_cast<unsigned>(kStride) != 0u) return -1;
  return static_cast<int>(u / static_cast<unsigned>(kStride));
}
// grad_output_at_tap(dy, m, k) from m's row state and k's tap state.
template <class G, class T>
RUDNN_DEVICE const T* grad_at(const T* dy, const GradRow& r, const GradTap& t) {
  const int od = grad_coord<G::kSD, G::kOD>(r.d - t.d);
  const int oh = grad_coord<G::kSH, G::kOH>(r.h - t.h);
  const int ow = grad_coord<G::kSW, G::kOW>(r.w - t.w);
  if (od < 0 || oh < 0 || ow < 0) return nullptr;
  return dy + (r.base + ((static_cast<i64>(od) * G::kOH + oh) * G::kOW + ow) * G::kO + t.o);
}

}  // namespace rudnn::conv::igemm
