// Verifiers of rudnn.paged_attention, rudnn.paged_mla, rudnn.paged_append and the backward ops. The
// contracts are rudnn::contracts::check_paged_attention / check_paged_append / check_paged_backward
// (core/contracts/paged_attention.cpp), as in the public API; then the result types and the
// kernel_config (paged_config::checkTile; the backward's {warps}).
#include "rudnn/Dialect/Rudnn/IR/PagedAttentionOps.h"

#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ConfigValues.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

using namespace mlir;

namespace rudnn::dialect {

namespace {

template <class Op>
std::optional<contracts::PagedMetadata> metadataOf(Op op) {
  auto table = contractOperandOf(op.getPageTable()), lengths = contractOperandOf(op.getLengths()),
       seq = contractOperandOf(op.getSequenceIds()), pos = contractOperandOf(op.getPositions());
  if (!table || !lengths || !seq || !pos) return std::nullopt;
  return contracts::PagedMetadata{*table, *lengths, *seq, *pos};
}

// `result` is `want` of `element` (dynamic extents on either side match).
bool matches(Value result, const Shape& want, Type element) {
  auto ranked = cast<RankedTensorType>(result.getType());
  if (ranked.getElementType() != element || ranked.getRank() != static_cast<std::int64_t>(want.size())) return false;
  for (std::size_t d = 0; d < want.size(); ++d)
    if (!ShapedType::isDynamic(ranked.getDimSize(d)) && contracts::known(want[d]) && ranked.getDimSize(d) != want[d])
      return false;
  return true;
}

template <class Op>
LogicalResult verifyPaged(Op op) {
  auto sig = pagedSignatureOf(op);
  if (!sig) return op.emitOpError() << "expected rudnn element types (f32, f16, bf16, i32)";
  if (auto error = contracts::check_paged_attention(*sig)) return op.emitOpError() << error->message();
  const contracts::PagedDims d = contracts::paged_dims(*sig);
  Type element = cast<RankedTensorType>(op.getQuery().getType()).getElementType();
  if (!matches(op.getOutput(), {d.queries, d.q_heads, d.value_dim}, element))
    return op.emitOpError() << "output: expected [" << contracts::extent_text(d.queries) << ", " << d.q_heads << ", "
                            << d.value_dim << "] of " << element << ", got " << op.getOutput().getType();
  if (DictionaryAttr config = op.getKernelConfigAttr())
    if (auto why = checkPagedConfig(op, config)) return op.emitOpError() << "kernel_config: " << *why;
  return success();
}

template <class Op>
LogicalResult verifyBackward(Op op, std::initializer_list<std::pair<Value, Value>> gradients) {
  auto sig = pagedBackwardSignatureOf(op);
  if (!sig) return op.emitOpError() << "expected rudnn element types (f32, f16, bf16, i32)";
  if (auto error = contracts::check_paged_backward(*sig)) return op.emitOpError() << error->message();
  // Each gradient has its input's type (dynamic extents on either side match).
  for (auto [gradient, input] : gradients) {
    auto want = cast<RankedTensorType>(input.getType());
    Shape shape(want.getShape().begin(), want.getShape().end());
    for (std::int64_t& e : shape)
      if (ShapedType::isDynamic(e)) e = contracts::kDynamic;
    if (!matches(gradient, shape, want.getElementType()))
      return op.emitOpError() << "gradients: expected " << want << " (the input's type), got " << gradient.getType();
  }
  // The ordered form: two i32 vectors; the switches only with it.
  if (op.getHistoryIndex()) {
    for (auto [value, name] : {std::pair{op.getHistoryIndex(), "history_index"}, {op.getPageOrder(), "page_order"}}) {
      auto type = value ? dyn_cast<RankedTensorType>(value.getType()) : RankedTensorType();
      if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32))
        return op.emitOpError() << name << ": expected a 1-D i32 tensor (the ordered workspace's index), got "
                                << (value ? value.getType() : Type());
    }
  } else if (op.getCacheRows() || op.getCompactHistory()) {
    return op.emitOpError() << "cache_rows / compact_history: expected only on the ordered form (ordered(...)), "
                               "got them on the atomic one";
  }
  if (DictionaryAttr config = op.getKernelConfigAttr())
    if (auto why = checkPagedBackwardConfig(op, config)) return op.emitOpError() << "kernel_config: " << *why;
  return success();
}

}  // namespace

