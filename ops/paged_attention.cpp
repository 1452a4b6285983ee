// The public paged attention entries (SPEC §8, §9): HostPlan (validation, contracts::make_paged_schedule),
// DevicePlan (the schedule as I32 tensors on the query's queue, plus what append must reject),
// SplitWorkspace, and the calls (forward, append, backward): contract → plan/workspace checks → plan
// cache → launches. A warm
// call allocates nothing (the split workspace is supplied, in-place append), never synchronizes
// and loads no module.
#include "rudnn/paged_attention.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "bounded_list.h"
#include "checked_math.h"
#include "contracts/paged_attention.h"
#include "entry.h"
#include "rudnn/compiler/paged_attention.h"

namespace rudnn::paged_attention {

namespace {

using ops::as;
using ops::operand;
using Err = PagedAttentionError;

Result<Tensor, RuntimeError> upload_i32(const std::vector<std::int32_t>& values, const Shape& shape,
                                        const Queue& queue) {
  HostData data;
  data.shape = shape;
  data.dtype = DType::I32;
  data.bytes.resize(values.size() * sizeof(std::int32_t));
  std::memcpy(data.bytes.data(), values.data(), data.bytes.size());
  return Tensor::upload(data, queue);
}

}  // namespace

// ---- HostPlan

// HostPlan's constructor for both page id types: the contract validates and packs the schedule.
struct HostPlanAccess {
  template <class Id>
  static Result<HostPlan, Err> create(std::int64_t page_size, std::int64_t pages,
                                      const std::vector<std::vector<Id>>& tables,
                                      const std::vector<std::int64_t>& lengths,
                                      const std::vector<std::int64_t>& sequence_ids,
                                      const std::vector<std::int64_t>& positions) {
    std::vector<std::vector<std::int64_t>> wide(tables.size());
    for (std::size_t s = 0; s < tables.size(); ++s) wide[s].assign(tables[s].begin(), tables[s].end());
    auto schedule = contracts::make_paged_schedule(page_size, pages, wide, lengths, sequence_ids, positions);
    if (!schedule.ok()) return schedule.error();
    contracts::PagedSchedule& sch = schedule.value();
    HostPlan plan;
    plan.page_size_ = sch.page_size;
    plan.pages_ = sch.pages;
    plan.max_table_pages_ = sch.max_table_pages;
    plan.page_table_ = std::move(sch.page_table);
    plan.lengths_ = std::move(sch.lengths);
    plan.sequence_ids_ = std::move(sch.sequence_ids);
    plan.positions_ = std::move(sch.positions);
    return plan;
  }
};

Result<HostPlan, Err> HostPlan::create(std::int64_t page_size, std::int64_t pages,
                                       const std::vector<std::vector<std::int32_t>>& tables,
                                       const std::vector<std::int64_t>& lengths,
                                       const std::vector<std::int64_t>& sequence_ids,
                                       const std::vector<std::int64_t>& positions) {
  return HostPlanAccess::create(page_size, pages, tables, lengths, sequence_ids, positions);
}

Result<HostPlan, Err> HostPlan::create(std::int64_t page_size, std::int64_t pages,
                                       const std::vector<std::vector<std::uint32_t>>& tables,
                                       const std::vector<std::int64_t>& lengths,
                                       const std::vector<std::int64_t>& sequence_ids,
                                       const std::vector<std::int64_t>& positions) {
  return HostPlanAccess::create(page_size, pages, tables, lengths, sequence_ids, positions);
}

// ---- DevicePlan

namespace {

// update()'s page-locked copies of a schedule, made at the first update: the queued copies read one
// after update returns, so the caller's vectors are free at once and the host does not wait for the
// queue's other work. Two halves alternate, each with an event recorded after the copies that read
// it: an update writes the half the update before last used, and waits (for those copies only)
// only when they have not completed — the queue still two updates behind; a serving loop of
// update → replay, whose replays end before the next update, never waits.
// The destructor waits for both before releasing them. Without events (a driver lacking them) the
// update synchronizes the queue instead.
class ScheduleStaging {
 public:
  static Result<std::unique_ptr<ScheduleStaging>, RuntimeError> create(runtime::DeviceBackend& backend,
                                                                       std::size_t bytes) {
    auto staging = std::unique_ptr<ScheduleStaging>(new ScheduleStaging(backend));
    auto data = backend.allocate_pinned(2 * bytes);
    if (!data.ok()) return data.error();
    staging->data_ = *data;
    for (std::size_t i = 0; i < 2; ++i) {
      Half& h = staging->halves_[i];
      h.data = static_cast<std::byte*>(*data) + i * bytes;
      if (auto event = backend.create_event(); event.ok()) h.copied = *event;
    }
    return staging;
  }
  ~ScheduleStaging() {
    for (Half& h : halves_) {
      if (h.pending) (void)backend_.wait_event(h.copied);
      if (h.copied) backend_.destroy_event(h.copied);
    }
    if (data_) backend_.release_pinned(data_);
  }
  ScheduleStaging(const ScheduleStaging&) = delete;
  ScheduleStaging& operator=(const ScheduleStaging&) = delete;

  // The next half, once the copies that last read it (the update before last's) have completed:
  // the host waits (a host synchronization) only if they have not.
  Result<std::int32_t*, RuntimeError> writable() {
    Half& h = halves_[next_];
    if (h.pending) {
      if (!backend_.event_done(h.copied))
        if (auto w = backend_.wait_event(h.copied); !w.ok()) return w.error();
      h.pending = false;
    }
    return reinterpret_cast<std::int32_t*>(h.data);
  }
  // After copies from the half writable() gave were queued on `queue`: its event recorded behind
  // them, else (no events, or the record failed) the queue synchronized. Either way that half is
  // safe to reuse or release; the next update takes the other one.
  Status<RuntimeError> queued(const Queue& queue) {
    Half& h = halves_[next_];
    next_ ^= 1;
    if (h.copied && backend_.record_event(h.copied, queue.impl().stream()).ok()) {
      h.pending = true;
      return {};
    }
    return queue.synchronize();
  }

