// Verifiers of rudnn.conv_forward, rudnn.conv_data_backward and rudnn.conv_weight_backward. The
// contract is rudnn::contracts::check_conv (core/contracts/conv.cpp), as in the public API; then the
// result types and the kernel_config (conv_config::checkChoice).
#include "rudnn/Dialect/Rudnn/IR/ConvOps.h"

#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ConfigValues.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

using namespace mlir;

namespace rudnn::dialect {

namespace {

template <class Op>
contracts::ConvParams paramsOf(Op op) {
  contracts::ConvParams p;
  p.stride.assign(op.getStride().begin(), op.getStride().end());
  p.padding.assign(op.getPadding().begin(), op.getPadding().end());
  p.dilation.assign(op.getDilation().begin(), op.getDilation().end());
  p.groups = op.getGroups();
  return p;
}

// `type` is `want` (dynamic extents on either side match).
bool matches(Type type, const Shape& want, Type element) {
  auto ranked = cast<RankedTensorType>(type);
  if (ranked.getElementType() != element || ranked.getRank() != static_cast<std::int64_t>(want.size())) return false;
  for (std::size_t d = 0; d < want.size(); ++d)
    if (!ShapedType::isDynamic(ranked.getDimSize(d)) && contracts::known(want[d]) && ranked.getDimSize(d) != want[d])
      return false;
  return true;
}

std::string shapeText(const Shape& s) { return shape_to_string(s); }

template <class Op>
LogicalResult verifyConv(Op op, Type resultElement, const Shape& resultShape, Value result, const char* name) {
  auto sig = convSignatureOf(op);
  if (!sig) return op.emitOpError() << "expected rudnn element types (f32, f16, bf16, ...)";
  if (op.getStrategy() != "direct" && op.getStrategy() != "implicit_gemm" && op.getStrategy() != "autotune")
    return op.emitOpError() << "strategy: expected \"direct\", \"implicit_gemm\" or \"autotune\", got \""
                            << op.getStrategy() << "\"";
  if (auto error = contracts::check_conv(*sig)) return op.emitOpError() << error->message();
  if (result && !matches(result.getType(), resultShape, resultElement))
    return op.emitOpError() << name << ": expected " << shapeText(resultShape) << " of " << resultElement << ", got "
                            << result.getType();
  if (DictionaryAttr config = op.getKernelConfigAttr())
    if (auto why = checkConvConfig(op, config)) return op.emitOpError() << "kernel_config: " << *why;
  return success();
}

}  // namespace

std::optional<contracts::ConvSignature> convSignatureOf(Operation* op) {
  contracts::ConvSignature sig;
  auto fill = [&](auto conv, Type input, Type weight) -> bool {
    sig.channels_last = conv.getChannelsLast();
    sig.params = paramsOf(conv);
    auto x = contractOperandOf(input), w = contractOperandOf(weight);
    if (!x || !w) return false;
    sig.input = *x;
    sig.weight = *w;
    return true;
  };
  if (auto f = dyn_cast<ConvForwardOp>(op)) {
    sig.direction = contracts::ConvDirection::Forward;
    if (!fill(f, f.getInput().getType(), f.getWeight().getType())) return std::nullopt;
    if (Value b = f.getBias()) {
      auto bias = contractOperandOf(b.getType());
      if (!bias) return std::nullopt;
      sig.bias = *bias;
    }
    return sig;
  }
  if (auto d = dyn_cast<ConvDataBackwardOp>(op)) {
    sig.direction = contracts::ConvDirection::DataBackward;
    if (!fill(d, d.getGradInput().getType(), d.getWeight().getType())) return std::nullopt;
    sig.grad_output = contractOperandOf(d.getGradOutput().getType());
    if (!sig.grad_output) return std::nullopt;
    sig.input.dtype = sig.grad_output->dtype;  // shape-only: the grad_output's
    return sig;
  }
  if (auto w = dyn_cast<ConvWeightBackwardOp>(op)) {
    sig.direction = contracts::ConvDirection::WeightBackward;
    if (w.getGrads().empty()) return std::nullopt;
    if (!fill(w, w.getInput().getType(), w.getGrads()[0].getType())) return std::nullopt;
    sig.grad_output = contractOperandOf(w.getGradOutput().getType());
    if (!sig.grad_output) return std::nullopt;
    sig.weight.dtype = sig.input.dtype;
    return sig;
  }
  return std::nullopt;
}

std::optional<conv_config::Choice> convChoiceOf(DictionaryAttr config) {
  auto values = integerValuesOf(config);
  if (!values) return std::nullopt;
  return conv_config::choiceOf(*values);
}

DictionaryAttr convChoiceConfig(MLIRContext* ctx, const conv_config::Choice& choice) {
  return integerDictionary(ctx, conv_config::valuesOf(choice));
}

std::optional<std::string> checkConvConfig(Operation* op, DictionaryAttr config) {
  auto choice = convChoiceOf(config);
  if (!choice) {
    std::string why;
    llvm::raw_string_ostream(why) << "expected a convolution choice (docs/convolution.md: algorithm and its tile "
                                     "keys), got "
                                  << config;
    return why;
  }
  auto sig = convSignatureOf(op);
  if (!sig) return std::string("not a convolution op");
  return conv_config::checkChoice(*choice, sig->direction, contracts::conv_geometry(*sig), sig->input.dtype);
}

contracts::ConvGeometry convHeuristicGeometry(Operation* op, const contracts::ConvSignature& sig) {
  contracts::ConvGeometry g = contracts::conv_geometry(sig);
  if (!contracts::known(g.batch))
    if (auto hint = op->getAttrOfType<IntegerAttr>(kConvBatchHintAttrName); hint && hint.getInt() >= 0)
      g.batch = hint.getInt();
  return g;
}

LogicalResult ConvForwardOp::verify() {
  auto sig = convSignatureOf(*this);
  if (!sig) return emitOpError() << "expected rudnn element types (f32, f16, bf16, ...)";
  Type element = cast<RankedTensorType>(getInput().getType()).getElementType();
  // The result shape is only meaningful once the contract holds (verifyConv checks it first).
  if (contracts::check_conv(*sig)) return verifyConv(*this, element, {}, Value(), "output");
  return verifyConv(*this, element, contracts::conv_output_shape(*sig), getOutput(), "output");
}

LogicalResult ConvDataBackwardOp::verify() {
  // grad_input's type is the forward input's shape (the contract then checks grad_output against it).
  Type element = cast<RankedTensorType>(getGradOutput().getType()).getElementType();
  if (cast<RankedTensorType>(getGradInput().getType()).getElementType() != element)
    return emitOpError() << "grad_input: expected the grad_output element type " << element << ", got "
                         << getGradInput().getType();
  return verifyConv(*this, element, {}, Value(), "grad_input");
}

LogicalResult ConvWeightBackwardOp::verify() {
  const std::size_t want = getBiasGrad() ? 2 : 1;
  if (getGrads().size() != want)
    return emitOpError() << "expected " << want << " results (grad_weight" << (getBiasGrad() ? ", grad_bias" : "")
                         << "), got " << getGrads().size();
  Type element = cast<RankedTensorType>(getInput().getType()).getElementType();
  if (cast<RankedTensorType>(getGrads()[0].getType()).getElementType() != element)
    return emitOpError() << "grad_weight: expected the input element type " << element << ", got "
                         << getGrads()[0].getType();
  if (failed(verifyConv(*this, element, {}, Value(), "grad_weight"))) return failure();
  if (getBiasGrad()) {
    auto sig = convSignatureOf(*this);
    if (!matches(getGrads()[1].getType(), {contracts::conv_geometry(*sig).out_channels},
                 Float32Type::get(getContext())))
      return emitOpError() << "grad_bias: expected f32 [O], got " << getGrads()[1].getType();
  }
  return success();
}

}  // namespace rudnn::dialect
