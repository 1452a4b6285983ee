// lower_normalization: NormRequest → `func.func @main` with the one op → verify → resolve strategy
// (when a ConfigProvider is given) → select kernel config → lower to launch → KernelLaunch (plain
// C++) per rudnn.launch, with its emitted source.
#include <fmt/format.h>

#include "Emitter/KernelSource.h"
#include "Pipeline/Context.h"
#include "Pipeline/LaunchExtraction.h"
#include "Transforms/ResolveStrategy.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/NormConfig.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"
#include "rudnn/compiler/pipeline.h"

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
FailureOr<int> SlotMap::slotOf(dialect::LaunchOp launch, std::int64_t index) const {
  if (index < launch->getNumOperands()) {
    auto arg = dyn_cast<BlockArgument>(launch->getOperand(index));
    if (!arg) return failure();  // an intermediate tensor: no multi-kernel lowering exists yet
    return argSlot[arg.getArgNumber()];
  }
  Value result = launch->getResult(index - launch->getNumOperands());
  for (OpOperand& use : result.getUses())
    if (use.getOwner() == ret.getOperation()) return numOperandSlots + static_cast<int>(use.getOperandNumber());
  return failure();
}

namespace {
FailureOr<SizeExpr> toSizeExpr(dialect::LaunchOp launch, dialect::SizeExprAttr attr, const SlotMap& slots) {
  SizeExpr expr;
  expr.divisor = attr.getDivisor();
  for (const dialect::SizeFactor& f : attr.getFactors()) {
    SizeRef ref;
    switch (f.kind) {
      case dialect::SizeFactor::Kind::Const: ref.kind = SizeRef::Kind::Const; ref.value = f.value; break;
      case dialect::SizeFactor::Kind::Rows: ref.kind = SizeRef::Kind::Rows; break;
      case dialect::SizeFactor::Kind::Dim: ref.kind = SizeRef::Kind::Dim; ref.dim = static_cast<int>(f.dim); break;
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

namespace {

// Builds @main with the one op; returns the op.
Operation* buildNormModule(ModuleOp module, const NormRequest& request) {
  MLIRContext* ctx = module.getContext();
  const contracts::NormSignature& sig = request.signature;
  OpBuilder b(ctx);
  Location loc = b.getUnknownLoc();
  SmallVector<Type> argTypes = {tensorType(ctx, sig.input, /*dynamicLeading=*/true)};
  if (sig.gamma) argTypes.push_back(tensorType(ctx, *sig.gamma, false));
  if (sig.beta) argTypes.push_back(tensorType(ctx, *sig.beta, false));
  Type resultType = argTypes[0];

  b.setInsertionPointToEnd(module.getBody());
  auto main = func::FuncOp::create(b, loc, "main", b.getFunctionType(argTypes, {resultType}));
  Block* body = main.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value input = body->getArgument(0);
  Value gamma = sig.gamma ? body->getArgument(1) : Value();
  Value beta = sig.beta ? body->getArgument(sig.gamma ? 2 : 1) : Value();
  FloatAttr epsilon = b.getF32FloatAttr(static_cast<float>(sig.epsilon));
  Operation* op = nullptr;
  switch (sig.kind) {
    case contracts::NormKind::LayerNorm:
      op = dialect::LayerNormOp::create(b, loc, resultType, input, gamma, beta, epsilon, DictionaryAttr());
      break;
    case contracts::NormKind::RmsNorm:
      op = dialect::RmsNormOp::create(b, loc, resultType, input, gamma, epsilon, DictionaryAttr());
      break;
    case contracts::NormKind::Softmax:
      op = dialect::SoftmaxLastAxisOp::create(b, loc, resultType, input, DictionaryAttr());
      break;
  }
  func::ReturnOp::create(b, loc, op->getResult(0));

  if (!request.aligned16) op->setAttr(dialect::kUnalignedAttrName, b.getUnitAttr());
  if (request.config) {
    KernelConfig config = *request.config;
    // Misaligned buffers cannot take vector loads, whatever was asked for.
    if (!request.aligned16)
      for (auto& [key, value] : config.values)
        if (key == dialect::norm_config::kVectorWidth) value = 1;
    op->setAttr(dialect::kKernelConfigAttrName, toDictionary(ctx, config));
  }
  return op;
}

}  // namespace

Result<LoweredOp, RuntimeError> lowerModule(ModuleOp module, const std::string& opName, std::string call,
                                            SlotMap slots, const Target& target, std::unique_ptr<Pass> strategy) {
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
  selectOptions.maxThreadsPerBlock = target.limits.max_threads_per_block;
  pm.addPass(dialect::createSelectKernelConfigPass(selectOptions));
  pm.addPass(dialect::createLowerToLaunchPass());
  if (failed(pm.run(module)))
    return RuntimeError(ErrorKind::Internal, opName, "a successful lowering", diagnostics);

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
    return RuntimeError(ErrorKind::Internal, opName, "launches over @main's arguments and results",
                        "a launch operand that is neither");
  return lowered;
}

}  // namespace pipeline_detail

using namespace pipeline_detail;

Result<LoweredOp, RuntimeError> lower_normalization(const NormRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::NormSignature& sig = request.signature;
  const std::string opName = "rudnn." + std::string(contracts::norm_op_name(sig.kind));
  if (sig.kind != contracts::NormKind::LayerNorm && sig.beta)
    return RuntimeError(ErrorKind::InvalidValue, "beta", "no beta for " + opName, "a beta tensor");
  if (sig.kind != contracts::NormKind::Softmax && !sig.gamma)
    return RuntimeError(ErrorKind::InvalidValue, "gamma", "a gamma tensor for " + opName, "none");

  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  buildNormModule(*module, request);
  std::unique_ptr<Pass> strategy;
  if (request.provider && !request.config) {
    // The values of @main's dynamic extents (the input's leading dims) for this call.
    std::vector<std::int64_t> dynamicValues;
    if (!sig.input.shape.empty()) dynamicValues.assign(sig.input.shape.begin(), sig.input.shape.end() - 1);
    strategy = createResolveStrategyPass(request.provider, std::move(dynamicValues));
  }
  SlotMap slots;
  slots.argSlot = {0};
  if (sig.gamma) slots.argSlot.push_back(1);
  if (sig.beta) slots.argSlot.push_back(2);
  slots.numOperandSlots = sig.kind == contracts::NormKind::LayerNorm ? 3 : sig.kind == contracts::NormKind::RmsNorm ? 2 : 1;
  return lowerModule(*module, opName, contracts::describe_call(sig), std::move(slots), target, std::move(strategy));
}

}  // namespace rudnn::compiler
