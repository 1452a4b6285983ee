#pragma once
// The toolkit every public entry is written with: the operand a contract sees, the layout and queue
// checks, a typed plan-cache key, the cached plan (lowered and built once per key), outputs
// (poisoned for the tests) and the launch. A family's entry reads: contract → check_operands →
// PlanKeyBuilder → cached_plan → output → launch.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "contracts/normalization.h"
#include "plan_cache.h"
#include "queue_impl.h"
#include "tuned_plan.h"

namespace rudnn::ops {

// "Same device" identity for the contracts: -1 for the host, else the GPU ordinal.
inline int device_id(const Device& d) { return d.kind() == DeviceKind::Host ? -1 : d.ordinal(); }
// A tensor as every contract sees it: shape, dtype, device identity.
inline contracts::NormOperand operand(const Tensor& t) { return {t.shape(), t.dtype(), device_id(t.device())}; }

// ShapeMismatch naming `name` unless `t` is contiguous (the kernels index dense rows).
std::optional<RuntimeError> check_contiguous(const Tensor& t, const char* name);
// The layouts an operand may have (SPEC §13): dense; rows of dense elements with one row stride
// (rudnn::row_stride; the normalization kernels take it); or any stride in every dim but the last,
// which is dense (the attention kernels take one stride per dim). An output of either strided
// layout must also never put two elements in one place.
enum class Layout { Contiguous, Rows, Strided };
// ShapeMismatch naming `name` unless `t` has `layout`.
std::optional<RuntimeError> check_layout(const Tensor& t, const char* name, Layout layout);
// QueueMismatch naming `name` when `t` is on `ref`'s device but another of its queues: one call's
// kernels run on one queue.
std::optional<RuntimeError> check_same_queue(const Tensor& t, const char* name, const Tensor& ref,
                                             const char* ref_name);
// Every tensor contiguous and on the first one's queue (null entries are absent optional operands).
std::optional<RuntimeError> check_operands(std::initializer_list<std::pair<const Tensor*, const char*>> tensors);

// A tensor and the name the API gives it (an absent optional one: null).
using NamedTensor = std::pair<const Tensor*, const char*>;
// InvalidValue naming the output when its storage bytes overlap those of another output or of any
// of `others` (the unsafe *_into calls: a kernel would read what it writes, or two kernels write
// one buffer). Tensors of different devices never overlap; empty tensors hold no bytes.
std::optional<RuntimeError> check_disjoint(std::span<const NamedTensor> outputs, std::span<const NamedTensor> others);

// A caller's output buffer (the *_into entries, SPEC §13): `shape` and `dtype`, on `ref`'s device
// and queue, of `layout`, and overlapping none of `inputs` — else the error naming `name`.
std::optional<RuntimeError> check_output(const Tensor& out, const char* name, const Shape& shape, DType dtype,
                                         const Tensor& ref, std::span<const NamedTensor> inputs,
                                         Layout layout = Layout::Contiguous);
// One of a call's several outputs in a caller's buffer: the buffer, its name, shape and dtype.
struct OutputBuffer {
  const Tensor* tensor;
  const char* name;
  Shape shape;
  DType dtype;
};
// check_output (contiguous) for each of `outputs` in order, then that no two of them overlap (the
// later one named): the entries with several outputs (MoE routing, dispatch, training).
std::optional<RuntimeError> check_outputs(std::span<const OutputBuffer> outputs, const Tensor& ref,
                                          std::span<const NamedTensor> inputs);
// The caller's buffer `into`, or (null) a fresh output of `shape` and `dtype` on `queue`.
Result<Tensor, RuntimeError> output_or(const Tensor* into, const Shape& shape, DType dtype, const Queue& queue);

// A caller's workspace (SPEC §13: temporaries from the engine's memory): on `ref`'s device and
// queue, contiguous, overlapping none of `others` — else the error naming `workspace`. Its size is
// checked by launch_in_workspace, against the plan's layout for the call.
std::optional<RuntimeError> check_workspace(const Tensor& workspace, const Tensor& ref,
                                            std::span<const NamedTensor> others);
// launch, with the plan's temporaries carved out of `workspace`; too small is InvalidValue naming
// `workspace`, before any launch.
Status<RuntimeError> launch_in_workspace(const Plan& plan, const Queue& queue,
                                         std::initializer_list<const Tensor*> slots, const Tensor& workspace);
// The bytes launch_in_workspace needs for these slots (a slot may be a shape only: an output the
// caller has not made yet).
Result<std::size_t, RuntimeError> workspace_bytes(const Plan& plan, std::initializer_list<OperandView> slots);

// A plan-cache key: the op's name (hashed: no family holds a magic tag), then what the entry's plan
// depends on, field by field, in the entry's own order. Fixed size: a warm call builds no string.
class PlanKeyBuilder {
 public:
  explicit PlanKeyBuilder(std::string_view op_name);
  PlanKeyBuilder& add(std::int64_t word);
  PlanKeyBuilder& add(bool flag) { return add(static_cast<std::int64_t>(flag)); }
  PlanKeyBuilder& add(DType dtype) { return add(static_cast<std::int64_t>(dtype)); }
  PlanKeyBuilder& add(const Device& device);
  PlanKeyBuilder& add_bits(float value);  // the exact value (epsilon, scale) as its bits
  const PlanKey& key() const { return key_; }

