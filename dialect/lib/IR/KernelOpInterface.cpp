#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"

#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

using namespace mlir;

#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.cpp.inc"

namespace rudnn::dialect {

// getDialect() is null for an unregistered op (rudnn-opt --allow-unregistered-dialect).
bool isOperatorOp(Operation* op) { return isa_and_nonnull<RudnnDialect>(op->getDialect()) && !isa<LaunchOp>(op); }

FailureOr<KernelOpInterface> getKernelOpInterface(Operation* op) {
  if (auto kernel = dyn_cast<KernelOpInterface>(op)) return kernel;
  return op->emitOpError() << "has no KernelOpInterface model in this context (the compiler attaches them: "
                              "rudnn::compiler::registerKernelOpInterfaceModels)";
}

}  // namespace rudnn::dialect
