// lower_routing: RouteRequest → `func.func @main` with one rudnn.route / rudnn.route_sigmoid_grouped
// (tokens dynamic) → verify → select kernel config → lower to launch → KernelLaunch.
#include <fmt/format.h>

#include "Emitter/KernelSource.h"
#include "Pipeline/Context.h"
#include "Pipeline/LaunchExtraction.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"
#include "rudnn/compiler/pipeline.h"

using namespace mlir;

namespace rudnn::compiler {

using namespace pipeline_detail;

namespace {

Operation* buildRouteModule(ModuleOp module, const RouteRequest& request) {
  MLIRContext* ctx = module.getContext();
  const contracts::GroupRouteSignature& sig = request.signature;
  OpBuilder b(ctx);
  Location loc = b.getUnknownLoc();
  RankedTensorType logitsType = tensorType(ctx, sig.logits, /*dynamicLeading=*/true);
  SmallVector<Type> argTypes = {logitsType};
  if (request.grouped && sig.bias) argTypes.push_back(tensorType(ctx, *sig.bias, false));
  const std::int64_t tokens = logitsType.getDimSize(0);
  auto indicesType = RankedTensorType::get({tokens, sig.top_k}, b.getIntegerType(32, /*isSigned=*/false));
  auto weightsType = RankedTensorType::get({tokens, sig.top_k}, logitsType.getElementType());

  b.setInsertionPointToEnd(module.getBody());
  auto main = func::FuncOp::create(b, loc, "main", b.getFunctionType(argTypes, {indicesType, weightsType}));
  Block* body = main.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value logits = body->getArgument(0);
  Operation* op = nullptr;
  if (request.grouped) {
    Value bias = sig.bias ? body->getArgument(1) : Value();
    op = dialect::RouteSigmoidGroupedOp::create(
        b, loc, TypeRange{indicesType, weightsType}, logits, bias, b.getI64IntegerAttr(sig.top_k),
        b.getI64IntegerAttr(sig.groups), b.getI64IntegerAttr(sig.selected_groups), b.getBoolAttr(sig.group_top_two),
        b.getBoolAttr(sig.renormalize), b.getF32FloatAttr(static_cast<float>(sig.scale)), DictionaryAttr());
  } else {
    op = dialect::RouteOp::create(b, loc, TypeRange{indicesType, weightsType}, logits, b.getI64IntegerAttr(sig.top_k),
                                  b.getBoolAttr(sig.renormalize), DictionaryAttr());
  }
  func::ReturnOp::create(b, loc, op->getResults());
  if (request.config) op->setAttr(dialect::kKernelConfigAttrName, toDictionary(ctx, *request.config));
  return op;
}

}  // namespace

Result<LoweredOp, RuntimeError> lower_routing(const RouteRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const std::string opName = request.grouped ? "rudnn.route_sigmoid_grouped" : "rudnn.route";
  if (!request.grouped && request.signature.bias)
    return RuntimeError(ErrorKind::InvalidValue, "bias", "no bias for rudnn.route", "a bias tensor");

  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  buildRouteModule(*module, request);
  SlotMap slots;
  slots.argSlot = {0};
  if (request.grouped && request.signature.bias) slots.argSlot.push_back(1);
  slots.numOperandSlots = request.grouped ? 2 : 1;
  std::string call;
  if (request.grouped) {
    call = contracts::describe_call(request.signature);
  } else {
    contracts::RouteSignature sig{request.signature.logits, request.signature.top_k, request.signature.renormalize};
    call = contracts::describe_call(sig);
  }
  std::vector<const contracts::NormOperand*> arguments = {&request.signature.logits};
  if (request.grouped && request.signature.bias) arguments.push_back(&*request.signature.bias);
  auto strategy = strategyPass(*module, request.provider, request.config.has_value(), arguments);
  return lowerModule(*module, opName, std::move(call), std::move(slots), target, std::move(strategy));
}

std::vector<KernelConfig> routing_variants() {
  std::vector<KernelConfig> out;
  for (std::int64_t r : dialect::route_config::kRowsPerBlockChoices)
    out.push_back(KernelConfig{{{dialect::route_config::kRowsPerBlock, r}}});
  return out;
}

}  // namespace rudnn::compiler
