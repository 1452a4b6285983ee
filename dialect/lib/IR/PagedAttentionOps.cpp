// Verifiers of rudnn.paged_attention, rudnn.paged_mla and rudnn.paged_append. The contracts are
// rudnn::contracts::check_paged_attention / check_paged_append (core/contracts/paged_attention.cpp),
// as in the public API; then the result types and the kernel_config (paged_config::checkTile).
#include "rudnn/Dialect/Rudnn/IR/PagedAttentionOps.h"

#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

using namespace mlir;

namespace rudnn::dialect {

namespace {

std::optional<contracts::Operand> operandOf(Value v) {
  auto ranked = cast<RankedTensorType>(v.getType());
  std::optional<DType> dtype = toDType(ranked.getElementType());
  if (!dtype) return std::nullopt;
  contracts::Operand o;
  o.dtype = *dtype;
  for (std::int64_t d : ranked.getShape()) o.shape.push_back(ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  return o;
}

template <class Op>
std::optional<contracts::PagedMetadata> metadataOf(Op op) {
  auto table = operandOf(op.getPageTable()), lengths = operandOf(op.getLengths()), seq = operandOf(op.getSequenceIds()),
       pos = operandOf(op.getPositions());
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

}  // namespace

std::optional<contracts::PagedAttentionSignature> pagedSignatureOf(Operation* op) {
  contracts::PagedAttentionSignature sig;
  if (auto a = dyn_cast<PagedAttentionOp>(op)) {
    auto q = operandOf(a.getQuery()), k = operandOf(a.getKeyCache()), v = operandOf(a.getValueCache());
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
    auto q = operandOf(m.getQuery()), qp = operandOf(m.getQueryRope()), latent = operandOf(m.getLatentCache()),
         kp = operandOf(m.getRopeCache());
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

std::optional<contracts::PagedAppendSignature> pagedAppendSignatureOf(PagedAppendOp op) {
  auto k = operandOf(op.getKey()), v = operandOf(op.getValue()), kc = operandOf(op.getKeyCache()),
       vc = operandOf(op.getValueCache());
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
  if (!config) return std::nullopt;
  std::vector<std::pair<std::string, std::int64_t>> values;
  for (NamedAttribute a : config) {
    auto i = dyn_cast<IntegerAttr>(a.getValue());
    if (!i) return std::nullopt;
    values.emplace_back(a.getName().str(), i.getInt());
  }
  return paged_config::tileOf(values);
}

DictionaryAttr pagedTileConfig(MLIRContext* ctx, const paged_config::Tile& tile) {
  Builder b(ctx);
  SmallVector<NamedAttribute> attrs;
  for (auto& [k, v] : paged_config::valuesOf(tile)) attrs.push_back(b.getNamedAttr(k, b.getI64IntegerAttr(v)));
  return b.getDictionaryAttr(attrs);
}

std::optional<std::string> checkPagedConfig(Operation* op, DictionaryAttr config) {
  auto tile = pagedTileOf(config);
  if (!tile) {
    std::string why;
    llvm::raw_string_ostream(why) << "expected {block_rows, block_keys, row_lanes, max_value_dim} "
                                     "(docs/paged_attention.md), got "
                                  << config;
    return why;
  }
  auto sig = pagedSignatureOf(op);
  if (!sig) return std::string("not a paged attention op");
  return paged_config::checkTile(*tile, pagedShapeOf(*sig));
}

LogicalResult PagedAttentionOp::verify() { return verifyPaged(*this); }

LogicalResult PagedMlaOp::verify() { return verifyPaged(*this); }

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
