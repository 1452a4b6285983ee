// Paged attention (rudnn.paged_attention, rudnn.paged_mla, rudnn.paged_append and the backward ops
// rudnn.paged_attention_backward, rudnn.paged_mla_backward) in the graph runner and rudnn-precompile. The schedule
// operands are HostPlan's arrays as i32 tensors; the runner reads them back and validates them with HostPlan::create (a
// bad schedule is a PagedAttentionError naming the sequence or row, as in the API), then runs the op through a
// DevicePlan. A sequence's table is the first ⌈length / page_size⌉ entries of its page_table row (the rest is padding).
#include <cstring>

#include "contracts/arch.h"
#include "family.h"
#include "rudnn/Dialect/Rudnn/IR/PagedAttentionOps.h"
#include "rudnn/compiler/paged_attention.h"
#include "rudnn/paged_attention.h"

namespace rudnn::ops {
namespace {

using paged_attention::DevicePlan;
using paged_attention::HostPlan;

Result<std::vector<std::int64_t>, RuntimeError> read_i32(const Tensor& t) {
  auto host = to_host(t);
  if (!host.ok()) return host.error();
  std::vector<std::int32_t> raw(static_cast<std::size_t>(t.numel()));
  std::memcpy(raw.data(), host->bytes.data(), raw.size() * sizeof(std::int32_t));
  return std::vector<std::int64_t>(raw.begin(), raw.end());
}

// The DevicePlan of an op's schedule operands; `cache` gives pages and page_size.
template <class Op>
Result<DevicePlan, Error> plan_of(Op op, GraphValues& values, const Tensor& cache, const Tensor& rows) {
  const Tensor& table = values[op.getPageTable()];
  if (table.rank() != 2 || cache.rank() != 4)
    return RuntimeError(ErrorKind::ShapeMismatch, "page_table", "[sequences, table_pages] and a rank-4 cache",
                        shape_to_string(table.shape()));
  auto flat = read_i32(table);
  if (!flat.ok()) return flat.error();
  auto lengths = read_i32(values[op.getLengths()]);
  if (!lengths.ok()) return lengths.error();
  auto ids = read_i32(values[op.getSequenceIds()]);
  if (!ids.ok()) return ids.error();
  auto positions = read_i32(values[op.getPositions()]);
  if (!positions.ok()) return positions.error();
  const std::int64_t page_size = cache.dim(1), width = table.dim(1);
  if (std::ssize(*lengths) != table.dim(0))
    return RuntimeError(ErrorKind::ShapeMismatch, "lengths", fmt::format("{} lengths (page_table rows)", table.dim(0)),
                        std::to_string(lengths->size()));
  std::vector<std::vector<std::int32_t>> tables;
  for (std::int64_t s = 0; s < table.dim(0); ++s) {
    const std::int64_t used = std::clamp<std::int64_t>(((*lengths)[s] + page_size - 1) / page_size, 0, width);
    tables.emplace_back(flat->begin() + s * width, flat->begin() + s * width + used);
  }
  auto host = HostPlan::create(page_size, cache.dim(0), tables, *lengths, *ids, *positions);
  if (!host.ok()) return host.error();
  auto plan = DevicePlan::upload(*host, rows);
  if (!plan.ok()) return plan.error();
  return std::move(plan.value());
}

// attention / mla (splits = 1) or their _with_workspace forms through a fresh SplitWorkspace.
template <class Unsplit, class Split>
Result<Tensor, PagedAttentionError> call(std::int64_t splits, const Tensor& q, std::int64_t value_dim, Unsplit unsplit,
                                         Split split) {
  if (splits <= 1) return unsplit();
  auto ws = paged_attention::SplitWorkspace::create(q, q.dim(0), q.dim(1), value_dim, splits);
  if (!ws.ok()) return ws.error();
  return split(*ws);
}

// The backward op's form (atomic, or ordered with its switches); the forward ops' is the default.
compiler::PagedBackwardMode backward_mode(mlir::Operation* op) {
  auto of = [](auto b) {
    return compiler::PagedBackwardMode{b.getHistoryIndex() != nullptr, b.getCacheRows(), b.getCompactHistory()};
  };
  if (auto b = llvm::dyn_cast<dialect::PagedAttentionBackwardOp>(op)) return of(b);
  if (auto b = llvm::dyn_cast<dialect::PagedMlaBackwardOp>(op)) return of(b);
  return {};
}

std::optional<RuntimeError> run(mlir::Operation& op, GraphValues& values) {
  using paged_attention::SplitWorkspace;
  if (auto a = llvm::dyn_cast<dialect::PagedAttentionOp>(op)) {
    const Tensor &q = values[a.getQuery()], &k = values[a.getKeyCache()], &v = values[a.getValueCache()];
    auto plan = plan_of(a, values, k, q);
    if (!plan.ok()) return op_error(plan.error(), op);
    const float scale = a.getScale().convertToFloat();
    const bool causal = a.getCausal();
    auto r = call(
        a.getSplits(), q, v.rank() == 4 ? v.dim(3) : 0, [&] { return plan->attention(q, k, v, scale, causal); },
        [&](SplitWorkspace& ws) { return plan->attention_with_workspace(q, k, v, scale, causal, ws); });
    if (!r.ok()) return op_error(r.error(), op);
    return values.bind(a.getOutput(), std::move(r.value()));
  }
  if (auto m = llvm::dyn_cast<dialect::PagedMlaOp>(op)) {
    const Tensor &q = values[m.getQuery()], &qp = values[m.getQueryRope()], &c = values[m.getLatentCache()],
                 &kp = values[m.getRopeCache()];
    auto plan = plan_of(m, values, c, q);
    if (!plan.ok()) return op_error(plan.error(), op);
    const float scale = m.getScale().convertToFloat();
    const bool causal = m.getCausal();
    auto r = call(
        m.getSplits(), q, c.rank() == 4 ? c.dim(3) : 0, [&] { return plan->mla(q, qp, c, kp, scale, causal); },
        [&](SplitWorkspace& ws) { return plan->mla_with_workspace(q, qp, c, kp, scale, causal, ws); });
    if (!r.ok()) return op_error(r.error(), op);
    return values.bind(m.getOutput(), std::move(r.value()));
  }
  if (backward_mode(&op).ordered)
    return RuntimeError(ErrorKind::InvalidValue, op.getName().getStringRef().str(),
                        "the atomic form in a graph (the ordered form's index comes from an "
                        "OrderedBackwardWorkspace: run it through the API)",
                        "ordered(history_index, page_order)");
  if (auto b = llvm::dyn_cast<dialect::PagedAttentionBackwardOp>(op)) {
    const Tensor &q = values[b.getQuery()], &k = values[b.getKeyCache()], &v = values[b.getValueCache()];
    auto plan = plan_of(b, values, k, q);
    if (!plan.ok()) return op_error(plan.error(), op);
    auto r = plan->attention_backward(q, k, v, values[b.getGradOut()], b.getScale().convertToFloat(), b.getCausal());
    if (!r.ok()) return op_error(r.error(), op);
    if (auto e = values.bind(b.getDq(), std::move(r->dq))) return e;
    if (auto e = values.bind(b.getDk(), std::move(r->dk))) return e;
    return values.bind(b.getDv(), std::move(r->dv));
  }
  if (auto b = llvm::dyn_cast<dialect::PagedMlaBackwardOp>(op)) {
    const Tensor &q = values[b.getQuery()], &c = values[b.getLatentCache()];
    auto plan = plan_of(b, values, c, q);
    if (!plan.ok()) return op_error(plan.error(), op);
    auto r = plan->mla_backward(q, values[b.getQueryRope()], c, values[b.getRopeCache()], values[b.getGradOut()],
                                b.getScale().convertToFloat(), b.getCausal());
    if (!r.ok()) return op_error(r.error(), op);
    if (auto e = values.bind(b.getDq(), std::move(r->dq))) return e;
    if (auto e = values.bind(b.getDqRope(), std::move(r->dqp))) return e;
    if (auto e = values.bind(b.getDlatent(), std::move(r->dlatent))) return e;
    return values.bind(b.getDkRope(), std::move(r->dkp));
  }
  auto ap = llvm::cast<dialect::PagedAppendOp>(op);
  const Tensor &k = values[ap.getKey()], &v = values[ap.getValue()];
  auto plan = plan_of(ap, values, values[ap.getKeyCache()], k);
  if (!plan.ok()) return op_error(plan.error(), op);
  // The graph keeps its input caches (value semantics): append sees them shared and copies.
  auto r = plan->append(k, v, values[ap.getKeyCache()], values[ap.getValueCache()]);
  if (!r.ok()) return op_error(r.error(), op);
  if (auto e = values.bind(ap.getNewKeyCache(), std::move(r->key_cache))) return e;
  return values.bind(ap.getNewValueCache(), std::move(r->value_cache));
}

// Head counts and dims are baked into the kernels; queries, pages and the schedule stay dynamic.
Result<std::vector<compiler::LoweredOp>, RuntimeError> kernels(mlir::Operation& op, const compiler::Target& target,
                                                               bool with_candidates, const std::string& where) {
  if (auto ap = llvm::dyn_cast<dialect::PagedAppendOp>(op)) {
    if (auto e = require_static(ap.getKey(), {1, 2}, where, "key")) return *e;
    if (auto e = require_static(ap.getValue(), {1, 2}, where, "value")) return *e;
    auto sig = dialect::pagedAppendSignatureOf(ap);
    if (!sig) return RuntimeError(ErrorKind::InvalidValue, where, "a paged append op", "another op");
    auto lowered = compiler::lower_paged_append(*sig, target);
    if (!lowered.ok()) return lowered.error();
    return std::vector<compiler::LoweredOp>{std::move(lowered.value())};
  }
  auto static_heads = [&](const contracts::PagedAttentionSignature& sig) -> std::optional<RuntimeError> {
    const contracts::PagedDims d = contracts::paged_dims(sig);
    for (std::int64_t extent : {d.q_heads, d.kv_heads, d.head_dim, d.rope_dim, d.value_dim})
      if (!contracts::known(extent))
        return RuntimeError(ErrorKind::ShapeMismatch, where, "static head counts and head dims",
                            shape_to_string(sig.query.shape));
    return std::nullopt;
  };
  if (auto backward = dialect::pagedBackwardSignatureOf(&op)) {
    if (auto e = static_heads(backward->forward)) return *e;
    auto lowered = compiler::lower_paged_backward({*backward, std::nullopt, backward_mode(&op)}, target);
    if (!lowered.ok()) return lowered.error();
    return std::vector<compiler::LoweredOp>{std::move(lowered.value())};
  }
  auto sig = dialect::pagedSignatureOf(&op);
  if (!sig)
    return RuntimeError(ErrorKind::InvalidValue, where, "a paged attention op", op.getName().getStringRef().str());
  if (auto e = static_heads(*sig)) return *e;
  if (auto e = compiler::check_paged_tile_fits(*sig, target))
    return RuntimeError(e->kind(), where + " " + e->argument(), e->expected(), e->actual());
  return lower_configs(
      compiler::PagedAttentionRequest{*sig, std::nullopt},
      with_candidates ? compiler::paged_variants(*sig, contracts::has_mma_m16n8k16(target.arch),
                                                 static_cast<std::int64_t>(target.limits.shared_memory_per_block_optin),
                                                 contracts::has_wgmma(target.arch, target.host_emulation))
                      : std::vector<compiler::KernelConfig>{},
      target, &compiler::lower_paged_attention);
}

const bool kRegistered = register_family(
    {"paged attention",
     {dialect::PagedAttentionOp::getOperationName().str(), dialect::PagedMlaOp::getOperationName().str(),
      dialect::PagedAppendOp::getOperationName().str(), dialect::PagedAttentionBackwardOp::getOperationName().str(),
      dialect::PagedMlaBackwardOp::getOperationName().str()},
     &run,
     &kernels});

}  // namespace
}  // namespace rudnn::ops
