// rudnn-select-kernel-config: the heuristic that picks a kernel_config for every operator op that
// has none. Autotune produces the same attribute; a config already attached is never replaced.
#include "Transforms/KernelConfigHeuristics.h"

#include "contracts/arch.h"

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

dialect::moe_config::RowCopyConfig heuristicRowCopyConfig(DType dtype, std::int64_t h) {
  dialect::moe_config::RowCopyConfig c;
  c.vectorWidth = dialect::moe_config::rowVectorWidths(dtype, h).front();
  const std::int64_t vectors = h < 0 ? 1024 : (h + c.vectorWidth - 1) / c.vectorWidth;
  c.threads = std::min<std::int64_t>(256, std::max<std::int64_t>(64, nextPow2(vectors)));
  return c;
}

dialect::moe_config::ExpertTile heuristicExpertTile(bool tensorCore, std::int64_t rowsPerExpert) {
  const auto& tiles = tensorCore ? dialect::moe_config::tensorCoreTiles() : dialect::moe_config::scalarTiles();
  if (rowsPerExpert < 0) return tiles[1];  // a middle tile when the load is unknown
  const dialect::moe_config::ExpertTile* largest = &tiles.front();
  for (const auto& t : tiles) {
    if (t.blockM >= rowsPerExpert) return t;
    if (t.blockM > largest->blockM) largest = &t;
  }
  return *largest;
}

dialect::gated_delta_config::RecurrentTile heuristicRecurrentTile(std::int64_t keyDim) {
  for (const auto& t : dialect::gated_delta_config::recurrentTiles())
    if (t.maxKeyDim() >= keyDim) return t;
  return dialect::gated_delta_config::recurrentTiles().back();
}

dialect::gated_delta_config::ChunkTile heuristicChunkTile(std::int64_t keyDim, bool tensorCores) {
  // 128 threads are enough for small keys; 32 columns keep B·H·V/32 blocks and the least shared memory;
  // f16/bf16 take the tensor cores where the target has them.
  return {keyDim <= 64 ? 128 : 256, 32, tensorCores};
}

FailureOr<dialect::attention_config::Tile> heuristicAttentionTile(dialect::AttentionOp op, const std::string& arch) {
  using dialect::attention_config::Kind;
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  const std::int64_t d = q.getDimSize(3), dv = cast<RankedTensorType>(op.getValue().getType()).getDimSize(3);
  const DType dtype = *dialect::toDType(q.getElementType());
  const auto strategy = contracts::parse_attention_strategy(op.getStrategy());
  // Autotune without a provider (or without a cached answer): the fused tensor-core kernel where it
  // fits, else the fused plain-core one, else the reference path.
  std::vector<Kind> order = {Kind::FlashMma, Kind::FlashUnit, Kind::Fallback};
  if (strategy == contracts::AttentionStrategy::FlashBlackboxAccelerated) order = {Kind::FlashMma};
  if (strategy == contracts::AttentionStrategy::FlashUnit) order = {Kind::FlashUnit};
  if (strategy == contracts::AttentionStrategy::Fallback) order = {Kind::Fallback};
  for (Kind kind : order) {
    if (kind == Kind::FlashMma && !contracts::has_mma_m16n8k16(arch)) continue;  // no tensor cores to run it
    auto tiles = dialect::attention_config::tilesFor(kind, dtype, d, dv);
    if (!tiles.empty()) return tiles.front();
  }
  return op.emitOpError() << "no attention strategy serves " << dtype_name(dtype) << " head_dim " << d
                          << " value_dim " << dv << " on " << arch;
}