std::optional<contracts::PagedAttentionSignature> pagedSignatureOf(Operation* op) {
  contracts::PagedAttentionSignature sig;
  if (auto a = dyn_cast<PagedAttentionOp>(op)) {
    auto q = contractOperandOf(a.getQuery()), k = contractOperandOf(a.getKeyCache()),
         v = contractOperandOf(a.getValueCache());
    auto meta = metadataOf(a);
    if (!q || !k || !v || !meta) return std::nullopt;
    sig.kind = contracts::PagedKind::Attention;
    sig.query = *q;
    sig.key = *k;
    sig.value = *v;
    sig.metadata = *meta;
    sig.scale = a.getScale().convertToDouble();
    sig.causal = a.getCausal();
    sig.splits = a.getSplits();
    return sig;
  }
  if (auto m = dyn_cast<PagedMlaOp>(op)) {
    auto q = contractOperandOf(m.getQuery()), qp = contractOperandOf(m.getQueryRope()),
         latent = contractOperandOf(m.getLatentCache()), kp = contractOperandOf(m.getRopeCache());
    auto meta = metadataOf(m);
    if (!q || !qp || !latent || !kp || !meta) return std::nullopt;
    sig.kind = contracts::PagedKind::Mla;
    sig.query = *q;
    sig.query_rope = *qp;
    sig.key = *latent;
    sig.key_rope = *kp;
    sig.metadata = *meta;
    sig.scale = m.getScale().convertToDouble();
    sig.causal = m.getCausal();
    sig.splits = m.getSplits();
    return sig;
  }
  return std::nullopt;
}

std::optional<contracts::PagedBackwardSignature> pagedBackwardSignatureOf(Operation* op) {
  contracts::PagedBackwardSignature sig;
  auto common = [&](auto o) -> bool {
    auto meta = metadataOf(o);
    auto q = contractOperandOf(o.getQuery()), g = contractOperandOf(o.getGradOut());
    if (!meta || !q || !g) return false;
    sig.forward.query = *q;
    sig.forward.metadata = *meta;
    sig.forward.scale = o.getScale().convertToDouble();
    sig.forward.causal = o.getCausal();
    sig.grad_out = *g;
    return true;
  };
  if (auto a = dyn_cast<PagedAttentionBackwardOp>(op)) {
    auto k = contractOperandOf(a.getKeyCache()), v = contractOperandOf(a.getValueCache());
    if (!k || !v || !common(a)) return std::nullopt;
    sig.forward.kind = contracts::PagedKind::Attention;
    sig.forward.key = *k;
    sig.forward.value = *v;
    return sig;
  }
  if (auto m = dyn_cast<PagedMlaBackwardOp>(op)) {
    auto qp = contractOperandOf(m.getQueryRope()), latent = contractOperandOf(m.getLatentCache()),
         kp = contractOperandOf(m.getRopeCache());
    if (!qp || !latent || !kp || !common(m)) return std::nullopt;
    sig.forward.kind = contracts::PagedKind::Mla;
    sig.forward.query_rope = *qp;
    sig.forward.key = *latent;
    sig.forward.key_rope = *kp;
    return sig;
  }
  return std::nullopt;
}

paged_config::BackwardConfig pagedBackwardConfigOf(DictionaryAttr config) {
  auto values = config ? integerValuesOf(config) : std::nullopt;
  auto parsed = values ? paged_config::backwardConfigOf(*values) : std::nullopt;
  return parsed ? *parsed : paged_config::BackwardConfig{};
}

