#pragma once
// Paged append (SPEC §8): writes each query row's new key and value rows at its position through its
// sequence's page table. The caller keeps the returned caches; when a cache's storage is shared the
// entry passes a fresh output and `paged_copy` first copies the old cache into it (a no-op when the
// output is the input: the in-place case). Two rows that map to one physical slot were rejected on
// the host, so rows never race.
//
// paged_copy parameters: src, dst, elements. Launch: kThreads threads, any grid (strided; the lowering
// uses a fixed one, so the in-place no-op costs a fixed number of empty blocks, not one per element).
// 16-byte copies when both are 16-byte aligned (rudnn's allocations are 256-byte aligned), else
// element by element.
// paged_append parameters: key, value, key_cache, value_cache, page_table, sequence_ids, positions,
// queries, kv_heads, head_dim, value_dim, page_size, table_stride. Launch: kThreads threads, grid
// queries · kv_heads (strided over the linear block index), no shared memory.
#include "rudnn/paged/schedule.cuh"
#include "rudnn/vector.cuh"  // Words4

namespace rudnn::paged {

template <class T, int kThreads>
RUDNN_DEVICE void paged_copy(const T* src, T* dst, i64 elements) {
  if (src == dst) return;
  const i64 first = linear_block() * kThreads + threadIdx.x, step = block_count() * kThreads;
  i64 done = 0;
  if (((reinterpret_cast<u64>(src) | reinterpret_cast<u64>(dst)) & 15u) == 0) {
    const i64 chunks = elements * static_cast<i64>(sizeof(T)) / 16;
    const auto* s = reinterpret_cast<const vector_detail::Words4*>(src);
    auto* d = reinterpret_cast<vector_detail::Words4*>(dst);
    for (i64 i = first; i < chunks; i += step) d[i] = s[i];
    done = chunks * 16 / static_cast<i64>(sizeof(T));
  }
  for (i64 i = done + first; i < elements; i += step) dst[i] = src[i];
}

template <class T, int kThreads>
RUDNN_DEVICE void paged_append(const T* key, const T* value, T* key_cache, T* value_cache, const i32* page_table,
                               const i32* sequence_ids, const i32* positions, i64 queries, i64 kv_heads, i64 head_dim,
                               i64 value_dim, i64 page_size, i64 table_stride) {
  const Schedule sched{page_table, nullptr, sequence_ids, positions, table_stride, page_size};
  const i64 items = queries * kv_heads;
  for (i64 item = linear_block(); item < items; item += block_count()) {
    const i64 r = div32(item, kv_heads), h = mod32(item, kv_heads);
    const i64 cache_row = sched.cache_row(sched.sequence(r), sched.position(r)) * kv_heads + h;
    for (i64 c = threadIdx.x; c < head_dim; c += kThreads)
      key_cache[cache_row * head_dim + c] = key[item * head_dim + c];
    for (i64 c = threadIdx.x; c < value_dim; c += kThreads)
      value_cache[cache_row * value_dim + c] = value[item * value_dim + c];
  }
}

}  // namespace rudnn::paged
