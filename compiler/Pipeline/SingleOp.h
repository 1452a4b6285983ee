#pragma once
// The pipeline entries' common shape for an op whose operands are all @main arguments in order:
// @main(args) -> results with the one op `build` makes from the entry block's arguments, an optional
// forced kernel_config, slots = the arguments in order then the results, then lowerModule.
#include <optional>
#include <string>

#include "Emitter/KernelSource.h"
#include "Pipeline/Context.h"
#include "Pipeline/LaunchExtraction.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::compiler::pipeline_detail {

//
// `returned` (empty: all) picks the op results @main returns, in order (`results` are their types):
// a result nobody uses is one the op's lowering may skip (the paged backward's unselected outputs).
template <class Build>
Result<LoweredOp, RuntimeError> lowerSingleOp(llvm::ArrayRef<mlir::Type> args, llvm::ArrayRef<mlir::Type> results,
                                              const std::optional<KernelConfig>& config, std::string call,
                                              const Target& target, Build build, llvm::ArrayRef<bool> returned = {}) {
  mlir::MLIRContext& ctx = threadContext();
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx));
  mlir::OpBuilder b(&ctx);
  b.setInsertionPointToEnd(module->getBody());
  auto main = mlir::func::FuncOp::create(b, b.getUnknownLoc(), "main", b.getFunctionType(args, results));
  mlir::Block* body = main.addEntryBlock();
  b.setInsertionPointToStart(body);
  mlir::Operation* op = build(b, body->getArguments());
  llvm::SmallVector<mlir::Value> outputs;
  for (mlir::OpResult r : op->getResults())
    if (returned.empty() || returned[r.getResultNumber()]) outputs.push_back(r);
  mlir::func::ReturnOp::create(b, b.getUnknownLoc(), outputs);
  if (config) op->setAttr(dialect::kKernelConfigAttrName, toDictionary(&ctx, *config));
  SlotMap slots;
  for (std::size_t i = 0; i < args.size(); ++i) slots.argSlot.push_back(static_cast<int>(i));
  slots.numOperandSlots = static_cast<int>(args.size());
  return lowerModule(*module, op->getName().getStringRef().str(), std::move(call), std::move(slots), target);
}

}  // namespace rudnn::compiler::pipeline_detail
