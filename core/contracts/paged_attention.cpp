#include "contracts/paged_attention.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace rudnn::contracts {

namespace {

using Err = PagedAttentionError;
constexpr std::int64_t kI32Max = std::numeric_limits<std::int32_t>::max();

std::optional<Err> check_index_tensor(const Operand& x, const char* name, const Shape& want, const char* layout,
                                      const Operand& ref, const char* ref_name) {
  if (x.dtype != DType::I32)
    return fail<Err>(ErrorKind::UnsupportedDType, name, "i32 (the plan's metadata)", std::string(dtype_name(x.dtype)));
  if (auto e = check_shape<Err>(x, name, want, layout)) return e;
  return check_device<Err>(x, name, ref, ref_name);
}

std::optional<Err> check_metadata(const PagedMetadata& m, std::int64_t queries, const Operand& ref,
                                  const char* ref_name) {
  const std::int64_t sequences = m.lengths.shape.empty() ? kDynamic : m.lengths.shape[0];
  if (auto e = check_index_tensor(m.lengths, "lengths", {kDynamic}, "[sequences]", ref, ref_name)) return e;
  if (auto e = check_index_tensor(m.page_table, "page_table", {sequences, kDynamic}, "[sequences, table_pages]", ref,
                                  ref_name))
    return e;
  if (auto e = check_index_tensor(m.sequence_ids, "sequence_ids", {queries}, "[queries]", ref, ref_name)) return e;
  return check_index_tensor(m.positions, "positions", {queries}, "[queries]", ref, ref_name);
}

// A float tensor of the reference's (`ref_name`'s) dtype and device.
std::optional<Err> check_like(const Operand& x, const char* name, const Operand& ref, const char* ref_name = "query") {
  if (auto e = check_float<Err>(x, name)) return e;
  if (x.dtype != ref.dtype)
    return fail<Err>(ErrorKind::UnsupportedDType, name,
                     fmt::format("{} (the {} dtype)", dtype_name(ref.dtype), ref_name),
                     std::string(dtype_name(x.dtype)));
  return check_device<Err>(x, name, ref, ref_name);
}

std::optional<Err> check_dim(std::int64_t v, const char* name, const char* what, std::int64_t max) {
  if (known(v) && (v < 1 || v > max))
    return fail<Err>(v < 1 ? ErrorKind::EmptyDimension : ErrorKind::InvalidValue, name,
                     fmt::format("{} in 1..={}", what, max), std::to_string(v));
  return std::nullopt;
}

}  // namespace

