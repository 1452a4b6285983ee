#pragma once
// MoE forward (SPEC §3–§4): logits → softmax/top-k (or grouped sigmoid) routing → compact dispatch
// → SwiGLU experts → weighted combine. A rejected call returns a MoeError and launches nothing.
//
//   auto experts = rudnn::moe::SwiGluExperts::create(gate, up, down);   // the guide's ::new
//   auto out = experts->forward(input, logits, {.top_k = 2, .renormalize = true});
// or step by step:
//   auto routing = rudnn::moe::route(logits, options);
//   auto dispatched = routing->dispatch(input);
//   auto rows = experts->forward_dispatched(*dispatched);
//   auto out = dispatched->combine(*rows);
#include <cstdint>
#include <cstddef>
#include <optional>
#include <vector>

#include "rudnn/error.h"
#include "rudnn/export.h"
#include "rudnn/tensor.h"

namespace rudnn::moe {

using rudnn::MoeError;

// The most experts a dispatch serves: its ranking keeps one U32 counter per expert in shared memory,
// (experts + 1) · 4 bytes rounded up to 16 = 65552 bytes, which every supported GPU gives a block
// (sm_86/sm_89: 99 KiB; 32768 experts would need 128 KiB and fail at launch there). More is
// InvalidValue naming `experts` before anything runs.
inline constexpr std::int64_t kMaxDispatchExperts = 16384;

struct RoutingOptions {
  std::int64_t top_k = 1;   // 1 ≤ top_k ≤ experts
  bool renormalize = true;  // divide the selected weights by their sum
};

struct GroupRoutingOptions {
  std::int64_t top_k = 8;            // 1..=64, ≤ selected_groups × experts_per_group
  std::int64_t groups = 8;           // 1..=128, divides experts
  std::int64_t selected_groups = 4;  // 1 ≤ selected_groups ≤ groups
  bool group_top_two = true;         // group score: sum of the two largest c (else the largest)
  bool renormalize = true;
  float scale = 1.0f;  // finite, > 0
};

// The expert GEMMs' strategy. Scalar: plain cores, any float dtype. TensorCore: mma.sync
// m16n8k16 (F16/BF16, hidden and inter multiples of 8, sm_80+ or the host emulation device);
// unsupported → MoeError (Unsupported) naming the requirement. Auto: TensorCore where supported,
// else Scalar — only for unsupported configurations; compile and launch failures are returned.
enum class GroupedStrategy { Scalar, Auto, TensorCore };

// ---- First-order training (SPEC §10)

enum class RouterScoring { Softmax, Sigmoid };

// The weights of the selected experts as a function of the logits (the selection itself is not
// differentiated): Softmax — softmax over all E logits, the selected entries; Sigmoid —
// sigmoid(logit) of each selected expert; then optionally divided by their sum over the selected,
// then times `scale` (finite, > 0).
struct RouterWeightOptions {
  RouterScoring scoring = RouterScoring::Softmax;
  bool renormalize = true;
  float scale = 1.0f;
};

// Dispatched::combine_backward's reduction over H for dweights: Serial (one thread walks H) or Plane
// (a warp shares H and reduces across its lanes in a fixed order). Both deterministic.
enum class CombineGradientStrategy { Serial, Plane };

// What Dispatched::combine_backward returns.
struct CombineGradients {
  Tensor dexpert;   // [T·top_k, H] in rows() order, the expert output's dtype: weights[t, j] · grad_output[t]
  Tensor dweights;  // [T, top_k] F32: Σ_h grad_output[t, h] · expert_output[slots[t, j], h]
};

class Dispatched;
class RouterTrainingPlan;
class SwiGluExperts;

// What SwiGluTrainingCache::backward returns.
struct ExpertGradients {
  Tensor dinput;  // [N, H] in rows() order, the weights' dtype (dispatch_backward sums it per token)
  Tensor dgate;   // F32 [E, I, H]
  Tensor dup;     // F32 [E, I, H]
  Tensor ddown;   // F32 [E, H, I]
};

// The routing of T tokens over E experts.
class RUDNN_API RoutingPlan {
 public:
  // A routing made elsewhere (route() and route_sigmoid_grouped() make valid ones): indices U32
  // [T, top_k] with 1 ≤ top_k ≤ experts, weights float [T, top_k], one device and queue, contiguous.
  // experts ≤ 2^32 − 1 (indices and offsets are U32). Every index must be < experts: they are read back to check (one
  // copy and a synchronization of the indices' queue), since dispatch would otherwise drop a token silently.
  static Result<RoutingPlan, MoeError> create(Tensor expert_indices, Tensor weights, std::int64_t experts);
  // [T, top_k] U32: the selected experts of each token, best first (ties: smaller index first).
  const Tensor& expert_indices() const { return indices_; }
  // [T, top_k], the logits' dtype: the weight of each selected expert.
  const Tensor& weights() const { return weights_; }
  std::int64_t tokens() const { return indices_.shape()[0]; }
  std::int64_t top_k() const { return indices_.shape()[1]; }
  std::int64_t experts() const { return experts_; }

