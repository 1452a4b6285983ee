// The public paged attention entries (SPEC §8, §9): HostPlan (validation, contracts::make_paged_schedule),
// DevicePlan (the schedule as I32 tensors on the query's queue, plus what append must reject),
// SplitWorkspace, and the calls (forward, append, backward): contract → plan/workspace checks → plan
// cache → launches. A warm
// call allocates nothing (the split workspace is supplied, in-place append), never synchronizes
// and loads no module.
#include "rudnn/paged_attention.h"

#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

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

struct DevicePlan::State {
  Queue queue;
  std::int64_t page_size, pages, queries;
  Tensor page_table, lengths, sequence_ids, positions;
  // Why append must refuse this schedule (two rows write one physical slot), or empty.
  std::optional<Err> append_conflict;
  // The metadata tensors as the contracts see them: made once at upload, not on every call.
  contracts::PagedMetadata metadata;
};

namespace {

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
std::optional<Err> check_inputs(const DevicePlan::State& s, bool mla, const std::vector<const Tensor*>& inputs) {
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
Result<Tensor, Err> run_attention(const DevicePlan::State& s, contracts::PagedAttentionSignature sig,
                                  std::vector<const Tensor*> inputs, const SplitWorkspace* workspace) {
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

  const Device& device = q.device();
  const ops::PlanKey key = call_key(mla ? "rudnn.paged_mla" : "rudnn.paged_attention", sig, q).add(sig.splits).key();
  auto plan = ops::cached_plan(key, device, ops::Tunable::No, false, [&](compiler::ConfigProvider*) {
    return compiler::lower_paged_attention(compiler::PagedAttentionRequest{sig, std::nullopt}, ops::target_for(device));
  });
  if (!plan.ok()) return as<Err>(plan.error());
  auto out = ops::output({d.queries, d.q_heads, d.value_dim}, q.dtype(), q.queue());
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

// The backward of one attention/MLA call: `inputs` = the forward's operands then grad_out; returns
// the gradients in the op's result order (attention dq, dk, dv; MLA dq, dqp, dlatent, dkp).
Result<std::vector<Tensor>, Err> run_backward(const DevicePlan::State& s, contracts::PagedAttentionSignature forward,
                                              const std::vector<const Tensor*>& inputs) {
  forward.metadata = s.metadata;
  const bool mla = forward.kind == contracts::PagedKind::Mla;
  const Tensor& q = *inputs.front();
  const Tensor& grad_out = *inputs.back();
  if (auto e = check_against_plan(s, q, "query", q.rank() >= 1 ? q.dim(0) : -1)) return *e;
  const contracts::PagedBackwardSignature sig{forward, operand(grad_out)};
  if (auto e = contracts::check_paged_backward(sig)) return *e;
  if (auto e = check_inputs(s, mla, inputs)) return *e;

  const Device& device = q.device();
  const ops::PlanKey key =
      call_key(mla ? "rudnn.paged_mla_backward" : "rudnn.paged_attention_backward", forward, q).key();
  auto plan = ops::cached_plan(key, device, ops::Tunable::No, false, [&](compiler::ConfigProvider*) {
    return compiler::lower_paged_backward(compiler::PagedBackwardRequest{sig, std::nullopt}, ops::target_for(device));
  });
  if (!plan.ok()) return as<Err>(plan.error());
  // Each gradient has its input's shape and dtype.
  std::vector<Tensor> grads;
  for (std::size_t i = 0; i + 1 < inputs.size(); ++i) {
    auto g = ops::output(inputs[i]->shape(), q.dtype(), q.queue());
    if (!g.ok()) return as<Err>(g.error());
    grads.push_back(std::move(g.value()));
  }
  const Status<RuntimeError> launched =
      mla ? ops::launch(**plan, q.queue(),
                        {inputs[0], inputs[1], inputs[2], inputs[3], inputs[4], &s.page_table, &s.lengths,
                         &s.sequence_ids, &s.positions, &grads[0], &grads[1], &grads[2], &grads[3]})
          : ops::launch(**plan, q.queue(),
                        {inputs[0], inputs[1], inputs[2], inputs[3], &s.page_table, &s.lengths, &s.sequence_ids,
                         &s.positions, &grads[0], &grads[1], &grads[2]});
  if (!launched.ok()) return as<Err>(launched.error());
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
  return DevicePlan(std::make_shared<const State>(State{
      q.queue(), host.page_size(), host.pages(), host.queries(), std::move(table.value()), std::move(lengths.value()),
      std::move(ids.value()), std::move(positions.value()), find_append_conflict(host), std::move(metadata)}));
}

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

Result<AttentionBackward, Err> DevicePlan::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                                              const Tensor& grad_out, float scale, bool causal) const {
  auto g = run_backward(*state_, attention_signature(q, k, v, scale, causal), {&q, &k, &v, &grad_out});
  if (!g.ok()) return g.error();
  return AttentionBackward{std::move(g->at(0)), std::move(g->at(1)), std::move(g->at(2))};
}

Result<MlaBackward, Err> DevicePlan::mla_backward(const Tensor& q, const Tensor& qp, const Tensor& latent,
                                                  const Tensor& kp, const Tensor& grad_out, float scale,
                                                  bool causal) const {
  auto g = run_backward(*state_, mla_signature(q, qp, latent, kp, scale, causal), {&q, &qp, &latent, &kp, &grad_out});
  if (!g.ok()) return g.error();
  return MlaBackward{std::move(g->at(0)), std::move(g->at(1)), std::move(g->at(2)), std::move(g->at(3))};
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
  if (s.append_conflict) return *s.append_conflict;

  const Device& device = k.device();
  const ops::PlanKey key = ops::PlanKeyBuilder("rudnn.paged_append")
                               .add(k.dtype())
                               .add(k.dim(1))
                               .add(k.dim(2))
                               .add(v.dim(2))
                               .add(device)
                               .key();
  auto plan = ops::cached_plan(key, device, ops::Tunable::No, false, [&](compiler::ConfigProvider*) {
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

}  // namespace rudnn::paged_attention
