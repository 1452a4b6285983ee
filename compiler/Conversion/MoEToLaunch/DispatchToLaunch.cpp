// rudnn.dispatch → two launches; rudnn.combine → one launch (templates/rudnn/moe/dispatch.cuh,
// combine.cuh):
//   1. dispatch_rank<DispatchPolicy<rank_threads>>(indices, offsets, slots, assignments, experts)
//      one block: histogram, prefix sum, atomic ranking; (experts + 1) counters in shared memory.
//   2. dispatch_scatter<T, RowCopyPolicy<threads, vector_width>>(input, slots, rows, assignments,
//      top_k, hidden): one block per assignment copies its token's row to its compact slot.
//   combine<T, W, RowCopyPolicy<threads, vector_width>>(expert_rows, slots, weights, out, tokens,
//      top_k, hidden): one block per token, the weighted sum in j order.
#include <fmt/format.h>

#include "Conversion/LaunchBuilder.h"
#include "Conversion/MoEToLaunch/MoEToLaunch.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

using SizeFactor = dialect::SizeFactor;

std::int64_t configValue(DictionaryAttr config, const char* key) { return config.getAs<IntegerAttr>(key).getInt(); }

DType dtypeOf(Value v) { return *dialect::toDType(cast<RankedTensorType>(v.getType()).getElementType()); }

std::string rowCopyPolicy(DictionaryAttr config) {
  return fmt::format("rudnn::moe::RowCopyPolicy<{}, {}>", configValue(config, dialect::moe_config::kThreads),
                     configValue(config, dialect::moe_config::kVectorWidth));
}

}  // namespace

LogicalResult lowerDispatchOpToLaunch(RewriterBase& rewriter, dialect::DispatchOp op) {
  DictionaryAttr config = op.getKernelConfigAttr();
  if (!config) return op.emitOpError() << "has no kernel_config (run rudnn-select-kernel-config first)";
  const std::int64_t experts = op.getExpertsAttr().getInt();
  auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
  const std::int64_t topK = indicesType.getDimSize(1);
  const std::int64_t hidden = cast<RankedTensorType>(op.getInput().getType()).getDimSize(1);
  if (ShapedType::isDynamic(topK) || ShapedType::isDynamic(hidden))
    return op.emitOpError() << "needs static top_k and hidden sizes to lower";
  const DType dtype = dtypeOf(op.getInput());
  const std::string elem = dialect::cTypeName(dtype);
  const std::int64_t rankThreads = configValue(config, dialect::moe_config::kRankThreads);

  // 1. indices (0) → offsets (1), slots (2).
  LaunchBuilder rank(op, fmt::format("rudnn_dispatch_rank_t{}", rankThreads), "rudnn/moe/dispatch.cuh",
                     "rudnn::moe::dispatch_rank");
  rank.templateArgs({fmt::format("rudnn::moe::DispatchPolicy<{}>", rankThreads)})
      .config(config)
      .operands({op.getIndices()})
      .results({op.getOffsets().getType(), op.getSlots().getType()})
      .buffer("indices", "const rudnn::u32*", 0)
      .buffer("offsets", "rudnn::u32*", 1)
      .buffer("slots", "rudnn::u32*", 2)
      .sizeParam("assignments", rank.size({SizeFactor::rows(0), SizeFactor::dimOf(0, 1)}))
      .constant("experts", experts)
      .grid(rank.size({}))
      .block(rankThreads)
      .shared(dialect::moe_config::dispatchRankSharedBytes(experts));
  dialect::LaunchOp ranked = rank.create(rewriter);

  // 2. input (0), slots (1) → rows (2).
  const std::string policy = rowCopyPolicy(config);
  LaunchBuilder scatter(op,
                        fmt::format("rudnn_dispatch_scatter_{}_t{}_v{}", dtype_name(dtype),
                                    configValue(config, dialect::moe_config::kThreads),
                                    configValue(config, dialect::moe_config::kVectorWidth)),
                        "rudnn/moe/dispatch.cuh", "rudnn::moe::dispatch_scatter");
  scatter.templateArgs({elem, policy})
      .config(config)
      .operands({op.getInput(), ranked.getResult(1)})
      .results({op.getRows().getType()})
      .buffer("input", "const " + elem + "*", 0)
      .buffer("slots", "const rudnn::u32*", 1)
      .buffer("rows", elem + "*", 2)
      .sizeParam("assignments", scatter.size({SizeFactor::rows(1), SizeFactor::dimOf(1, 1)}))
      .constant("top_k", topK)
      .constant("hidden", hidden)
      .grid(scatter.size({SizeFactor::rows(1), SizeFactor::dimOf(1, 1)}))
      .block(configValue(config, dialect::moe_config::kThreads));
  dialect::LaunchOp scattered = scatter.create(rewriter);

  rewriter.replaceOp(op, ValueRange{scattered.getResult(0), ranked.getResult(0), ranked.getResult(1)});
  return success();
}

LogicalResult lowerCombineOpToLaunch(RewriterBase& rewriter, dialect::CombineOp op) {
  DictionaryAttr config = op.getKernelConfigAttr();
  if (!config) return op.emitOpError() << "has no kernel_config (run rudnn-select-kernel-config first)";
  auto slotsType = cast<RankedTensorType>(op.getSlots().getType());
  const std::int64_t topK = slotsType.getDimSize(1);
  const std::int64_t hidden = cast<RankedTensorType>(op.getExpertRows().getType()).getDimSize(1);
  if (ShapedType::isDynamic(topK) || ShapedType::isDynamic(hidden))
    return op.emitOpError() << "needs static top_k and hidden sizes to lower";
  const DType dtype = dtypeOf(op.getExpertRows()), wtype = dtypeOf(op.getWeights());
  const std::string elem = dialect::cTypeName(dtype), welem = dialect::cTypeName(wtype);

  // expert_rows (0), slots (1), weights (2) → out (3).
  LaunchBuilder combine(op,
                        fmt::format("rudnn_combine_{}_{}_t{}_v{}", dtype_name(dtype), dtype_name(wtype),
                                    configValue(config, dialect::moe_config::kThreads),
                                    configValue(config, dialect::moe_config::kVectorWidth)),
                        "rudnn/moe/combine.cuh", "rudnn::moe::combine");
  combine.templateArgs({elem, welem, rowCopyPolicy(config)})
      .config(config)
      .operands({op.getExpertRows(), op.getSlots(), op.getWeights()})
      .results({op.getOutput().getType()})
      .buffer("expert_rows", "const " + elem + "*", 0)
      .buffer("slots", "const rudnn::u32*", 1)
      .buffer("weights", "const " + welem + "*", 2)
      .buffer("out", elem + "*", 3)
      .sizeParam("tokens", combine.size({SizeFactor::rows(1)}))
      .constant("top_k", topK)
      .constant("hidden", hidden)
      .grid(combine.size({SizeFactor::rows(1)}))
      .block(configValue(config, dialect::moe_config::kThreads));
  rewriter.replaceOp(op, combine.create(rewriter)->getResults());
  return success();
}

}  // namespace rudnn::compiler
