// KernelOpInterface model of the routing family (rudnn.route, rudnn.route_sigmoid_grouped; one
// warp per token row).
//   heuristic:    rows_per_block = 4, or 2 for grouped routing over more than 512 experts (the
//                 grouped kernel keeps experts floats per row in shared memory).
//   tuning query: operands {logits, bias?} (the op's tensor operands present, in op order),
//                 options {top_k, renormalize} and for grouped routing also {groups,
//                 selected_groups, group_top_two}: what a tuning problem needs to build the call.
//   config check: checkRouteConfig (rows_per_block of 1, 2, 4 or 8); no tensor-core kernels.
#include "Conversion/MoEToLaunch/MoEToLaunch.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/compiler/kernel_op_models.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

std::int64_t heuristicRouteRowsPerBlock(bool grouped, std::int64_t experts) {
  // One warp per token row. Four rows per block fill a block without much shared memory; the
  // grouped kernel keeps experts floats per row in shared memory, so very wide rows take two.
  if (grouped && !ShapedType::isDynamic(experts) && experts > 512) return 2;
  return 4;
}

template <typename OpT>
struct RouteKernelModel : dialect::KernelOpInterface::ExternalModel<RouteKernelModel<OpT>, OpT> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget&) const {
    const dialect::RouteOpView route = *dialect::asRouteOp(op);
    Builder b(op->getContext());
    const std::int64_t rows = heuristicRouteRowsPerBlock(route.grouped, route.logitsType().getDimSize(1));
    return b.getDictionaryAttr({b.getNamedAttr(dialect::route_config::kRowsPerBlock, b.getI64IntegerAttr(rows))});
  }

  bool configUsesTensorCores(Operation*, DictionaryAttr) const { return false; }

  std::optional<std::string> checkKernelConfig(Operation*, DictionaryAttr config) const {
    return dialect::checkRouteConfig(config);
  }

  std::optional<dialect::TuningQuery> getTuningQuery(Operation* op) const {
    // The attributes a tuning problem needs to build a valid call (the scale does not change the
    // work, so it is not part of the key).
    const auto& o = dialect::asRouteOp(op)->options;
    std::vector<std::int64_t> options = {o.top_k, o.renormalize ? 1 : 0};
    if (dialect::asRouteOp(op)->grouped)
      options.insert(options.end(), {o.groups, o.selected_groups, o.group_top_two ? 1 : 0});
    return dialect::TuningQuery{{op->getOperands().begin(), op->getOperands().end()}, std::move(options)};
  }

  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerRouteOpToLaunch(rewriter, *dialect::asRouteOp(op));
  }
};

void attachRouteKernelModels(MLIRContext& ctx) {
  dialect::RouteOp::attachInterface<RouteKernelModel<dialect::RouteOp>>(ctx);
  dialect::RouteSigmoidGroupedOp::attachInterface<RouteKernelModel<dialect::RouteSigmoidGroupedOp>>(ctx);
}

const KernelModelRegistration kRegistered(&attachRouteKernelModels);

}  // namespace

}  // namespace rudnn::compiler