 private:
  PlanKey key_;
  std::size_t next_ = 1;
};

// The autotune part of a key: 0 when the entry does not ask autotune (off, or no component), else
// 1 + the mode, so a plan made under one mode is never served under another.
std::int64_t autotune_mode_word(bool tunable);
// A dynamic extent's autotune bucket for the key (the smallest power of two >= extent, as
// autotune::anchor), or 0 when autotune is not asked (`mode_word` 0): one plan then serves all.
std::int64_t autotune_bucket(std::int64_t extent, std::int64_t mode_word);

// Whether a family's kernel config can come from autotune: a tunable family's plan is the one
// rudnn::autotune::last_choice() reports.
enum class Tunable { No, Yes };

// The cached plan of `key`, or (cold) the one `lower(provider)` describes, built and cached; with
// `ask_autotune` the compiler gets the autotune provider. A tunable family's plan is noted for
// last_choice(). A cold call on a queue whose stream is being captured fails with CaptureViolation
// before it lowers, compiles, loads a module or autotunes (SPEC §13).
template <class Lower>
Result<std::shared_ptr<const Plan>, RuntimeError> cached_plan(const PlanKey& key, const Queue& queue, Tunable tunable,
                                                              bool ask_autotune, Lower lower) {
  auto& cache = PlanCache::instance();
  std::shared_ptr<const Plan> plan = cache.find(key);
  if (plan && plan->family) plan->family->plan_cache_hits++;
  if (!plan) {
    // Everything the cold path does (lowering, autotuning, compiling, loading) counts for the family.
    const runtime::FamilyScope scope(family_counters_of(key.op_name()));
    if (auto* family = runtime::FamilyScope::current()) family->plan_cache_misses++;
    if (auto e = runtime::check_not_capturing(
            queue, "a call whose plan is not made yet (it would lower, compile, load a module or autotune)"))
      return *e;
    const Device& device = queue.device();
    auto made = make_tuned_plan(device, ask_autotune, lower);
    if (!made.ok()) return made.error();
    plan = made.value();
    cache.insert(key, plan);
  }
  if (tunable == Tunable::Yes) note_choice(*plan);
  return plan;
}

// A fresh output on `queue`, filled with NaN bytes when the tests ask for it (poison_outputs()).
Result<Tensor, RuntimeError> output(const Shape& shape, DType dtype, const Queue& queue);

// Launches `plan` on `queue` with the op's slots in order (null: an absent optional operand).
Status<RuntimeError> launch(const Plan& plan, const Queue& queue, std::initializer_list<const Tensor*> slots);
Status<RuntimeError> launch(const Plan& plan, const Queue& queue, std::span<const Tensor* const> slots);

// A RuntimeError as the family's error type (FamilyError<Tag>).
template <class E>
E as(const RuntimeError& e) {
  return E::from(e);
}

}  // namespace rudnn::ops
