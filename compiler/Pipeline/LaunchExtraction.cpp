// The part of the pipeline every entry shares: @main argument types, the slot map from launches to
// the call's operands/results/temporaries, rudnn.launch → KernelLaunch, and lowerModule (verify →
// passes → launches).
#include "Pipeline/LaunchExtraction.h"

#include <fmt/format.h>

#include "Emitter/KernelSource.h"
#include "Transforms/ResolveStrategy.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"

using namespace mlir;

namespace rudnn::compiler {

namespace pipeline_detail {

// The request's operands as @main's arguments. Leading dims become dynamic so that one lowering
// serves every batch/token count; the last dim (H) stays static, the kernel config depends on it.
RankedTensorType tensorType(MLIRContext* ctx, const contracts::NormOperand& operand, bool dynamicLeading) {
  SmallVector<std::int64_t> shape;
  for (std::size_t i = 0; i < operand.shape.size(); ++i) {
    const bool leading = i + 1 < operand.shape.size();
    const std::int64_t d = operand.shape[i];
    shape.push_back((leading && dynamicLeading) || d == contracts::kDynamic ? ShapedType::kDynamic : d);
  }
  return RankedTensorType::get(shape, dialect::toElementType(ctx, operand.dtype));
}

// Maps the launch's numbering (its operands, then its results) onto the request's slots (the
// op's operands in order, an absent optional one keeping its slot, then the op's results).
namespace {
FailureOr<SizeExpr> toSizeExpr(dialect::LaunchOp launch, dialect::SizeExprAttr attr, const SlotMap& slots);
}  // namespace

FailureOr<int> SlotMap::slotOf(dialect::LaunchOp launch, std::int64_t index) const {
  const bool isOperand = index < launch->getNumOperands();
  Value value = isOperand ? launch->getOperand(index) : launch->getResult(index - launch->getNumOperands());
  if (auto arg = dyn_cast<BlockArgument>(value)) return argSlot[arg.getArgNumber()];
  for (OpOperand& use : value.getUses())
    if (use.getOwner() == ret.getOperation()) return numOperandSlots + static_cast<int>(use.getOperandNumber());
  if (auto it = temporarySlot.find(value); it != temporarySlot.end()) return it->second;
  // A result no one returns: a temporary, sized by its producer's result_elements.
  auto producer = value.getDefiningOp<dialect::LaunchOp>();
  ArrayAttr sizes = producer ? producer.getResultElementsAttr() : ArrayAttr();
  if (!sizes) return failure();
  const unsigned result = cast<OpResult>(value).getResultNumber();
  FailureOr<SizeExpr> elements = toSizeExpr(producer, cast<dialect::SizeExprAttr>(sizes[result]), *this);
  if (failed(elements)) return failure();
  const int slot = firstTemporarySlot() + static_cast<int>(temporaries.size());
  auto type = cast<RankedTensorType>(value.getType());
  std::optional<DType> dtype = dialect::toDType(type.getElementType());
  if (!dtype) return failure();
  std::vector<std::int64_t> shape(type.getShape().begin(), type.getShape().end());
  if (type.getNumDynamicDims() > 1) return failure();  // elements alone cannot size two extents
  for (std::int64_t& d : shape)
    if (ShapedType::isDynamic(d)) d = -1;
  temporaries.push_back({*elements, static_cast<std::int64_t>(dtype_size(*dtype)), std::move(shape)});
  temporarySlot[value] = slot;
  return slot;
}

namespace {
FailureOr<SizeExpr> toSizeExpr(dialect::LaunchOp launch, dialect::SizeExprAttr attr, const SlotMap& slots) {
  SizeExpr expr;
  expr.divisor = attr.getDivisor();
  for (const dialect::SizeFactor& f : attr.getFactors()) {
    SizeRef ref;
    switch (f.kind) {
      case dialect::SizeFactor::Kind::Const:
        ref.kind = SizeRef::Kind::Const;
        ref.value = f.value;
        break;
      case dialect::SizeFactor::Kind::Rows: ref.kind = SizeRef::Kind::Rows; break;
      case dialect::SizeFactor::Kind::RowStride: ref.kind = SizeRef::Kind::RowStride; break;
      case dialect::SizeFactor::Kind::Dim:
        ref.kind = SizeRef::Kind::Dim;
        ref.dim = static_cast<int>(f.dim);
        break;
      case dialect::SizeFactor::Kind::Stride:
        ref.kind = SizeRef::Kind::Stride;
        ref.dim = static_cast<int>(f.dim);
        break;
    }
    if (ref.kind != SizeRef::Kind::Const) {
      FailureOr<int> slot = slots.slotOf(launch, f.operand);
      if (failed(slot)) return failure();
      ref.operand = *slot;
    }
    expr.factors.push_back(ref);
  }
  return expr;
}

}  // namespace

FailureOr<KernelLaunch> toKernelLaunch(dialect::LaunchOp launch, const SlotMap& slots) {
  KernelLaunch out;
  out.entry = launch.getKernel().str();
  out.source = emitKernelSource(launch);
  out.config = toKernelConfig(launch.getKernelConfig());
  ArrayRef<std::int64_t> block = launch.getBlock();
  out.block = {block[0], block[1], block[2]};
  out.dynamic_shared_bytes = launch.getDynamicSharedBytes();
  for (auto [i, size] : llvm::enumerate(launch.getGrid().getAsRange<dialect::SizeExprAttr>())) {
    FailureOr<SizeExpr> expr = toSizeExpr(launch, size, slots);
    if (failed(expr)) return failure();
    out.grid[i] = *expr;
  }
  for (dialect::KernelParamAttr attr : launch.getParams().getAsRange<dialect::KernelParamAttr>()) {
    KernelParam param;
    param.c_type = attr.getCType().str();
    param.name = attr.getName().str();
    switch (attr.getKind()) {
      case dialect::KernelParamKind::Buffer: {
        param.kind = KernelParam::Kind::Buffer;
        FailureOr<int> slot = slots.slotOf(launch, attr.getOperand());
        if (failed(slot)) return failure();
        param.operand = *slot;
        break;
      }
      case dialect::KernelParamKind::NullBuffer: param.kind = KernelParam::Kind::NullBuffer; break;
      case dialect::KernelParamKind::Size: {
        param.kind = KernelParam::Kind::Size;
        FailureOr<SizeExpr> expr = toSizeExpr(launch, attr.getSize(), slots);
        if (failed(expr)) return failure();
        param.size = *expr;
        break;
      }
      case dialect::KernelParamKind::F32:
        param.kind = KernelParam::Kind::F32;
        param.f32 = attr.getValue().getValue().convertToFloat();
        break;
    }
    out.params.push_back(std::move(param));
  }
  return out;
}

Result<LoweredOp, RuntimeError> lowerModule(ModuleOp module, const std::string& opName, std::string call, SlotMap slots,
                                            const Target& target, std::unique_ptr<Pass> strategy) {
  MLIRContext* ctx = module.getContext();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic& diag) {
    if (!diagnostics.empty()) diagnostics += "; ";
    diagnostics += diag.str();
    return success();
  });
  if (failed(verify(module)))
    return RuntimeError(ErrorKind::InvalidValue, opName, "a call its verifier accepts", diagnostics);