  // input [T, H] (any float dtype, the routing's device and queue): each token's row copied once per
  // selected expert into compact per-expert rows. No capacity limit, no dropped token.
  Result<Dispatched, MoeError> dispatch(const Tensor& input) const;
  // The same into a caller's buffers (SPEC §13), which the returned Dispatched then refers to (keep
  // them alive and unmodified while it is used): rows [T·top_k, H] in the input's dtype, offsets
  // [experts + 1] U32, slots [T, top_k] U32; each contiguous, on the input's device and queue,
  // overlapping no other and none of the input, the indices and the weights. A rejected call names
  // the buffer and writes nothing.
  Result<Dispatched, MoeError> dispatch_into(const Tensor& input, const Tensor& rows, const Tensor& offsets,
                                             const Tensor& slots) const;
  // A dispatch of this routing made earlier and kept as its three tensors (a framework's ops pass them
  // between each other): rows [T·top_k, H] (any float dtype), offsets [experts + 1] U32 and slots
  // [T, top_k] U32, contiguous, on the routing's device and queue. The indices, offsets and slots are
  // read back (a copy and a synchronization of the queue each, like create()'s) and must be a dispatch
  // of this selection (and the indices still < experts): offsets[0] = 0 and expert e's range [offsets[e], offsets[e+1])
  // as long as its number of choices; slots[t, j] inside the range of expert_indices[t, j], no row taken twice. The
  // order of the rows inside an expert is free (dispatch's own is not fixed). The rows' values are data: not checked.
  // Anything else names rows, offsets, slots or expert_indices (the first bad position in the
  // message); the returned Dispatched refers to the caller's tensors (keep them alive and
  // unmodified while it is used).
  Result<Dispatched, MoeError> adopt_dispatch(Tensor rows, Tensor offsets, Tensor slots) const;
  // create() and adopt_dispatch() in one, reading the indices back once instead of twice (a
  // framework's ops that keep a dispatch as tensors rebuild it per call this way).
  static Result<Dispatched, MoeError> adopt(Tensor expert_indices, Tensor weights, std::int64_t experts, Tensor rows,
                                            Tensor offsets, Tensor slots);

  // Training: keeps this selection and recomputes its weights from `logits` [T, E] with
  // selected_router_weights (FP32). The logits are saved (not copied): do not modify them before
  // backward.
  Result<RouterTrainingPlan, MoeError> into_training(const Tensor& logits, RouterWeightOptions options) const;