// A kernel_config attached before this pass (by the autotuner, a user, a test) that names a
// tensor-core kernel the target cannot run: an error naming the requirement, rather than a compile
// failure in NVRTC. Every tensor-core config of every family is checked here, against one rule.
LogicalResult checkTensorCoreConfig(Operation* op, const std::string& arch) {
  if (contracts::has_mma_m16n8k16(arch)) return success();
  auto config = op->getAttrOfType<DictionaryAttr>(dialect::kKernelConfigAttrName);
  if (!config) return success();
  bool tensorCore = false;
  if (auto at = dyn_cast<dialect::AttentionOp>(op)) {
    const std::int64_t d = cast<RankedTensorType>(at.getQuery().getType()).getDimSize(3);
    auto tile = dialect::attentionTileOf(config, d);
    tensorCore = tile && tile->kind == dialect::attention_config::Kind::FlashMma;
  } else if (isa<dialect::GatedDeltaOp>(op)) {
    auto tile = dialect::chunkTileOf(config);
    tensorCore = tile && tile->tensorCore;
  } else if (isa<dialect::SwiGluExpertsOp>(op)) {
    auto tile = dialect::expertTileOf(config);
    tensorCore = tile && tile->tensorCore;
  }
  if (!tensorCore) return success();
  return op->emitOpError() << "kernel_config: expected " << contracts::kMmaRequirement << " for " << config
                           << ", got target " << arch;
}

namespace {

// The swiglu_experts strategy on `arch`: scalar → scalar; tensor_core → tensor core (the contract
// error when it cannot); auto → tensor core where the contract allows it, else scalar.
FailureOr<bool> resolveTensorCore(dialect::SwiGluExpertsOp op, const std::string& arch) {
  const StringRef strategy = op.getStrategy();
  if (strategy == "scalar") return false;
  std::optional<MoeError> unsupported = contracts::check_tensor_core_experts(dialect::expertWeightsOf(op), arch);
  if (strategy == "auto") return !unsupported;
  if (unsupported) return op.emitOpError() << unsupported->message();
  return true;
}

struct SelectKernelConfig : dialect::impl::SelectKernelConfigPassBase<SelectKernelConfig> {
  using Base::Base;

