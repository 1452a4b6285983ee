#pragma once
// The ordered backward's history index as one history-kernel block walks it (the layout is in
// paged/backward.cuh): the readers (s, j) of the block's physical page, ascending, and each
// reader's visiting (query row, head) items — its sequence's query rows × the kv group's heads, in
// the index's order. Shared by the tensor-core history kernels (attention and MLA).
#include "rudnn/paged/schedule.cuh"

namespace rudnn::paged {

struct HistoryReaders {
  const i32 *lengths, *row_offsets, *rows, *readers;
  i64 q_heads, group, page_size;
  i64 kvh = 0, first = 0, last = 0;  // the block's kv head; its page's readers [first, last)

  // Reader e: its sequence, its visiting items, the u-th one's query row and (row, head) index.
  RUDNN_DEVICE i64 sequence(i64 e) const { return readers[2 * e]; }
  RUDNN_DEVICE i64 items(i64 e) const { return (row_offsets[sequence(e) + 1] - row_offsets[sequence(e)]) * group; }
  RUDNN_DEVICE i64 row(i64 e, i64 u) const { return rows[row_offsets[sequence(e)] + div32(u, group)]; }
  RUDNN_DEVICE i64 item(i64 e, i64 u) const { return row(e, u) * q_heads + kvh * group + mod32(u, group); }
  // The key position of slot `slot` of the page in reader e's sequence.
  RUDNN_DEVICE i64 position(i64 e, i64 slot) const { return static_cast<i64>(readers[2 * e + 1]) * page_size + slot; }
  // The first reader from e on whose valid length reaches slot `slot`, or `last`.
  RUDNN_DEVICE i64 reaching(i64 e, i64 slot) const {
    while (e < last && position(e, slot) >= lengths[sequence(e)]) ++e;
    return e;
  }
  // Item u of reader e: the keys of the tile at slot0 (`keys` of them) it sees — up to its causal
  // limit and its sequence's length; ≤ 0: none.
  RUDNN_DEVICE i64 seen(i64 e, i64 u, i64 slot0, i64 keys, const i32* positions, i64 causal) const {
    const i64 length = lengths[sequence(e)];
    const i64 end = causal ? min_i64(length, positions[row(e, u)] + 1) : length;
    return min_i64(end - position(e, slot0), keys);
  }
};

}  // namespace rudnn::paged
