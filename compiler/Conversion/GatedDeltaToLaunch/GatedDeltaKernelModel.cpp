// KernelOpInterface model of rudnn.gated_delta.
//   heuristic:    chunk_size 0 (recurrence): the smallest registered tile holding key_dim (the
//                 largest key_dim when it is dynamic). Chunked: 128 threads for key_dim <= 64, else
//                 256, with 32 state columns per block (B·H·V/32 blocks), on tensor cores for
//                 f16/bf16 where the target has mma.sync m16n8k16; 16 columns where only those fit
//                 the target's shared memory.
//   tuning query: operands {query, key, value, beta, log_decay, initial_state?} (the op's tensor
//                 operands present, in op order), options {chunk_size}: the recurrence and the
//                 chunked kernel have different tile spaces, and the chunk length changes the
//                 chunked kernel's cost.
//   config check: checkGatedDeltaConfig (a recurrence tile that holds key_dim, or a registered
//                 chunk tile; tensor_core = 1 only for f16/bf16); chunk tiles with tensor_core = 1
//                 use mma.sync m16n8k16.
#include "Conversion/GatedDeltaToLaunch/GatedDeltaToLaunch.h"
#include "contracts/arch.h"
#include "contracts/gated_delta.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/GatedDeltaConfig.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/compiler/kernel_op_models.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

namespace gated_delta_config = dialect::gated_delta_config;

gated_delta_config::RecurrentTile heuristicRecurrentTile(std::int64_t keyDim) {
  for (const auto& t : gated_delta_config::recurrentTiles())
    if (t.maxKeyDim() >= keyDim) return t;
  return gated_delta_config::recurrentTiles().back();
}

gated_delta_config::ChunkTile heuristicChunkTile(std::int64_t chunk, std::int64_t keyDim, bool tensorCores,
                                                 std::int64_t maxSharedBytes) {
  // 128 threads are enough for small keys; f16/bf16 take the tensor cores where the target has them.
  // 32 columns (B·H·V/32 blocks) unless that tile is over the target's shared memory and the
  // tensor cores' 16-column one fits (Qwen3-Next's chunk 64 at K = 128 on sm_86/sm_89's 99 KiB).
  gated_delta_config::ChunkTile tile{keyDim <= 64 ? 128 : 256, 32, tensorCores};
  const std::int64_t narrowest = contracts::smallest_chunk_columns(true);
  if (tensorCores && contracts::chunk_shared_bytes(chunk, keyDim, tile.columns, true) > maxSharedBytes &&
      contracts::chunk_shared_bytes(chunk, keyDim, narrowest, true) <= maxSharedBytes)
    tile.columns = narrowest;
  return tile;
}

struct GatedDeltaKernelModel : dialect::KernelOpInterface::ExternalModel<GatedDeltaKernelModel, dialect::GatedDeltaOp> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget& target) const {
    auto gd = cast<dialect::GatedDeltaOp>(op);
    auto query = cast<RankedTensorType>(gd.getQuery().getType());
    std::int64_t k = query.getDimSize(3);
    if (ShapedType::isDynamic(k)) k = contracts::kMaxGatedDeltaDim;
    Builder b(op->getContext());
    if (gd.getChunkSizeAttr().getInt() == 0) {
      const auto t = heuristicRecurrentTile(k);
      return b.getDictionaryAttr(
          {b.getNamedAttr(gated_delta_config::kWarps, b.getI64IntegerAttr(t.warps)),
           b.getNamedAttr(gated_delta_config::kRowsPerThread, b.getI64IntegerAttr(t.rowsPerThread))});
    }
    const bool half = !query.getElementType().isF32();
    const auto t = heuristicChunkTile(gd.getChunkSizeAttr().getInt(), k,
                                      half && contracts::has_mma_m16n8k16(target.arch), target.maxSharedBytes);
    return b.getDictionaryAttr(
        {b.getNamedAttr(gated_delta_config::kThreads, b.getI64IntegerAttr(t.threads)),
         b.getNamedAttr(gated_delta_config::kColumns, b.getI64IntegerAttr(t.columns)),
         b.getNamedAttr(gated_delta_config::kTensorCore, b.getI64IntegerAttr(t.tensorCore ? 1 : 0))});
  }

  bool configUsesTensorCores(Operation*, DictionaryAttr config) const {
    auto tile = dialect::chunkTileOf(config);
    return tile && tile->tensorCore;
  }

  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    return dialect::checkGatedDeltaConfig(cast<dialect::GatedDeltaOp>(op), config);
  }

  std::optional<dialect::TuningQuery> getTuningQuery(Operation* op) const {
    return dialect::TuningQuery{{op->getOperands().begin(), op->getOperands().end()},
                                {cast<dialect::GatedDeltaOp>(op).getChunkSizeAttr().getInt()}};
  }

  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerGatedDeltaOpToLaunch(rewriter, cast<dialect::GatedDeltaOp>(op));
  }
};

void attachGatedDeltaKernelModel(MLIRContext& ctx) {
  dialect::GatedDeltaOp::attachInterface<GatedDeltaKernelModel>(ctx);
}

const KernelModelRegistration kRegistered(&attachGatedDeltaKernelModel);

}  // namespace

}  // namespace rudnn::compiler
