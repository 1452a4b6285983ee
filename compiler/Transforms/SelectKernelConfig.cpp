// rudnn-select-kernel-config: the heuristic that picks a kernel_config for every operator op that
// has none. Autotune produces the same attribute; a config already attached is never replaced.
// Each family's heuristic is its KernelOpInterface model's (compiler/Conversion/<Family>ToLaunch/
// *KernelModel.cpp); this pass only walks the ops and applies the one tensor-core rule.
#include "contracts/arch.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"

namespace rudnn::dialect {
#define GEN_PASS_DEF_SELECTKERNELCONFIGPASS
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h.inc"
}  // namespace rudnn::dialect

using namespace mlir;

namespace rudnn::compiler {

namespace {

// A kernel_config attached before this pass (by the autotuner, a user, a test) that names a
// tensor-core kernel the target cannot run: an error naming the requirement, rather than a compile
// failure in NVRTC. Every tensor-core config of every family is checked here, against one rule;
// the family's model says which of its configs use tensor cores.
// A config on Hopper's warpgroup MMA (the model's configUsesWgmma) needs has_wgmma.
LogicalResult checkTensorCoreConfig(dialect::KernelOpInterface kernel, const std::string& arch, bool hostEmulation) {
  auto config = kernel->getAttrOfType<DictionaryAttr>(dialect::kKernelConfigAttrName);
  if (!config) return success();
  if (kernel.configUsesWgmma(config) && !contracts::has_wgmma(arch, hostEmulation))
    return kernel->emitOpError() << "kernel_config: expected " << contracts::kWgmmaRequirement << " for " << config
                                 << ", got target " << arch;
  if (contracts::has_mma_m16n8k16(arch) || !kernel.configUsesTensorCores(config)) return success();
  return kernel->emitOpError() << "kernel_config: expected " << contracts::kMmaRequirement << " for " << config
                               << ", got target " << arch;
}

struct SelectKernelConfig : dialect::impl::SelectKernelConfigPassBase<SelectKernelConfig> {
  using Base::Base;

  void runOnOperation() override {
    const dialect::KernelTarget target{arch, maxThreadsPerBlock, maxSharedBytes};
    WalkResult walk = getOperation()->walk([&](Operation* op) -> WalkResult {
      if (!dialect::isOperatorOp(op)) return WalkResult::advance();
      FailureOr<dialect::KernelOpInterface> kernel = dialect::getKernelOpInterface(op);
      if (failed(kernel) || failed(checkTensorCoreConfig(*kernel, arch, hostEmulation))) return WalkResult::interrupt();
      if (op->hasAttr(dialect::kKernelConfigAttrName)) return WalkResult::advance();
      FailureOr<DictionaryAttr> config = kernel->selectHeuristicConfig(target);
      if (failed(config)) return WalkResult::interrupt();
      op->setAttr(dialect::kKernelConfigAttrName, *config);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) signalPassFailure();
  }
};

}  // namespace
}  // namespace rudnn::compiler
