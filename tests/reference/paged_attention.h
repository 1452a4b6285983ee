#pragma once
// FP64 oracles of paged attention, paged MLA and the paged append (SPEC §8), and the gradients of
// the two attentions: the pages of each sequence are gathered into dense rows through the schedule's
// page tables, then plain attention in double per query row (the backward reads and accumulates into
// the physical slots directly). Plain C++, no code shared with the library (the schedule is the
// caller's own description, not the library's HostPlan).
//
// Cache layout [pages, page_size, heads, dim]: key j of sequence s is the physical row
// tables[s][j / page_size] · page_size + j % page_size.
#include <cstdint>
#include <vector>

namespace rudnn::reference {

struct PagedSchedule {
  std::int64_t page_size = 1;
  std::vector<std::vector<std::int64_t>> tables;  // per sequence: its physical page ids in order
  std::vector<std::int64_t> lengths;              // per sequence: its valid KV length
  std::vector<std::int64_t> sequence_ids;         // per query row
  std::vector<std::int64_t> positions;            // per query row: its absolute position
};

// The physical cache row of key `position` of `sequence`.
std::int64_t paged_cache_row(const PagedSchedule& schedule, std::int64_t sequence, std::int64_t position);

// The first `length` keys of a sequence as dense rows: cache [pages, page_size, heads, dim] →
// [length, heads, dim].
std::vector<double> gather_pages(const std::vector<double>& cache, const PagedSchedule& schedule, std::int64_t sequence,
                                 std::int64_t heads, std::int64_t dim);

struct PagedAttentionShape {
  std::int64_t q_heads = 1, kv_heads = 1, head_dim = 1, value_dim = 1;
};

// query [Q, Hq, D], key cache [pages, page_size, Hkv, D], value cache [pages, page_size, Hkv, Dv] →
// [Q, Hq, Dv]. Row r of sequence s = sequence_ids[r] at position p sees keys 0..L−1 (L = lengths[s])
// or 0..p when causal; query head h reads kv head h / (Hq / Hkv); softmax(scale · q·k) over those
// keys; a row that sees no key is zeros.
std::vector<double> paged_attention(const std::vector<double>& query, const std::vector<double>& key_cache,
                                    const std::vector<double>& value_cache, const PagedSchedule& schedule,
                                    const PagedAttentionShape& shape, double scale, bool causal);

// MLA: query [Q, H, R], query_rope [Q, H, P], latent [pages, page_size, 1, R], key_rope
// [pages, page_size, 1, P]; scores = scale · (q·latent + qp·kp), values = the latent rows → [Q, H, R].
std::vector<double> paged_mla(const std::vector<double>& query, const std::vector<double>& query_rope,
                              const std::vector<double>& latent, const std::vector<double>& key_rope,
                              const PagedSchedule& schedule, std::int64_t heads, std::int64_t latent_dim,
                              std::int64_t rope_dim, double scale, bool causal);

// Gradients of paged_attention(...) for the output gradient grad_out [Q, Hq, Dv]. Per query row and
// head, over the keys the forward lets it see (the same rule): P = softmax(scale · q·k) (stable: the
// row max subtracted), dP_j = grad_out · v_j, dS_j = P_j · (dP_j − Σ_i P_i · dP_i); then
// dq = scale · Σ_j dS_j · k_j, dk_j += scale · dS_j · q, dv_j += P_j · grad_out. dk and dv are
// accumulated into the physical cache slots: a page shared by two sequences gets both contributions,
// a slot no visible key reaches stays 0, and a row that sees no key contributes nothing (dq = 0).
struct PagedAttentionGrads {
  std::vector<double> dq;  // [Q, Hq, D]
  std::vector<double> dk;  // [pages, page_size, Hkv, D]: summed over every query row and head that reads the slot
  std::vector<double> dv;  // [pages, page_size, Hkv, Dv]
};
PagedAttentionGrads paged_attention_backward(const std::vector<double>& query, const std::vector<double>& key_cache,
                                             const std::vector<double>& value_cache,
                                             const std::vector<double>& grad_out, const PagedSchedule& schedule,
                                             const PagedAttentionShape& shape, double scale, bool causal);

// Gradients of paged_mla(...) for grad_out [Q, H, R]: the keys are (latent row, key_rope row)
// concatenated and the values the latent rows, so with dQ, dK, dV those of plain attention (as
// paged_attention_backward, one shared kv head): dq = dQ[:, :R], dq_rope = dQ[:, R:],
// dlatent = dK[:, :R] + dV, dk_rope = dK[:, R:], accumulated into the physical slots.
struct PagedMlaGrads {
  std::vector<double> dq;       // [Q, H, R]
  std::vector<double> dq_rope;  // [Q, H, P]
  std::vector<double> dlatent;  // [pages, page_size, 1, R]: the key and the value contribution
  std::vector<double> dk_rope;  // [pages, page_size, 1, P]
};
PagedMlaGrads paged_mla_backward(const std::vector<double>& query, const std::vector<double>& query_rope,
                                 const std::vector<double>& latent, const std::vector<double>& key_rope,
                                 const std::vector<double>& grad_out, const PagedSchedule& schedule, std::int64_t heads,
                                 std::int64_t latent_dim, std::int64_t rope_dim, double scale, bool causal);

// Append: key rows [Q, Hkv, D] and value rows [Q, Hkv, Dv] written into dense host copies of the
// caches ([pages, page_size, Hkv, D] / [.., Dv]) at each row's position through its sequence's
// table. Later rows overwrite earlier ones (the library rejects such schedules).
void paged_append(const std::vector<double>& key, const std::vector<double>& value, std::vector<double>& key_cache,
                  std::vector<double>& value_cache, const PagedSchedule& schedule, std::int64_t kv_heads,
                  std::int64_t head_dim, std::int64_t value_dim);

}  // namespace rudnn::reference