std::optional<std::string> checkPagedBackwardConfig(Operation* op, DictionaryAttr config) {
  auto values = integerValuesOf(config);
  auto parsed = values ? paged_config::backwardConfigOf(*values) : std::nullopt;
  if (!parsed) {
    std::string why;
    llvm::raw_string_ostream(why) << "expected {warps} or {warps, tensor_core}, got " << config;
    return why;
  }
  auto sig = pagedBackwardSignatureOf(op);
  if (!sig) return std::string("not a paged backward op");
  return paged_config::checkBackward(*parsed, pagedShapeOf(sig->forward));
}

std::optional<contracts::PagedAppendSignature> pagedAppendSignatureOf(PagedAppendOp op) {
  auto k = contractOperandOf(op.getKey()), v = contractOperandOf(op.getValue()),
       kc = contractOperandOf(op.getKeyCache()), vc = contractOperandOf(op.getValueCache());
  auto meta = metadataOf(op);
  if (!k || !v || !kc || !vc || !meta) return std::nullopt;
  return contracts::PagedAppendSignature{*k, *v, *kc, *vc, *meta};
}

paged_config::Shape pagedShapeOf(const contracts::PagedAttentionSignature& sig) {
  const contracts::PagedDims d = contracts::paged_dims(sig);
  return {d.group(), d.head_dim + d.rope_dim, d.value_dim, sig.kind == contracts::PagedKind::Mla,
          sig.query.dtype == DType::F16 || sig.query.dtype == DType::BF16};
}

std::optional<paged_config::Tile> pagedTileOf(DictionaryAttr config) {
  auto values = integerValuesOf(config);
  if (!values) return std::nullopt;
  return paged_config::tileOf(*values);
}

DictionaryAttr pagedTileConfig(MLIRContext* ctx, const paged_config::Tile& tile) {
  return integerDictionary(ctx, paged_config::valuesOf(tile));
}

std::optional<std::string> checkPagedConfig(Operation* op, DictionaryAttr config) {
  auto tile = pagedTileOf(config);
  if (!tile) {
    std::string why;
    llvm::raw_string_ostream(why) << "expected {tensor_core, block_rows, block_keys, row_lanes, max_value_dim} "
                                     "and optionally wgmma 0 or 1 (docs/paged_attention.md), got "
                                  << config;
    return why;
  }
  auto sig = pagedSignatureOf(op);
  if (!sig) return std::string("not a paged attention op");
  return paged_config::checkTile(*tile, pagedShapeOf(*sig));
}

LogicalResult PagedAttentionOp::verify() { return verifyPaged(*this); }

LogicalResult PagedMlaOp::verify() { return verifyPaged(*this); }

LogicalResult PagedAttentionBackwardOp::verify() {
  return verifyBackward(*this, {{getDq(), getQuery()}, {getDk(), getKeyCache()}, {getDv(), getValueCache()}});
}

LogicalResult PagedMlaBackwardOp::verify() {
  return verifyBackward(*this, {{getDq(), getQuery()},
                                {getDqRope(), getQueryRope()},
                                {getDlatent(), getLatentCache()},
                                {getDkRope(), getRopeCache()}});
}

LogicalResult PagedAppendOp::verify() {
  auto sig = pagedAppendSignatureOf(*this);
  if (!sig) return emitOpError() << "expected rudnn element types (f32, f16, bf16, i32)";
  if (auto error = contracts::check_paged_append(*sig)) return emitOpError() << error->message();
  if (getNewKeyCache().getType() != getKeyCache().getType())
    return emitOpError() << "new_key_cache: expected the key_cache type " << getKeyCache().getType() << ", got "
                         << getNewKeyCache().getType();
  if (getNewValueCache().getType() != getValueCache().getType())
    return emitOpError() << "new_value_cache: expected the value_cache type " << getValueCache().getType() << ", got "
                         << getNewValueCache().getType();
  if (getKernelConfigAttr() && !getKernelConfigAttr().empty())
    return emitOpError() << "kernel_config: expected none or {} (the append has one kernel), got "
                         << getKernelConfigAttr();
  return success();
}

}  // namespace rudnn::dialect
