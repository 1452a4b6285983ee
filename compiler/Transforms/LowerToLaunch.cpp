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
    // Collect the ops first, then lower them in program order. Only Operation* is kept across
    // rewrites: a view (NormOpView, RouteOpView) holds operand Values, and the op that produced an
    // operand may itself be replaced by an earlier lowering (a chain of two norms), leaving the view
    // pointing at an erased op. Each view is therefore taken just before its op is lowered.
    SmallVector<Operation*> ops;
    getOperation()->walk([&](Operation* op) {
      if (dialect::asNormOp(op) || dialect::asRouteOp(op) ||
          isa<dialect::DispatchOp, dialect::SwiGluExpertsOp, dialect::CombineOp, dialect::GatedDeltaOp,
              dialect::AttentionOp>(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation* op : ops) {
      LogicalResult lowered = failure();
      if (auto norm = dialect::asNormOp(op))
        lowered = lowerNormOpToLaunch(rewriter, *norm);
      else if (auto route = dialect::asRouteOp(op))
        lowered = lowerRouteOpToLaunch(rewriter, *route);
      else
        lowered = TypeSwitch<Operation*, LogicalResult>(op)
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
