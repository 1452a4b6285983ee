#pragma once
// Paged attention and MLA (SPEC §8, and the backward of SPEC §9): attention over a KV cache stored in
// fixed-size physical pages, for packed variable-length prefill and decode rows in one call.
//
//   HostPlan   — the schedule, validated on the host: per sequence its page table and valid KV
//                length, per query row its sequence and absolute position (from 0).
//   DevicePlan — the schedule uploaded to a query tensor's device and queue; immutable, reusable
//                while the schedule is unchanged. Its calls read the physical pages directly.
//   SplitWorkspace — FP32 partial outputs and log-sum-exps for split-KV calls (2..=32 splits).
//   OrderedBackwardWorkspace — row statistics and the history index of the deterministic backward.
//
// A query row of a sequence of length L at position p sees keys 0..L−1, or 0..p when causal.
// Every rejected call returns a PagedAttentionError naming the argument (the sequence or the query
// row for schedule errors), the expected and the actual value, and writes nothing.
//
// After `upload` and `SplitWorkspace::create`, warm `attention`, `mla`, `*_with_workspace` and
// `append` calls never wait for the device, load no module and allocate nothing but their output
// tensor (a stream-ordered allocation from the device's pool, which a CUDA graph captures as a
// memory node; an in-place append allocates nothing): they can be captured in a CUDA graph
// (docs/paged_attention.md).
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "rudnn/error.h"
#include "rudnn/export.h"
#include "rudnn/tensor.h"

namespace rudnn {
struct PagedAttentionErrorTag {};
using PagedAttentionError = FamilyError<PagedAttentionErrorTag>;
}  // namespace rudnn

namespace rudnn::paged_attention {

using rudnn::PagedAttentionError;

inline constexpr std::int64_t kMaxPageSize = 1 << 16;
inline constexpr std::int64_t kMaxHeadDim = 1024;  // D and Dv (and MLA's R)
inline constexpr std::int64_t kMaxRopeDim = 256;   // MLA's P
inline constexpr std::int64_t kMinSplits = 2, kMaxSplits = 32;
inline constexpr std::int64_t kMaxWorkspaceBytes = std::int64_t{64} << 20;

class RUDNN_API HostPlan {
 public:
  // tables[s]: the physical page ids of sequence s in order (each < pages); lengths[s]: its valid
  // KV length (≤ tables[s].size() · page_size); sequence_ids[r], positions[r]: query row r's
  // sequence and absolute position (< lengths[sequence]). Page ids may repeat across sequences
  // (shared prefixes).
  static Result<HostPlan, PagedAttentionError> create(std::int64_t page_size, std::int64_t pages,
                                                      const std::vector<std::vector<std::int32_t>>& tables,
                                                      const std::vector<std::int64_t>& lengths,
                                                      const std::vector<std::int64_t>& sequence_ids,
                                                      const std::vector<std::int64_t>& positions);
  // The same with U32 page ids.
  static Result<HostPlan, PagedAttentionError> create(std::int64_t page_size, std::int64_t pages,
                                                      const std::vector<std::vector<std::uint32_t>>& tables,
                                                      const std::vector<std::int64_t>& lengths,
                                                      const std::vector<std::int64_t>& sequence_ids,
                                                      const std::vector<std::int64_t>& positions);

  std::int64_t page_size() const { return page_size_; }
  std::int64_t pages() const { return pages_; }
  std::int64_t sequences() const { return static_cast<std::int64_t>(lengths_.size()); }
  std::int64_t queries() const { return static_cast<std::int64_t>(sequence_ids_.size()); }
  // The widest table: the device page table is [sequences, max_table_pages] (short rows padded).
  std::int64_t max_table_pages() const { return max_table_pages_; }
  const std::vector<std::int32_t>& page_table() const { return page_table_; }  // row-major, padded with 0
  const std::vector<std::int32_t>& lengths() const { return lengths_; }
  const std::vector<std::int32_t>& sequence_ids() const { return sequence_ids_; }
  const std::vector<std::int32_t>& positions() const { return positions_; }

