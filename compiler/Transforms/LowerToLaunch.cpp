// rudnn-lower-to-launch: every operator op → its rudnn.launch ops (one Conversion/ per family).
#include "Conversion/MoEToLaunch/MoEToLaunch.h"
#include "Conversion/NormToLaunch/NormToLaunch.h"
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"

namespace rudnn::dialect {
#define GEN_PASS_DEF_LOWERTOLAUNCHPASS
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h.inc"
}  // namespace rudnn::dialect

using namespace mlir;

namespace rudnn::compiler {
namespace {

struct LowerToLaunch : dialect::impl::LowerToLaunchPassBase<LowerToLaunch> {
  void runOnOperation() override {
    SmallVector<dialect::NormOpView> norms;
    SmallVector<dialect::RouteOpView> routes;
    getOperation()->walk([&](Operation* op) {
      if (auto norm = dialect::asNormOp(op)) norms.push_back(*norm);
      if (auto route = dialect::asRouteOp(op)) routes.push_back(*route);
    });
    IRRewriter rewriter(&getContext());
    for (const dialect::NormOpView& norm : norms)
      if (failed(lowerNormOpToLaunch(rewriter, norm))) return signalPassFailure();
    for (const dialect::RouteOpView& route : routes)
      if (failed(lowerRouteOpToLaunch(rewriter, route))) return signalPassFailure();
  }
};

}  // namespace
}  // namespace rudnn::compiler