 private:
  struct Half {
    std::byte* data = nullptr;
    void* copied = nullptr;
    bool pending = false;
  };
  explicit ScheduleStaging(runtime::DeviceBackend& backend) : backend_(backend) {}
  runtime::DeviceBackend& backend_;
  void* data_ = nullptr;  // both halves, one allocation
  Half halves_[2];
  std::size_t next_ = 0;
};

}  // namespace

struct DevicePlan::State {
  HostPlan host;  // the schedule as validated (the ordered workspace's index is built from it)
  Queue queue;
  std::int64_t page_size, pages, queries;
  Tensor page_table, lengths, sequence_ids, positions;
  // Why append must refuse this schedule (two rows write one physical slot), or empty.
  std::optional<Err> append_conflict;
  // The metadata tensors as the contracts see them: made once at upload, not on every call.
  contracts::PagedMetadata metadata;
  std::int64_t updates = 0;                  // successful DevicePlan::update calls
  std::optional<Err> unusable;               // set by an update whose copy failed: every call returns it
  std::unique_ptr<ScheduleStaging> staging;  // update()'s, made at the first one
};

// The ordered backward's workspace (SPEC §9). The index and the page order are built on the host
// from the plan's schedule (build_history_index) and uploaded; the row statistics are written by
// every ordered call's first kernel.
struct OrderedBackwardWorkspace::State {
  std::shared_ptr<const DevicePlan::State> plan;
  std::int64_t plan_updates;  // plan->updates when the index was built
  std::int64_t queries, heads;
  Tensor stats;                     // f32 [queries · heads · 2]: (lse, δ)
  Tensor index;                     // i32: reader_offsets | row_offsets | rows | readers (paged/backward.cuh)
  std::vector<std::int32_t> order;  // the page order on the host: active pages, then the rest
  std::int64_t active_pages;
  std::optional<Tensor> page_order;  // i32 [pages], uploaded when compaction is first switched on
  bool cache_rows = false, compact_history = false;