 private:
  friend struct HostPlanAccess;
  HostPlan() = default;
  std::int64_t page_size_ = 0, pages_ = 0, max_table_pages_ = 0;
  std::vector<std::int32_t> page_table_, lengths_, sequence_ids_, positions_;
};

struct HostPlanAccess;
class DevicePlan;

class RUDNN_API SplitWorkspace {
 public:
  // FP32 partials for `queries` rows × `heads` × `value_dim` columns in `splits` (2..=32) parts,
  // on q's device and queue; at most kMaxWorkspaceBytes.
  static Result<SplitWorkspace, PagedAttentionError> create(const Tensor& q, std::int64_t queries, std::int64_t heads,
                                                            std::int64_t value_dim, std::int64_t splits);
  std::int64_t queries() const { return queries_; }
  std::int64_t heads() const { return heads_; }
  std::int64_t value_dim() const { return value_dim_; }
  std::int64_t splits() const { return splits_; }
  std::int64_t bytes() const { return static_cast<std::int64_t>(storage_.nbytes()); }
  const Tensor& storage() const { return storage_; }

 private:
  SplitWorkspace(Tensor storage, std::int64_t queries, std::int64_t heads, std::int64_t value_dim, std::int64_t splits)
      : storage_(std::move(storage)), queries_(queries), heads_(heads), value_dim_(value_dim), splits_(splits) {}
  Tensor storage_;  // f32 [splits · queries · heads · (value_dim + 1)]: outputs, then log2-sum-exps
  std::int64_t queries_, heads_, value_dim_, splits_;
};

// The caches `append` returns: the caller keeps these (they are the inputs' storage when it was
// not shared, else fresh copies).
struct AppendedCache {
  Tensor key_cache;
  Tensor value_cache;
};

// The gradients of DevicePlan::attention (SPEC §9): dq [queries, Hq, D] in q's dtype; dk and dv
// in the caches' shapes and dtype — the physical pages the plan's sequences reach get the sum over
// every query row and head that reads them (a page shared by two sequences gets both), every other
// slot 0.
struct AttentionBackward {
  Tensor dq, dk, dv;
};
// The gradients of DevicePlan::mla: dq [Q, H, R], dqp [Q, H, P], dlatent [pages, page_size, 1, R]
// (the key and the value contribution of each latent row), dkp [pages, page_size, 1, P].
struct MlaBackward {
  Tensor dq, dqp, dlatent, dkp;
};

// The gradient buffers of the unsafe `*_backward_selected_into` / `*_backward_ordered_into` calls,
// each optional: null → that gradient is not computed and its history scratch is not made. A
// given buffer is written in place; it must have its input's shape (dq: q's, dk: the key cache's,
// ...), q's dtype, be contiguous and on q's queue, and overlap no input, no other output and no
// workspace storage (checked: an InvalidValue error naming both, nothing written).
struct AttentionBackwardOutputs {
  Tensor* dq = nullptr;
  Tensor* dk = nullptr;
  Tensor* dv = nullptr;
};
struct MlaBackwardOutputs {
  Tensor* dq = nullptr;
  Tensor* dqp = nullptr;
  Tensor* dlatent = nullptr;
  Tensor* dkp = nullptr;
};

// The deterministic backward's workspace (SPEC §9): the FP32 row statistics (lse, δ per query row
// and head) and the history index (which sequences read each physical page, each sequence's query
// rows), built from the plan's schedule and uploaded once; with history compaction also the page
// order (active pages first: physical_pages × 4 bytes, uploaded on first use, kept when switched
// off). All of it within kMaxWorkspaceBytes (64 MiB): over budget is an error and the workspace
// keeps its previous mode.
//
// The switches start from RUDA_PAGED_ORDERED_CACHE_ROWS and RUDA_PAGED_ORDERED_COMPACT_HISTORY
// (read by `create`: unset or 0 off, 1 on, anything else an error; later changes of the
// environment do not touch existing workspaces). Row caching stages the visiting query rows in
// shared memory; compaction schedules the active pages first. Neither changes a bit of the
// result, and neither promises a speed-up (docs/paged_attention.md). Not thread-safe: one call or
// switch at a time per workspace (copies share the state).
class RUDNN_API OrderedBackwardWorkspace {
 public:
  // For the plan's schedule and q's query rows and heads (q [queries, heads, ...] on the plan's
  // device and queue).
  static Result<OrderedBackwardWorkspace, PagedAttentionError> create(const DevicePlan& plan, const Tensor& q);