  PassManager pm(ctx);
  if (strategy) pm.addPass(std::move(strategy));
  dialect::SelectKernelConfigPassOptions selectOptions;
  selectOptions.arch = target.arch;
  selectOptions.hostEmulation = target.host_emulation;
  selectOptions.maxThreadsPerBlock = target.limits.max_threads_per_block;
  selectOptions.maxSharedBytes = static_cast<std::int64_t>(target.limits.shared_memory_per_block_optin);
  pm.addPass(dialect::createSelectKernelConfigPass(selectOptions));
  pm.addPass(dialect::createLowerToLaunchPass());
  if (failed(pm.run(module))) return RuntimeError(ErrorKind::Internal, opName, "a successful lowering", diagnostics);

  auto main = module.lookupSymbol<func::FuncOp>("main");
  slots.ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
  LoweredOp lowered;
  lowered.op_name = opName;
  lowered.call = std::move(call);
  WalkResult walk = main.walk([&](dialect::LaunchOp launch) {
    FailureOr<KernelLaunch> kernel = toKernelLaunch(launch, slots);
    if (failed(kernel)) return WalkResult::interrupt();
    lowered.launches.push_back(std::move(*kernel));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || lowered.launches.empty())
    return RuntimeError(ErrorKind::Internal, opName, "launches over @main's arguments, results and sized temporaries",
                        "a launch operand that is none of them");
  lowered.temporaries = std::move(slots.temporaries);
  lowered.first_temporary_slot = slots.firstTemporarySlot();
  return lowered;
}

std::unique_ptr<mlir::Pass> strategyPass(mlir::ModuleOp module, ConfigProvider* provider, bool forcedConfig,
                                         const std::vector<const contracts::NormOperand*>& arguments) {
  if (!provider || forcedConfig) return nullptr;
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<std::int64_t> values;
  for (unsigned i = 0; main && i < main.getNumArguments() && i < arguments.size(); ++i) {
    auto type = mlir::cast<mlir::RankedTensorType>(main.getArgument(i).getType());
    for (std::int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d)) values.push_back(arguments[i]->shape[static_cast<std::size_t>(d)]);
  }
  return createResolveStrategyPass(provider, std::move(values));
}

}  // namespace pipeline_detail

}  // namespace rudnn::compiler
