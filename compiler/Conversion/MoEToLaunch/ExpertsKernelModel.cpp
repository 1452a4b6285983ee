// KernelOpInterface model of rudnn.swiglu_experts (the grouped gate/up and down GEMMs).
//   heuristic:    the strategy on the target (scalar; tensor_core, an error where the contract
//                 rejects it; auto = tensor core where allowed, else scalar), then the smallest
//                 registered tile whose block_m covers rudnn.rows_per_expert (decode-like loads
//                 waste no rows), the largest otherwise, a middle tile when the load is unknown.
//                 The tiles on mma.sync, or the wgmma tiles where the target has wgmma (sm_90a with
//                 the RUDNN_WGMMA=1 opt-in) and the load is over 16 rows per expert (a 64-row
//                 warpgroup would idle most of its rows below that; the 16-row mma.sync tile serves),
//                 each within the target's shared memory.
//   tuning query: operands {rows, offsets, gate, up, down}, options {tensor_core 0/1}; not asked
//                 for strategy "auto" (the ops layer resolves it before lowering).
//   config check: a registered tile (checkExpertTile) of the op's strategy; tensor_core = 1 tiles
//                 use mma.sync m16n8k16, those with wgmma = 1 Hopper's warpgroup MMA (the
//                 interface's default configUsesWgmma reads the key).
#include <algorithm>
#include <vector>

#include "Conversion/MoEToLaunch/MoEToLaunch.h"
#include "contracts/arch.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/compiler/kernel_op_models.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

namespace moe_config = dialect::moe_config;

// The smallest decode-like load (rows per expert) the wgmma tiles take.
constexpr std::int64_t kWgmmaMinRows = 17;

// `wgmma`: the target has it; `maxSharedBytes` its opt-in limit (0: none), which every mma.sync and
// scalar tile fits (99 KiB, the smallest sm_80+ limit) and a wgmma tile may not.
moe_config::ExpertTile heuristicExpertTile(bool tensorCore, std::int64_t rowsPerExpert, bool wgmma,
                                           std::int64_t maxSharedBytes) {
  auto fits = [&](const moe_config::ExpertTile& t) {
    return maxSharedBytes <= 0 || moe_config::gateUpSharedBytes(t) <= maxSharedBytes;
  };
  bool useWgmma = tensorCore && wgmma && (rowsPerExpert < 0 || rowsPerExpert >= kWgmmaMinRows);
  const auto& all = tensorCore ? moe_config::tensorCoreTiles() : moe_config::scalarTiles();
  if (useWgmma && std::none_of(all.begin(), all.end(), [&](const auto& t) { return t.wgmma && fits(t); }))
    useWgmma = false;
  std::vector<moe_config::ExpertTile> tiles;
  for (const auto& t : all)
    if (t.wgmma == useWgmma && fits(t)) tiles.push_back(t);
  if (tiles.empty())  // a limit below every tile (a pass option, not a GPU): the select pass reports it
    for (const auto& t : all)
      if (!t.wgmma) tiles.push_back(t);
  if (rowsPerExpert < 0) return tiles[(tiles.size() - 1) / 2];  // a middle tile when the load is unknown
  const moe_config::ExpertTile* largest = &tiles.front();
  for (const auto& t : tiles) {
    if (t.blockM >= rowsPerExpert) return t;
    if (t.blockM > largest->blockM) largest = &t;
  }
  return *largest;
}

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

struct ExpertsKernelModel : dialect::KernelOpInterface::ExternalModel<ExpertsKernelModel, dialect::SwiGluExpertsOp> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget& target) const {
    FailureOr<bool> tensorCore = resolveTensorCore(cast<dialect::SwiGluExpertsOp>(op), target.arch);
    if (failed(tensorCore)) return failure();
    auto hint = op->getAttrOfType<IntegerAttr>(dialect::kRowsPerExpertAttrName);
    const std::int64_t rowsHint = hint ? hint.getInt() : -1;
    const bool wgmma = *tensorCore && contracts::heuristics_take_wgmma(target.arch);
    return dialect::expertTileConfig(op->getContext(),
                                     heuristicExpertTile(*tensorCore, rowsHint, wgmma, target.maxSharedBytes));
  }

  bool configUsesTensorCores(Operation*, DictionaryAttr config) const {
    auto tile = dialect::expertTileOf(config);
    return tile && tile->tensorCore;
  }

  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    auto tile = dialect::expertTileOf(config);
    if (!tile) return "not an expert tile";
    const StringRef strategy = cast<dialect::SwiGluExpertsOp>(op).getStrategy();
    if (strategy != "auto" && tile->tensorCore != (strategy == "tensor_core")) return "a tile of the other strategy";
    return moe_config::checkExpertTile(*tile);
  }

  std::optional<dialect::TuningQuery> getTuningQuery(Operation* op) const {
    auto experts = cast<dialect::SwiGluExpertsOp>(op);
    // The ops layer resolves "auto" before lowering; an unresolved one keeps the heuristic.
    if (experts.getStrategy() == "auto") return std::nullopt;
    return dialect::TuningQuery{
        {experts.getRows(), experts.getOffsets(), experts.getGate(), experts.getUp(), experts.getDown()},
        {experts.getStrategy() == "tensor_core" ? 1 : 0}};
  }

  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerExpertsOpToLaunch(rewriter, cast<dialect::SwiGluExpertsOp>(op));
  }
};

void attachExpertsKernelModel(MLIRContext& ctx) { dialect::SwiGluExpertsOp::attachInterface<ExpertsKernelModel>(ctx); }

const KernelModelRegistration kRegistered(&attachExpertsKernelModel);

}  // namespace

}  // namespace rudnn::compiler