 private:
  // Defined only inside the library (ops/moe.cpp): the routing ops build plans they made valid
  // without create()'s read-back.
  friend struct RoutingPlanAccess;
  // dispatch, into `into` = {rows, offsets, slots} when given.
  Result<Dispatched, MoeError> dispatch_impl(const Tensor& input, const Tensor* const* into) const;
  // create() keeping the indices it read back; adopt_dispatch() with them (null: read them itself).
  static Result<RoutingPlan, MoeError> create_reading(Tensor expert_indices, Tensor weights, std::int64_t experts,
                                                      std::vector<double>& indices_read);
  Result<Dispatched, MoeError> adopt_reading(Tensor rows, Tensor offsets, Tensor slots,
                                             const std::vector<double>* indices_read) const;
  RoutingPlan(Tensor expert_indices, Tensor weights, std::int64_t experts)
      : indices_(std::move(expert_indices)), weights_(std::move(weights)), experts_(experts) {}
  Tensor indices_, weights_;
  std::int64_t experts_;
};

// Token rows grouped per expert (RoutingPlan::dispatch), and the mapping back.
class RUDNN_API Dispatched {
 public:
  // [T·top_k, H]: expert e's rows are [offsets[e], offsets[e+1]); their order inside an expert is not
  // fixed (atomic ranking).
  const Tensor& rows() const { return rows_; }
  // [E + 1] U32: offsets[0] = 0, offsets[E] = T·top_k.
  const Tensor& expert_offsets() const { return offsets_; }
  // [T, top_k] U32: the row of (token t, choice j) in rows().
  const Tensor& slots() const { return slots_; }
  const RoutingPlan& routing() const { return routing_; }
  std::int64_t tokens() const { return routing_.tokens(); }
  std::int64_t top_k() const { return routing_.top_k(); }
  std::int64_t experts() const { return routing_.experts(); }
  std::int64_t hidden() const { return rows_.shape()[1]; }

  // expert_output [T·top_k, H] in rows() order (any float dtype, same device and queue) → [T, H] in
  // token order: out[t] = Σ_j weights[t, j] · expert_output[slots[t, j]], summed in FP32 in j order
  // (deterministic), in expert_output's dtype.
  Result<Tensor, MoeError> combine(const Tensor& expert_output) const;
  // The same into a caller's buffer `out` [T, H] (SPEC §13): expert_output's dtype, contiguous, on its
  // device and queue, overlapping no input. A rejected call names `out` and writes nothing.
  Status<MoeError> combine_into(const Tensor& expert_output, const Tensor& out) const;

  // The gradients of combine: grad_output [T, H] (expert_output's dtype and device) →
  // dexpert [T·top_k, H] and dweights F32 [T, top_k]. Default strategy Serial.
  Result<CombineGradients, MoeError> combine_backward(const Tensor& expert_output, const Tensor& grad_output) const;
  Result<CombineGradients, MoeError> combine_backward_with_strategy(const Tensor& expert_output,
                                                                    const Tensor& grad_output,
                                                                    CombineGradientStrategy strategy) const;
  // The gradient of dispatch: drows [T·top_k, H] in rows() order → [T, H], each token's selected rows
  // summed in FP32 in j order (no routing weight: combine_backward applied it), in drows' dtype.
  Result<Tensor, MoeError> dispatch_backward(const Tensor& drows) const;
  // The same two into a caller's buffers (SPEC §13): `into`'s dexpert and dweights, or `out` [T, H]
  // in drows' dtype; the shapes and dtypes above, contiguous, on the inputs' device and queue,
  // overlapping no input (nor each other). A rejected call names the buffer and writes nothing.
  Status<MoeError> combine_backward_into(const Tensor& expert_output, const Tensor& grad_output,
                                         CombineGradientStrategy strategy, const CombineGradients& into) const;
  Status<MoeError> dispatch_backward_into(const Tensor& drows, const Tensor& out) const;

 private:
  friend class RoutingPlan;
  Result<CombineGradients, MoeError> combine_backward_impl(const Tensor& expert_output, const Tensor& grad_output,
                                                           CombineGradientStrategy strategy,
                                                           const CombineGradients* into) const;
  Result<Tensor, MoeError> dispatch_backward_impl(const Tensor& drows, const Tensor* into) const;
  Dispatched(RoutingPlan routing, Tensor rows, Tensor offsets, Tensor slots)
      : routing_(std::move(routing)), rows_(std::move(rows)), offsets_(std::move(offsets)), slots_(std::move(slots)) {}
  Result<Tensor, MoeError> combine_impl(const Tensor& expert_output, const Tensor* into) const;
  RoutingPlan routing_;
  Tensor rows_, offsets_, slots_;
};

// What the experts' training forward keeps for backward: the experts (their weight tensors) and the
// dispatched rows, offsets and slots it ran on — not the gate/up pre-activations, which backward recomputes
// (no activation memory between the passes; one gate/up GEMM more in backward). The saved tensors
// must not be modified before backward.
class RUDNN_API SwiGluTrainingCache {
 public:
  // dexpert [N, H] (the weights' dtype; combine_backward's dexpert) → dinput, dgate, dup, ddown.
  // Scalar experts (plain cores). Weight gradients summed over each expert's rows in a fixed order:
  // deterministic; an expert with no rows gets zero gradients.
  Result<ExpertGradients, MoeError> backward(const Tensor& dexpert) const;
  // Scalar, TensorCore (f16/bf16 weights with H and I multiples of 8 on an mma-capable target; else
  // an Unsupported error naming `strategy`) or Auto (TensorCore exactly where it is allowed, as the
  // forward's rule; else Scalar).
  Result<ExpertGradients, MoeError> backward_with_strategy(const Tensor& dexpert, GroupedStrategy strategy) const;
  // The same into a caller's buffers (SPEC §13): dinput, dgate, dup, ddown with the shapes and dtypes
  // of ExpertGradients, contiguous, on the rows' device and queue, overlapping no input (nor each
  // other). The intermediates come from the queue's pool. A rejected call names the buffer and writes
  // nothing.
  Status<MoeError> backward_into(const Tensor& dexpert, GroupedStrategy strategy, const ExpertGradients& into) const;

