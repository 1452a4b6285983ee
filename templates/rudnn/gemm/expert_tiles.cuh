#pragma once
// The M-tile schedule of grouped (per-expert) GEMMs over compact rows: expert e owns rows
// [offsets[e], offsets[e+1]) and is cut into ceil(count_e / tile_rows) tiles of at most tile_rows
// rows that never straddle two experts. Tiles are numbered expert by expert,
//   linear tile t  ->  (expert e, rows [begin, end))   for t < Σ_e ceil(count_e / tile_rows),
// which a kernel walks with a grid stride (t = blockIdx.y, blockIdx.y + gridDim.y, ...). The total
// is at most ceil(n_rows / tile_rows) + experts.
//
// ExpertTileCursor finds tiles for non-decreasing t by walking the experts 32 at a time: each lane
// takes one expert's tile count, a warp scan gives the running total and a ballot the expert that
// holds t. A block's whole grid-stride walk costs O(experts / 32 + tiles it visits) warp steps
// (one chunk scan per tile, plus one per 32 experts skipped). It is warp-collective: all 32 lanes
// of a warp call seek() with the same t (every warp of a block may keep its own cursor; they agree).
//
// Offsets are clamped to [0, n_rows] and a decreasing pair counts as an empty expert, so even a
// malformed offsets array never produces rows outside the matrix.
#include "rudnn/prelude.cuh"

namespace rudnn::gemm {

struct ExpertTile {
  i64 expert;
  i64 begin;  // first row (global row index into the compact rows)
  i64 end;    // one past the last row; 0 < end - begin <= tile_rows
};

class ExpertTileCursor {
 public:
  RUDNN_DEVICE ExpertTileCursor(const u32* offsets, i64 experts, i64 n_rows, i64 tile_rows)
      : offsets_(offsets), experts_(experts), n_rows_(n_rows), tile_rows_(tile_rows) {}

  // The tile with linear index t (t must not decrease between calls). False once t is past the
  // last tile; the cursor then stays exhausted for every larger t.
  RUDNN_DEVICE bool seek(i64 t, ExpertTile& out) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    for (;;) {
      if (first_ >= experts_) return false;
      // Lane i takes expert first_ + i (no rows past the last expert).
      const i64 e = first_ + lane;
      u32 begin = 0, end = 0;
      if (e < experts_) {
        begin = clamp_row(offsets_[e]);
        end = clamp_row(offsets_[e + 1]);
        if (end < begin) end = begin;
      }
      // Tile counts fit in u32: the compact rows number at most 2^32 - 1 (u32 offsets).
      const u32 tiles = static_cast<u32>((static_cast<i64>(end - begin) + tile_rows_ - 1) / tile_rows_);
      u32 scan = tiles;  // inclusive running total over the lanes
      RUDNN_UNROLL
      for (int d = 1; d < 32; d *= 2) {
        const u32 other = __shfl_up_sync(0xffffffffu, scan, d);
        if (lane >= d) scan += other;
      }
      // The first lane whose running total passes t holds the tile.
      const unsigned hit = __ballot_sync(0xffffffffu, prefix_ + static_cast<i64>(scan) > t);
      if (hit != 0u) {
        const int src = __ffs(static_cast<int>(hit)) - 1;
        const u32 first_tile = __shfl_sync(0xffffffffu, scan - tiles, src);
        const u32 expert_begin = __shfl_sync(0xffffffffu, begin, src);
        const u32 expert_end = __shfl_sync(0xffffffffu, end, src);
        out.expert = first_ + src;
        out.begin = static_cast<i64>(expert_begin) + (t - prefix_ - static_cast<i64>(first_tile)) * tile_rows_;
        out.end = out.begin + tile_rows_ < static_cast<i64>(expert_end) ? out.begin + tile_rows_
                                                                        : static_cast<i64>(expert_end);
        return true;
      }
      prefix_ += static_cast<i64>(__shfl_sync(0xffffffffu, scan, 31));
      first_ += 32;
    }
  }

 private:
  RUDNN_DEVICE u32 clamp_row(u32 r) const { return static_cast<i64>(r) < n_rows_ ? r : static_cast<u32>(n_rows_); }

  // Only the resume point is kept between calls (the chunk holding the last tile is scanned again
  // by the next seek): caching the lanes' scan instead cost ~80 registers in the GEMM kernels,
  // live across the whole K loop.
  const u32* offsets_;
  i64 experts_, n_rows_, tile_rows_;
  i64 first_ = 0;   // first expert of the chunk the next seek starts from
  i64 prefix_ = 0;  // tiles of the experts before first_
};

}  // namespace rudnn::gemm
