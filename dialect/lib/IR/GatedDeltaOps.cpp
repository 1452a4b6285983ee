// Verifier of rudnn.gated_delta. The contract is rudnn::contracts::check_gated_delta
// (core/contracts/gated_delta.cpp), as in the public API; then result types and kernel_config.
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

using namespace mlir;

namespace rudnn::dialect {

namespace {

FailureOr<contracts::GatedDeltaOperand> operandOf(Operation* op, Value value, StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  std::optional<DType> dtype = toDType(type.getElementType());
  if (!dtype)
    return op->emitOpError() << name << ": expected a rudnn element type (f32, f16, bf16, ...), got "
                             << type.getElementType();
  contracts::GatedDeltaOperand operand;
  operand.dtype = *dtype;
  for (std::int64_t d : type.getShape()) operand.shape.push_back(ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  return operand;
}

LogicalResult verifyResult(Operation* op, Value result, StringRef name, RankedTensorType want) {
  auto type = cast<RankedTensorType>(result.getType());
  bool ok = type.getElementType() == want.getElementType() && type.getRank() == want.getRank();
  for (std::int64_t d = 0; ok && d < type.getRank(); ++d)
    ok = ShapedType::isDynamic(type.getDimSize(d)) || ShapedType::isDynamic(want.getDimSize(d)) ||
         type.getDimSize(d) == want.getDimSize(d);
  if (!ok) return op->emitOpError() << name << ": expected " << want << ", got " << type;
  return success();
}

}  // namespace

std::optional<gated_delta_config::RecurrentTile> recurrentTileOf(DictionaryAttr config) {
  if (!config || config.size() != 2) return std::nullopt;
  auto w = config.getAs<IntegerAttr>(gated_delta_config::kWarps);
  auto r = config.getAs<IntegerAttr>(gated_delta_config::kRowsPerThread);
  if (!w || !r) return std::nullopt;
  return gated_delta_config::RecurrentTile{w.getInt(), r.getInt()};
}

std::optional<gated_delta_config::ChunkTile> chunkTileOf(DictionaryAttr config) {
  if (!config || config.size() != 3) return std::nullopt;
  auto t = config.getAs<IntegerAttr>(gated_delta_config::kThreads);
  auto c = config.getAs<IntegerAttr>(gated_delta_config::kColumns);
  auto tc = config.getAs<IntegerAttr>(gated_delta_config::kTensorCore);
  if (!t || !c || !tc) return std::nullopt;
  return gated_delta_config::ChunkTile{t.getInt(), c.getInt(), tc.getInt() != 0};
}

LogicalResult GatedDeltaOp::verify() {
  contracts::GatedDeltaSignature sig;
  const std::pair<Value, const char*> inputs[] = {{getQuery(), "query"},
                                                  {getKey(), "key"},
                                                  {getValue(), "value"},
                                                  {getBeta(), "beta"},
                                                  {getLogDecay(), "log_decay"}};
  contracts::GatedDeltaOperand* slots[] = {&sig.query, &sig.key, &sig.value, &sig.beta, &sig.log_decay};
  for (auto [input, slot] : llvm::zip(inputs, slots)) {
    auto operand = operandOf(*this, input.first, input.second);
    if (failed(operand)) return failure();
    *slot = *operand;
  }
  if (Value s = getInitialState()) {
    auto operand = operandOf(*this, s, "initial_state");
    if (failed(operand)) return failure();
    sig.initial_state = *operand;
  }
  sig.query_scale = getQueryScale().convertToDouble();
  sig.chunk_size = getChunkSizeAttr().getInt();
  if (auto error = contracts::check_gated_delta(sig)) return emitOpError() << error->message();

  auto q = cast<RankedTensorType>(getQuery().getType());
  auto v = cast<RankedTensorType>(getValue().getType());
  const std::int64_t b = q.getDimSize(0), h = q.getDimSize(1), t = q.getDimSize(2), k = q.getDimSize(3),
                     vd = v.getDimSize(3);
  Builder builder(getContext());
  if (failed(verifyResult(*this, getOutput(), "output", RankedTensorType::get({b, h, t, vd}, q.getElementType()))) ||
      failed(verifyResult(*this, getFinalState(), "final_state",
                          RankedTensorType::get({b, h, k, vd}, builder.getF32Type()))))
    return failure();
  if (DictionaryAttr config = getKernelConfigAttr())
    if (auto why = checkGatedDeltaConfig(*this, config)) return emitOpError() << "kernel_config: " << *why;
  return success();
}

std::optional<std::string> checkGatedDeltaConfig(GatedDeltaOp op, DictionaryAttr config) {
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  const std::int64_t k = q.getDimSize(3);
  std::string why;
  if (op.getChunkSizeAttr().getInt() == 0) {
    auto tile = recurrentTileOf(config);
    if (!tile) {
      llvm::raw_string_ostream(why) << "expected integers 'warps' and 'rows_per_thread', got " << config;
      return why;
    }
    return gated_delta_config::checkRecurrentTile(*tile, ShapedType::isDynamic(k) ? 0 : k);
  }
  auto tile = chunkTileOf(config);
  if (!tile) {
    llvm::raw_string_ostream(why) << "expected integers 'threads', 'columns' and 'tensor_core', got " << config;
    return why;
  }
  return gated_delta_config::checkChunkTile(*tile, !q.getElementType().isF32());
}

}  // namespace rudnn::dialect