  std::int64_t bytes() const {
    return static_cast<std::int64_t>(stats.nbytes() + index.nbytes() + (page_order ? page_order->nbytes() : 0));
  }
};

namespace {

// The history index of a schedule, as paged_attention_backward_history reads it, and the page
// order: only sequences with query rows read, and only the pages within their valid length.
struct HistoryIndex {
  std::vector<std::int32_t> index, order;
  std::int64_t active_pages = 0;
};

HistoryIndex build_history_index(const HostPlan& h) {
  const std::int64_t pages = h.pages(), sequences = h.sequences(), queries = h.queries(), ps = h.page_size();
  std::vector<std::vector<std::int32_t>> rows_of(static_cast<std::size_t>(sequences));
  for (std::int64_t r = 0; r < queries; ++r)
    rows_of[static_cast<std::size_t>(h.sequence_ids()[static_cast<std::size_t>(r)])].push_back(
        static_cast<std::int32_t>(r));
  // Readers per page, in ascending (sequence, logical page) order.
  std::vector<std::vector<std::int32_t>> readers(static_cast<std::size_t>(pages));
  for (std::int64_t seq = 0; seq < sequences; ++seq) {
    if (rows_of[static_cast<std::size_t>(seq)].empty()) continue;
    const std::int64_t used = (h.lengths()[static_cast<std::size_t>(seq)] + ps - 1) / ps;
    for (std::int64_t j = 0; j < used; ++j) {
      const auto page = h.page_table()[static_cast<std::size_t>(seq * h.max_table_pages() + j)];
      auto& list = readers[static_cast<std::size_t>(page)];
      list.push_back(static_cast<std::int32_t>(seq));
      list.push_back(static_cast<std::int32_t>(j));
    }
  }
  HistoryIndex out;
  std::vector<std::int32_t>& ix = out.index;
  ix.push_back(0);
  for (const auto& list : readers) ix.push_back(ix.back() + static_cast<std::int32_t>(list.size() / 2));
  ix.push_back(0);
  for (const auto& rows : rows_of) ix.push_back(ix.back() + static_cast<std::int32_t>(rows.size()));
  for (const auto& rows : rows_of) ix.insert(ix.end(), rows.begin(), rows.end());
  for (const auto& list : readers) ix.insert(ix.end(), list.begin(), list.end());
  for (std::int64_t p = 0; p < pages; ++p)
    if (!readers[static_cast<std::size_t>(p)].empty()) out.order.push_back(static_cast<std::int32_t>(p));
  out.active_pages = static_cast<std::int64_t>(out.order.size());
  for (std::int64_t p = 0; p < pages; ++p)
    if (readers[static_cast<std::size_t>(p)].empty()) out.order.push_back(static_cast<std::int32_t>(p));
  return out;
}

// A RUDA_PAGED_ORDERED_* switch: unset or "0" off, "1" on, anything else an error.
Result<bool, Err> read_switch(const char* variable) {
  const char* value = std::getenv(variable);
  if (!value || std::string_view(value) == "0") return false;
  if (std::string_view(value) == "1") return true;
  return Err(ErrorKind::InvalidValue, variable, "unset, 0 or 1", fmt::format("\"{}\"", value));
}

Err over_budget(std::int64_t bytes, const char* what) {
  return Err(ErrorKind::InvalidValue, "workspace", fmt::format("at most {} bytes (64 MiB)", kMaxWorkspaceBytes),
             fmt::format("{} bytes {}", bytes, what));
}

// The same schedule: the same plan, or one with equal metadata.
bool same_schedule(const DevicePlan::State& a, const DevicePlan::State& b) {
  if (&a == &b) return true;
  const HostPlan &x = a.host, &y = b.host;
  return x.page_size() == y.page_size() && x.pages() == y.pages() && x.max_table_pages() == y.max_table_pages() &&
         x.page_table() == y.page_table() && x.lengths() == y.lengths() && x.sequence_ids() == y.sequence_ids() &&
         x.positions() == y.positions();
}

std::optional<Err> check_ordered_workspace(const OrderedBackwardWorkspace::State& ws, const DevicePlan::State& s,
                                           const Tensor& q) {
  if (ws.plan_updates != ws.plan->updates)
    return Err(ErrorKind::InvalidValue, "workspace", "a workspace built for its plan's current schedule",
               fmt::format("one built before DevicePlan::update changed it (update {} of {})", ws.plan_updates,
                           ws.plan->updates));
  if (!same_schedule(*ws.plan, s))
    return Err(ErrorKind::InvalidValue, "workspace", "a workspace built for this plan's schedule",
               "one built for another schedule");
  if (q.rank() == 3 && (q.dim(0) != ws.queries || q.dim(1) != ws.heads))
    return Err(ErrorKind::ShapeMismatch, "workspace",
               fmt::format("a workspace for {} query rows × {} heads (the query's)", q.dim(0), q.dim(1)),
               fmt::format("one for {} × {}", ws.queries, ws.heads));
  if (!(ws.stats.device() == q.device()))
    return Err(ErrorKind::DeviceMismatch, "workspace", "the query's device (" + q.device().to_string() + ")",
               ws.stats.device().to_string());
  if (!(ws.stats.queue() == q.queue()))
    return Err(ErrorKind::QueueMismatch, "workspace", "the query's queue", "another queue of the same device");
  return std::nullopt;
}

// The first pair of query rows whose (sequence, position) map to one physical cache slot.
std::optional<Err> find_append_conflict(const HostPlan& host) {
  std::unordered_map<std::int64_t, std::int64_t> writer;  // physical slot → first row
  const std::int64_t ps = host.page_size(), stride = host.max_table_pages();
  for (std::int64_t r = 0; r < host.queries(); ++r) {
    const std::int64_t seq = host.sequence_ids()[static_cast<std::size_t>(r)];
    const std::int64_t pos = host.positions()[static_cast<std::size_t>(r)];
    const std::int64_t page = host.page_table()[static_cast<std::size_t>(seq * stride + pos / ps)];
    const std::int64_t slot = page * ps + pos % ps;
    auto [it, fresh] = writer.emplace(slot, r);
    if (!fresh)
      return Err(ErrorKind::InvalidValue, fmt::format("positions[{}]", r),
                 "one write per physical cache slot in one append",
                 fmt::format("row {} (sequence {}, position {}) writes page {} offset {}, as row {} does", r, seq, pos,
                             page, pos % ps, it->second));
  }
  return std::nullopt;
}

// The query's plan checks: its device and queue, and the rows the plan schedules.
std::optional<Err> check_against_plan(const DevicePlan::State& s, const Tensor& q, const char* name,
                                      std::int64_t rows) {
  if (s.unusable) return s.unusable;
  if (!(q.device() == s.queue.device()))
    return Err(ErrorKind::DeviceMismatch, name, "the plan's device (" + s.queue.device().to_string() + ")",
               q.device().to_string());
  if (!(q.queue() == s.queue))
    return Err(ErrorKind::QueueMismatch, name, "the plan's queue", "another queue of the same device");
  if (rows != s.queries)
    return Err(ErrorKind::ShapeMismatch, name, fmt::format("{} rows (the plan's queries)", s.queries),
               std::to_string(rows));
  return std::nullopt;
}

// A cache's pages and page size against the plan's.
std::optional<Err> check_cache(const DevicePlan::State& s, const Tensor& cache, const char* name) {
  if (cache.rank() != 4) return std::nullopt;  // the contract reports the rank
  if (cache.dim(0) != s.pages || cache.dim(1) != s.page_size)
    return Err(ErrorKind::ShapeMismatch, name,
               fmt::format("[{}, {}, ...] (the plan's pages and page_size)", s.pages, s.page_size),
               shape_to_string(cache.shape()));
  return std::nullopt;
}

std::optional<Err> check_workspace(const SplitWorkspace& ws, const DevicePlan::State& s, const Tensor& q,
                                   std::int64_t heads, std::int64_t value_dim) {
  if (ws.queries() != s.queries || ws.heads() != heads || ws.value_dim() != value_dim)
    return Err(ErrorKind::ShapeMismatch, "workspace",
               fmt::format("a workspace for {} queries × {} heads × value dim {}", s.queries, heads, value_dim),
               fmt::format("one for {} × {} × {}", ws.queries(), ws.heads(), ws.value_dim()));
  if (!(ws.storage().device() == q.device()))
    return Err(ErrorKind::DeviceMismatch, "workspace", "the query's device", ws.storage().device().to_string());
  if (!(ws.storage().queue() == q.queue()))
    return Err(ErrorKind::QueueMismatch, "workspace", "the query's queue", "another queue of the same device");
  return std::nullopt;
}

// The layout lines of a call's tensors once the contract passed: the cache against the plan's pages,
// each input contiguous and on the query's queue. `inputs` are the forward's operands (then, for the
// backward, grad_out), named as the API names them.
std::optional<Err> check_inputs(const DevicePlan::State& s, bool mla, std::span<const Tensor* const> inputs) {
  static constexpr const char* kNames[2][5] = {{"query", "key", "value", "grad_out", ""},
                                               {"query", "query_rope", "latent", "key_rope", "grad_out"}};
  if (auto e = check_cache(s, *inputs[mla ? 2 : 1], mla ? "latent" : "key")) return *e;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (auto e = ops::check_contiguous(*inputs[i], kNames[mla][i])) return as<Err>(*e);
  for (std::size_t i = 1; i < inputs.size(); ++i)
    if (auto e = ops::check_same_queue(*inputs[i], kNames[mla][i], *inputs.front(), "query")) return as<Err>(*e);
  return std::nullopt;
}

// The plan key of a call's shape class: dtype, head counts and dims, causal, scale, device.
ops::PlanKeyBuilder call_key(std::string_view op, const contracts::PagedAttentionSignature& sig, const Tensor& q) {
  const contracts::PagedDims d = contracts::paged_dims(sig);
  ops::PlanKeyBuilder key(op);
  key.add(q.dtype())
      .add(d.q_heads)
      .add(d.kv_heads)
      .add(d.head_dim)
      .add(d.rope_dim)
      .add(d.value_dim)
      .add(sig.causal)
      .add_bits(static_cast<float>(sig.scale))
      .add(q.device());
  return key;
}

// The plan of one attention/MLA call (lowered once per shape class, dtype, options and device) and
// its launch with `slots` (the op's operands and output, then the workspace when split).
// The forward's operands (attention q, k, v; MLA q, qp, latent, kp); the backward's add grad_out.
using Inputs = ops::BoundedList<const Tensor*, 5>;

Result<Tensor, Err> run_attention(const DevicePlan::State& s, contracts::PagedAttentionSignature sig,
                                  const Inputs& inputs, const SplitWorkspace* workspace, const Tensor* into = nullptr) {
  sig.metadata = s.metadata;
  sig.splits = workspace ? workspace->splits() : 1;
  const bool mla = sig.kind == contracts::PagedKind::Mla;
  const Tensor& q = *inputs.front();
  // The plan's own lines first: a query of another schedule would otherwise be reported as a
  // mismatch of the plan's metadata, which the caller never passed.
  if (auto e = check_against_plan(s, q, "query", q.rank() >= 1 ? q.dim(0) : -1)) return *e;
  if (auto e = contracts::check_paged_attention(sig)) return *e;
  if (auto e = check_inputs(s, mla, inputs)) return *e;
  const contracts::PagedDims d = contracts::paged_dims(sig);
  if (workspace)
    if (auto e = check_workspace(*workspace, s, q, d.q_heads, d.value_dim)) return *e;
  if (into) {
    static constexpr const char* kNames[2][4] = {{"query", "key", "value", ""},
                                                 {"query", "query_rope", "latent", "key_rope"}};
    ops::BoundedList<ops::NamedTensor, 5> others;
    for (std::size_t i = 0; i < inputs.size(); ++i) others.push_back({inputs[i], kNames[mla][i]});
    others.push_back({workspace ? &workspace->storage() : nullptr, "workspace"});
    if (auto e = ops::check_output(*into, "out", {d.queries, d.q_heads, d.value_dim}, q.dtype(), q, others))
      return as<Err>(*e);
  }

  const Device& device = q.device();
  const ops::PlanKey key = call_key(mla ? "rudnn.paged_mla" : "rudnn.paged_attention", sig, q).add(sig.splits).key();
  auto plan = ops::cached_plan(
      key, q.queue(), ops::Tunable::No, false,
      [&](compiler::ConfigProvider*) -> Result<compiler::LoweredOp, RuntimeError> {
        // Cold path: widths whose tile fits no kernel on this device are Unsupported, not a lowering failure.
        const compiler::Target target = ops::target_for(device);
        if (auto e = compiler::check_paged_tile_fits(sig, target)) return *e;
        return compiler::lower_paged_attention(compiler::PagedAttentionRequest{sig, std::nullopt}, target);
      });
  if (!plan.ok()) return as<Err>(plan.error());
  auto out = ops::output_or(into, {d.queries, d.q_heads, d.value_dim}, q.dtype(), q.queue());
  if (!out.ok()) return as<Err>(out.error());
  const Tensor* ws = workspace ? &workspace->storage() : nullptr;
  const Status<RuntimeError> launched = mla ? ops::launch(**plan, q.queue(),
                                                          {inputs[0], inputs[1], inputs[2], inputs[3], &s.page_table,
                                                           &s.lengths, &s.sequence_ids, &s.positions, &*out, ws})
                                            : ops::launch(**plan, q.queue(),
                                                          {inputs[0], inputs[1], inputs[2], &s.page_table, &s.lengths,
                                                           &s.sequence_ids, &s.positions, &*out, ws});
  if (!launched.ok()) return as<Err>(launched.error());
  return std::move(out.value());
}

contracts::PagedAttentionSignature attention_signature(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                                                       bool causal) {
  contracts::PagedAttentionSignature sig;
  sig.kind = contracts::PagedKind::Attention;
  sig.query = operand(q);
  sig.key = operand(k);
  sig.value = operand(v);
  sig.scale = scale;
  sig.causal = causal;
  return sig;
}

contracts::PagedAttentionSignature mla_signature(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                 const Tensor& kp, float scale, bool causal) {
  contracts::PagedAttentionSignature sig;
  sig.kind = contracts::PagedKind::Mla;
  sig.query = operand(q);
  sig.query_rope = operand(qp);
  sig.key = operand(latent);
  sig.key_rope = operand(kp);
  sig.scale = scale;
  sig.causal = causal;
  return sig;
}

// The names of a backward call's gradients, in result order.
constexpr const char* kGradientNames[2][4] = {{"dq", "dk", "dv", ""}, {"dq", "dqp", "dlatent", "dkp"}};

// The backward of one attention/MLA call into `outputs` (result order; null: not asked for), or,
// with `fresh`, into new tensors for every gradient made there once the inputs passed their checks.
// `inputs` = the forward's operands then grad_out. Atomic unless `workspace` is given.
using Gradients = ops::BoundedList<Tensor*, 4>;

Status<Err> run_backward(const DevicePlan::State& s, contracts::PagedAttentionSignature forward, const Inputs& inputs,
                         Gradients outputs, OrderedBackwardWorkspace::State* workspace,
                         std::vector<Tensor>* fresh = nullptr) {
  forward.metadata = s.metadata;
  const bool mla = forward.kind == contracts::PagedKind::Mla;
  const Tensor& q = *inputs.front();
  const Tensor& grad_out = *inputs.back();
  if (auto e = check_against_plan(s, q, "query", q.rank() >= 1 ? q.dim(0) : -1)) return *e;
  const contracts::PagedBackwardSignature sig{forward, operand(grad_out)};
  if (auto e = contracts::check_paged_backward(sig)) return *e;
  if (auto e = check_inputs(s, mla, inputs)) return *e;
  if (workspace)
    if (auto e = check_ordered_workspace(*workspace, s, q)) return *e;
  if (fresh) {
    outputs.clear();
    fresh->reserve(inputs.size() - 1);
    for (std::size_t i = 0; i + 1 < inputs.size(); ++i) {
      auto g = ops::output(inputs[i]->shape(), q.dtype(), q.queue());
      if (!g.ok()) return as<Err>(g.error());
      fresh->push_back(std::move(g.value()));
    }
    for (Tensor& g : *fresh) outputs.push_back(&g);
  }

  // Each given gradient: its input's shape, q's dtype, contiguous, on q's queue, and disjoint from the
  // inputs, the workspace and the other gradients.
  std::array<bool, 4> selected{};
  ops::BoundedList<ops::NamedTensor, 4> named_outputs;
  ops::BoundedList<ops::NamedTensor, 8> others;
  static constexpr const char* kInputNames[2][5] = {{"query", "key", "value", "grad_out", ""},
                                                    {"query", "query_rope", "latent", "key_rope", "grad_out"}};
  for (std::size_t i = 0; i < inputs.size(); ++i) others.push_back({inputs[i], kInputNames[mla][i]});
  if (workspace) {
    others.push_back({&workspace->stats, "workspace (row statistics)"});
    others.push_back({&workspace->index, "workspace (history index)"});
    if (workspace->page_order) others.push_back({&*workspace->page_order, "workspace (page order)"});
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    Tensor* g = outputs[i];
    const char* name = kGradientNames[mla][i];
    named_outputs.push_back({g, name});
    if (!g) continue;
    selected[i] = true;
    if (auto e = ops::check_output(*g, name, inputs[i]->shape(), q.dtype(), q, others)) return as<Err>(*e);
  }
  if (auto e = ops::check_disjoint(named_outputs, {})) return as<Err>(*e);  // the outputs among themselves
  if (std::none_of(selected.begin(), selected.end(), [](bool b) { return b; })) return {};  // nothing asked

  const compiler::PagedBackwardMode mode{workspace != nullptr, workspace && workspace->cache_rows,
                                         workspace && workspace->compact_history};
  const Device& device = q.device();
  ops::PlanKeyBuilder key = call_key(mla ? "rudnn.paged_mla_backward" : "rudnn.paged_attention_backward", forward, q);
  std::int64_t form = (mode.ordered ? 1 : 0) | (mode.cache_rows ? 2 : 0) | (mode.compact_history ? 4 : 0);
  for (std::size_t i = 0; i < selected.size(); ++i) form |= selected[i] ? std::int64_t{8} << i : 0;
  key.add(form);  // the path, its switches and the selected outputs, as bits
  auto plan = ops::cached_plan(key.key(), q.queue(), ops::Tunable::No, false, [&](compiler::ConfigProvider*) {
    return compiler::lower_paged_backward(compiler::PagedBackwardRequest{sig, std::nullopt, mode, selected},
                                          ops::target_for(device));
  });
  if (!plan.ok()) return as<Err>(plan.error());
  // Slots: inputs, schedule, [history index, page order], the selected outputs, [row statistics].
  ops::BoundedList<const Tensor*, 16> slots;
  for (const Tensor* t : inputs) slots.push_back(t);
  for (const Tensor* t : {&s.page_table, &s.lengths, &s.sequence_ids, &s.positions}) slots.push_back(t);
  if (workspace) {
    slots.push_back(&workspace->index);
    slots.push_back(workspace->compact_history ? &*workspace->page_order : nullptr);
  }
  for (Tensor* g : outputs)
    if (g) slots.push_back(g);
  if (workspace) slots.push_back(&workspace->stats);
  if (auto st = ops::launch(**plan, q.queue(), slots.span()); !st.ok()) return as<Err>(st.error());
  return {};
}

// The allocating atomic backward: every gradient, fresh.
Result<std::vector<Tensor>, Err> run_backward_allocating(const DevicePlan::State& s,
                                                         contracts::PagedAttentionSignature forward,
                                                         const Inputs& inputs) {
  std::vector<Tensor> grads;
  if (auto st = run_backward(s, forward, inputs, {}, nullptr, &grads); !st.ok()) return st.error();
  return grads;
}

}  // namespace

Result<DevicePlan, Err> DevicePlan::upload(const HostPlan& host, const Tensor& q) {
  auto table = upload_i32(host.page_table(), {host.sequences(), host.max_table_pages()}, q.queue());
  if (!table.ok()) return as<Err>(table.error());
  auto lengths = upload_i32(host.lengths(), {host.sequences()}, q.queue());
  if (!lengths.ok()) return as<Err>(lengths.error());
  auto ids = upload_i32(host.sequence_ids(), {host.queries()}, q.queue());
  if (!ids.ok()) return as<Err>(ids.error());
  auto positions = upload_i32(host.positions(), {host.queries()}, q.queue());
  if (!positions.ok()) return as<Err>(positions.error());
  contracts::PagedMetadata metadata{operand(*table), operand(*lengths), operand(*ids), operand(*positions)};
  return DevicePlan(
      std::make_shared<State>(State{host, q.queue(), host.page_size(), host.pages(), host.queries(),
                                    std::move(table.value()), std::move(lengths.value()), std::move(ids.value()),
                                    std::move(positions.value()), find_append_conflict(host), std::move(metadata)}));
}

Status<Err> DevicePlan::update(const HostPlan& host) {
  State& s = *state_;
  if (s.unusable) return *s.unusable;
  if (auto e = runtime::check_not_capturing(s.queue, "an update of a paged plan's schedule (DevicePlan::update)"))
    return as<Err>(*e);
  const std::int64_t width = s.page_table.dim(1);
  const std::pair<const char*, std::array<std::int64_t, 2>> extents[] = {
      {"page size", {s.page_size, host.page_size()}},
      {"pages", {s.pages, host.pages()}},
      {"sequences", {s.lengths.dim(0), host.sequences()}},
      {"query rows", {s.queries, host.queries()}}};
  for (const auto& [what, v] : extents)
    if (v[0] != v[1])
      return Err(ErrorKind::ShapeMismatch, "host", fmt::format("a schedule of {} {} (the plan's)", v[0], what),
                 fmt::format("{} {}", v[1], what));
  if (host.max_table_pages() > width)
    return Err(ErrorKind::ShapeMismatch, "host", fmt::format("page tables of at most {} pages (the plan's)", width),
               fmt::format("{} pages", host.max_table_pages()));
  auto& backend = s.queue.device().backend();
  void* stream = s.queue.impl().stream();
  // The four buffers' contents, in order, staged: the table padded to the plan's width with page 0
  // (never read: past every valid length), the lengths, the sequence ids, the positions.
  const auto sequences = static_cast<std::size_t>(host.sequences()), rows = static_cast<std::size_t>(host.queries());
  const std::size_t counts[] = {sequences * static_cast<std::size_t>(width), sequences, rows, rows};
  if (!s.staging) {
    auto made = ScheduleStaging::create(backend, (counts[0] + counts[1] + counts[2] + counts[3]) * 4);
    if (!made.ok()) return as<Err>(made.error());
    s.staging = std::move(made.value());
  }
  auto staged = s.staging->writable();
  if (!staged.ok()) return as<Err>(staged.error());
  std::int32_t* const table = *staged;
  std::fill_n(table, counts[0], 0);
  for (std::int64_t q = 0; q < host.sequences(); ++q)
    std::copy_n(host.page_table().begin() + q * host.max_table_pages(), host.max_table_pages(), table + q * width);
  std::int32_t* next = table + counts[0];
  for (const std::vector<std::int32_t>* v : {&host.lengths(), &host.sequence_ids(), &host.positions()})
    next = std::copy(v->begin(), v->end(), next);

  const auto failed = [&](const RuntimeError& e) {
    s.unusable = Err(ErrorKind::InvalidValue, "plan", "a plan whose schedule upload succeeded",
                     "a failed DevicePlan::update: " + e.message());
    return as<Err>(e);
  };
  const std::int32_t* from = table;
  bool written = false;  // a failure before any copy leaves the old schedule whole
  Tensor* const buffers[] = {&s.page_table, &s.lengths, &s.sequence_ids, &s.positions};
  for (std::size_t i = 0; i < 4; ++i) {
    if (counts[i] != 0) {
      auto copied = backend.copy_to_device(stream, buffers[i]->data(), from, counts[i] * 4);
      if (!copied.ok()) {
        if (!written) return as<Err>(copied.error());
        (void)s.staging->queued(s.queue);  // the copies already queued still read the staging
        return failed(copied.error());
      }
      written = true;
    }
    from += counts[i];
  }
  if (auto r = s.staging->queued(s.queue); !r.ok()) return failed(r.error());
  s.host = host;
  s.append_conflict = find_append_conflict(host);
  ++s.updates;
  return {};
}

std::int64_t DevicePlan::updates() const { return state_->updates; }

std::int64_t DevicePlan::page_size() const { return state_->page_size; }
std::int64_t DevicePlan::pages() const { return state_->pages; }
std::int64_t DevicePlan::sequences() const { return state_->lengths.dim(0); }
std::int64_t DevicePlan::queries() const { return state_->queries; }

Result<Tensor, Err> DevicePlan::attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                                          bool causal) const {
  return run_attention(*state_, attention_signature(q, k, v, scale, causal), {&q, &k, &v}, nullptr);
}

