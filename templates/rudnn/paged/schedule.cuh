#pragma once
// The paged schedule as the kernels read it (SPEC §8): per sequence a page table row and a valid KV
// length, per query row a sequence id and an absolute position. The metadata was validated on the
// host (HostPlan::create): every page id is a physical page, every length fits its table, every
// position is below its sequence's length; the kernels trust it.
//
// Cache layout: [pages, page_size, heads, dim] — key j of sequence s lives in physical row
// page_table[s][j / page_size] · page_size + j % page_size.
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::paged {

RUDNN_DEVICE i64 min_i64(i64 a, i64 b) { return a < b ? a : b; }
RUDNN_DEVICE i64 max_i64(i64 a, i64 b) { return a > b ? a : b; }
// 32-bit quotient and remainder. Every dividend in the paged kernels is < 2^31 (the contract bounds
// queries · heads · splits; lengths and positions are i32), and a 64-bit division is a subroutine in
// SASS around which ptxas spills registers.
RUDNN_DEVICE i64 div32(i64 a, i64 b) { return static_cast<i64>(static_cast<u32>(a) / static_cast<u32>(b)); }
RUDNN_DEVICE i64 mod32(i64 a, i64 b) { return static_cast<i64>(static_cast<u32>(a) % static_cast<u32>(b)); }
RUDNN_DEVICE i64 ceil_div(i64 a, i64 b) { return div32(a + b - 1, b); }

struct KeyRange;
struct QueryTile;

struct Schedule {
  const i32* page_table;  // [sequences, table_stride]
  const i32* lengths;     // [sequences]
  const i32* sequence_ids;
  const i32* positions;  // [queries]
  i64 table_stride, page_size;

  // The physical cache row (page · page_size + slot) of key `j` of sequence `s`.
  RUDNN_DEVICE i64 cache_row(i64 s, i64 j) const {
    const i64 page = div32(j, page_size);
    return static_cast<i64>(page_table[s * table_stride + page]) * page_size + (j - page * page_size);
  }
  // The row of key `j` of sequence `s`, kv head `kv_head`, in a [pages·page_size, kv_heads, ·] cache.
  RUDNN_DEVICE i64 head_row(i64 s, i64 j, i64 kv_heads, i64 kv_head) const {
    return cache_row(s, j) * kv_heads + kv_head;
  }
  RUDNN_DEVICE i64 sequence(i64 row) const { return sequence_ids[row]; }
  RUDNN_DEVICE i64 position(i64 row) const { return positions[row]; }
  RUDNN_DEVICE i64 length(i64 s) const { return lengths[s]; }

  // Query tiles: consecutive rows of one sequence at consecutive positions, cut where the position
  // is a multiple of `rows_per_tile` — at most rows_per_tile rows each. Row r starts a tile when it
  // is the first row, follows a row of another sequence or a non-consecutive position, or sits at
  // an aligned position: a local test (no scan over the batch), so a kernel can take one work item
  // per row and serve the rows that start a tile. The tiles of a sequence's rows depend on those
  // rows alone, never on the rest of the batch (batch invariance). Decode rows are one-row tiles.
  RUDNN_DEVICE bool starts_tile(i64 r, i64 rows_per_tile) const {
    if (r == 0) return true;
    const i64 p = positions[r];
    return sequence_ids[r - 1] != sequence_ids[r] || positions[r - 1] + 1 != p || mod32(p, rows_per_tile) == 0;
  }
  // One past the last row of the tile that starts at row r.
  RUDNN_DEVICE i64 tile_end(i64 r, i64 queries, i64 rows_per_tile) const {
    i64 e = r + 1;
    while (e < queries && !starts_tile(e, rows_per_tile)) ++e;
    return e;
  }

  // The attention kernels' work item `item` = (query row, kv head, split) as the query tile it
  // serves, or false when its row starts no tile (defined below KeyRange and QueryTile).
  RUDNN_DEVICE bool query_tile(i64 item, i64 queries, i64 kv_heads, i64 splits, i64 rows_per_tile, i64 causal,
                               QueryTile& tile) const;
};

// Split-KV: split `split` of `splits` covers keys [lo, hi) of a sequence of length L, in parts of
// ⌈L / splits⌉ keys — a function of the sequence alone, so a row's result never depends on the
// rest of the batch. Unsplit (splits = 1): [0, L).
struct KeyRange {
  i64 lo = 0, hi = 0;
  KeyRange() = default;
  RUDNN_DEVICE KeyRange(i64 length, i64 split, i64 splits) {
    const i64 span = ceil_div(length, splits);
    lo = min_i64(split * span, length);
    hi = min_i64(lo + span, length);
  }
};

// A query tile with its kv head and split: rows [run0, run1) of one sequence, the split's keys, and
// `stop`, one past the last key any of its rows sees (uniform over the block).
struct QueryTile {
  i64 split, kv_head, run0, run1, sequence;
  KeyRange keys;
  i64 stop;

  // Its key tiles of `block_keys` keys from keys.lo to stop (none when it sees no key).
  RUDNN_DEVICE int key_tiles(int block_keys) const {
    return stop > keys.lo ? static_cast<int>((stop - keys.lo + block_keys - 1) / block_keys) : 0;
  }
  // Its panel rows: (row, query head) for the `group` query heads that share the tile's K/V rows.
  RUDNN_DEVICE i64 panel_rows(i64 group) const { return (run1 - run0) * group; }
};

RUDNN_DEVICE bool Schedule::query_tile(i64 item, i64 queries, i64 kv_heads, i64 splits, i64 rows_per_tile, i64 causal,
                                       QueryTile& tile) const {
  const i64 rest = div32(item, splits);
  tile.split = mod32(item, splits);
  tile.kv_head = mod32(rest, kv_heads);
  tile.run0 = div32(rest, kv_heads);
  if (!starts_tile(tile.run0, rows_per_tile)) return false;
  tile.sequence = sequence(tile.run0);
  tile.run1 = tile_end(tile.run0, queries, rows_per_tile);
  tile.keys = KeyRange(length(tile.sequence), tile.split, splits);
  tile.stop = tile.keys.hi;
  if (causal) {
    i64 last = 0;
    for (i64 r = tile.run0; r < tile.run1; ++r) last = max_i64(last, position(r));
    tile.stop = min_i64(tile.stop, last + 1);
  }
  return true;
}

// The split workspace (f32): partial outputs [splits, queries, heads, Dv] (normalized by their own
// sums), then log2-sum-exps [splits, queries, heads] (−inf: the split saw no key).
struct SplitPartials {
  float* base;
  i64 queries, heads, value_dim, splits;
  RUDNN_DEVICE float* output(i64 split, i64 row, i64 head) const {
    return base + ((split * queries + row) * heads + head) * value_dim;
  }
  RUDNN_DEVICE float* lse(i64 split, i64 row, i64 head) const {
    return base + splits * queries * heads * value_dim + (split * queries + row) * heads + head;
  }
};

}  // namespace rudnn::paged
