// Verifier of rudnn.attention. The contract is rudnn::contracts::check_attention (and, for a concrete
// strategy, check_strategy_fits), as in the public API; then the result type and the kernel_config.
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

using namespace mlir;

namespace rudnn::dialect {

namespace {

FailureOr<contracts::AttentionOperand> operandOf(Operation* op, Value value, StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  std::optional<DType> dtype = toDType(type.getElementType());
  if (!dtype)
    return op->emitOpError() << name << ": expected a rudnn element type (f32, f16, bf16, ui8, ...), got "
                             << type.getElementType();
  contracts::AttentionOperand operand;
  operand.dtype = *dtype;
  for (std::int64_t d : type.getShape()) operand.shape.push_back(ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  return operand;
}

}  // namespace

FailureOr<contracts::AttentionSignature> attentionSignatureOf(AttentionOp op) {
  contracts::AttentionSignature sig;
  auto q = operandOf(op, op.getQuery(), "query");
  auto k = operandOf(op, op.getKey(), "key");
  auto v = operandOf(op, op.getValue(), "value");
  if (failed(q) || failed(k) || failed(v)) return failure();
  sig.query = *q, sig.key = *k, sig.value = *v;
  if (Value m = op.getMask()) {
    auto mask = operandOf(op, m, "mask");
    if (failed(mask)) return failure();
    sig.mask = *mask;
  }
  if (Value b = op.getAttnBias()) {
    auto bias = operandOf(op, b, "attn_bias");
    if (failed(bias)) return failure();
    sig.bias = *bias;
  }
  sig.scale = op.getScale().convertToDouble();
  sig.causal = op.getCausal();
  return sig;
}

std::optional<attention_config::Tile> attentionTileOf(DictionaryAttr config, std::int64_t headDim) {
  using namespace attention_config;
  if (!config) return std::nullopt;
  auto get = [&](const char* key) -> std::optional<std::int64_t> {
    if (auto v = config.getAs<IntegerAttr>(key)) return v.getInt();
    return std::nullopt;
  };
  auto kind = get(kStrategy);
  if (!kind || *kind < 0 || *kind > 2) return std::nullopt;
  Tile t;
  t.kind = static_cast<Kind>(*kind);
  switch (t.kind) {
    case Kind::FlashMma: {
      auto m = get(kBlockM), n = get(kBlockN);
      auto wgmma = get(kWgmma);  // 1 on a wgmma tile; 0, or omitted, on mma.sync
      if (wgmma && *wgmma != 0 && *wgmma != 1) return std::nullopt;
      if (!m || !n || config.size() != (wgmma ? 4u : 3u)) return std::nullopt;
      t.blockM = *m, t.blockN = *n, t.headDim = headDim, t.wgmma = wgmma == 1;
      return t;
    }
    case Kind::FlashUnit: {
      auto m = get(kBlockM), n = get(kBlockN), tpr = get(kThreadsPerRow), dv = get(kMaxValueDim);
      if (!m || !n || !tpr || !dv || config.size() != 5) return std::nullopt;
      t.blockM = *m, t.blockN = *n, t.threadsPerRow = *tpr, t.maxValueDim = *dv;
      return t;
    }
    case Kind::Fallback: {
      auto m = get(kBlockM), s = get(kSoftmaxThreads);
      if (!m || !s || config.size() != 3) return std::nullopt;
      t.blockM = *m, t.blockN = 64, t.softmaxThreads = *s;
      return t;
    }
  }
  return std::nullopt;
}

DictionaryAttr attentionTileConfig(MLIRContext* ctx, const attention_config::Tile& t) {
  using namespace attention_config;
  Builder b(ctx);
  SmallVector<NamedAttribute> e = {b.getNamedAttr(kStrategy, b.getI64IntegerAttr(static_cast<std::int64_t>(t.kind)))};
  switch (t.kind) {
    case Kind::FlashMma:
      e.push_back(b.getNamedAttr(kBlockM, b.getI64IntegerAttr(t.blockM)));
      e.push_back(b.getNamedAttr(kBlockN, b.getI64IntegerAttr(t.blockN)));
      if (t.wgmma) e.push_back(b.getNamedAttr(kWgmma, b.getI64IntegerAttr(1)));
      break;
    case Kind::FlashUnit:
      e.push_back(b.getNamedAttr(kBlockM, b.getI64IntegerAttr(t.blockM)));
      e.push_back(b.getNamedAttr(kBlockN, b.getI64IntegerAttr(t.blockN)));
      e.push_back(b.getNamedAttr(kThreadsPerRow, b.getI64IntegerAttr(t.threadsPerRow)));
      e.push_back(b.getNamedAttr(kMaxValueDim, b.getI64IntegerAttr(t.maxValueDim)));
      break;
    case Kind::Fallback:
      e.push_back(b.getNamedAttr(kBlockM, b.getI64IntegerAttr(t.blockM)));
      e.push_back(b.getNamedAttr(kSoftmaxThreads, b.getI64IntegerAttr(t.softmaxThreads)));
      break;
  }
  return b.getDictionaryAttr(e);
}

LogicalResult AttentionOp::verify() {
  const std::optional<contracts::AttentionStrategy> strategy = contracts::parse_attention_strategy(getStrategy());
  if (!strategy)
    return emitOpError() << "strategy: expected \"flash_mma\", \"flash_unit\", \"fallback\" or \"autotune\", got \""
                         << getStrategy() << "\"";
  FailureOr<contracts::AttentionSignature> sig = attentionSignatureOf(*this);
  if (failed(sig)) return failure();
  if (auto error = contracts::check_attention(*sig)) return emitOpError() << error->message();
  if (*strategy != contracts::AttentionStrategy::Autotune)
    if (auto error = contracts::check_strategy_fits(*sig, *strategy)) return emitOpError() << error->message();
  auto q = cast<RankedTensorType>(getQuery().getType());
  auto v = cast<RankedTensorType>(getValue().getType());
  auto out = cast<RankedTensorType>(getOutput().getType());
  const SmallVector<std::int64_t> want = {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), v.getDimSize(3)};
  bool ok = out.getElementType() == q.getElementType() && out.getRank() == 4;
  for (std::int64_t d = 0; ok && d < 4; ++d)
    ok = ShapedType::isDynamic(out.getDimSize(d)) || ShapedType::isDynamic(want[d]) || out.getDimSize(d) == want[d];
  if (!ok)
    return emitOpError() << "output: expected " << RankedTensorType::get(want, q.getElementType()) << ", got " << out;
  if (DictionaryAttr config = getKernelConfigAttr()) {
    const std::int64_t d = q.getDimSize(3), dv = v.getDimSize(3);
    std::optional<attention_config::Tile> tile = attentionTileOf(config, d);
    if (!tile)
      return emitOpError() << "kernel_config: expected 'strategy' (0 flash_mma, 1 flash_unit, 2 fallback) and its "
                              "tile keys (flash_mma: wgmma = 1 on a wgmma tile, 0 or absent elsewhere), got "
                           << config;
    if (auto why = attention_config::checkTile(*tile, *toDType(q.getElementType()), d, dv))
      return emitOpError() << "kernel_config: " << *why;
    const auto kinds = std::array{contracts::AttentionStrategy::FlashBlackboxAccelerated,
                                  contracts::AttentionStrategy::FlashUnit, contracts::AttentionStrategy::Fallback};
    const auto chosen = kinds[static_cast<std::size_t>(tile->kind)];
    if (*strategy != contracts::AttentionStrategy::Autotune && *strategy != chosen)
      return emitOpError() << "kernel_config: a " << contracts::strategy_name(chosen) << " tile for strategy \""
                           << getStrategy() << "\"";
  }
  return success();
}

}  // namespace rudnn::dialect
