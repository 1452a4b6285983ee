// lower_attention: AttentionRequest → `func.func @main` with one rudnn.attention (batch and lengths
// dynamic) → verify → [resolve strategy] → select kernel config → lower to launch → KernelLaunches.
#include "Emitter/KernelSource.h"
#include "contracts/arch.h"
#include "Pipeline/Context.h"
#include "Pipeline/LaunchExtraction.h"
#include "Transforms/ResolveStrategy.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/compiler/pipeline.h"

using namespace mlir;

namespace rudnn::compiler {

using namespace pipeline_detail;

namespace {

// `dynamic`: which dims become dynamic; a mask/bias keeps a static 1 (broadcast) in dims 0 and 1.
RankedTensorType typeOf(MLIRContext* ctx, const contracts::AttentionOperand& o, std::initializer_list<int> dynamic,
                        bool keepOnes = false) {
  SmallVector<std::int64_t> shape(o.shape.begin(), o.shape.end());
  for (int d : dynamic)
    if (!(keepOnes && d < 2 && shape[static_cast<std::size_t>(d)] == 1))
      shape[static_cast<std::size_t>(d)] = ShapedType::kDynamic;
  return RankedTensorType::get(shape, dialect::toElementType(ctx, o.dtype));
}

}  // namespace

Result<LoweredOp, RuntimeError> lower_attention(const AttentionRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::AttentionSignature& sig = request.signature;
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  OpBuilder b(&ctx);
  SmallVector<Type> args = {typeOf(&ctx, sig.query, {0, 2}), typeOf(&ctx, sig.key, {0, 2}),
                            typeOf(&ctx, sig.value, {0, 2})};
  if (sig.mask) args.push_back(typeOf(&ctx, *sig.mask, {0, 2, 3}, true));
  if (sig.bias) args.push_back(typeOf(&ctx, *sig.bias, {0, 2, 3}, true));
  auto q = cast<RankedTensorType>(args[0]);
  auto out = RankedTensorType::get({ShapedType::kDynamic, q.getDimSize(1), ShapedType::kDynamic, sig.value.shape[3]},
                                   q.getElementType());
  b.setInsertionPointToEnd(module->getBody());
  auto main = func::FuncOp::create(b, b.getUnknownLoc(), "main", b.getFunctionType(args, {out}));
  Block* body = main.addEntryBlock();
  b.setInsertionPointToStart(body);
  unsigned next = 3;
  Value mask = sig.mask ? body->getArgument(next++) : Value();
  Value bias = sig.bias ? body->getArgument(next++) : Value();
  auto op = dialect::AttentionOp::create(b, b.getUnknownLoc(), out, body->getArgument(0), body->getArgument(1),
                                         body->getArgument(2), mask, bias,
                                         b.getF32FloatAttr(static_cast<float>(sig.scale)), b.getBoolAttr(sig.causal),
                                         b.getStringAttr(contracts::strategy_name(request.strategy)), DictionaryAttr());
  func::ReturnOp::create(b, b.getUnknownLoc(), op->getResults());
  if (request.config) op->setAttr(dialect::kKernelConfigAttrName, toDictionary(&ctx, *request.config));
  if (request.head_panels) op->setAttr(dialect::kHeadPanelsAttrName, b.getUnitAttr());
  if (request.short_panels) op->setAttr(dialect::kShortPanelsAttrName, b.getUnitAttr());

  SlotMap slots;
  slots.argSlot = {0, 1, 2};
  if (sig.mask) slots.argSlot.push_back(3);
  if (sig.bias) slots.argSlot.push_back(4);
  slots.numOperandSlots = 5;
  std::unique_ptr<Pass> strategy;
  if (request.provider && !request.config) {
    // @main's dynamic extents in order: B, Tq of query; B, Tk of key; B, Tk of value; then the
    // mask's and bias's dynamic dims.
    std::vector<std::int64_t> values;
    std::vector<const contracts::AttentionOperand*> operands = {&sig.query, &sig.key, &sig.value};
    if (sig.mask) operands.push_back(&*sig.mask);
    if (sig.bias) operands.push_back(&*sig.bias);
    for (std::size_t i = 0; i < args.size(); ++i) {
      auto rt = cast<RankedTensorType>(args[i]);
      const contracts::AttentionOperand* o = operands[i];
      for (std::int64_t d = 0; d < rt.getRank(); ++d)
        if (rt.isDynamicDim(d)) values.push_back(o->shape[static_cast<std::size_t>(d)]);
    }
    strategy = createResolveStrategyPass(request.provider, std::move(values));
  }
  return lowerModule(*module, "rudnn.attention", contracts::describe_call(sig), std::move(slots), target,
                     std::move(strategy));
}

bool attention_hints_short_panels(contracts::AttentionStrategy strategy, const std::string& arch) {
  return (strategy == contracts::AttentionStrategy::FlashBlackboxAccelerated ||
          strategy == contracts::AttentionStrategy::Autotune) &&
         contracts::has_wgmma(arch, /*host_emulation=*/true);  // the arch's hardware, opted in or not
}

std::vector<KernelConfig> attention_variants(contracts::AttentionStrategy strategy, DType dtype, std::int64_t head_dim,
                                             std::int64_t value_dim, bool wgmma) {
  using dialect::attention_config::Kind;
  MLIRContext& ctx = threadContext();
  std::vector<Kind> kinds;
  switch (strategy) {
    case contracts::AttentionStrategy::FlashBlackboxAccelerated: kinds = {Kind::FlashMma}; break;
    case contracts::AttentionStrategy::FlashUnit: kinds = {Kind::FlashUnit}; break;
    case contracts::AttentionStrategy::Fallback: kinds = {Kind::Fallback}; break;
    case contracts::AttentionStrategy::Autotune: kinds = {Kind::FlashMma, Kind::FlashUnit, Kind::Fallback}; break;
  }
  std::vector<KernelConfig> out;
  for (Kind kind : kinds)
    for (const auto& tile : dialect::attention_config::tilesFor(kind, dtype, head_dim, value_dim))
      if (wgmma || !tile.wgmma) out.push_back(toKernelConfig(dialect::attentionTileConfig(&ctx, tile)));
  return out;
}

}  // namespace rudnn::compiler
