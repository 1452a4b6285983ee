// lower_conv: ConvRequest → `func.func @main` with one convolution op (batch dynamic, the call's
// batch as its rudnn.batch_hint) → verify → [resolve strategy] → select kernel config → lower to
// launch → KernelLaunches.
#include "Emitter/KernelSource.h"
#include "Pipeline/Context.h"
#include "Pipeline/LaunchExtraction.h"
#include "contracts/arch.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "rudnn/Dialect/Rudnn/IR/ConvOps.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/compiler/conv.h"

using namespace mlir;

namespace rudnn::compiler {

using namespace pipeline_detail;

namespace {

// The shape with the batch (dim 0) dynamic when `batch`.
RankedTensorType typeOf(MLIRContext* ctx, const Shape& shape, DType dtype, bool batch) {
  SmallVector<std::int64_t> dims(shape.begin(), shape.end());
  if (batch && !dims.empty()) dims[0] = ShapedType::kDynamic;
  return RankedTensorType::get(dims, dialect::toElementType(ctx, dtype));
}

}  // namespace

Result<LoweredOp, RuntimeError> lower_conv(const ConvRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::ConvSignature& sig = request.signature;
  using contracts::ConvDirection;
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  OpBuilder b(&ctx);
  const auto& p = sig.params;
  auto stride = b.getDenseI64ArrayAttr(p.stride), padding = b.getDenseI64ArrayAttr(p.padding),
       dilation = b.getDenseI64ArrayAttr(p.dilation);
  auto groups = b.getI64IntegerAttr(p.groups);
  auto channelsLast = b.getBoolAttr(sig.channels_last);
  auto strategy = b.getStringAttr(request.strategy);

  SmallVector<Type> args, results;
  std::vector<const contracts::Operand*> arguments;
  SlotMap slots;
  switch (sig.direction) {
    case ConvDirection::Forward:
      args = {typeOf(&ctx, sig.input.shape, sig.input.dtype, true),
              typeOf(&ctx, sig.weight.shape, sig.weight.dtype, false)};
      arguments = {&sig.input, &sig.weight};
      if (sig.bias) {
        args.push_back(typeOf(&ctx, sig.bias->shape, sig.bias->dtype, false));
        arguments.push_back(&*sig.bias);
      }
      results = {typeOf(&ctx, contracts::conv_output_shape(sig), sig.input.dtype, true)};
      slots.argSlot = sig.bias ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1};
      slots.numOperandSlots = 3;
      break;
    case ConvDirection::DataBackward:
      args = {typeOf(&ctx, sig.grad_output->shape, sig.grad_output->dtype, true),
              typeOf(&ctx, sig.weight.shape, sig.weight.dtype, false)};
      arguments = {&*sig.grad_output, &sig.weight};
      results = {typeOf(&ctx, sig.input.shape, sig.grad_output->dtype, true)};
      slots.argSlot = {0, 1};
      slots.numOperandSlots = 2;
      break;
    case ConvDirection::WeightBackward:
      args = {typeOf(&ctx, sig.input.shape, sig.input.dtype, true),
              typeOf(&ctx, sig.grad_output->shape, sig.grad_output->dtype, true)};
      arguments = {&sig.input, &*sig.grad_output};
      results = {typeOf(&ctx, sig.weight.shape, sig.input.dtype, false)};
      if (request.bias_grad)
        results.push_back(RankedTensorType::get({contracts::conv_geometry(sig).out_channels}, b.getF32Type()));
      slots.argSlot = {0, 1};
      slots.numOperandSlots = 2;
      break;
  }

  b.setInsertionPointToEnd(module->getBody());
  auto main = func::FuncOp::create(b, b.getUnknownLoc(), "main", b.getFunctionType(args, results));
  Block* body = main.addEntryBlock();
  b.setInsertionPointToStart(body);
  Operation* op = nullptr;
  const Location loc = b.getUnknownLoc();
  switch (sig.direction) {
    case ConvDirection::Forward:
      op = dialect::ConvForwardOp::create(b, loc, results[0], body->getArgument(0), body->getArgument(1),
                                          sig.bias ? body->getArgument(2) : Value(), stride, padding, dilation, groups,
                                          channelsLast, strategy, DictionaryAttr());
      break;
    case ConvDirection::DataBackward:
      op = dialect::ConvDataBackwardOp::create(b, loc, results[0], body->getArgument(0), body->getArgument(1), stride,
                                               padding, dilation, groups, channelsLast, strategy, DictionaryAttr());
      break;
    case ConvDirection::WeightBackward:
      op = dialect::ConvWeightBackwardOp::create(b, loc, results, body->getArgument(0), body->getArgument(1), stride,
                                                 padding, dilation, groups, channelsLast, strategy, DictionaryAttr(),
                                                 request.bias_grad ? b.getUnitAttr() : UnitAttr());
      break;
  }
  func::ReturnOp::create(b, loc, op->getResults());
  // The module's batch is dynamic (one plan serves a bucket of batches); the heuristic still sees the
  // call's batch through the hint, whose bucket sets the split counts (conv_config::bucketBatch),
  // also where autotune has no tuned answer.
  if (const std::int64_t batch = contracts::conv_geometry(sig).batch; contracts::known(batch))
    op->setAttr(dialect::kConvBatchHintAttrName, b.getI64IntegerAttr(batch));
  if (request.config) op->setAttr(dialect::kKernelConfigAttrName, toDictionary(&ctx, *request.config));
  auto pass = strategyPass(*module, request.provider, request.config.has_value(), arguments);
  return lowerModule(*module, op->getName().getStringRef().str(), contracts::describe_call(sig), std::move(slots),
                     target, std::move(pass));
}

std::vector<KernelConfig> conv_variants(const contracts::ConvSignature& sig, bool tensor_cores,
                                        std::int64_t max_shared_bytes, bool wgmma) {
  std::vector<KernelConfig> out;
  const DType dtype =
      sig.direction == contracts::ConvDirection::DataBackward ? sig.grad_output->dtype : sig.input.dtype;
  for (const auto& c : dialect::conv_config::candidates(sig.direction, contracts::conv_geometry(sig), dtype,
                                                        tensor_cores, max_shared_bytes, wgmma))
    out.push_back(KernelConfig{dialect::conv_config::valuesOf(c)});
  return out;
}

}  // namespace rudnn::compiler
