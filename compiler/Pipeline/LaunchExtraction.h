#pragma once
// Shared by the pipeline entries (LowerNormalization.cpp, LowerRouting.cpp): @main argument types
// and the translation of a rudnn.launch into a plain-C++ KernelLaunch over the request's slots.
#include <memory>
#include <string>
#include <vector>

#include "contracts/normalization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/compiler/kernel_launch.h"
#include "rudnn/compiler/pipeline.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/Pass/Pass.h"

namespace rudnn::compiler::pipeline_detail {

// The operand as @main's argument type: leading dims dynamic when `dynamicLeading`, the last dim
// static (a kDynamic extent stays dynamic).
mlir::RankedTensorType tensorType(mlir::MLIRContext* ctx, const contracts::NormOperand& operand, bool dynamicLeading);

// Maps the launch's numbering (its operands, then its results) onto the request's slots (the
// op's operands in order, an absent optional one keeping its slot, then the op's results, then
// the temporaries: launch results that later launches read but @main does not return).
struct SlotMap {
  std::vector<int> argSlot;  // @main argument → slot
  int numOperandSlots = 0;
  mutable mlir::func::ReturnOp ret;  // mutable: op handles are not const-correct
  // Filled in as launches are translated in program order (a producer before its readers).
  mutable std::vector<Temporary> temporaries;
  mutable llvm::DenseMap<mlir::Value, int> temporarySlot;

  int firstTemporarySlot() const { return numOperandSlots + static_cast<int>(ret->getNumOperands()); }
  mlir::FailureOr<int> slotOf(dialect::LaunchOp launch, std::int64_t index) const;
};

mlir::FailureOr<KernelLaunch> toKernelLaunch(dialect::LaunchOp launch, const SlotMap& slots);

// The part every pipeline entry shares once it has built its one-op @main: verify (the op's
// verifier is the contract), run `strategy` (when given), select-kernel-config and lower-to-launch,
// then turn @main's launches into KernelLaunches over `slots` (whose `ret` this fills in).
// Diagnostics of every step end up in the returned error.
Result<LoweredOp, RuntimeError> lowerModule(mlir::ModuleOp module, const std::string& opName, std::string call,
                                            SlotMap slots, const Target& target,
                                            std::unique_ptr<mlir::Pass> strategy = nullptr);

// rudnn-resolve-strategy for a request's one-op module, or null when there is nothing to ask (no
// provider, or a forced config). `arguments` are the call's operands in @main's argument order:
// their extents at @main's dynamic dims are this call's dynamic values.
std::unique_ptr<mlir::Pass> strategyPass(mlir::ModuleOp module, ConfigProvider* provider, bool forcedConfig,
                                         const std::vector<const contracts::NormOperand*>& arguments);

}  // namespace rudnn::compiler::pipeline_detail