  std::int64_t queries() const;
  std::int64_t heads() const;
  bool cache_rows() const;
  bool compact_history() const;
  Status<PagedAttentionError> set_cache_rows(bool on);
  // Uploads the page order on the first switch-on (an error over budget: the mode stays).
  Status<PagedAttentionError> set_compact_history(bool on);
  // With compaction on: (active pages, inactive pages) — active are the pages reachable within the
  // valid KV length of sequences that have query rows; otherwise nothing.
  std::optional<std::pair<std::int64_t, std::int64_t>> history_compaction_pages() const;
  // Device bytes held, the page order included once uploaded (also while compaction is off).
  std::int64_t bytes() const;

  struct State;

 private:
  explicit OrderedBackwardWorkspace(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
  friend class DevicePlan;
};

class RUDNN_API DevicePlan {
 public:
  // Uploads `host` to q's device and queue (the metadata as I32 tensors).
  static Result<DevicePlan, PagedAttentionError> upload(const HostPlan& host, const Tensor& q);

  // q [queries, Hq, D]; k [pages, page_size, Hkv, D]; v [pages, page_size, Hkv, Dv]; one float
  // dtype, Hq % Hkv == 0, D and Dv in 1..=1024, scale finite > 0 → [queries, Hq, Dv] in q's dtype.
  Result<Tensor, PagedAttentionError> attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                                                bool causal) const;
  // q [queries, H, R] (absorbed), qp [queries, H, P] (rope part), latent [pages, page_size, 1, R],
  // kp [pages, page_size, 1, P]; scores = scale·(q·latent + qp·kp), values = the latent rows →
  // [queries, H, R]. R in 1..=1024, P in 1..=256.
  Result<Tensor, PagedAttentionError> mla(const Tensor& q, const Tensor& qp, const Tensor& latent, const Tensor& kp,
                                          float scale, bool causal) const;
  // Split-KV: each query row's keys in `workspace.splits()` parts of ⌈L / splits⌉ keys (L: its
  // sequence's length, so a row's result does not depend on the rest of the batch), merged by
  // their log-sum-exps. The workspace must match (queries, heads, value dim) and the queue.
  Result<Tensor, PagedAttentionError> attention_with_workspace(const Tensor& q, const Tensor& k, const Tensor& v,
                                                               float scale, bool causal,
                                                               SplitWorkspace& workspace) const;
  Result<Tensor, PagedAttentionError> mla_with_workspace(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                         const Tensor& kp, float scale, bool causal,
                                                         SplitWorkspace& workspace) const;
  // The same into a caller's buffer `out` (SPEC §13): [queries, Hq, Dv] (MLA [queries, H, R]) in
  // q's dtype, contiguous, on q's queue, overlapping no input and not the workspace; split-KV with a
  // workspace. A rejected call names `out` and writes nothing.
  Status<PagedAttentionError> attention_into(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                                             bool causal, const Tensor& out, SplitWorkspace* workspace = nullptr) const;
  Status<PagedAttentionError> mla_into(const Tensor& q, const Tensor& qp, const Tensor& latent, const Tensor& kp,
                                       float scale, bool causal, const Tensor& out,
                                       SplitWorkspace* workspace = nullptr) const;
  // Writes k [queries, Hkv, D] and v [queries, Hkv, Dv] at each query row's position through its
  // sequence's page table. A cache whose storage another Tensor handle shares is copied first (pass
  // the caches with std::move to write in place). Two rows that map to one physical slot are
  // rejected before anything is written.
  Result<AppendedCache, PagedAttentionError> append(const Tensor& k, const Tensor& v, Tensor key_cache,
                                                    Tensor value_cache) const;