 private:
  friend class SwiGluExperts;
  Result<ExpertGradients, MoeError> backward_impl(const Tensor& dexpert, GroupedStrategy strategy,
                                                  const ExpertGradients* into) const;
  SwiGluTrainingCache(Tensor gate, Tensor up, Tensor down, Tensor rows, Tensor offsets, Tensor slots)
      : gate_(std::move(gate)),
        up_(std::move(up)),
        down_(std::move(down)),
        rows_(std::move(rows)),
        offsets_(std::move(offsets)),
        slots_(std::move(slots)) {}
  Tensor gate_, up_, down_, rows_, offsets_;
  Tensor slots_;  // the dispatch's: the weight gradients sum each expert's rows in token order
};

struct SwiGluTraining {
  Tensor output;  // as forward_dispatched_with_strategy
  SwiGluTrainingCache cache;
};

// SwiGLU experts: expert e maps x to down_e · (silu(gate_e · x) ⊙ (up_e · x)), FP32 accumulation.
// Reusable across batches; holds the weight tensors (shared storage, not copies).
class RUDNN_API SwiGluExperts {
 public:
  // The guide's SwiGluExperts::new. gate, up [E, I, H], down [E, H, I]; one non-quantized float dtype,
  // one device, contiguous.
  static Result<SwiGluExperts, MoeError> create(Tensor gate, Tensor up, Tensor down);

  std::int64_t experts() const { return gate_.shape()[0]; }
  std::int64_t inter() const { return gate_.shape()[1]; }
  std::int64_t hidden() const { return gate_.shape()[2]; }
  DType dtype() const { return gate_.dtype(); }
  const Tensor& gate() const { return gate_; }
  const Tensor& up() const { return up_; }
  const Tensor& down() const { return down_; }

