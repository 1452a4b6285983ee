// One routing op → one launch, one warp per token row:
//   rudnn::moe::route_softmax_topk<T, RoutePolicy<rows_per_block>>(
//       logits, indices, weights, rows, experts, top_k, renormalize)
//   rudnn::moe::route_sigmoid_grouped<T, RoutePolicy<rows_per_block>>(
//       logits, bias, indices, weights, rows, experts, top_k, groups, selected_groups,
//       group_top_two, renormalize, scale)
// block = 32 × rows_per_block threads, grid.x = ceil_div(rows, rows_per_block); the options are
// constant kernel arguments (one instantiation serves every option value and every E).
#include "Conversion/MoEToLaunch/MoEToLaunch.h"

#include <fmt/format.h>

#include "rudnn/shared_memory.h"

#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

using namespace mlir;

namespace rudnn::compiler {

std::int64_t groupedRouteSharedBytes(std::int64_t rowsPerBlock, std::int64_t experts, std::int64_t groups) {
  return shared_memory::route_grouped(rowsPerBlock, experts, groups);
}

LogicalResult lowerRouteOpToLaunch(RewriterBase& rewriter, const dialect::RouteOpView& route) {
  using dialect::KernelParamAttr;
  using dialect::KernelParamKind;
  using dialect::SizeExprAttr;
  using dialect::SizeFactor;
  Operation* op = route.op;
  MLIRContext* ctx = op->getContext();
  if (!route.kernelConfig) return op->emitOpError() << "has no kernel_config (run rudnn-select-kernel-config first)";
  const std::int64_t rowsPerBlock =
      route.kernelConfig.getAs<IntegerAttr>(dialect::route_config::kRowsPerBlock).getInt();
  RankedTensorType logitsType = route.logitsType();
  DType dtype = *dialect::toDType(logitsType.getElementType());
  const std::string elem = dialect::cTypeName(dtype);
  const std::int64_t experts = logitsType.getDimSize(1);
  if (route.grouped && ShapedType::isDynamic(experts))
    return op->emitOpError() << "needs a static number of experts to size its shared memory";
  const contracts::GroupRouteSignature& o = route.options;

  const char* header = route.grouped ? "rudnn/moe/route_sigmoid_grouped.cuh" : "rudnn/moe/route_softmax_topk.cuh";
  const char* function = route.grouped ? "rudnn::moe::route_sigmoid_grouped" : "rudnn::moe::route_softmax_topk";
  const std::string entry = fmt::format("rudnn_{}_{}_r{}", route.grouped ? "route_sigmoid_grouped" : "route",
                                        dtype_name(dtype), rowsPerBlock);
  const std::string policy = fmt::format("rudnn::moe::RoutePolicy<{}>", rowsPerBlock);
  SmallVector<StringRef> templateArgs = {elem, policy};

  SmallVector<Value> operands = {route.logits};
  if (route.bias) operands.push_back(route.bias);
  // Launch numbering: operands, then results (indices, weights).
  const std::int64_t biasIndex = route.bias ? 1 : -1;
  const std::int64_t indicesIndex = static_cast<std::int64_t>(operands.size());
  const std::int64_t weightsIndex = indicesIndex + 1;

  auto size = [&](ArrayRef<SizeFactor> factors, std::int64_t divisor = 1) {
    return SizeExprAttr::get(ctx, factors, divisor);
  };
  auto constant = [&](StringRef name, std::int64_t v) {
    return KernelParamAttr::get(ctx, name, "long long", KernelParamKind::Size, -1, size({SizeFactor::constant(v)}), {});
  };
  auto buffer = [&](StringRef name, StringRef cType, std::int64_t index) {
    return index < 0 ? KernelParamAttr::get(ctx, name, cType, KernelParamKind::NullBuffer, -1, {}, {})
                     : KernelParamAttr::get(ctx, name, cType, KernelParamKind::Buffer, index, {}, {});
  };
  Builder b(ctx);
  SizeExprAttr rows = size({SizeFactor::rows(0)});
  SizeExprAttr expertsSize = size({SizeFactor::dimOf(0, 1)});
  SmallVector<Attribute> params = {buffer("logits", "const " + elem + "*", 0)};
  if (route.grouped) params.push_back(buffer("bias", "const float*", biasIndex));
  params.push_back(buffer("indices", "rudnn::u32*", indicesIndex));
  params.push_back(buffer("weights", elem + "*", weightsIndex));
  params.push_back(KernelParamAttr::get(ctx, "rows", "long long", KernelParamKind::Size, -1, rows, {}));
  params.push_back(KernelParamAttr::get(ctx, "experts", "long long", KernelParamKind::Size, -1, expertsSize, {}));
  params.push_back(constant("top_k", o.top_k));
  if (route.grouped) {
    params.push_back(constant("groups", o.groups));
    params.push_back(constant("selected_groups", o.selected_groups));
    params.push_back(constant("group_top_two", o.group_top_two ? 1 : 0));
  }
  params.push_back(constant("renormalize", o.renormalize ? 1 : 0));
  if (route.grouped)
    params.push_back(KernelParamAttr::get(ctx, "scale", "float", KernelParamKind::F32, -1, {},
                                          b.getF32FloatAttr(static_cast<float>(o.scale))));
  SmallVector<Attribute> grid = {size({SizeFactor::rows(0)}, rowsPerBlock), size({}), size({})};
  const std::int64_t shared = route.grouped ? groupedRouteSharedBytes(rowsPerBlock, experts, o.groups) : 0;

  rewriter.setInsertionPoint(op);
  auto launch = dialect::LaunchOp::create(
      rewriter, op->getLoc(), op->getResultTypes(), FlatSymbolRefAttr::get(ctx, entry), operands,
      b.getStringAttr(header), b.getStringAttr(function), b.getStrArrayAttr(templateArgs), route.kernelConfig,
      b.getArrayAttr(grid), b.getDenseI64ArrayAttr({32 * rowsPerBlock, 1, 1}), b.getI64IntegerAttr(shared),
      b.getArrayAttr(params), b.getStringAttr(op->getName().getStringRef()), ArrayAttr());
  rewriter.replaceOp(op, launch->getResults());
  return success();
}

}  // namespace rudnn::compiler
