// registerKernelOpInterfaceModels: attaches every KernelOpInterface model a family registered
// (KernelModelRegistration, a static in each family's *KernelModel.cpp next to its conversion).
#include <mutex>
#include <vector>

#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/compiler/kernel_op_models.h"

namespace rudnn::compiler {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<void (*)(mlir::MLIRContext&)> attach;  // registration order (each attaches its own ops)
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

KernelModelRegistration::KernelModelRegistration(void (*attach)(mlir::MLIRContext&)) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.attach.push_back(attach);
}

void registerKernelOpInterfaceModels(mlir::DialectRegistry& registry) {
  registry.insert<dialect::RudnnDialect>();
  registry.addExtension(+[](mlir::MLIRContext* ctx, dialect::RudnnDialect*) {
    Registry& r = rudnn::compiler::registry();
    std::vector<void (*)(mlir::MLIRContext&)> attach;
    {
      std::lock_guard lock(r.mutex);
      attach = r.attach;
    }
    for (auto* a : attach) a(*ctx);
  });
}

}  // namespace rudnn::compiler