Result<PagedSchedule, PagedAttentionError> make_paged_schedule(std::int64_t page_size, std::int64_t pages,
                                                               std::span<const std::vector<std::int64_t>> tables,
                                                               std::span<const std::int64_t> lengths,
                                                               std::span<const std::int64_t> sequence_ids,
                                                               std::span<const std::int64_t> positions) {
  using paged_attention::kMaxPageSize;
  if (page_size < 1 || page_size > kMaxPageSize)
    return fail<Err>(ErrorKind::InvalidValue, "page_size", fmt::format("1..={}", kMaxPageSize),
                     std::to_string(page_size));
  if (pages < 1 || pages > kI32Max)
    return fail<Err>(ErrorKind::InvalidValue, "pages", fmt::format("1..={}", kI32Max), std::to_string(pages));
  if (tables.size() != lengths.size())
    return fail<Err>(ErrorKind::ShapeMismatch, "tables", fmt::format("{} tables (one per length)", lengths.size()),
                     std::to_string(tables.size()));
  if (lengths.empty()) return fail<Err>(ErrorKind::EmptyDimension, "lengths", "at least one sequence", "none");
  if (sequence_ids.size() != positions.size())
    return fail<Err>(ErrorKind::ShapeMismatch, "positions",
                     fmt::format("{} positions (one per sequence id)", sequence_ids.size()),
                     std::to_string(positions.size()));
  if (sequence_ids.empty())
    return fail<Err>(ErrorKind::EmptyDimension, "sequence_ids", "at least one query row", "none");
  if (lengths.size() > static_cast<std::size_t>(kI32Max) || sequence_ids.size() > static_cast<std::size_t>(kI32Max))
    return fail<Err>(ErrorKind::InvalidValue, "sequence_ids", fmt::format("at most {} rows", kI32Max),
                     std::to_string(sequence_ids.size()));

  PagedSchedule s;
  s.page_size = page_size;
  s.pages = pages;
  for (const auto& t : tables) s.max_table_pages = std::max<std::int64_t>(s.max_table_pages, std::ssize(t));
  s.max_table_pages = std::max<std::int64_t>(s.max_table_pages, 1);
  if (s.max_table_pages > kI32Max / page_size)
    return fail<Err>(ErrorKind::InvalidValue, "tables", fmt::format("at most {} pages per table", kI32Max / page_size),
                     std::to_string(s.max_table_pages));
  const auto total = checked_element_count({std::ssize(lengths), s.max_table_pages});
  if (!total || *total > (std::int64_t{1} << 31))
    return fail<Err>(ErrorKind::InvalidValue, "tables", "a page table of at most 2^31 entries", "more");
  s.page_table.assign(static_cast<std::size_t>(*total), 0);
  for (std::size_t seq = 0; seq < tables.size(); ++seq) {
    const auto& t = tables[seq];
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] < 0 || t[i] >= pages)
        return fail<Err>(ErrorKind::InvalidValue, fmt::format("tables[{}][{}]", seq, i),
                         fmt::format("a physical page id in [0, {})", pages), std::to_string(t[i]));
      s.page_table[seq * static_cast<std::size_t>(s.max_table_pages) + i] = static_cast<std::int32_t>(t[i]);
    }
    const std::int64_t capacity = std::ssize(t) * page_size;
    if (lengths[seq] < 0 || lengths[seq] > capacity)
      return fail<Err>(ErrorKind::InvalidValue, fmt::format("lengths[{}]", seq),
                       fmt::format("a valid KV length in [0, {}] ({} pages of {})", capacity, t.size(), page_size),
                       std::to_string(lengths[seq]));
    s.lengths.push_back(static_cast<std::int32_t>(lengths[seq]));
  }
  const std::int64_t sequences = std::ssize(lengths);
  for (std::size_t r = 0; r < sequence_ids.size(); ++r) {
    const std::int64_t seq = sequence_ids[r];
    if (seq < 0 || seq >= sequences)
      return fail<Err>(ErrorKind::InvalidValue, fmt::format("sequence_ids[{}]", r),
                       fmt::format("a sequence in [0, {})", sequences), std::to_string(seq));
    const std::int64_t length = lengths[static_cast<std::size_t>(seq)];
    if (positions[r] < 0 || positions[r] >= length)
      return fail<Err>(ErrorKind::InvalidValue, fmt::format("positions[{}]", r),
                       fmt::format("a position in [0, {}) (the length of sequence {})", length, seq),
                       std::to_string(positions[r]));
    s.sequence_ids.push_back(static_cast<std::int32_t>(seq));
    s.positions.push_back(static_cast<std::int32_t>(positions[r]));
  }
  return s;
}

PagedDims paged_dims(const PagedAttentionSignature& sig) {
  PagedDims d{};
  const Shape &q = sig.query.shape, &k = sig.key.shape;
  d.queries = q[0];
  d.q_heads = q[1];
  d.head_dim = q[2];
  d.pages = k[0];
  d.page_size = k[1];
  d.kv_heads = k[2];
  if (sig.kind == PagedKind::Mla) {
    d.rope_dim = sig.query_rope.shape[2];
    d.value_dim = d.head_dim;
  } else {
    d.rope_dim = 0;
    d.value_dim = sig.value.shape[3];
  }
  return d;
}

