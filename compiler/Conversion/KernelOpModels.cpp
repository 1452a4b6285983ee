// registerKernelOpInterfaceModels: attaches each family's KernelOpInterface model (the list of
// families; each attach function lives next to its family's conversion).
#include "Conversion/AttentionToLaunch/AttentionToLaunch.h"
#include "Conversion/ConvToLaunch/ConvToLaunch.h"
#include "Conversion/GatedDeltaToLaunch/GatedDeltaToLaunch.h"
#include "Conversion/MoEToLaunch/MoEToLaunch.h"
#include "Conversion/NormToLaunch/NormToLaunch.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/compiler/kernel_op_models.h"

namespace rudnn::compiler {

void registerKernelOpInterfaceModels(mlir::DialectRegistry& registry) {
  registry.insert<dialect::RudnnDialect>();
  registry.addExtension(+[](mlir::MLIRContext* ctx, dialect::RudnnDialect*) {
    attachNormKernelModels(*ctx);
    attachRouteKernelModels(*ctx);
    attachDispatchKernelModel(*ctx);
    attachExpertsKernelModel(*ctx);
    attachCombineKernelModel(*ctx);
    attachGatedDeltaKernelModel(*ctx);
    attachAttentionKernelModel(*ctx);
    attachConvKernelModels(*ctx);
  });
}

}  // namespace rudnn::compiler