  // The backward of `attention` / `mla` for the output gradient grad_out ([queries, Hq, Dv] /
  // [queries, H, R], q's dtype) — the atomic path: probabilities are recomputed from each row's
  // log-sum-exp (recomputed too: the forward saves nothing), the score matrix is never stored, and
  // the history gradients (dk, dv, dlatent, dkp) sum over query rows with FP32 atomics into FP32
  // scratch, rounded to the dtype at the end: not bitwise deterministic. dq is.
  Result<AttentionBackward, PagedAttentionError> attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                                                    const Tensor& grad_out, float scale,
                                                                    bool causal) const;
  Result<MlaBackward, PagedAttentionError> mla_backward(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                        const Tensor& kp, const Tensor& grad_out, float scale,
                                                        bool causal) const;

  // Unsafe (SPEC §9): the atomic backward into caller buffers, each optional (see
  // AttentionBackwardOutputs), on the plan's queue. History gradients use FP32 atomics: not bitwise
  // deterministic. With no buffer given, the call checks its inputs and does nothing.
  Status<PagedAttentionError> attention_backward_selected_into(const Tensor& q, const Tensor& k, const Tensor& v,
                                                               const Tensor& grad_out, float scale, bool causal,
                                                               const AttentionBackwardOutputs& out) const;
  Status<PagedAttentionError> mla_backward_selected_into(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                         const Tensor& kp, const Tensor& grad_out, float scale,
                                                         bool causal, const MlaBackwardOutputs& out) const;
  // The deterministic backward: no floating-point atomics; every gradient is summed in the
  // schedule's fixed order (the same bits on every run on one device; not bitwise equal to the
  // atomic path or across devices). The workspace must come from this schedule (this plan or one
  // with equal metadata), q's query rows and heads, device and queue.
  Status<PagedAttentionError> attention_backward_ordered_into(const Tensor& q, const Tensor& k, const Tensor& v,
                                                              const Tensor& grad_out, float scale, bool causal,
                                                              OrderedBackwardWorkspace& workspace,
                                                              const AttentionBackwardOutputs& out) const;
  Status<PagedAttentionError> mla_backward_ordered_into(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                        const Tensor& kp, const Tensor& grad_out, float scale,
                                                        bool causal, OrderedBackwardWorkspace& workspace,
                                                        const MlaBackwardOutputs& out) const;

  // Writes `host`'s schedule into this plan's metadata buffers, in place — what a serving engine that
  // replays CUDA graphs captured over this plan's calls does at every step (the graphs keep the
  // buffers' addresses). The new schedule must fit the buffers: the plan's page size, pages, sequences
  // and query rows, a table no wider than the plan's (narrower tables are padded; entries past a
  // sequence's valid length are never read). Else ShapeMismatch naming `host`, and nothing changes.
  // Not during a capture (CaptureViolation: it copies from the host). The copies are queued on the
  // plan's queue from a page-locked staging buffer the plan owns (made at the first update: not while
  // another thread captures in global mode), so calls enqueued there before it read the old schedule,
  // calls after it the new one, and `host` is not read after it returns. The host does not wait for
  // the queue (the next update waits for this one's copies before reusing the staging); work on
  // another stream must wait for the plan's queue first.
  // Copies of this plan share the buffers, so they see the update too; so do CUDA graphs captured
  // over their forward, append and atomic backward calls, replayed on the plan's queue (or after it
  // is synchronized). An OrderedBackwardWorkspace made before the update is rejected afterwards (its
  // index is the old schedule's), and a graph that captured an ordered backward must be captured
  // again. Not thread-safe: no call through this plan (or a copy) may run concurrently. A copy that
  // fails after an earlier one was queued (a device error) leaves the plan refusing every call.
  Status<PagedAttentionError> update(const HostPlan& host);
  // How many updates the schedule has had (0 after upload).
  std::int64_t updates() const;

  std::int64_t page_size() const;
  std::int64_t pages() const;
  std::int64_t sequences() const;
  std::int64_t queries() const;

  struct State;

 private:
  explicit DevicePlan(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
  friend class OrderedBackwardWorkspace;
};

}  // namespace rudnn::paged_attention
