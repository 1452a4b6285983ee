// rudnn-lower-to-launch: every operator op → its rudnn.launch ops (one Conversion/ per family).
#include "Conversion/AttentionToLaunch/AttentionToLaunch.h"
#include "Conversion/GatedDeltaToLaunch/GatedDeltaToLaunch.h"
#include "Conversion/MoEToLaunch/MoEToLaunch.h"
#include "Conversion/NormToLaunch/NormToLaunch.h"
#include "llvm/ADT/TypeSwitch.h"
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
    SmallVector<Operation*> others;  // dispatch, experts, combine, gated delta: one pattern function each
    getOperation()->walk([&](Operation* op) {
      if (auto norm = dialect::asNormOp(op)) norms.push_back(*norm);
      if (auto route = dialect::asRouteOp(op)) routes.push_back(*route);
      if (isa<dialect::DispatchOp, dialect::SwiGluExpertsOp, dialect::CombineOp, dialect::GatedDeltaOp,
              dialect::AttentionOp>(op))
        others.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (const dialect::NormOpView& norm : norms)
      if (failed(lowerNormOpToLaunch(rewriter, norm))) return signalPassFailure();
    for (const dialect::RouteOpView& route : routes)
      if (failed(lowerRouteOpToLaunch(rewriter, route))) return signalPassFailure();
    for (Operation* op : others) {
      LogicalResult lowered = TypeSwitch<Operation*, LogicalResult>(op)
                                  .Case([&](dialect::DispatchOp d) { return lowerDispatchOpToLaunch(rewriter, d); })
                                  .Case([&](dialect::SwiGluExpertsOp e) { return lowerExpertsOpToLaunch(rewriter, e); })
                                  .Case([&](dialect::CombineOp c) { return lowerCombineOpToLaunch(rewriter, c); })
                                  .Case([&](dialect::GatedDeltaOp g) { return lowerGatedDeltaOpToLaunch(rewriter, g); })
                                  .Case([&](dialect::AttentionOp a) { return lowerAttentionOpToLaunch(rewriter, a); });
      if (failed(lowered)) return signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace rudnn::compiler
