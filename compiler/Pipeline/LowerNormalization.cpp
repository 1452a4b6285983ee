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

using namespace pipeline_detail;

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
  slots.numOperandSlots = sig.kind == contracts::NormKind::LayerNorm ? 3
                          : sig.kind == contracts::NormKind::RmsNorm ? 2
                                                                     : 1;
  return lowerModule(*module, opName, contracts::describe_call(sig), std::move(slots), target, std::move(strategy));
}

}  // namespace rudnn::compiler