  // input [T, H] (the weights' dtype), logits [T, E]: route, dispatch, Scalar experts, combine.
  Result<Tensor, MoeError> forward(const Tensor& input, const Tensor& logits, RoutingOptions options) const;
  // The experts over dispatched rows ([T·top_k, H] in dispatched.rows() order), Scalar.
  Result<Tensor, MoeError> forward_dispatched(const Dispatched& dispatched) const;
  Result<Tensor, MoeError> forward_dispatched_with_strategy(const Dispatched& dispatched,
                                                            GroupedStrategy strategy) const;
  // Into caller buffers (SPEC §13; each checked like combine_into's): the experts' rows
  // [T·top_k, H]; the whole layer's output [T, H] (routing, dispatch and the experts' rows still
  // come from the queue's stream-ordered pool).
  Status<MoeError> forward_dispatched_into(const Dispatched& dispatched, GroupedStrategy strategy,
                                           const Tensor& out) const;
  // The experts' temporaries in the caller's memory: the bytes the call needs (the activations
  // [T·top_k, inter] of the resolved strategy; it makes the call's plan, as the call would), and
  // the call with them in `workspace` (contiguous, on the rows' device and queue, overlapping no
  // input and not `out`; too small: InvalidValue naming `workspace`, nothing written).
  Result<std::size_t, MoeError> workspace_bytes(const Dispatched& dispatched, GroupedStrategy strategy) const;
  Status<MoeError> forward_dispatched_into(const Dispatched& dispatched, GroupedStrategy strategy, const Tensor& out,
                                           const Tensor& workspace) const;
  Status<MoeError> forward_into(const Tensor& input, const Tensor& logits, RoutingOptions options,
                                const Tensor& out) const;
  Status<MoeError> forward_sigmoid_grouped_into(const Tensor& input, const Tensor& logits,
                                                const std::optional<Tensor>& bias, GroupRoutingOptions options,
                                                GroupedStrategy strategy, const Tensor& out) const;
  // The whole layer with every intermediate in one caller workspace (SPEC §13: nothing from the
  // pool): the routing's indices and weights, the dispatched rows, offsets and slots, the experts'
  // rows and their temporaries, each region 256-byte aligned. The bytes a call with these shapes,
  // top_k and strategy needs (it makes the experts' plan, as the call would; the routing kind does
  // not change it), and the calls with their intermediates carved from `workspace` (contiguous, on
  // the input's device and queue, overlapping no input, bias, expert weight or `out`; too small:
  // InvalidValue naming `workspace`; its address 16-byte aligned). Every check runs before anything
  // is written. The size query makes only the experts' plan: warm up with one call before a capture.
  Result<std::size_t, MoeError> layer_workspace_bytes(const Tensor& input, const Tensor& logits, std::int64_t top_k,
                                                      GroupedStrategy strategy) const;
  Status<MoeError> forward_into(const Tensor& input, const Tensor& logits, RoutingOptions options,
                                GroupedStrategy strategy, const Tensor& out, const Tensor& workspace) const;
  Status<MoeError> forward_sigmoid_grouped_into(const Tensor& input, const Tensor& logits,
                                                const std::optional<Tensor>& bias, GroupRoutingOptions options,
                                                GroupedStrategy strategy, const Tensor& out,
                                                const Tensor& workspace) const;
  // Training: the forward (with `strategy`) and the cache its backward needs.
  Result<SwiGluTraining, MoeError> forward_dispatched_training(const Dispatched& dispatched,
                                                               GroupedStrategy strategy) const;
  // The cache alone, for a forward that ran elsewhere on `dispatched` (a graph's rudnn.swiglu_experts).
  Result<SwiGluTrainingCache, MoeError> training_cache(const Dispatched& dispatched) const;
  // route_sigmoid_grouped, dispatch, the experts with `strategy`, combine.
  Result<Tensor, MoeError> forward_sigmoid_grouped(const Tensor& input, const Tensor& logits,
                                                   const std::optional<Tensor>& bias, GroupRoutingOptions options,
                                                   GroupedStrategy strategy) const;

 private:
  SwiGluExperts(Tensor gate, Tensor up, Tensor down)
      : gate_(std::move(gate)), up_(std::move(up)), down_(std::move(down)) {}
  // Every check of a forward call before anything runs (and of its output buffer, when given).
  std::optional<MoeError> check_forward(const Tensor& input, const Tensor& logits, const Tensor* out = nullptr) const;
  // The experts into `into` (or a fresh output), their temporaries in `workspace` (or the pool);
  // with `bytes_needed` only the workspace size is computed (into *bytes_needed) and nothing runs.
  Result<Tensor, MoeError> experts_impl(const Dispatched& dispatched, GroupedStrategy strategy, const Tensor* into,
                                        const Tensor* workspace = nullptr, std::size_t* bytes_needed = nullptr) const;
  Result<Tensor, MoeError> forward_impl(const Tensor& input, const Tensor& logits, RoutingOptions options,
                                        const Tensor* into) const;
  Result<Tensor, MoeError> forward_sigmoid_grouped_impl(const Tensor& input, const Tensor& logits,
                                                        const std::optional<Tensor>& bias, GroupRoutingOptions options,
                                                        GroupedStrategy strategy, const Tensor* into) const;
  Tensor gate_, up_, down_;
};

// A routing kept for training (RoutingPlan::into_training): the selection, its FP32 weights
// recomputed from the saved logits, and the options.
class RUDNN_API RouterTrainingPlan {
 public:
  // The selection with the recomputed FP32 weights: dispatch from here.
  const RoutingPlan& routing() const { return routing_; }
  const Tensor& logits() const { return logits_; }
  const RouterWeightOptions& options() const { return options_; }
  // grad_weights F32 [T, top_k] → the logits gradient [T, E] (selected_router_backward).
  Result<Tensor, MoeError> backward(const Tensor& grad_weights) const;

