// KernelOpInterface model of the paged ops. rudnn.paged_attention and rudnn.paged_mla: their
// kernel_config is the paged_unit tile (PagedAttentionConfig.h); rudnn.paged_append has one kernel
// and an empty config.
//   heuristic:    paged_config::heuristicTile: where the target has wgmma (sm_90a with the
//                 RUDNN_WGMMA=1 opt-in, contracts::heuristics_take_wgmma), the wgmma kernel for
//                 f16/bf16 attention with D = Dv ∈ {64, 128, 256}, for every batch (the kernel is a
//                 function of the shapes and the target, never of the schedule: batch invariance);
//                 else the tensor-core kernels for f16/bf16 with D = Dv ∈
//                 {64, 96, 128, 256}, and for MLA with R a multiple of 128 up to 512 and Pr a
//                 multiple of 16, where the target has mma.sync m16n8k16 and the shared memory
//                 they need (sm_86/sm_89: 99 KiB, too little for MLA's); else the
//                 plain one (block rows covering the GQA group, lanes so that a lane holds ≤ 32
//                 value columns, 32-key tiles; where the target's shared memory needs them, 16-key
//                 tiles of the same rows, then of 4, then of 2; an error when none fits); append: {}.
//   tuning query: none (the paged ops have no Autotune strategy).
//   config check: paged_config::checkTile (tensor_core = 1 uses mma.sync m16n8k16; wgmma = 1
//                 Hopper's warpgroup MMA, which select-kernel-config allows only where
//                 contracts::has_wgmma holds: the interface's default configUsesWgmma); append: an
//                 empty config.
// rudnn.paged_attention_backward / rudnn.paged_mla_backward: {warps, tensor_core}, heuristic 4
// warps, on tensor cores for attention in f16/bf16 with D = Dv ∈ {64, 96, 128} and for MLA in
// f16/bf16 with R a multiple of 128 up to 512 and Pr a multiple of 16 (within sm_80's shared memory)
// where the target has mma.sync m16n8k16 and the kernels' shared memory (paged_config::heuristicBackward).
#include "Conversion/PagedAttentionToLaunch/PagedAttentionToLaunch.h"
#include "contracts/arch.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ConfigValues.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/Dialect/Rudnn/IR/PagedAttentionOps.h"
#include "rudnn/compiler/kernel_op_models.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

template <class Op>
struct PagedKernelModel : dialect::KernelOpInterface::ExternalModel<PagedKernelModel<Op>, Op> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget& target) const {
    auto sig = dialect::pagedSignatureOf(op);
    if (!sig) return op->emitOpError() << "is not a paged attention op";
    const dialect::paged_config::Shape shape = dialect::pagedShapeOf(*sig);
    const auto tile =
        dialect::paged_config::heuristicTile(shape, contracts::has_mma_m16n8k16(target.arch), target.maxSharedBytes,
                                             contracts::heuristics_take_wgmma(target.arch));
    if (!tile)
      return op->emitOpError() << "has no tile for key dim " << shape.keyDim << " value dim " << shape.valueDim
                               << " within the target's " << target.maxSharedBytes << " bytes of shared memory";
    return dialect::pagedTileConfig(op->getContext(), *tile);
  }

  bool configUsesTensorCores(Operation*, DictionaryAttr config) const {
    auto tile = dialect::pagedTileOf(config);
    return tile && tile->tensorCore;
  }

  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    return dialect::checkPagedConfig(op, config);
  }

  std::optional<dialect::TuningQuery> getTuningQuery(Operation*) const { return std::nullopt; }

  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerPagedAttentionOpToLaunch(rewriter, op);
  }
};

struct PagedAppendKernelModel
    : dialect::KernelOpInterface::ExternalModel<PagedAppendKernelModel, dialect::PagedAppendOp> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget&) const {
    return DictionaryAttr::get(op->getContext());
  }
  bool configUsesTensorCores(Operation*, DictionaryAttr) const { return false; }
  std::optional<std::string> checkKernelConfig(Operation*, DictionaryAttr config) const {
    if (config.empty()) return std::nullopt;
    return std::string("the append has one kernel and takes an empty kernel_config");
  }
  std::optional<dialect::TuningQuery> getTuningQuery(Operation*) const { return std::nullopt; }
  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerPagedAppendOpToLaunch(rewriter, cast<dialect::PagedAppendOp>(op));
  }
};

template <class Op>
struct PagedBackwardKernelModel : dialect::KernelOpInterface::ExternalModel<PagedBackwardKernelModel<Op>, Op> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget& target) const {
    auto sig = dialect::pagedBackwardSignatureOf(op);
    if (!sig) return op->emitOpError() << "is not a paged backward op";
    const dialect::paged_config::Shape shape = dialect::pagedShapeOf(sig->forward);
    const bool tensorCores = contracts::has_mma_m16n8k16(target.arch) &&
                             dialect::paged_config::backwardMmaSharedBytes(shape) <= target.maxSharedBytes;
    const auto config = dialect::paged_config::heuristicBackward(shape, tensorCores);
    return dialect::integerDictionary(op->getContext(), dialect::paged_config::valuesOf(config));
  }
  bool configUsesTensorCores(Operation*, DictionaryAttr config) const {
    return dialect::pagedBackwardConfigOf(config).tensorCore;
  }
  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    return dialect::checkPagedBackwardConfig(op, config);
  }
  std::optional<dialect::TuningQuery> getTuningQuery(Operation*) const { return std::nullopt; }
  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerPagedBackwardOpToLaunch(rewriter, op);
  }
};

void attachPagedKernelModels(MLIRContext& ctx) {
  dialect::PagedAttentionOp::attachInterface<PagedKernelModel<dialect::PagedAttentionOp>>(ctx);
  dialect::PagedMlaOp::attachInterface<PagedKernelModel<dialect::PagedMlaOp>>(ctx);
  dialect::PagedAppendOp::attachInterface<PagedAppendKernelModel>(ctx);
  dialect::PagedAttentionBackwardOp::attachInterface<PagedBackwardKernelModel<dialect::PagedAttentionBackwardOp>>(ctx);
  dialect::PagedMlaBackwardOp::attachInterface<PagedBackwardKernelModel<dialect::PagedMlaBackwardOp>>(ctx);
}

const KernelModelRegistration kRegistered(&attachPagedKernelModels);

}  // namespace

}  // namespace rudnn::compiler