std::optional<PagedAttentionError> check_paged_attention(const PagedAttentionSignature& sig) {
  using paged_attention::kMaxHeadDim;
  using paged_attention::kMaxRopeDim;
  const bool mla = sig.kind == PagedKind::Mla;
  const Operand& q = sig.query;
  if (auto e = check_float<Err>(q, "query")) return e;
  if (q.shape.size() != 3)
    return fail<Err>(ErrorKind::ShapeMismatch, "query",
                     mla ? "rank 3 [queries, heads, latent_dim]" : "rank 3 [queries, q_heads, head_dim]",
                     shape_to_string(q.shape));
  const std::int64_t queries = q.shape[0], hq = q.shape[1], d = q.shape[2];
  if (queries == 0 || hq == 0)
    return fail<Err>(ErrorKind::EmptyDimension, "query", "queries and heads > 0", shape_to_string(q.shape));
  if (auto e = check_dim(d, "query", mla ? "latent_dim (R)" : "head_dim (D)", kMaxHeadDim)) return e;
  const char* key_name = mla ? "latent" : "key";
  if (auto e = check_like(sig.key, key_name, q)) return e;
  if (sig.key.shape.size() != 4)
    return fail<Err>(ErrorKind::ShapeMismatch, key_name,
                     mla ? "rank 4 [pages, page_size, 1, latent_dim]" : "rank 4 [pages, page_size, kv_heads, head_dim]",
                     shape_to_string(sig.key.shape));
  const std::int64_t pages = sig.key.shape[0], page_size = sig.key.shape[1], hkv = sig.key.shape[2];
  if (pages == 0 || page_size == 0 || hkv == 0)
    return fail<Err>(ErrorKind::EmptyDimension, key_name, "pages, page_size and kv_heads > 0",
                     shape_to_string(sig.key.shape));
  if (mla) {
    if (auto e = check_shape<Err>(sig.key, key_name, {kDynamic, kDynamic, 1, d}, "[pages, page_size, 1, latent_dim]"))
      return e;
    if (auto e = check_like(sig.query_rope, "query_rope", q)) return e;
    if (sig.query_rope.shape.size() != 3)
      return fail<Err>(ErrorKind::ShapeMismatch, "query_rope", "rank 3 [queries, heads, rope_dim]",
                       shape_to_string(sig.query_rope.shape));
    const std::int64_t p = sig.query_rope.shape[2];
    if (auto e = check_shape<Err>(sig.query_rope, "query_rope", {queries, hq, p}, "[queries, heads, rope_dim]"))
      return e;
    if (auto e = check_dim(p, "query_rope", "rope_dim (P)", kMaxRopeDim)) return e;
    if (auto e = check_like(sig.key_rope, "key_rope", q)) return e;
    if (auto e =
            check_shape<Err>(sig.key_rope, "key_rope", {pages, page_size, 1, p}, "[pages, page_size, 1, rope_dim]"))
      return e;
  } else {
    if (auto e = check_shape<Err>(sig.key, key_name, {kDynamic, kDynamic, kDynamic, d},
                                  "[pages, page_size, kv_heads, head_dim]"))
      return e;
    if (known(hq) && known(hkv) && hq % hkv != 0)
      return fail<Err>(ErrorKind::ShapeMismatch, "key", fmt::format("kv_heads dividing q_heads = {}", hq),
                       std::to_string(hkv));
    if (auto e = check_like(sig.value, "value", q)) return e;
    if (sig.value.shape.size() != 4)
      return fail<Err>(ErrorKind::ShapeMismatch, "value", "rank 4 [pages, page_size, kv_heads, value_dim]",
                       shape_to_string(sig.value.shape));
    const std::int64_t dv = sig.value.shape[3];
    if (auto e = check_shape<Err>(sig.value, "value", {pages, page_size, hkv, dv},
                                  "[pages, page_size, kv_heads, value_dim]"))
      return e;
    if (auto e = check_dim(dv, "value", "value_dim (Dv)", kMaxHeadDim)) return e;
  }
  if (known(page_size) && page_size > paged_attention::kMaxPageSize)
    return fail<Err>(ErrorKind::InvalidValue, key_name,
                     fmt::format("page_size in 1..={}", paged_attention::kMaxPageSize), std::to_string(page_size));
  if (auto e = check_metadata(sig.metadata, queries, q, "query")) return e;
  // The kernels index work items and output rows in 32 bits.
  if (known(queries) && known(hq) && known(hkv) &&
      (queries * hq >= kI32Max || queries * hkv * std::max<std::int64_t>(sig.splits, 1) >= kI32Max))
    return fail<Err>(ErrorKind::InvalidValue, "query", "queries · heads and queries · kv_heads · splits below 2^31",
                     fmt::format("{} queries, {} heads, {} kv heads, {} splits", queries, hq, hkv, sig.splits));
  if (!std::isfinite(sig.scale) || sig.scale <= 0)
    return fail<Err>(ErrorKind::InvalidValue, "scale", "a finite value > 0", fmt::format("{}", sig.scale));
  if (sig.splits != 1 && (sig.splits < paged_attention::kMinSplits || sig.splits > paged_attention::kMaxSplits))
    return fail<Err>(ErrorKind::InvalidValue, "splits",
                     fmt::format("1 (unsplit) or {}..={}", paged_attention::kMinSplits, paged_attention::kMaxSplits),
                     std::to_string(sig.splits));
  return std::nullopt;
}

std::optional<PagedAttentionError> check_paged_backward(const PagedBackwardSignature& sig) {
  if (sig.forward.splits != 1)
    return fail<Err>(ErrorKind::InvalidValue, "splits", "1 (the backward is unsplit)",
                     std::to_string(sig.forward.splits));
  if (auto e = check_paged_attention(sig.forward)) return e;
  const PagedDims d = paged_dims(sig.forward);
  if (auto e = check_like(sig.grad_out, "grad_out", sig.forward.query)) return e;
  return check_shape<Err>(
      sig.grad_out, "grad_out", {d.queries, d.q_heads, d.value_dim},
      sig.forward.kind == PagedKind::Mla ? "[queries, heads, latent_dim]" : "[queries, q_heads, value_dim]");
}

std::optional<std::int64_t> split_workspace_elements(std::int64_t splits, std::int64_t queries, std::int64_t heads,
                                                     std::int64_t value_dim) {
  if (value_dim < 0 || value_dim == std::numeric_limits<std::int64_t>::max()) return std::nullopt;
  return checked_element_count({splits, queries, heads, value_dim + 1});
}

