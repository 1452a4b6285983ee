// KernelOpInterface model of rudnn.attention (its kernel_config names the strategy that runs and
// its tile).
//   heuristic:    the first registered tile of the op's strategy; for "autotune" (no tuned answer)
//                 the first strategy that fits in the order flash_mma (where the target has
//                 mma.sync m16n8k16), flash_unit, fallback; an error when none serves the op. Where
//                 the target has wgmma (sm_90a with the RUDNN_WGMMA=1 opt-in, contracts::has_wgmma),
//                 flash_mma's wgmma tile first, unless the panels are known to be 64 rows or fewer
//                 (static shapes, or the rudnn.short_panels hint).
//   tuning query: operands {query, key, value, mask?, attn_bias?}, options {causal 0/1, mask 0/1,
//                 attn_bias 0/1, AttentionStrategy::Autotune}; asked only for strategy "autotune"
//                 (a concrete strategy runs its heuristic tile).
//   config check: an attention tile (attentionTileOf) that serves (dtype, D, Dv) (checkTile);
//                 flash_mma tiles use mma.sync m16n8k16, those with wgmma = 1 Hopper's warpgroup
//                 MMA (the interface's default configUsesWgmma reads the key).
#include <algorithm>

#include "Conversion/AttentionToLaunch/AttentionToLaunch.h"
#include "contracts/arch.h"
#include "rudnn/Dialect/Rudnn/IR/AttentionConfig.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/compiler/kernel_op_models.h"
#include "rudnn/compiler/pipeline.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

namespace attention_config = dialect::attention_config;

std::int64_t headDimOf(dialect::AttentionOp op) {
  return cast<RankedTensorType>(op.getQuery().getType()).getDimSize(3);
}
std::int64_t valueDimOf(dialect::AttentionOp op) {
  return cast<RankedTensorType>(op.getValue().getType()).getDimSize(3);
}
DType dtypeOf(dialect::AttentionOp op) {
  return *dialect::toDType(cast<RankedTensorType>(op.getQuery().getType()).getElementType());
}

// The tile's dynamic shared memory (the fallback's two kernels: the larger).
std::int64_t sharedBytesOf(const attention_config::Tile& t, std::int64_t d, std::int64_t dv) {
  using attention_config::Kind;
  switch (t.kind) {
    case Kind::FlashMma: return attention_config::flashMmaSharedBytes(t);
    case Kind::FlashUnit: return attention_config::flashUnitSharedBytes(t, d, dv);
    case Kind::Fallback:
      return std::max(attention_config::fallbackTileSharedBytes(t), attention_config::fallbackSoftmaxSharedBytes(t));
  }
  return 0;
}

// A call whose panels hold kShortPanelRows or fewer (group·Tq: decode with a small group), which a
// wgmma tile's two warpgroups of 64 rows would run mostly empty: by its static shapes, or by the
// public entry's rudnn.short_panels hint (its plans keep Tq dynamic).
bool shortPanels(dialect::AttentionOp op) {
  if (op->hasAttr(dialect::kShortPanelsAttrName)) return true;
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  if (q.isDynamicDim(1) || q.isDynamicDim(2) || k.isDynamicDim(1) || k.getDimSize(1) <= 0) return false;
  return attention_panels_short(q.getDimSize(1), k.getDimSize(1), q.getDimSize(2),
                                op->hasAttr(dialect::kHeadPanelsAttrName));
}

FailureOr<attention_config::Tile> heuristicAttentionTile(dialect::AttentionOp op, const dialect::KernelTarget& target) {
  const std::string& arch = target.arch;
  using attention_config::Kind;
  const std::int64_t d = headDimOf(op), dv = valueDimOf(op);
  const DType dtype = dtypeOf(op);
  const auto strategy = contracts::parse_attention_strategy(op.getStrategy());
  // Autotune without a provider (or without a cached answer): the fused tensor-core kernel where it
  // fits, else the fused plain-core one, else the reference path.
  std::vector<Kind> order = {Kind::FlashMma, Kind::FlashUnit, Kind::Fallback};
  if (strategy == contracts::AttentionStrategy::FlashBlackboxAccelerated) order = {Kind::FlashMma};
  if (strategy == contracts::AttentionStrategy::FlashUnit) order = {Kind::FlashUnit};
  if (strategy == contracts::AttentionStrategy::Fallback) order = {Kind::Fallback};
  const bool takeWgmma = contracts::heuristics_take_wgmma(arch) && !shortPanels(op);
  for (Kind kind : order) {
    if (kind == Kind::FlashMma && !contracts::has_mma_m16n8k16(arch)) continue;  // no tensor cores to run it
    // The first registered tile within the target's shared memory (each mma.sync one fits sm_86's
    // 99 KiB): a wgmma one where the heuristic takes them, else (or when none fits) an mma.sync one.
    const std::vector<attention_config::Tile> tiles = attention_config::tilesFor(kind, dtype, d, dv);
    auto first = [&](bool wgmma) -> const attention_config::Tile* {
      for (const attention_config::Tile& t : tiles)
        if (t.wgmma == wgmma && sharedBytesOf(t, d, dv) <= target.maxSharedBytes) return &t;
      return nullptr;
    };
    if (const attention_config::Tile* t = takeWgmma ? first(true) : nullptr) return *t;
    if (const attention_config::Tile* t = first(false)) return *t;
  }
  return op.emitOpError() << "no attention strategy serves " << dtype_name(dtype) << " head_dim " << d << " value_dim "
                          << dv << " on " << arch << " within " << target.maxSharedBytes << " bytes of shared memory";
}

struct AttentionKernelModel : dialect::KernelOpInterface::ExternalModel<AttentionKernelModel, dialect::AttentionOp> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget& target) const {
    FailureOr<attention_config::Tile> tile = heuristicAttentionTile(cast<dialect::AttentionOp>(op), target);
    if (failed(tile)) return failure();
    return dialect::attentionTileConfig(op->getContext(), *tile);
  }

  bool configUsesTensorCores(Operation* op, DictionaryAttr config) const {
    auto tile = dialect::attentionTileOf(config, headDimOf(cast<dialect::AttentionOp>(op)));
    return tile && tile->kind == attention_config::Kind::FlashMma;
  }

  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    auto at = cast<dialect::AttentionOp>(op);
    const std::int64_t d = headDimOf(at);
    auto tile = dialect::attentionTileOf(config, d);
    if (!tile) return "not an attention tile";
    return attention_config::checkTile(*tile, dtypeOf(at), d, valueDimOf(at));
  }

  std::optional<dialect::TuningQuery> getTuningQuery(Operation* op) const {
    auto at = cast<dialect::AttentionOp>(op);
    // Only the Autotune strategy asks: a concrete strategy runs its heuristic tile.
    if (at.getStrategy() != "autotune") return std::nullopt;
    return dialect::TuningQuery{{at.getQuery(), at.getKey(), at.getValue(), at.getMask(), at.getAttnBias()},
                                {at.getCausal() ? 1 : 0, at.getMask() ? 1 : 0, at.getAttnBias() ? 1 : 0,
                                 static_cast<std::int64_t>(contracts::AttentionStrategy::Autotune)}};
  }

  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerAttentionOpToLaunch(rewriter, cast<dialect::AttentionOp>(op));
  }
};

void attachAttentionKernelModel(MLIRContext& ctx) { dialect::AttentionOp::attachInterface<AttentionKernelModel>(ctx); }

const KernelModelRegistration kRegistered(&attachAttentionKernelModel);

}  // namespace

}  // namespace rudnn::compiler
