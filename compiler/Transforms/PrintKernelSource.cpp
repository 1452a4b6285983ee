// rudnn-print-kernel-source: prints the translation unit of every rudnn.launch to stdout, so lit
// tests can FileCheck what NVRTC and the host compiler will see. The IR is left unchanged.
#include "Emitter/KernelSource.h"
#include "llvm/Support/raw_ostream.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"

namespace rudnn::dialect {
#define GEN_PASS_DEF_PRINTKERNELSOURCEPASS
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h.inc"
}  // namespace rudnn::dialect

namespace rudnn::compiler {
namespace {

struct PrintKernelSource : dialect::impl::PrintKernelSourcePassBase<PrintKernelSource> {
  void runOnOperation() override {
    getOperation()->walk([&](dialect::LaunchOp launch) { llvm::outs() << emitKernelSource(launch); });
    llvm::outs().flush();
    markAllAnalysesPreserved();
  }
};

}  // namespace
}  // namespace rudnn::compiler
