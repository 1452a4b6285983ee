#pragma once
// The paged attention contracts of SPEC §8 and §9, written once: the schedule (HostPlan::create), and
// the operands of attention, MLA, append and the backward. The public entries (rudnn/paged_attention.h) and the
// dialect verifiers (rudnn.paged_attention, rudnn.paged_mla, rudnn.paged_append) both call them.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "contracts/operand.h"
#include "rudnn/paged_attention.h"

namespace rudnn::contracts {

// The schedule metadata as the host gives it (HostPlan::create): validated into the dense I32
// arrays the kernels read.
struct PagedSchedule {
  std::int64_t page_size = 0, pages = 0, max_table_pages = 0;
  std::vector<std::int32_t> page_table;  // [sequences, max_table_pages], padded with 0
  std::vector<std::int32_t> lengths, sequence_ids, positions;
};

// Validates and packs the schedule, or the first violated line: page_size in 1..=65536, pages ≥ 1,
// every page id in [0, pages), lengths in [0, table size · page_size], one sequence id and position
// per query row, sequence ids in [0, sequences), positions in [0, length of the row's sequence).
// Errors name the sequence ("tables[3][7]", "lengths[2]") or the query row ("positions[5]").
Result<PagedSchedule, PagedAttentionError> make_paged_schedule(std::int64_t page_size, std::int64_t pages,
                                                               std::span<const std::vector<std::int64_t>> tables,
                                                               std::span<const std::int64_t> lengths,
                                                               std::span<const std::int64_t> sequence_ids,
                                                               std::span<const std::int64_t> positions);

// The schedule's device tensors as operands see them: page_table i32 [S, max_table_pages],
// lengths i32 [S], sequence_ids i32 [Q], positions i32 [Q].
struct PagedMetadata {
  Operand page_table, lengths, sequence_ids, positions;
};

enum class PagedKind { Attention, Mla };

// One paged attention or MLA call. Attention: query [Q, Hq, D], key [pages, P, Hkv, D], value
// [pages, P, Hkv, Dv]. MLA: query [Q, H, R], query_rope [Q, H, Pr], key = latent [pages, P, 1, R],
// key_rope [pages, P, 1, Pr]; the values are the latent rows.
struct PagedAttentionSignature {
  PagedKind kind = PagedKind::Attention;
  Operand query, key, value;     // MLA: value unused
  Operand query_rope, key_rope;  // MLA only
  PagedMetadata metadata;
  double scale = 1.0;
  bool causal = false;
  std::int64_t splits = 1;  // 1 = unsplit; else 2..=32
};

// Derived sizes of a checked signature.
struct PagedDims {
  std::int64_t queries, q_heads, kv_heads, head_dim, rope_dim, value_dim, pages, page_size;
  std::int64_t group() const { return q_heads / kv_heads; }
};
PagedDims paged_dims(const PagedAttentionSignature& sig);

std::optional<PagedAttentionError> check_paged_attention(const PagedAttentionSignature& sig);

// One backward call (SPEC §9): the forward's call (unsplit) and the output gradient grad_out
// [Q, Hq, Dv] in the query's dtype, on its device. The gradients have the shapes of their inputs
// (the history gradients the caches' paged shapes).
struct PagedBackwardSignature {
  PagedAttentionSignature forward;
  Operand grad_out;
};
std::optional<PagedAttentionError> check_paged_backward(const PagedBackwardSignature& sig);

// The FP32 split workspace in elements: splits · queries · heads · (value_dim + 1), or nothing on
// overflow.
std::optional<std::int64_t> split_workspace_elements(std::int64_t splits, std::int64_t queries, std::int64_t heads,
                                                     std::int64_t value_dim);
// splits in 2..=32, extents ≥ 1 and the workspace within kMaxWorkspaceBytes.
std::optional<PagedAttentionError> check_split_workspace(std::int64_t queries, std::int64_t heads,
                                                         std::int64_t value_dim, std::int64_t splits);

// One append: key [Q, Hkv, D] and value [Q, Hkv, Dv] rows into key_cache [pages, P, Hkv, D] and
// value_cache [pages, P, Hkv, Dv] (one float dtype).
struct PagedAppendSignature {
  Operand key, value, key_cache, value_cache;
  PagedMetadata metadata;
};
std::optional<PagedAttentionError> check_paged_append(const PagedAppendSignature& sig);

std::string describe_call(const PagedAttentionSignature& sig);

}  // namespace rudnn::contracts
