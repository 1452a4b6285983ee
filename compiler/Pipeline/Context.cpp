#include "Pipeline/Context.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/compiler/kernel_op_models.h"

namespace rudnn::compiler {

mlir::MLIRContext& threadContext() {
  thread_local mlir::MLIRContext context = [] {
    mlir::DialectRegistry registry;
    registry.insert<mlir::func::FuncDialect, dialect::RudnnDialect>();
    registerKernelOpInterfaceModels(registry);
    // Threading disabled: each lowering is tiny, and a per-context thread pool per caller thread
    // would cost more than it saves.
    return mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
  }();
  static thread_local bool loaded = [] {
    context.loadAllAvailableDialects();
    return true;
  }();
  (void)loaded;
  return context;
}

}  // namespace rudnn::compiler
