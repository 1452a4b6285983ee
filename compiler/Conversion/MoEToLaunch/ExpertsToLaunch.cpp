// rudnn.swiglu_experts → two launches over the compact rows, grid (column tiles, row tiles):
//   1. swiglu_gate_up_{scalar,mma}<T, Policy>(rows, offsets, gate, up, act, n_rows, experts, hidden, inter)
//      gate and up fused; act [n_rows, inter] (T) is a call-scoped temporary.
//   2. expert_down_{scalar,mma}<T, Policy>(act, offsets, down, out, n_rows, experts, inter, hidden)
// Policy: ScalarGemmPolicy<bm, bn, bk, tm, tn>, MmaGemmPolicy<bm, bn, bk, wm, wn, stages> or
// WgmmaExpertsPolicy<bm, bn, bk, stages> (entries named _mma_<dtype>_wgmma_...), from the kernel_config
// (templates/rudnn/moe/experts_scalar.cuh, experts_mma.cuh). The kernels stride over
// row tiles (there are up to ceil(n_rows / bm) + experts of them) so the grid's y = ceil(n_rows / bm).
#include <fmt/format.h>

#include "Conversion/LaunchBuilder.h"
#include "Conversion/MoEToLaunch/MoEToLaunch.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

using namespace mlir;

namespace rudnn::compiler {

LogicalResult lowerExpertsOpToLaunch(RewriterBase& rewriter, dialect::SwiGluExpertsOp op) {
  using SizeFactor = dialect::SizeFactor;
  std::optional<dialect::moe_config::ExpertTile> tile = dialect::expertTileOf(op.getKernelConfigAttr());
  if (!tile) return op.emitOpError() << "has no kernel_config (run rudnn-select-kernel-config first)";
  auto gateType = cast<RankedTensorType>(op.getGate().getType());
  const std::int64_t experts = gateType.getDimSize(0), inter = gateType.getDimSize(1), hidden = gateType.getDimSize(2);
  if (gateType.getNumDynamicDims() != 0) return op.emitOpError() << "needs static expert weight shapes to lower";
  const DType dtype = *dialect::toDType(gateType.getElementType());
  const std::string elem = dialect::cTypeName(dtype);
  const dialect::moe_config::ExpertTile& t = *tile;
  const char* header = t.tensorCore ? "rudnn/moe/experts_mma.cuh" : "rudnn/moe/experts_scalar.cuh";
  const char* kind = t.tensorCore ? "mma" : "scalar";
  std::string policy, tileName;
  if (t.wgmma) {
    policy = fmt::format("rudnn::moe::WgmmaExpertsPolicy<{}, {}, {}, {}>", t.blockM, t.blockN, t.blockK, t.stages);
    tileName = fmt::format("wgmma_{}x{}x{}_s{}", t.blockM, t.blockN, t.blockK, t.stages);
  } else if (t.tensorCore) {
    policy = fmt::format("rudnn::moe::MmaGemmPolicy<{}, {}, {}, {}, {}, {}>", t.blockM, t.blockN, t.blockK, t.a, t.b,
                         t.stages);
    tileName = fmt::format("{}x{}x{}_w{}x{}_s{}", t.blockM, t.blockN, t.blockK, t.a, t.b, t.stages);
  } else {
    policy = fmt::format("rudnn::moe::ScalarGemmPolicy<{}, {}, {}, {}, {}>", t.blockM, t.blockN, t.blockK, t.a, t.b);
    tileName = fmt::format("{}x{}x{}_t{}x{}", t.blockM, t.blockN, t.blockK, t.a, t.b);
  }

  // 1. rows (0), offsets (1), gate (2), up (3) → act (4), a temporary of n_rows × inter elements.
  auto actType = RankedTensorType::get({ShapedType::kDynamic, inter}, gateType.getElementType());
  LaunchBuilder gateUp(op, fmt::format("rudnn_swiglu_gate_up_{}_{}_{}", kind, dtype_name(dtype), tileName), header,
                       fmt::format("rudnn::moe::swiglu_gate_up_{}", kind));
  gateUp.templateArgs({elem, policy})
      .config(op.getKernelConfigAttr())
      .operands({op.getRows(), op.getOffsets(), op.getGate(), op.getUp()})
      .results({actType}, {gateUp.size({SizeFactor::rows(0), SizeFactor::constant(inter)})})
      .buffer("rows", "const " + elem + "*", 0)
      .buffer("offsets", "const rudnn::u32*", 1)
      .buffer("gate", "const " + elem + "*", 2)
      .buffer("up", "const " + elem + "*", 3)
      .buffer("act", elem + "*", 4)
      .sizeParam("n_rows", gateUp.size({SizeFactor::rows(0)}))
      .constant("experts", experts)
      .constant("hidden", hidden)
      .constant("inter", inter)
      .grid(gateUp.size({SizeFactor::constant(inter)}, t.blockN), gateUp.size({SizeFactor::rows(0)}, t.blockM))
      .block(t.threads())
      .shared(dialect::moe_config::gateUpSharedBytes(t));
  dialect::LaunchOp act = gateUp.create(rewriter);

  // 2. act (0), offsets (1), down (2) → out (3).
  LaunchBuilder down(op, fmt::format("rudnn_expert_down_{}_{}_{}", kind, dtype_name(dtype), tileName), header,
                     fmt::format("rudnn::moe::expert_down_{}", kind));
  down.templateArgs({elem, policy})
      .config(op.getKernelConfigAttr())
      .operands({act.getResult(0), op.getOffsets(), op.getDown()})
      .results({op.getOutput().getType()})
      .buffer("act", "const " + elem + "*", 0)
      .buffer("offsets", "const rudnn::u32*", 1)
      .buffer("down", "const " + elem + "*", 2)
      .buffer("out", elem + "*", 3)
      .sizeParam("n_rows", down.size({SizeFactor::rows(0)}))
      .constant("experts", experts)
      .constant("inter", inter)
      .constant("hidden", hidden)
      .grid(down.size({SizeFactor::constant(hidden)}, t.blockN), down.size({SizeFactor::rows(0)}, t.blockM))
      .block(t.threads())
      .shared(dialect::moe_config::downSharedBytes(t));
  rewriter.replaceOp(op, down.create(rewriter)->getResults());
  return success();
}

}  // namespace rudnn::compiler
