#include "Conversion/LaunchBuilder.h"

using namespace mlir;

namespace rudnn::compiler {

using dialect::KernelParamAttr;
using dialect::KernelParamKind;
using dialect::SizeExprAttr;

LaunchBuilder::LaunchBuilder(Operation* origin, std::string entry, std::string header, std::string function)
    : origin_(origin),
      ctx_(origin->getContext()),
      entry_(std::move(entry)),
      header_(std::move(header)),
      function_(std::move(function)),
      config_(DictionaryAttr::get(ctx_)) {}

LaunchBuilder& LaunchBuilder::templateArgs(ArrayRef<std::string> args) {
  templateArgs_.assign(args.begin(), args.end());
  return *this;
}

LaunchBuilder& LaunchBuilder::config(DictionaryAttr config) {
  config_ = config;
  return *this;
}

LaunchBuilder& LaunchBuilder::operands(ValueRange values) {
  operands_.assign(values.begin(), values.end());
  return *this;
}

LaunchBuilder& LaunchBuilder::results(TypeRange types, ArrayRef<Attribute> elements) {
  resultTypes_.assign(types.begin(), types.end());
  resultElements_.assign(elements.begin(), elements.end());
  return *this;
}

LaunchBuilder& LaunchBuilder::buffer(StringRef name, StringRef cType, std::int64_t index) {
  params_.push_back(KernelParamAttr::get(ctx_, name, cType, KernelParamKind::Buffer, index, {}, {}));
  return *this;
}

LaunchBuilder& LaunchBuilder::nullBuffer(StringRef name, StringRef cType) {
  params_.push_back(KernelParamAttr::get(ctx_, name, cType, KernelParamKind::NullBuffer, -1, {}, {}));
  return *this;
}

LaunchBuilder& LaunchBuilder::sizeParam(StringRef name, SizeExprAttr size) {
  params_.push_back(KernelParamAttr::get(ctx_, name, "long long", KernelParamKind::Size, -1, size, {}));
  return *this;
}

LaunchBuilder& LaunchBuilder::constant(StringRef name, std::int64_t value) {
  return sizeParam(name, size({SizeFactor::constant(value)}));
}

LaunchBuilder& LaunchBuilder::f32(StringRef name, float value) {
  params_.push_back(
      KernelParamAttr::get(ctx_, name, "float", KernelParamKind::F32, -1, {}, Builder(ctx_).getF32FloatAttr(value)));
  return *this;
}

LaunchBuilder& LaunchBuilder::grid(SizeExprAttr x, SizeExprAttr y, SizeExprAttr z) {
  grid_ = {x, y ? y : size({}), z ? z : size({})};
  return *this;
}

LaunchBuilder& LaunchBuilder::block(std::int64_t threads) {
  threads_ = threads;
  return *this;
}

LaunchBuilder& LaunchBuilder::shared(std::int64_t bytes) {
  sharedBytes_ = bytes;
  return *this;
}

SizeExprAttr LaunchBuilder::size(ArrayRef<SizeFactor> factors, std::int64_t divisor) const {
  return SizeExprAttr::get(ctx_, factors, divisor);
}

LaunchBuilder& LaunchBuilder::minBlocks(std::int64_t blocks) {
  minBlocks_ = blocks;
  return *this;
}

dialect::LaunchOp LaunchBuilder::create(RewriterBase& rewriter) const {
  Builder b(ctx_);
  SmallVector<StringRef> args(templateArgs_.begin(), templateArgs_.end());
  rewriter.setInsertionPoint(origin_);
  auto launch = dialect::LaunchOp::create(
      rewriter, origin_->getLoc(), resultTypes_, FlatSymbolRefAttr::get(ctx_, entry_), operands_,
      b.getStringAttr(header_), b.getStringAttr(function_), b.getStrArrayAttr(args), config_, b.getArrayAttr(grid_),
      b.getDenseI64ArrayAttr({threads_, 1, 1}), b.getI64IntegerAttr(sharedBytes_), b.getArrayAttr(params_),
      b.getStringAttr(origin_->getName().getStringRef()),
      resultElements_.empty() ? ArrayAttr() : b.getArrayAttr(resultElements_));
  if (minBlocks_ > 0) launch->setAttr(dialect::kMinBlocksAttrName, b.getI64IntegerAttr(minBlocks_));
  return launch;
}

}  // namespace rudnn::compiler
