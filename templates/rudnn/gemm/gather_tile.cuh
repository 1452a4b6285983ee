#pragma once
// Shared-memory operand tiles of a block GEMM and a loader that gathers them chunk by chunk from
// addresses the kernel computes (gemm/block_engine.cuh; the implicit-GEMM convolution's im2col
// gathers in conv/igemm_gather.cuh, the MoE experts backward's expert rows in token order in
// moe/experts_backward_mma.cuh).
//
// GatherTile<T, kRows, kCols, kThreads, kVec, Layout> moves one kRows × kCols shared tile in chunks of
// kVec consecutive columns, placed by Layout::at(tile, r, c) (PaddedTile for the mma.sync engines; the
// swizzled wgmma layouts of tile/wgmma.cuh for gemm/wgmma_engine.cuh): addr(r, c) gives the global address of tile
// element (r, c), c a multiple of kVec, or null when the whole chunk is outside the operand (zero padding, tails): the
// chunk is then zero-filled. Chunk copies:
//   kVec·sizeof(T) == 16   cp.async.cg 16 bytes, zero-filled through src-size 0 (the fast path; the
//                          caller picks it only when the gathered rows are 16-byte runs and the
//                          operands 16-byte aligned)
//   kVec == 1, 4-byte T    cp.async.ca 4 bytes (zero fill likewise)
//   kVec == 1, 16-bit T    a plain load and shared store (there is no 2-byte cp.async); the pipeline
//                          orders these like the copies (gemm/pipeline.cuh)
// Chunk c of the tile is moved by thread c mod kThreads: consecutive threads take consecutive chunks of
// a row, so global reads coalesce along contiguous runs.
#include "rudnn/numeric.cuh"
#include "rudnn/prelude.cuh"

namespace rudnn::gemm {

// kRows rows of kCols elements, each row padded by 16 bytes (16-byte aligned rows for cp.async and
// ldmatrix; with 16-bit elements and kCols % 32 == 0 the same layout as gemm::SmemTile, whose 4-bank
// row shift keeps ldmatrix conflict-free).
template <class T, int kRows, int kCols>
struct PaddedTile {
  static constexpr int kPad = 16 / static_cast<int>(sizeof(T));
  static constexpr int kLd = kCols + kPad;
  static constexpr int kElems = kRows * kLd;
  static_assert(kCols % kPad == 0, "PaddedTile: rows must stay 16-byte aligned");
  // Element (r, c) of the tile at `tile`.
  template <class U>
  RUDNN_DEVICE static U* at(U* tile, int r, int c) {
    return tile + r * kLd + c;
  }
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

template <class T, int kRows, int kCols, int kThreads, int kVec, class TileLayout = PaddedTile<T, kRows, kCols>>
struct GatherTile {
  static_assert(kCols % kVec == 0, "GatherTile: whole chunks per row");
  using Layout = TileLayout;
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
    RUDNN_UNROLL
    for (int i = 0; i < kPerThread; ++i) {
      if (kChunks % kThreads != 0 && row(i) >= kRows) continue;
      copy_chunk<T, kVec>(Layout::at(tile, row(i), column()), src(i), fallback);
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
      RUDNN_ROLLED
      for (int i = 0; i < kPerThread; ++i) chunk(tile, fallback, addr, tid + i * kThreads);
    }
  }

  // load() one chunk at a time whatever kVec: for kernels whose accumulators leave no registers for
  // every chunk's address at once (paged/mla_wgmma.cuh: O alone is 128 per thread).
  template <class Addr>
  RUDNN_DEVICE static void load_rolled(T* tile, const T* fallback, const Addr& addr) {
    const int tid = static_cast<int>(threadIdx.x);
    RUDNN_ROLLED
    for (int i = 0; i < kPerThread; ++i) chunk(tile, fallback, addr, tid + i * kThreads);
  }

 private:
  template <class Addr>
  RUDNN_DEVICE static void chunk(T* tile, const T* fallback, const Addr& addr, int c) {
    if (kChunks % kThreads != 0 && c >= kChunks) return;
    const int r = c / kChunksPerRow, col = (c % kChunksPerRow) * kVec;
    copy_chunk<T, kVec>(Layout::at(tile, r, col), addr(r, col), fallback);
  }
};

// The chunk width of a gather whose contiguous runs are `run` elements long: 16 bytes when every run
// is whole 16-byte chunks, else single elements.
template <class T, i64 kRun>
inline constexpr int kChunkWidth = kRun % (16 / static_cast<i64>(sizeof(T))) == 0 ? 16 / static_cast<int>(sizeof(T))
                                                                                  : 1;

}  // namespace rudnn::gemm
