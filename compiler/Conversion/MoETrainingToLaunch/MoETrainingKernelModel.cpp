// KernelOpInterface model of the MoE training ops (rudnn.router_weights, rudnn.router_backward,
// rudnn.combine_backward, rudnn.dispatch_backward, rudnn.swiglu_experts_backward); each config has
// one key.
//   heuristic:    router ops {warps = 4} (4 token rows per block, a warp each); combine and
//                 dispatch backward {threads = 128} per token; experts backward: the backward tile of
//                 its strategy on the target ({tile = 1}, the forward's 32 x 64 x 16 scalar tile, or
//                 {tile = 3}, tensor cores 64 x 64 x 32, or {tile = 5}, wgmma 128 x 64 x 64 where the
//                 target has wgmma (sm_90a and RUDNN_WGMMA=1); "auto" takes tensor cores where the
//                 contract allows them, "tensor_core" where it does not is the contract's error).
//   tuning query: none (no Autotune strategy in SPEC §10).
//   config check: moe_training_config::check. The experts backward's tiles 3-5 use tensor cores,
//                 tile 5 wgmma.
#include "Conversion/MoETrainingToLaunch/MoETrainingToLaunch.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/Dialect/Rudnn/IR/MoEConfig.h"
#include "rudnn/Dialect/Rudnn/IR/MoETrainingOps.h"
#include "rudnn/compiler/kernel_op_models.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

// The experts backward's tile a valid config names; nothing for another op or an invalid config.
const dialect::moe_config::ExpertTile* tileOf(Operation* op, DictionaryAttr config) {
  if (!isa<dialect::SwiGluExpertsBackwardOp>(op) || dialect::moe_training_config::check(op, config)) return nullptr;
  return &dialect::moe_config::backwardTiles()[static_cast<std::size_t>(
      dialect::moe_training_config::valueOf(op, config))];
}

template <class Op>
struct MoETrainingKernelModel : dialect::KernelOpInterface::ExternalModel<MoETrainingKernelModel<Op>, Op> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget& target) const {
    if (auto eb = dyn_cast<dialect::SwiGluExpertsBackwardOp>(op); eb && eb.getStrategy() == "tensor_core")
      if (auto sig = dialect::expertsBackwardSignatureOf(eb))
        if (auto e = contracts::check_tensor_core_experts(sig->experts.weights, target.arch))
          return op->emitOpError() << e->message();
    Builder b(op->getContext());
    return b.getDictionaryAttr({b.getNamedAttr(
        dialect::moe_training_config::keyOf(op),
        b.getI64IntegerAttr(dialect::moe_training_config::heuristicValue(op, target.arch, target.maxSharedBytes)))});
  }
  bool configUsesTensorCores(Operation* op, DictionaryAttr config) const {
    const dialect::moe_config::ExpertTile* t = tileOf(op, config);
    return t && t->tensorCore;
  }
  bool configUsesWgmma(Operation* op, DictionaryAttr config) const {
    const dialect::moe_config::ExpertTile* t = tileOf(op, config);
    return t && t->wgmma;
  }
  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    return dialect::moe_training_config::check(op, config);
  }
  std::optional<dialect::TuningQuery> getTuningQuery(Operation*) const { return std::nullopt; }
  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerMoETrainingOpToLaunch(rewriter, op);
  }
};

void attachMoETrainingKernelModels(MLIRContext& ctx) {
  dialect::RouterWeightsOp::attachInterface<MoETrainingKernelModel<dialect::RouterWeightsOp>>(ctx);
  dialect::RouterBackwardOp::attachInterface<MoETrainingKernelModel<dialect::RouterBackwardOp>>(ctx);
  dialect::CombineBackwardOp::attachInterface<MoETrainingKernelModel<dialect::CombineBackwardOp>>(ctx);
  dialect::DispatchBackwardOp::attachInterface<MoETrainingKernelModel<dialect::DispatchBackwardOp>>(ctx);
  dialect::SwiGluExpertsBackwardOp::attachInterface<MoETrainingKernelModel<dialect::SwiGluExpertsBackwardOp>>(ctx);
}

const KernelModelRegistration kRegistered(&attachMoETrainingKernelModels);

}  // namespace

}  // namespace rudnn::compiler