Result<Tensor, Err> DevicePlan::mla(const Tensor& q, const Tensor& qp, const Tensor& latent, const Tensor& kp,
                                    float scale, bool causal) const {
  return run_attention(*state_, mla_signature(q, qp, latent, kp, scale, causal), {&q, &qp, &latent, &kp}, nullptr);
}

Result<Tensor, Err> DevicePlan::attention_with_workspace(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                                                         bool causal, SplitWorkspace& workspace) const {
  return run_attention(*state_, attention_signature(q, k, v, scale, causal), {&q, &k, &v}, &workspace);
}

Result<Tensor, Err> DevicePlan::mla_with_workspace(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                   const Tensor& kp, float scale, bool causal,
                                                   SplitWorkspace& workspace) const {
  return run_attention(*state_, mla_signature(q, qp, latent, kp, scale, causal), {&q, &qp, &latent, &kp}, &workspace);
}

Status<Err> DevicePlan::attention_into(const Tensor& q, const Tensor& k, const Tensor& v, float scale, bool causal,
                                       const Tensor& out, SplitWorkspace* workspace) const {
  auto r = run_attention(*state_, attention_signature(q, k, v, scale, causal), {&q, &k, &v}, workspace, &out);
  if (!r.ok()) return r.error();
  return {};
}

