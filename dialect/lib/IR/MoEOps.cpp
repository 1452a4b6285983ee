// Verifiers of the MoE routing ops. The contract itself is rudnn::contracts::check_route /
// check_route_sigmoid_grouped (core/contracts/moe.cpp): the verifier and the public API reject the
// same calls with the same message. Then the IR-only rules: result types and kernel_config.
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

using namespace mlir;

namespace rudnn::dialect {

std::optional<RouteOpView> asRouteOp(Operation* op) {
  RouteOpView view;
  view.op = op;
  if (auto r = dyn_cast<RouteOp>(op)) {
    view.logits = r.getLogits();
    view.options.top_k = r.getTopK();
    view.options.renormalize = r.getRenormalize();
    view.kernelConfig = r.getKernelConfigAttr();
  } else if (auto g = dyn_cast<RouteSigmoidGroupedOp>(op)) {
    view.grouped = true;
    view.logits = g.getLogits();
    view.bias = g.getBias();
    view.options.top_k = g.getTopK();
    view.options.groups = g.getGroups();
    view.options.selected_groups = g.getSelectedGroups();
    view.options.group_top_two = g.getGroupTopTwo();
    view.options.renormalize = g.getRenormalize();
    view.options.scale = g.getScale().convertToDouble();
    view.kernelConfig = g.getKernelConfigAttr();
  } else {
    return std::nullopt;
  }
  return view;
}

namespace {

FailureOr<contracts::MoeOperand> toOperand(Operation* op, Value value, StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  std::optional<DType> dtype = toDType(type.getElementType());
  if (!dtype)
    return op->emitOpError() << name << ": expected a rudnn element type (f32, f16, bf16, ...), got "
                             << type.getElementType();
  contracts::MoeOperand operand;
  operand.dtype = *dtype;
  operand.device = 0;
  for (std::int64_t d : type.getShape()) operand.shape.push_back(ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  return operand;
}

bool extentMatches(std::int64_t a, std::int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

LogicalResult verifyResult(Operation* op, Value result, StringRef name, Type elementType, std::int64_t tokens,
                           std::int64_t topK) {
  auto type = cast<RankedTensorType>(result.getType());
  if (type.getElementType() != elementType || type.getRank() != 2 || !extentMatches(type.getDimSize(0), tokens) ||
      !extentMatches(type.getDimSize(1), topK))
    return op->emitOpError() << name << ": expected " << RankedTensorType::get({tokens, topK}, elementType) << ", got "
                             << type;
  return success();
}

LogicalResult verifyRouteOp(Operation* op) {
  std::optional<RouteOpView> view = asRouteOp(op);
  auto logits = toOperand(op, view->logits, "logits");
  if (failed(logits)) return failure();
  if (view->grouped) {
    contracts::GroupRouteSignature sig = view->options;
    sig.logits = *logits;
    if (view->bias) {
      auto bias = toOperand(op, view->bias, "bias");
      if (failed(bias)) return failure();
      sig.bias = *bias;
    }
    if (auto error = contracts::check_route_sigmoid_grouped(sig)) return op->emitOpError() << error->message();
  } else {
    contracts::RouteSignature sig;
    sig.logits = *logits;
    sig.top_k = view->options.top_k;
    sig.renormalize = view->options.renormalize;
    if (auto error = contracts::check_route(sig)) return op->emitOpError() << error->message();
  }
  RankedTensorType type = view->logitsType();
  const std::int64_t tokens = type.getDimSize(0), topK = view->options.top_k;
  Builder b(op->getContext());
  if (failed(verifyResult(op, op->getResult(0), "indices", b.getIntegerType(32, /*isSigned=*/false), tokens, topK)) ||
      failed(verifyResult(op, op->getResult(1), "weights", type.getElementType(), tokens, topK)))
    return failure();
  if (view->kernelConfig)
    if (auto why = checkRouteConfig(view->kernelConfig)) return op->emitOpError() << "kernel_config: " << *why;
  return success();
}

}  // namespace

std::optional<std::string> checkRouteConfig(DictionaryAttr config) {
  auto rows = config.getAs<IntegerAttr>(route_config::kRowsPerBlock);
  if (!rows || config.size() != 1) {
    std::string why;
    llvm::raw_string_ostream(why) << "expected exactly an integer 'rows_per_block', got " << config;
    return why;
  }
  bool known = false;
  for (std::int64_t c : route_config::kRowsPerBlockChoices) known |= rows.getInt() == c;
  if (!known) return "rows_per_block must be 1, 2, 4 or 8, got " + std::to_string(rows.getInt());
  return std::nullopt;
}

LogicalResult RouteOp::verify() { return verifyRouteOp(getOperation()); }
LogicalResult RouteSigmoidGroupedOp::verify() { return verifyRouteOp(getOperation()); }

// --- dispatch, experts, combine ------------------------------------------------------------

// kernel_config of dispatch/combine: the row-copy keys (+ rank_threads for dispatch), nothing else.
std::optional<std::string> checkRowCopyConfig(DictionaryAttr config, RankedTensorType rowType, bool dispatch) {
  auto threads = config.getAs<IntegerAttr>(moe_config::kThreads);
  auto width = config.getAs<IntegerAttr>(moe_config::kVectorWidth);
  auto rank = config.getAs<IntegerAttr>(moe_config::kRankThreads);
  const std::size_t keys = dispatch ? 3 : 2;
  if (!threads || !width || (dispatch && !rank) || config.size() != keys) {
    std::string why;
    llvm::raw_string_ostream(why) << "expected integers " << (dispatch ? "'rank_threads', " : "")
                                  << "'threads' and 'vector_width', got " << config;
    return why;
  }
  if (dispatch && llvm::find(moe_config::kRankThreadsChoices, rank.getInt()) == moe_config::kRankThreadsChoices.end())
    return "rank_threads must be 256, 512 or 1024, got " + std::to_string(rank.getInt());
  std::int64_t h = rowType.getDimSize(1);
  if (ShapedType::isDynamic(h)) h = -1;
  return moe_config::checkRowCopyConfig({threads.getInt(), width.getInt()}, *toDType(rowType.getElementType()), h);
}

namespace {

// For values whose element type the verifier has already accepted.
contracts::MoeOperand operandOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  contracts::MoeOperand operand;
  operand.dtype = toDType(type.getElementType()).value_or(DType::F32);
  operand.device = 0;
  for (std::int64_t d : type.getShape()) operand.shape.push_back(ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  return operand;
}

LogicalResult verifyType(Operation* op, Value value, StringRef name, RankedTensorType want) {
  auto type = cast<RankedTensorType>(value.getType());
  bool ok = type.getElementType() == want.getElementType() && type.getRank() == want.getRank();
  for (std::int64_t d = 0; ok && d < type.getRank(); ++d) ok = extentMatches(type.getDimSize(d), want.getDimSize(d));
  if (!ok) return op->emitOpError() << name << ": expected " << want << ", got " << type;
  return success();
}

std::int64_t product(std::int64_t a, std::int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) ? ShapedType::kDynamic : a * b;
}

LogicalResult verifyRowCopyConfig(Operation* op, DictionaryAttr config, RankedTensorType rowType, bool dispatch) {
  if (!config) return success();
  if (auto why = checkRowCopyConfig(config, rowType, dispatch)) return op->emitOpError() << "kernel_config: " << *why;
  return success();
}

// Every operand has a rudnn element type (else an error naming it).
LogicalResult verifyElementTypes(Operation* op, ArrayRef<StringRef> names) {
  for (auto [value, name] : llvm::zip(op->getOperands(), names))
    if (failed(toOperand(op, value, name))) return failure();
  return success();
}

}  // namespace

LogicalResult DispatchOp::verify() {
  if (failed(verifyElementTypes(*this, {"input", "indices"}))) return failure();
  contracts::DispatchSignature sig{operandOf(getInput()), operandOf(getIndices()), getExpertsAttr().getInt()};
  if (auto error = contracts::check_dispatch(sig)) return emitOpError() << error->message();
  // Indices straight from a routing op of known expert count: `experts` must be that count (the
  // routing decides which experts run; the attribute only sizes the offsets). Indices from
  // elsewhere (an argument) carry no count to compare with.
  mlir::Operation* producer = getIndices().getDefiningOp();  // null for a block argument
  std::optional<RouteOpView> route = producer ? asRouteOp(producer) : std::nullopt;
  if (route && getIndices() == producer->getResult(0)) {
    const std::int64_t routed = route->logitsType().getDimSize(1);
    if (!ShapedType::isDynamic(routed) && routed != getExpertsAttr().getInt())
      return emitOpError() << "experts: expected " << routed << " (the experts of the " << route->op->getName()
                           << " its indices come from), got " << getExpertsAttr().getInt();
  }
  auto input = cast<RankedTensorType>(getInput().getType());
  auto indices = cast<RankedTensorType>(getIndices().getType());
  const std::int64_t assignments = product(indices.getDimSize(0), indices.getDimSize(1));
  if (failed(verifyType(*this, getRows(), "rows",
                        RankedTensorType::get({assignments, input.getDimSize(1)}, input.getElementType()))) ||
      failed(verifyType(*this, getOffsets(), "offsets",
                        RankedTensorType::get({getExpertsAttr().getInt() + 1}, indices.getElementType()))) ||
      failed(verifyType(*this, getSlots(), "slots", indices)))
    return failure();
  return verifyRowCopyConfig(*this, getKernelConfigAttr(), input, /*dispatch=*/true);
}

contracts::ExpertWeights expertWeightsOf(SwiGluExpertsOp op) {
  return {operandOf(op.getGate()), operandOf(op.getUp()), operandOf(op.getDown())};
}

std::optional<moe_config::ExpertTile> expertTileOf(DictionaryAttr config) {
  if (!config) return std::nullopt;
  auto get = [&](const char* key) -> std::optional<std::int64_t> {
    if (auto v = config.getAs<IntegerAttr>(key)) return v.getInt();
    return std::nullopt;
  };
  auto tc = get(moe_config::kTensorCore);
  if (!tc) return std::nullopt;
  moe_config::ExpertTile t;
  t.tensorCore = *tc != 0;
  auto m = get(moe_config::kBlockM), n = get(moe_config::kBlockN), k = get(moe_config::kBlockK);
  auto a = get(t.tensorCore ? moe_config::kWarpsM : moe_config::kThreadM);
  auto b = get(t.tensorCore ? moe_config::kWarpsN : moe_config::kThreadN);
  auto stages = t.tensorCore ? get(moe_config::kStages) : std::optional<std::int64_t>(0);
  auto wgmma = get(moe_config::kWgmma);  // 1 on wgmma tiles (tensor core only); 0, or omitted, elsewhere
  if (wgmma && (*wgmma < 0 || *wgmma > 1 || (*wgmma == 1 && !t.tensorCore))) return std::nullopt;
  if (!m || !n || !k || !a || !b || !stages || config.size() != (t.tensorCore ? 7u : 6u) + (wgmma ? 1u : 0u))
    return std::nullopt;
  t.blockM = *m, t.blockN = *n, t.blockK = *k, t.a = *a, t.b = *b, t.stages = *stages, t.wgmma = wgmma == 1;
  return t;
}

DictionaryAttr expertTileConfig(MLIRContext* ctx, const moe_config::ExpertTile& t) {
  Builder b(ctx);
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr(moe_config::kTensorCore, b.getI64IntegerAttr(t.tensorCore ? 1 : 0)),
      b.getNamedAttr(moe_config::kBlockM, b.getI64IntegerAttr(t.blockM)),
      b.getNamedAttr(moe_config::kBlockN, b.getI64IntegerAttr(t.blockN)),
      b.getNamedAttr(moe_config::kBlockK, b.getI64IntegerAttr(t.blockK)),
      b.getNamedAttr(t.tensorCore ? moe_config::kWarpsM : moe_config::kThreadM, b.getI64IntegerAttr(t.a)),
      b.getNamedAttr(t.tensorCore ? moe_config::kWarpsN : moe_config::kThreadN, b.getI64IntegerAttr(t.b))};
  if (t.tensorCore) entries.push_back(b.getNamedAttr(moe_config::kStages, b.getI64IntegerAttr(t.stages)));
  if (t.wgmma) entries.push_back(b.getNamedAttr(moe_config::kWgmma, b.getI64IntegerAttr(1)));
  return b.getDictionaryAttr(entries);
}

LogicalResult SwiGluExpertsOp::verify() {
  const StringRef strategy = getStrategy();
  if (strategy != "scalar" && strategy != "tensor_core" && strategy != "auto")
    return emitOpError() << "strategy: expected \"scalar\", \"tensor_core\" or \"auto\", got \"" << strategy << "\"";
  if (failed(verifyElementTypes(*this, {"rows", "offsets", "gate", "up", "down"}))) return failure();
  contracts::ExpertsSignature sig{expertWeightsOf(*this), operandOf(getRows()), operandOf(getOffsets())};
  if (auto error = contracts::check_experts(sig)) return emitOpError() << error->message();
  if (failed(verifyType(*this, getOutput(), "output", cast<RankedTensorType>(getRows().getType())))) return failure();
  bool tensorCore = strategy == "tensor_core";
  if (DictionaryAttr config = getKernelConfigAttr()) {
    std::optional<moe_config::ExpertTile> tile = expertTileOf(config);
    if (!tile)
      return emitOpError() << "kernel_config: expected integers tensor_core, block_m, block_n, block_k and "
                              "thread_m, thread_n (scalar) or warps_m, warps_n, stages (tensor core), and wgmma = 1 "
                              "on a wgmma tile (0 or absent elsewhere), got "
                           << config;
    if (auto why = moe_config::checkExpertTile(*tile)) return emitOpError() << "kernel_config: " << *why;
    if (strategy != "auto" && tile->tensorCore != tensorCore)
      return emitOpError() << "kernel_config: a " << (tile->tensorCore ? "tensor_core" : "scalar")
                           << " tile for strategy \"" << strategy << "\"";
    tensorCore = tile->tensorCore;
  }
  if (tensorCore)
    if (auto error = contracts::check_tensor_core_experts(sig.weights, "")) return emitOpError() << error->message();
  return success();
}

LogicalResult CombineOp::verify() {
  if (failed(verifyElementTypes(*this, {"expert_output", "slots", "weights"}))) return failure();
  contracts::CombineSignature sig{operandOf(getExpertRows()), operandOf(getSlots()), operandOf(getWeights())};
  if (auto error = contracts::check_combine(sig)) return emitOpError() << error->message();
  auto rows = cast<RankedTensorType>(getExpertRows().getType());
  auto slots = cast<RankedTensorType>(getSlots().getType());
  if (failed(verifyType(*this, getOutput(), "output",
                        RankedTensorType::get({slots.getDimSize(0), rows.getDimSize(1)}, rows.getElementType()))))
    return failure();
  return verifyRowCopyConfig(*this, getKernelConfigAttr(), rows, /*dispatch=*/false);
}

}  // namespace rudnn::dialect