 private:
  friend class RoutingPlan;
  RouterTrainingPlan(RoutingPlan routing, Tensor logits, RouterWeightOptions options)
      : routing_(std::move(routing)), logits_(std::move(logits)), options_(options) {}
  RoutingPlan routing_;
  Tensor logits_;
  RouterWeightOptions options_;
};

// logits [T, E] F32/F16/BF16 contiguous, indices [T, top_k] U32/I32/I64 contiguous, 1 ≤ top_k ≤
// min(E, 64), one device and queue → the selected weights F32 [T, top_k] (RouterWeightOptions).
// Repeated indices are gathered (each occurrence is a weight; renormalization counts each). A row
// with an index < 0 or ≥ E is NaN (nothing out of bounds is read; no host synchronization).
RUDNN_API Result<Tensor, MoeError> selected_router_weights(const Tensor& logits, const Tensor& indices,
                                                           RouterWeightOptions options);
// The gradient of selected_router_weights: grad_weights F32 [T, top_k] → [T, E] in the logits'
// dtype (repeated indices add up; a row with an illegal index is NaN).
RUDNN_API Result<Tensor, MoeError> selected_router_backward(const Tensor& logits, const Tensor& indices,
                                                            const Tensor& grad_weights, RouterWeightOptions options);
// Both into a caller's buffer `out` (SPEC §13): F32 [T, top_k], resp. [T, E] in the logits' dtype;
// contiguous, on the logits' device and queue, overlapping no input. A rejected call names `out`
// and writes nothing.
RUDNN_API Status<MoeError> selected_router_weights_into(const Tensor& logits, const Tensor& indices,
                                                        RouterWeightOptions options, const Tensor& out);
RUDNN_API Status<MoeError> selected_router_backward_into(const Tensor& logits, const Tensor& indices,
                                                         const Tensor& grad_weights, RouterWeightOptions options,
                                                         const Tensor& out);

// logits [T, E] F32/F16/BF16. Softmax over all E in FP32, the top_k experts (ties to the smaller
// index), optionally renormalized, converted to the logits' dtype. A row containing NaN or +inf,
// or of all −inf, gets NaN weights and the indices 0..top_k−1.
RUDNN_API Result<RoutingPlan, MoeError> route(const Tensor& logits, RoutingOptions options);
// route into a caller's buffers (SPEC §13): expert_indices [T, top_k] U32 and weights [T, top_k] in
// the logits' dtype, each contiguous, on the logits' device and queue, overlapping neither the
// logits nor each other. The returned plan refers to them. A rejected call names the buffer and
// writes nothing.
RUDNN_API Result<RoutingPlan, MoeError> route_into(const Tensor& logits, RoutingOptions options,
                                                   const Tensor& expert_indices, const Tensor& weights);

// logits [T, E] F32/F16/BF16, E ≤ 1024; bias F32 [E] (same device and queue), selection only.
// s = sigmoid(logit) in FP32, c = s + bias; group score = top-two sum or max of c; the
// selected_groups best groups, then the top_k experts by c among them (ties to the smaller index);
// weights = s (optionally renormalized) × scale. A row with a NaN score gets NaN weights and the
// indices 0..top_k−1.
RUDNN_API Result<RoutingPlan, MoeError> route_sigmoid_grouped(const Tensor& logits, const std::optional<Tensor>& bias,
                                                              GroupRoutingOptions options);
// route_sigmoid_grouped into a caller's buffers, as route_into (neither may overlap the bias either).
RUDNN_API Result<RoutingPlan, MoeError> route_sigmoid_grouped_into(const Tensor& logits,
                                                                   const std::optional<Tensor>& bias,
                                                                   GroupRoutingOptions options,
                                                                   const Tensor& expert_indices, const Tensor& weights);

}  // namespace rudnn::moe