Status<Err> DevicePlan::mla_into(const Tensor& q, const Tensor& qp, const Tensor& latent, const Tensor& kp, float scale,
                                 bool causal, const Tensor& out, SplitWorkspace* workspace) const {
  auto r =
      run_attention(*state_, mla_signature(q, qp, latent, kp, scale, causal), {&q, &qp, &latent, &kp}, workspace, &out);
  if (!r.ok()) return r.error();
  return {};
}

Result<AttentionBackward, Err> DevicePlan::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                                              const Tensor& grad_out, float scale, bool causal) const {
  auto g = run_backward_allocating(*state_, attention_signature(q, k, v, scale, causal), {&q, &k, &v, &grad_out});
  if (!g.ok()) return g.error();
  return AttentionBackward{std::move(g->at(0)), std::move(g->at(1)), std::move(g->at(2))};
}

Result<MlaBackward, Err> DevicePlan::mla_backward(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                  const Tensor& kp, const Tensor& grad_out, float scale,
                                                  bool causal) const {
  auto g = run_backward_allocating(*state_, mla_signature(q, qp, latent, kp, scale, causal),
                                   {&q, &qp, &latent, &kp, &grad_out});
  if (!g.ok()) return g.error();
  return MlaBackward{std::move(g->at(0)), std::move(g->at(1)), std::move(g->at(2)), std::move(g->at(3))};
}