  void runOnOperation() override {
    WalkResult walk = getOperation()->walk([&](Operation* op) -> WalkResult {
      Builder b(op->getContext());
      if (failed(checkTensorCoreConfig(op, arch))) return WalkResult::interrupt();
      if (auto experts = dyn_cast<dialect::SwiGluExpertsOp>(op)) {
        if (experts.getKernelConfigAttr()) return WalkResult::advance();
        FailureOr<bool> tensorCore = resolveTensorCore(experts, arch);
        auto hint = op->getAttrOfType<IntegerAttr>(dialect::kRowsPerExpertAttrName);
        const std::int64_t rowsHint = hint ? hint.getInt() : -1;
        if (failed(tensorCore)) return WalkResult::interrupt();
        op->setAttr(dialect::kKernelConfigAttrName,
                    dialect::expertTileConfig(op->getContext(), heuristicExpertTile(*tensorCore, rowsHint)));
        return WalkResult::advance();
      }
      if (auto at = dyn_cast<dialect::AttentionOp>(op)) {
        if (at.getKernelConfigAttr()) return WalkResult::advance();
        FailureOr<dialect::attention_config::Tile> tile = heuristicAttentionTile(at, arch);
        if (failed(tile)) return WalkResult::interrupt();
        op->setAttr(dialect::kKernelConfigAttrName, dialect::attentionTileConfig(op->getContext(), *tile));
        return WalkResult::advance();
      }
      if (auto gd = dyn_cast<dialect::GatedDeltaOp>(op)) {
        if (gd.getKernelConfigAttr()) return WalkResult::advance();
        const std::int64_t k = cast<RankedTensorType>(gd.getQuery().getType()).getDimSize(3);
        const std::int64_t c = gd.getChunkSizeAttr().getInt();
        SmallVector<NamedAttribute> entries;
        if (c == 0) {
          const auto t = heuristicRecurrentTile(ShapedType::isDynamic(k) ? contracts::kMaxGatedDeltaDim : k);
          entries = {b.getNamedAttr(dialect::gated_delta_config::kWarps, b.getI64IntegerAttr(t.warps)),
                     b.getNamedAttr(dialect::gated_delta_config::kRowsPerThread, b.getI64IntegerAttr(t.rowsPerThread))};
        } else {
          const bool half = !cast<RankedTensorType>(gd.getQuery().getType()).getElementType().isF32();
          const auto t = heuristicChunkTile(ShapedType::isDynamic(k) ? contracts::kMaxGatedDeltaDim : k,
                                            half && contracts::has_mma_m16n8k16(arch));
          entries = {b.getNamedAttr(dialect::gated_delta_config::kThreads, b.getI64IntegerAttr(t.threads)),
                     b.getNamedAttr(dialect::gated_delta_config::kColumns, b.getI64IntegerAttr(t.columns)),
                     b.getNamedAttr(dialect::gated_delta_config::kTensorCore, b.getI64IntegerAttr(t.tensorCore ? 1 : 0))};
        }
        op->setAttr(dialect::kKernelConfigAttrName, b.getDictionaryAttr(entries));
        return WalkResult::advance();
      }
      if (isa<dialect::DispatchOp, dialect::CombineOp>(op)) {
        if (op->getAttr(dialect::kKernelConfigAttrName)) return WalkResult::advance();
        auto rows = cast<RankedTensorType>(op->getOperand(0).getType());
        std::int64_t h = rows.getDimSize(1);
        if (ShapedType::isDynamic(h)) h = -1;
        const auto c = heuristicRowCopyConfig(*dialect::toDType(rows.getElementType()), h);
        SmallVector<NamedAttribute> entries = {
            b.getNamedAttr(dialect::moe_config::kThreads, b.getI64IntegerAttr(c.threads)),
            b.getNamedAttr(dialect::moe_config::kVectorWidth, b.getI64IntegerAttr(c.vectorWidth))};
        // The ranking block: as wide as the target allows (one block does all the counting).
        if (isa<dialect::DispatchOp>(op))
          entries.push_back(b.getNamedAttr(dialect::moe_config::kRankThreads,
                                           b.getI64IntegerAttr(std::min<std::int64_t>(1024, maxThreadsPerBlock))));
        op->setAttr(dialect::kKernelConfigAttrName, b.getDictionaryAttr(entries));
        return WalkResult::advance();
      }
      if (std::optional<dialect::RouteOpView> route = dialect::asRouteOp(op)) {
        if (route->kernelConfig) return WalkResult::advance();
        op->setAttr(dialect::kKernelConfigAttrName,
                    b.getDictionaryAttr({b.getNamedAttr(dialect::route_config::kRowsPerBlock,
                                                        b.getI64IntegerAttr(heuristicRouteRowsPerBlock(
                                                            route->grouped, route->logitsType().getDimSize(1))))}));
        return WalkResult::advance();
      }
      std::optional<dialect::NormOpView> norm = dialect::asNormOp(op);
      if (!norm || norm->kernelConfig) return WalkResult::advance();
      RankedTensorType type = norm->inputType();
      DType dtype = *dialect::toDType(type.getElementType());  // the verifier accepted it
      std::int64_t h = type.getShape().back();
      if (ShapedType::isDynamic(h)) h = -1;
      dialect::norm_config::RowConfig c =
          heuristicRowConfig(dtype, h, op->hasAttr(dialect::kUnalignedAttrName), maxThreadsPerBlock);
      op->setAttr(dialect::kKernelConfigAttrName,
                  b.getDictionaryAttr({
                      b.getNamedAttr(dialect::norm_config::kThreadsPerRow, b.getI64IntegerAttr(c.threadsPerRow)),
                      b.getNamedAttr(dialect::norm_config::kRowsPerBlock, b.getI64IntegerAttr(c.rowsPerBlock)),
                      b.getNamedAttr(dialect::norm_config::kVectorWidth, b.getI64IntegerAttr(c.vectorWidth)),
                  }));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) signalPassFailure();
  }
};

}  // namespace
}  // namespace rudnn::compiler
