// rudnn-lower-to-launch: every operator op → its rudnn.launch ops, through its KernelOpInterface
// model (each family's conversion lives in compiler/Conversion/<Family>ToLaunch).
#include "mlir/IR/PatternMatch.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
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
    // rewrites: a family's view (NormOpView, RouteOpView) holds operand Values, and the op that
    // produced an operand may itself be replaced by an earlier lowering (a chain of two norms),
    // leaving the view pointing at an erased op. Each model therefore takes its view when asked to
    // lower. Every op's model is looked up before anything is rewritten.
    SmallVector<Operation*> ops;
    WalkResult walk = getOperation()->walk([&](Operation* op) {
      if (!dialect::isOperatorOp(op)) return WalkResult::advance();
      if (failed(dialect::getKernelOpInterface(op))) return WalkResult::interrupt();
      ops.push_back(op);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) return signalPassFailure();
    IRRewriter rewriter(&getContext());
    for (Operation* op : ops)
      if (failed(cast<dialect::KernelOpInterface>(op).lowerToLaunches(rewriter))) return signalPassFailure();
  }
};

}  // namespace
}  // namespace rudnn::compiler
