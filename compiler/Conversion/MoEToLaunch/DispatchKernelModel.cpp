// KernelOpInterface model of rudnn.dispatch (dispatch_rank, then dispatch_scatter).
//   heuristic:    the scatter's row copy by heuristicRowCopyConfig over the input's rows (h = dim 1);
//                 rank_threads = min(1024, max threads per block): one block does all the counting,
//                 as wide as the target allows.
//   tuning query: operands {input, indices} (the op's tensor operands, in op order), options
//                 {experts}.
//   config check: checkRowCopyConfig with rank_threads; no tensor-core kernels.
#include "Conversion/MoEToLaunch/MoEToLaunch.h"
#include "llvm/Support/MathExtras.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/compiler/kernel_op_models.h"

using namespace mlir;

namespace rudnn::compiler {

dialect::moe_config::RowCopyConfig heuristicRowCopyConfig(RankedTensorType rowType) {
  std::int64_t h = rowType.getDimSize(1);
  if (ShapedType::isDynamic(h)) h = -1;
  dialect::moe_config::RowCopyConfig c;
  c.vectorWidth = dialect::moe_config::rowVectorWidths(*dialect::toDType(rowType.getElementType()), h).front();
  const std::int64_t vectors = h < 0 ? 1024 : (h + c.vectorWidth - 1) / c.vectorWidth;
  const auto wanted = static_cast<std::int64_t>(llvm::PowerOf2Ceil(vectors));
  c.threads = std::min<std::int64_t>(256, std::max<std::int64_t>(64, wanted));
  return c;
}

namespace {

struct DispatchKernelModel : dialect::KernelOpInterface::ExternalModel<DispatchKernelModel, dialect::DispatchOp> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget& target) const {
    auto dispatch = cast<dialect::DispatchOp>(op);
    const auto c = heuristicRowCopyConfig(cast<RankedTensorType>(dispatch.getInput().getType()));
    Builder b(op->getContext());
    return b.getDictionaryAttr(
        {b.getNamedAttr(dialect::moe_config::kThreads, b.getI64IntegerAttr(c.threads)),
         b.getNamedAttr(dialect::moe_config::kVectorWidth, b.getI64IntegerAttr(c.vectorWidth)),
         b.getNamedAttr(dialect::moe_config::kRankThreads,
                        b.getI64IntegerAttr(std::min<std::int64_t>(1024, target.maxThreadsPerBlock)))});
  }

  bool configUsesTensorCores(Operation*, DictionaryAttr) const { return false; }

  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    auto dispatch = cast<dialect::DispatchOp>(op);
    return dialect::checkRowCopyConfig(config, cast<RankedTensorType>(dispatch.getInput().getType()),
                                       /*dispatch=*/true);
  }

  std::optional<dialect::TuningQuery> getTuningQuery(Operation* op) const {
    // The expert count sizes the offsets and the ranking: a tuning problem needs it.
    return dialect::TuningQuery{{op->getOperands().begin(), op->getOperands().end()},
                                {cast<dialect::DispatchOp>(op).getExpertsAttr().getInt()}};
  }

  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerDispatchOpToLaunch(rewriter, cast<dialect::DispatchOp>(op));
  }
};

void attachDispatchKernelModel(MLIRContext& ctx) { dialect::DispatchOp::attachInterface<DispatchKernelModel>(ctx); }

const KernelModelRegistration kRegistered(&attachDispatchKernelModel);

}  // namespace

}  // namespace rudnn::compiler
