#pragma once
// The compiler's entry for paged attention, MLA, append and backward calls (the ops layer's DevicePlan,
// rudnn-precompile, the variant tests). No MLIR in this header.
#include <array>
#include <optional>
#include <vector>

#include "contracts/arch.h"
#include "contracts/paged_attention.h"
#include "rudnn/compiler/pipeline.h"

namespace rudnn::compiler {

// One rudnn.paged_attention / rudnn.paged_mla op (the kind is the signature's). Queries, pages,
// page size and the schedule's extents are dynamic in the IR; head counts and dims static. Slots:
//   attention  query 0, key 1, value 2, page_table 3, lengths 4, sequence_ids 5, positions 6, out 7
//   mla        query 0, query_rope 1, latent 2, key_rope 3, page_table 4, lengths 5,
//              sequence_ids 6, positions 7, out 8
// then, split (signature.splits > 1), the FP32 workspace temporary (which the caller may supply).
struct PagedAttentionRequest {
  contracts::PagedAttentionSignature signature;
  std::optional<KernelConfig> config;  // forced (tests); otherwise the heuristic
};
Result<LoweredOp, RuntimeError> lower_paged_attention(const PagedAttentionRequest& request, const Target& target);

// rudnn.paged_append. Slots: key 0, value 1, key_cache 2, value_cache 3, page_table 4, lengths 5,
// sequence_ids 6, positions 7, new_key_cache 8, new_value_cache 9 (the caller passes the input
// caches there to write in place).
Result<LoweredOp, RuntimeError> lower_paged_append(const contracts::PagedAppendSignature& signature,
                                                   const Target& target);

// One rudnn.paged_attention_backward / rudnn.paged_mla_backward op (SPEC §9). Slots: the forward's
// operands with grad_out after the caches (attention query 0, key 1, value 2, grad_out 3,
// page_table 4 .. positions 7; MLA query 0, query_rope 1, latent 2, key_rope 3, grad_out 4,
// page_table 5 .. positions 8), then, ordered, history_index and page_order (i32, from the
// OrderedBackwardWorkspace; page_order may be absent unless compact_history), then the selected
// gradients in result order (attention dq, dk, dv; MLA dq, dq_rope, dlatent, dk_rope), then the
// temporaries: atomic, one FP32 history scratch per selected history gradient; ordered, the FP32
// row statistics [queries · heads · 2] (the workspace supplies them).
struct PagedBackwardMode {
  bool ordered = false;
  bool cache_rows = false;       // ordered only
  bool compact_history = false;  // ordered only
};
struct PagedBackwardRequest {
  contracts::PagedBackwardSignature signature;
  std::optional<KernelConfig> config;  // forced (tests); otherwise {warps = 4}
  PagedBackwardMode mode = {};
  // Which gradients (in result order; MLA has four) the call computes: the rest are not lowered.
  std::array<bool, 4> outputs = {true, true, true, true};
};
Result<LoweredOp, RuntimeError> lower_paged_backward(const PagedBackwardRequest& request, const Target& target);

// Unsupported naming the value (MLA: the latent) when no forward tile of `sig` fits `target`'s
// shared memory (the heuristic's own search; attention with D = Dv = 1024 on sm_86/sm_89's 99 KiB),
// where lowering would fail: the ops layer and rudnn-precompile ask it first.
std::optional<RuntimeError> check_paged_tile_fits(const contracts::PagedAttentionSignature& sig, const Target& target);

// Every registered tile that serves the call within `max_shared_bytes` of dynamic shared memory (the
// target's opt-in limit) (the variant test, rudnn-precompile --with-autotune-candidates);
// tensor-core ones only when `tensor_cores`, the warpgroup-MMA one only when `wgmma`
// (contracts::has_wgmma).
std::vector<KernelConfig> paged_variants(const contracts::PagedAttentionSignature& sig, bool tensor_cores,
                                         std::int64_t max_shared_bytes = contracts::kLargestSharedBytes,
                                         bool wgmma = false);

}  // namespace rudnn::compiler