Status<Err> DevicePlan::attention_backward_selected_into(const Tensor& q, const Tensor& k, const Tensor& v,
                                                         const Tensor& grad_out, float scale, bool causal,
                                                         const AttentionBackwardOutputs& out) const {
  return run_backward(*state_, attention_signature(q, k, v, scale, causal), {&q, &k, &v, &grad_out},
                      {out.dq, out.dk, out.dv}, nullptr);
}

Status<Err> DevicePlan::mla_backward_selected_into(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                   const Tensor& kp, const Tensor& grad_out, float scale, bool causal,
                                                   const MlaBackwardOutputs& out) const {
  return run_backward(*state_, mla_signature(q, qp, latent, kp, scale, causal), {&q, &qp, &latent, &kp, &grad_out},
                      {out.dq, out.dqp, out.dlatent, out.dkp}, nullptr);
}

Status<Err> DevicePlan::attention_backward_ordered_into(const Tensor& q, const Tensor& k, const Tensor& v,
                                                        const Tensor& grad_out, float scale, bool causal,
                                                        OrderedBackwardWorkspace& workspace,
                                                        const AttentionBackwardOutputs& out) const {
  return run_backward(*state_, attention_signature(q, k, v, scale, causal), {&q, &k, &v, &grad_out},
                      {out.dq, out.dk, out.dv}, workspace.state_.get());
}