std::optional<PagedAttentionError> check_split_workspace(std::int64_t queries, std::int64_t heads,
                                                         std::int64_t value_dim, std::int64_t splits) {
  using paged_attention::kMaxSplits;
  using paged_attention::kMaxWorkspaceBytes;
  using paged_attention::kMinSplits;
  if (splits < kMinSplits || splits > kMaxSplits)
    return fail<Err>(ErrorKind::InvalidValue, "splits", fmt::format("{}..={}", kMinSplits, kMaxSplits),
                     std::to_string(splits));
  if (queries < 1) return fail<Err>(ErrorKind::EmptyDimension, "queries", "≥ 1", std::to_string(queries));
  if (heads < 1) return fail<Err>(ErrorKind::EmptyDimension, "heads", "≥ 1", std::to_string(heads));
  if (value_dim < 1 || value_dim > paged_attention::kMaxHeadDim)
    return fail<Err>(value_dim < 1 ? ErrorKind::EmptyDimension : ErrorKind::InvalidValue, "value_dim",
                     fmt::format("1..={}", paged_attention::kMaxHeadDim), std::to_string(value_dim));
  const auto elements = split_workspace_elements(splits, queries, heads, value_dim);
  if (!elements || *elements > kMaxWorkspaceBytes / 4)
    return fail<Err>(ErrorKind::InvalidValue, "splits",
                     fmt::format("a workspace of at most {} bytes (splits · queries · heads · (value_dim + 1) · 4)",
                                 kMaxWorkspaceBytes),
                     elements ? fmt::format("{} bytes", *elements * 4) : "an overflowing size");
  return std::nullopt;
}

std::optional<PagedAttentionError> check_paged_append(const PagedAppendSignature& sig) {
  const Operand& k = sig.key;
  if (auto e = check_float<Err>(k, "key")) return e;
  if (k.shape.size() != 3)
    return fail<Err>(ErrorKind::ShapeMismatch, "key", "rank 3 [queries, kv_heads, head_dim]", shape_to_string(k.shape));
  const std::int64_t queries = k.shape[0], hkv = k.shape[1], d = k.shape[2];
  if (queries == 0 || hkv == 0)
    return fail<Err>(ErrorKind::EmptyDimension, "key", "queries and kv_heads > 0", shape_to_string(k.shape));
  if (auto e = check_dim(d, "key", "head_dim (D)", paged_attention::kMaxHeadDim)) return e;
  if (auto e = check_like(sig.value, "value", k, "key")) return e;
  if (sig.value.shape.size() != 3)
    return fail<Err>(ErrorKind::ShapeMismatch, "value", "rank 3 [queries, kv_heads, value_dim]",
                     shape_to_string(sig.value.shape));
  const std::int64_t dv = sig.value.shape[2];
  if (auto e = check_shape<Err>(sig.value, "value", {queries, hkv, dv}, "[queries, kv_heads, value_dim]")) return e;
  if (auto e = check_dim(dv, "value", "value_dim (Dv)", paged_attention::kMaxHeadDim)) return e;
  if (auto e = check_like(sig.key_cache, "key_cache", k, "key")) return e;
  if (sig.key_cache.shape.size() != 4)
    return fail<Err>(ErrorKind::ShapeMismatch, "key_cache", "rank 4 [pages, page_size, kv_heads, head_dim]",
                     shape_to_string(sig.key_cache.shape));
  const std::int64_t pages = sig.key_cache.shape[0], page_size = sig.key_cache.shape[1];
  if (auto e = check_shape<Err>(sig.key_cache, "key_cache", {pages, page_size, hkv, d},
                                "[pages, page_size, kv_heads, head_dim]"))
    return e;
  if (pages == 0 || page_size == 0)
    return fail<Err>(ErrorKind::EmptyDimension, "key_cache", "pages and page_size > 0",
                     shape_to_string(sig.key_cache.shape));
  if (auto e = check_like(sig.value_cache, "value_cache", k, "key")) return e;
  if (auto e = check_shape<Err>(sig.value_cache, "value_cache", {pages, page_size, hkv, dv},
                                "[pages, page_size, kv_heads, value_dim]"))
    return e;
  if (known(queries) && known(hkv) && queries * hkv >= kI32Max)
    return fail<Err>(ErrorKind::InvalidValue, "key", "queries · kv_heads below 2^31", shape_to_string(k.shape));
  return check_metadata(sig.metadata, queries, k, "key");
}

std::string describe_call(const PagedAttentionSignature& sig) {
  return fmt::format("{} q {} {} k {} {}", sig.kind == PagedKind::Mla ? "paged_mla" : "paged_attention",
                     shape_to_string(sig.query.shape), dtype_name(sig.query.dtype), shape_to_string(sig.key.shape),
                     sig.splits > 1 ? fmt::format("splits {}", sig.splits) : std::string("unsplit"));
}

}  // namespace rudnn::contracts
