// rudnn-select-kernel-config: the heuristic that picks a kernel_config for every operator op that
// has none. Autotune produces the same attribute; a config already attached is never replaced.
#include "Transforms/KernelConfigHeuristics.h"

#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"

namespace rudnn::dialect {
#define GEN_PASS_DEF_SELECTKERNELCONFIGPASS
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h.inc"
}  // namespace rudnn::dialect

using namespace mlir;

namespace rudnn::compiler {

namespace {

std::int64_t nextPow2(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace

dialect::norm_config::RowConfig heuristicRowConfig(DType dtype, std::int64_t h, bool unaligned,
                                                   std::int64_t maxThreadsPerBlock) {
  dialect::norm_config::RowConfig c;
  // Widest legal vector: 16-byte loads when h allows, narrower otherwise; 1 if h is unknown or
  // buffers may be misaligned.
  c.vectorWidth = unaligned ? 1 : dialect::norm_config::legalVectorWidths(dtype, h).front();
  const std::int64_t maxThreads = std::min(dialect::norm_config::kMaxThreadsPerBlock, maxThreadsPerBlock);
  if (h < 0) {
    c.threadsPerRow = std::min<std::int64_t>(256, maxThreads);  // a middle size for an unknown row length
  } else {
    // About four vectors per thread: enough work per thread to hide latency, rows spread wide.
    const std::int64_t vectorsPerThread = c.vectorWidth * 4;
    const std::int64_t wanted = nextPow2((h + vectorsPerThread - 1) / vectorsPerThread);
    c.threadsPerRow = std::min(maxThreads, std::max<std::int64_t>(32, wanted));
  }
  // A one-warp row leaves most of a block idle: pack four rows per block instead.
  c.rowsPerBlock = c.threadsPerRow == 32 ? 4 : 1;
  return c;
}

std::int64_t heuristicRouteRowsPerBlock(bool grouped, std::int64_t experts) {
  // One warp per token row. Four rows per block fill a block without much shared memory; the
  // grouped kernel keeps experts floats per row in shared memory, so very wide rows take two.
  if (grouped && !ShapedType::isDynamic(experts) && experts > 512) return 2;
  return 4;
}

namespace {

struct SelectKernelConfig : dialect::impl::SelectKernelConfigPassBase<SelectKernelConfig> {
  using Base::Base;

  void runOnOperation() override {
    getOperation()->walk([&](Operation* op) {
      if (std::optional<dialect::RouteOpView> route = dialect::asRouteOp(op)) {
        if (route->kernelConfig) return;
        Builder b(op->getContext());
        op->setAttr(dialect::kKernelConfigAttrName,
                    b.getDictionaryAttr({b.getNamedAttr(dialect::route_config::kRowsPerBlock,
                                                        b.getI64IntegerAttr(heuristicRouteRowsPerBlock(
                                                            route->grouped, route->logitsType().getDimSize(1))))}));
        return;
      }
      std::optional<dialect::NormOpView> norm = dialect::asNormOp(op);
      if (!norm || norm->kernelConfig) return;
      RankedTensorType type = norm->inputType();
      DType dtype = *dialect::toDType(type.getElementType());  // the verifier accepted it
      std::int64_t h = type.getShape().back();
      if (ShapedType::isDynamic(h)) h = -1;
      dialect::norm_config::RowConfig c =
          heuristicRowConfig(dtype, h, op->hasAttr(dialect::kUnalignedAttrName), maxThreadsPerBlock);
      Builder b(op->getContext());
      op->setAttr(dialect::kKernelConfigAttrName,
                  b.getDictionaryAttr({
                      b.getNamedAttr(dialect::norm_config::kThreadsPerRow, b.getI64IntegerAttr(c.threadsPerRow)),
                      b.getNamedAttr(dialect::norm_config::kRowsPerBlock, b.getI64IntegerAttr(c.rowsPerBlock)),
                      b.getNamedAttr(dialect::norm_config::kVectorWidth, b.getI64IntegerAttr(c.vectorWidth)),
                  }));
    });
  }
};

}  // namespace
}  // namespace rudnn::compiler