Status<Err> DevicePlan::mla_backward_ordered_into(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                  const Tensor& kp, const Tensor& grad_out, float scale, bool causal,
                                                  OrderedBackwardWorkspace& workspace,
                                                  const MlaBackwardOutputs& out) const {
  return run_backward(*state_, mla_signature(q, qp, latent, kp, scale, causal), {&q, &qp, &latent, &kp, &grad_out},
                      {out.dq, out.dqp, out.dlatent, out.dkp}, workspace.state_.get());
}

Result<AppendedCache, Err> DevicePlan::append(const Tensor& k, const Tensor& v, Tensor key_cache,
                                              Tensor value_cache) const {
  const State& s = *state_;
  contracts::PagedAppendSignature sig{operand(k), operand(v), operand(key_cache), operand(value_cache), s.metadata};
  if (auto e = check_against_plan(s, k, "key", k.rank() >= 1 ? k.dim(0) : -1)) return *e;
  if (auto e = contracts::check_paged_append(sig)) return *e;
  if (auto e = check_cache(s, key_cache, "key_cache")) return *e;
  if (auto e =
          ops::check_operands({{&k, "key"}, {&v, "value"}, {&key_cache, "key_cache"}, {&value_cache, "value_cache"}}))
    return as<Err>(*e);
  // A cache no other handle shares is written in place: two such caches over the same bytes would
  // have one's rows overwrite the other's (a caller's views, SPEC §13); one over a shared cache would
  // write storage another handle owns (the shared one is only read, into its copy); and new rows
  // read from the bytes being written would depend on the kernels' order.
  {
    ops::BoundedList<ops::NamedTensor, 2> in_place;
    ops::BoundedList<ops::NamedTensor, 4> read = {{&k, "key"}, {&v, "value"}};
    for (const ops::NamedTensor& cache : {ops::NamedTensor{&key_cache, "key_cache"}, {&value_cache, "value_cache"}})
      if (cache.first->storage_shared())
        read.push_back(cache);
      else
        in_place.push_back(cache);
    if (auto e = ops::check_disjoint(in_place, read)) return as<Err>(*e);
  }
  if (s.append_conflict) return *s.append_conflict;

  const Device& device = k.device();
  const ops::PlanKey key = ops::PlanKeyBuilder("rudnn.paged_append")
                               .add(k.dtype())
                               .add(k.dim(1))
                               .add(k.dim(2))
                               .add(v.dim(2))
                               .add(device)
                               .key();
  auto plan = ops::cached_plan(key, k.queue(), ops::Tunable::No, false, [&](compiler::ConfigProvider*) {
    return compiler::lower_paged_append(sig, ops::target_for(device));
  });
  if (!plan.ok()) return as<Err>(plan.error());
  // Copy-on-write: a cache another handle shares gets a fresh output (the kernels copy it first);
  // otherwise the output is the input and the rows are written in place.
  auto target = [&](const Tensor& cache) -> Result<Tensor, RuntimeError> {
    if (!cache.storage_shared()) return cache;
    return ops::output(cache.shape(), cache.dtype(), cache.queue());
  };
  auto new_key = target(key_cache);
  if (!new_key.ok()) return as<Err>(new_key.error());
  auto new_value = target(value_cache);
  if (!new_value.ok()) return as<Err>(new_value.error());
  if (auto st = ops::launch(**plan, k.queue(),
                            {&k, &v, &key_cache, &value_cache, &s.page_table, &s.lengths, &s.sequence_ids, &s.positions,
                             &*new_key, &*new_value});
      !st.ok())
    return as<Err>(st.error());
  return AppendedCache{std::move(new_key.value()), std::move(new_value.value())};
}

