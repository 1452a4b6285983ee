// lower_gated_delta: GatedDeltaRequest → `func.func @main` with one rudnn.gated_delta (batch, heads
// and seq dynamic; key_dim, value_dim static) → verify → select kernel config → lower to launch.
#include "Emitter/KernelSource.h"
#include "Pipeline/Context.h"
#include "Pipeline/LaunchExtraction.h"
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

// The operand's type with its first `dynamic` dims dynamic.
RankedTensorType typeOf(MLIRContext* ctx, const contracts::GatedDeltaOperand& o, std::size_t dynamic) {
  SmallVector<std::int64_t> shape;
  for (std::size_t i = 0; i < o.shape.size(); ++i)
    shape.push_back(i < dynamic || o.shape[i] == contracts::kDynamic ? ShapedType::kDynamic : o.shape[i]);
  return RankedTensorType::get(shape, dialect::toElementType(ctx, o.dtype));
}

}  // namespace

Result<LoweredOp, RuntimeError> lower_gated_delta(const GatedDeltaRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::GatedDeltaSignature& sig = request.signature;
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  OpBuilder b(&ctx);
  SmallVector<Type> args = {typeOf(&ctx, sig.query, 3), typeOf(&ctx, sig.key, 3), typeOf(&ctx, sig.value, 3),
                            typeOf(&ctx, sig.beta, 3), typeOf(&ctx, sig.log_decay, 3)};
  if (sig.initial_state) args.push_back(typeOf(&ctx, *sig.initial_state, 2));
  auto q = cast<RankedTensorType>(args[0]);
  auto v = cast<RankedTensorType>(args[2]);
  const std::int64_t dyn = ShapedType::kDynamic;
  auto output = RankedTensorType::get({dyn, dyn, dyn, v.getDimSize(3)}, q.getElementType());
  auto state = RankedTensorType::get({dyn, dyn, q.getDimSize(3), v.getDimSize(3)}, b.getF32Type());

  b.setInsertionPointToEnd(module->getBody());
  auto main = func::FuncOp::create(b, b.getUnknownLoc(), "main", b.getFunctionType(args, {output, state}));
  Block* body = main.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value initial = sig.initial_state ? body->getArgument(5) : Value();
  auto op = dialect::GatedDeltaOp::create(
      b, b.getUnknownLoc(), TypeRange{output, state}, body->getArgument(0), body->getArgument(1), body->getArgument(2),
      body->getArgument(3), body->getArgument(4), initial, b.getF32FloatAttr(static_cast<float>(sig.query_scale)),
      b.getI64IntegerAttr(sig.chunk_size), DictionaryAttr());
  func::ReturnOp::create(b, b.getUnknownLoc(), op->getResults());
  if (request.config) op->setAttr(dialect::kKernelConfigAttrName, toDictionary(&ctx, *request.config));

  SlotMap slots;
  slots.argSlot = {0, 1, 2, 3, 4};
  if (sig.initial_state) slots.argSlot.push_back(5);
  slots.numOperandSlots = 6;
  std::vector<const contracts::NormOperand*> arguments = {&sig.query, &sig.key, &sig.value, &sig.beta, &sig.log_decay};
  if (sig.initial_state) arguments.push_back(&*sig.initial_state);
  auto strategy = strategyPass(*module, request.provider, request.config.has_value(), arguments);
  return lowerModule(*module, "rudnn.gated_delta", contracts::describe_call(sig), std::move(slots), target,
                     std::move(strategy));
}

std::vector<KernelConfig> gated_delta_variants(bool chunked, std::int64_t key_dim, DType dtype) {
  namespace cfg = dialect::gated_delta_config;
  std::vector<KernelConfig> out;
  if (chunked) {
    for (const cfg::ChunkTile& t : cfg::chunkTiles())
      if (!t.tensorCore || dtype != DType::F32)
        out.push_back(KernelConfig{
            {{cfg::kThreads, t.threads}, {cfg::kColumns, t.columns}, {cfg::kTensorCore, t.tensorCore ? 1 : 0}}});
  } else {
    for (const cfg::RecurrentTile& t : cfg::recurrentTiles())
      if (t.maxKeyDim() >= key_dim)
        out.push_back(KernelConfig{{{cfg::kWarps, t.warps}, {cfg::kRowsPerThread, t.rowsPerThread}}});
  }
  return out;
}

}  // namespace rudnn::compiler
