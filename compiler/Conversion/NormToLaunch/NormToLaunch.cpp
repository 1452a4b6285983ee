// One normalization op → one launch of
//   rudnn::norm::row_norm<Op, T, RowPolicy<threads_per_row, rows_per_block, vector_width>>(
//       input, gamma, beta, output, rows, h, epsilon, input_row_stride, output_row_stride)
// with block = threads_per_row * rows_per_block threads, grid.x = ceil_div(rows, rows_per_block)
// and rows_per_block * max(1, threads_per_row / 32) * 2 floats of dynamic shared memory (the
// template's cross-warp reduction scratch).
#include "Conversion/NormToLaunch/NormToLaunch.h"

#include <fmt/format.h>

#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/NormConfig.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

constexpr const char* kHeader = "rudnn/norm/row_norm.cuh";
constexpr const char* kFunction = "rudnn::norm::row_norm";

const char* opPolicy(contracts::NormKind kind) {
  switch (kind) {
    case contracts::NormKind::LayerNorm: return "rudnn::norm::LayerNorm";
    case contracts::NormKind::RmsNorm: return "rudnn::norm::RmsNorm";
    case contracts::NormKind::Softmax: return "rudnn::norm::Softmax";
  }
  return "?";
}

}  // namespace

LogicalResult lowerNormOpToLaunch(RewriterBase& rewriter, const dialect::NormOpView& norm) {
  using dialect::KernelParamAttr;
  using dialect::KernelParamKind;
  using dialect::SizeExprAttr;
  using dialect::SizeFactor;
  Operation* op = norm.op;
  MLIRContext* ctx = op->getContext();
  if (!norm.kernelConfig) return op->emitOpError() << "has no kernel_config (run rudnn-select-kernel-config first)";
  auto get = [&](const char* key) { return norm.kernelConfig.getAs<IntegerAttr>(key).getInt(); };
  dialect::norm_config::RowConfig config{get(dialect::norm_config::kThreadsPerRow),
                                         get(dialect::norm_config::kRowsPerBlock),
                                         get(dialect::norm_config::kVectorWidth)};
  RankedTensorType inputType = norm.inputType();
  DType dtype = *dialect::toDType(inputType.getElementType());
  const std::string elem = dialect::cTypeName(dtype);
  const std::string opName(contracts::norm_op_name(norm.kind));

  const std::string entry = fmt::format("rudnn_{}_{}_t{}_r{}_v{}", opName, dtype_name(dtype), config.threadsPerRow,
                                        config.rowsPerBlock, config.vectorWidth);
  SmallVector<StringRef> templateArgs = {opPolicy(norm.kind), elem};
  const std::string policy =
      fmt::format("rudnn::norm::RowPolicy<{}, {}, {}>", config.threadsPerRow, config.rowsPerBlock, config.vectorWidth);
  templateArgs.push_back(policy);

  SmallVector<Value> operands = {norm.input};
  if (norm.gamma) operands.push_back(norm.gamma);
  if (norm.beta) operands.push_back(norm.beta);
  // The launch numbers its operands, then its one result.
  const std::int64_t gammaIndex = norm.gamma ? 1 : -1;
  const std::int64_t betaIndex = norm.beta ? 2 : -1;
  const std::int64_t outputIndex = static_cast<std::int64_t>(operands.size());

  auto size = [&](ArrayRef<SizeFactor> factors, std::int64_t divisor = 1) {
    return SizeExprAttr::get(ctx, factors, divisor);
  };
  auto buffer = [&](StringRef name, StringRef cType, std::int64_t index) {
    return index < 0 ? KernelParamAttr::get(ctx, name, cType, KernelParamKind::NullBuffer, -1, {}, {})
                     : KernelParamAttr::get(ctx, name, cType, KernelParamKind::Buffer, index, {}, {});
  };
  const std::string constElemPtr = "const " + elem + "*";
  const std::string elemPtr = elem + "*";
  SizeExprAttr rows = size({SizeFactor::rows(0)});
  SizeExprAttr h = size({SizeFactor::dimOf(0, inputType.getRank() - 1)});
  Builder b(ctx);
  SmallVector<Attribute> params = {
      buffer("input", constElemPtr, 0),
      buffer("gamma", "const float*", gammaIndex),
      buffer("beta", "const float*", betaIndex),
      buffer("output", elemPtr, outputIndex),
      KernelParamAttr::get(ctx, "rows", "long long", KernelParamKind::Size, -1, rows, {}),
      KernelParamAttr::get(ctx, "h", "long long", KernelParamKind::Size, -1, h, {}),
      KernelParamAttr::get(ctx, "epsilon", "float", KernelParamKind::F32, -1, {},
                           b.getF32FloatAttr(static_cast<float>(norm.epsilon))),
      // h for dense rows; a row-strided view's own stride (the entry checked its layout).
      KernelParamAttr::get(ctx, "input_row_stride", "long long", KernelParamKind::Size, -1,
                           size({SizeFactor::rowStride(0)}), {}),
      KernelParamAttr::get(ctx, "output_row_stride", "long long", KernelParamKind::Size, -1,
                           size({SizeFactor::rowStride(outputIndex)}), {}),
  };
  SmallVector<Attribute> grid = {size({SizeFactor::rows(0)}, config.rowsPerBlock), size({}), size({})};

  rewriter.setInsertionPoint(op);
  auto launch = dialect::LaunchOp::create(
      rewriter, op->getLoc(), TypeRange{inputType}, FlatSymbolRefAttr::get(ctx, entry), operands,
      b.getStringAttr(kHeader), b.getStringAttr(kFunction), b.getStrArrayAttr(templateArgs), norm.kernelConfig,
      b.getArrayAttr(grid), b.getDenseI64ArrayAttr({config.threadsPerRow * config.rowsPerBlock, 1, 1}),
      b.getI64IntegerAttr(dialect::norm_config::sharedBytes(config)), b.getArrayAttr(params),
      b.getStringAttr(op->getName().getStringRef()), ArrayAttr());
  rewriter.replaceOp(op, launch->getResults());
  return success();
}

}  // namespace rudnn::compiler