// ---- SplitWorkspace

Result<SplitWorkspace, Err> SplitWorkspace::create(const Tensor& q, std::int64_t queries, std::int64_t heads,
                                                   std::int64_t value_dim, std::int64_t splits) {
  if (auto e = contracts::check_split_workspace(queries, heads, value_dim, splits)) return *e;
  const std::int64_t elements = *contracts::split_workspace_elements(splits, queries, heads, value_dim);
  auto storage = Tensor::empty({elements}, DType::F32, q.queue());
  if (!storage.ok()) return as<Err>(storage.error());
  return SplitWorkspace(std::move(storage.value()), queries, heads, value_dim, splits);
}

// ---- OrderedBackwardWorkspace

Result<OrderedBackwardWorkspace, Err> OrderedBackwardWorkspace::create(const DevicePlan& plan, const Tensor& q) {
  const DevicePlan::State& s = *plan.state_;
  if (q.rank() != 3) return Err(ErrorKind::ShapeMismatch, "query", "[queries, heads, dim]", shape_to_string(q.shape()));
  if (auto e = check_against_plan(s, q, "query", q.dim(0))) return *e;
  auto cache_rows = read_switch("RUDA_PAGED_ORDERED_CACHE_ROWS");
  if (!cache_rows.ok()) return cache_rows.error();
  auto compact = read_switch("RUDA_PAGED_ORDERED_COMPACT_HISTORY");
  if (!compact.ok()) return compact.error();
  HistoryIndex index = build_history_index(s.host);
  const auto stats_elements = checked_mul(q.dim(0), q.dim(1));
  const std::int64_t index_bytes = static_cast<std::int64_t>(index.index.size()) * 4;
  const std::int64_t order_bytes = *compact ? s.pages * 4 : 0;
  if (!stats_elements || *stats_elements > kMaxWorkspaceBytes)
    return over_budget(kMaxWorkspaceBytes + 1, "of row statistics");
  const std::int64_t bytes = *stats_elements * 8 + index_bytes + order_bytes;
  if (bytes > kMaxWorkspaceBytes)
    return over_budget(
        bytes, *compact ? "(row statistics, history index and page order)" : "(row statistics and history index)");
  auto stats = Tensor::empty({*stats_elements * 2}, DType::F32, q.queue());
  if (!stats.ok()) return as<Err>(stats.error());
  auto uploaded = upload_i32(index.index, {static_cast<std::int64_t>(index.index.size())}, q.queue());
  if (!uploaded.ok()) return as<Err>(uploaded.error());
  auto state = std::make_shared<State>(State{plan.state_, s.updates, q.dim(0), q.dim(1), std::move(stats.value()),
                                             std::move(uploaded.value()), std::move(index.order), index.active_pages,
                                             std::nullopt, *cache_rows, false});
  OrderedBackwardWorkspace ws(std::move(state));
  if (*compact)
    if (auto st = ws.set_compact_history(true); !st.ok()) return st.error();
  return ws;
}

std::int64_t OrderedBackwardWorkspace::queries() const { return state_->queries; }
std::int64_t OrderedBackwardWorkspace::heads() const { return state_->heads; }
bool OrderedBackwardWorkspace::cache_rows() const { return state_->cache_rows; }
bool OrderedBackwardWorkspace::compact_history() const { return state_->compact_history; }
std::int64_t OrderedBackwardWorkspace::bytes() const { return state_->bytes(); }

Status<Err> OrderedBackwardWorkspace::set_cache_rows(bool on) {
  state_->cache_rows = on;  // shared memory of the kernel: nothing in the budget
  return {};
}

Status<Err> OrderedBackwardWorkspace::set_compact_history(bool on) {
  State& s = *state_;
  if (on && !s.page_order) {
    const std::int64_t bytes = s.bytes() + static_cast<std::int64_t>(s.order.size()) * 4;
    if (bytes > kMaxWorkspaceBytes) return over_budget(bytes, "with the page order");
    auto order = upload_i32(s.order, {static_cast<std::int64_t>(s.order.size())}, s.stats.queue());
    if (!order.ok()) return as<Err>(order.error());
    s.page_order = std::move(order.value());
  }
  s.compact_history = on;
  return {};
}

std::optional<std::pair<std::int64_t, std::int64_t>> OrderedBackwardWorkspace::history_compaction_pages() const {
  const State& s = *state_;
  if (!s.compact_history) return std::nullopt;
  return std::pair{s.active_pages, static_cast<std::int64_t>(s.order.size()) - s.active_pages};
}

}  // namespace rudnn::paged_attention
