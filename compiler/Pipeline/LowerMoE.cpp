// lower_dispatch / lower_experts / lower_combine: one MoE op per `func.func @main` (token rows
// dynamic, H, top_k, E, I static) → verify → select kernel config → lower to launch → KernelLaunches.
#include <fmt/format.h>

#include "Emitter/KernelSource.h"
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

// @main(args) -> results around the op `build` creates from @main's arguments.
template <class Build>
Operation* buildMain(ModuleOp module, ArrayRef<Type> args, ArrayRef<Type> results, Build build) {
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto main = func::FuncOp::create(b, b.getUnknownLoc(), "main", b.getFunctionType(args, results));
  Block* body = main.addEntryBlock();
  b.setInsertionPointToStart(body);
  Operation* op = build(b, body->getArguments());
  func::ReturnOp::create(b, b.getUnknownLoc(), op->getResults());
  return op;
}

// [?, last]: the rows of a token/row-major operand are dynamic, its last dim static.
RankedTensorType rowsType(MLIRContext* ctx, const contracts::MoeOperand& operand) {
  return tensorType(ctx, operand, /*dynamicLeading=*/true);
}

SlotMap identitySlots(int operands) {
  SlotMap slots;
  for (int i = 0; i < operands; ++i) slots.argSlot.push_back(i);
  slots.numOperandSlots = operands;
  return slots;
}

void attachConfig(Operation* op, const std::optional<KernelConfig>& config) {
  if (config) op->setAttr(dialect::kKernelConfigAttrName, toDictionary(op->getContext(), *config));
}

}  // namespace

Result<LoweredOp, RuntimeError> lower_dispatch(const DispatchRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::DispatchSignature& sig = request.signature;
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  RankedTensorType input = rowsType(&ctx, sig.input), indices = rowsType(&ctx, sig.indices);
  Builder b(&ctx);
  auto rows = RankedTensorType::get({ShapedType::kDynamic, input.getDimSize(1)}, input.getElementType());
  auto offsets = RankedTensorType::get({sig.experts + 1}, indices.getElementType());
  buildMain(*module, {input, indices}, {rows, offsets, indices}, [&](OpBuilder& ob, ValueRange args) {
    auto op = dialect::DispatchOp::create(ob, ob.getUnknownLoc(), TypeRange{rows, offsets, indices}, args[0], args[1],
                                          b.getI64IntegerAttr(sig.experts), DictionaryAttr());
    attachConfig(op, request.config);
    return op.getOperation();
  });
  auto strategy = strategyPass(*module, request.provider, request.config.has_value(), {&sig.input, &sig.indices});
  return lowerModule(*module, "rudnn.dispatch", contracts::describe_call(sig), identitySlots(2), target,
                     std::move(strategy));
}

Result<LoweredOp, RuntimeError> lower_experts(const ExpertsRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::ExpertsSignature& sig = request.signature;
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  RankedTensorType rows = rowsType(&ctx, sig.rows);
  RankedTensorType offsets = tensorType(&ctx, sig.offsets, false);
  RankedTensorType gate = tensorType(&ctx, sig.weights.gate, false), up = tensorType(&ctx, sig.weights.up, false),
                   down = tensorType(&ctx, sig.weights.down, false);
  Builder b(&ctx);
  buildMain(*module, {rows, offsets, gate, up, down}, {rows}, [&](OpBuilder& ob, ValueRange args) {
    auto op = dialect::SwiGluExpertsOp::create(
        ob, ob.getUnknownLoc(), TypeRange{rows}, args[0], args[1], args[2], args[3], args[4],
        b.getStringAttr(contracts::strategy_name(request.strategy)), DictionaryAttr());
    attachConfig(op, request.config);
    if (request.rows_per_expert >= 0)
      op->setAttr(dialect::kRowsPerExpertAttrName, b.getI64IntegerAttr(request.rows_per_expert));
    return op.getOperation();
  });
  std::unique_ptr<Pass> strategy;
  if (request.provider && !request.config) {
    // @main's one dynamic extent: the rows of `rows`.
    const std::int64_t rows = sig.rows.shape.empty() ? 0 : sig.rows.shape[0];
    strategy = createResolveStrategyPass(request.provider, {rows});
  }
  return lowerModule(*module, "rudnn.swiglu_experts", contracts::describe_call(sig), identitySlots(5), target,
                     std::move(strategy));
}

Result<LoweredOp, RuntimeError> lower_combine(const CombineRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::CombineSignature& sig = request.signature;
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  RankedTensorType rows = rowsType(&ctx, sig.expert_rows), slots = rowsType(&ctx, sig.slots),
                   weights = rowsType(&ctx, sig.weights);
  auto out = RankedTensorType::get({ShapedType::kDynamic, rows.getDimSize(1)}, rows.getElementType());
  buildMain(*module, {rows, slots, weights}, {out}, [&](OpBuilder& ob, ValueRange args) {
    auto op =
        dialect::CombineOp::create(ob, ob.getUnknownLoc(), TypeRange{out}, args[0], args[1], args[2], DictionaryAttr());
    attachConfig(op, request.config);
    return op.getOperation();
  });
  auto strategy =
      strategyPass(*module, request.provider, request.config.has_value(), {&sig.expert_rows, &sig.slots, &sig.weights});
  return lowerModule(*module, "rudnn.combine", contracts::describe_call(sig), identitySlots(3), target,
                     std::move(strategy));
}

namespace {

std::vector<KernelConfig> rowCopyVariants(DType dtype, std::int64_t hidden, bool dispatch) {
  std::vector<KernelConfig> out;
  for (std::int64_t threads : dialect::moe_config::kRowThreadsChoices)
    for (std::int64_t width : dialect::moe_config::rowVectorWidths(dtype, hidden)) {
      KernelConfig c{{{dialect::moe_config::kThreads, threads}, {dialect::moe_config::kVectorWidth, width}}};
      if (!dispatch) {
        out.push_back(c);
        continue;
      }
      for (std::int64_t rank : dialect::moe_config::kRankThreadsChoices) {
        KernelConfig d = c;
        d.values.push_back({dialect::moe_config::kRankThreads, rank});
        out.push_back(d);
      }
    }
  return out;
}

}  // namespace

std::vector<KernelConfig> dispatch_variants(DType dtype, std::int64_t hidden) {
  return rowCopyVariants(dtype, hidden, true);
}

std::vector<KernelConfig> combine_variants(DType dtype, std::int64_t hidden) {
  return rowCopyVariants(dtype, hidden, false);
}

std::vector<KernelConfig> expert_variants(bool tensor_core, bool wgmma) {
  MLIRContext& ctx = threadContext();
  std::vector<KernelConfig> out;
  const auto& tiles = tensor_core ? dialect::moe_config::tensorCoreTiles() : dialect::moe_config::scalarTiles();
  for (const auto& t : tiles)
    if (wgmma || !t.wgmma) out.push_back(toKernelConfig(dialect::expertTileConfig(&ctx, t)));
  return out;
}

}  // namespace rudnn::compiler
