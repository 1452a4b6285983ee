// KernelOpInterface model of rudnn.combine (one block per token, the weighted sum of its rows).
//   heuristic:    heuristicRowCopyConfig over expert_rows (h = dim 1).
//   tuning query: operands {expert_rows, slots, weights} (the op's tensor operands, in op order),
//                 no options.
//   config check: checkRowCopyConfig; no tensor-core kernels.
#include "Conversion/MoEToLaunch/MoEToLaunch.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/compiler/kernel_op_models.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

RankedTensorType rowTypeOf(Operation* op) {
  return cast<RankedTensorType>(cast<dialect::CombineOp>(op).getExpertRows().getType());
}

struct CombineKernelModel : dialect::KernelOpInterface::ExternalModel<CombineKernelModel, dialect::CombineOp> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget&) const {
    const auto c = heuristicRowCopyConfig(rowTypeOf(op));
    Builder b(op->getContext());
    return b.getDictionaryAttr({b.getNamedAttr(dialect::moe_config::kThreads, b.getI64IntegerAttr(c.threads)),
                                b.getNamedAttr(dialect::moe_config::kVectorWidth, b.getI64IntegerAttr(c.vectorWidth))});
  }

  bool configUsesTensorCores(Operation*, DictionaryAttr) const { return false; }

  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    return dialect::checkRowCopyConfig(config, rowTypeOf(op), /*dispatch=*/false);
  }

  std::optional<dialect::TuningQuery> getTuningQuery(Operation* op) const {
    return dialect::TuningQuery{{op->getOperands().begin(), op->getOperands().end()}, {}};
  }

  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerCombineOpToLaunch(rewriter, cast<dialect::CombineOp>(op));
  }
};

void attachCombineKernelModel(MLIRContext& ctx) { dialect::CombineOp::attachInterface<CombineKernelModel>(ctx); }

const KernelModelRegistration kRegistered(&attachCombineKernelModel);

}  // namespace

}  // namespace rudnn::compiler
