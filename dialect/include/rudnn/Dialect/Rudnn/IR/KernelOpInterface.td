//===- KernelOpInterface.td - what the passes ask an operator op -*- tablegen -*-===//
// One interface for every operator op family, so that rudnn-resolve-strategy,
// rudnn-select-kernel-config and rudnn-lower-to-launch are loops over ops that implement it
// instead of a ladder over the families. The dialect only declares it: the implementations
// (external models) live in the compiler next to each family's conversion
// (compiler/Conversion/<Family>ToLaunch/*KernelModel.cpp) and are attached by
// rudnn::compiler::registerKernelOpInterfaceModels (compiler/include/rudnn/compiler/kernel_op_models.h).
#ifndef RUDNN_DIALECT_RUDNN_KERNEL_OP_INTERFACE_TD
#define RUDNN_DIALECT_RUDNN_KERNEL_OP_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Rudnn_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::rudnn::dialect";
  let description = [{
    An operator op (one call of a public rudnn entry) that the compiler turns into kernel
    launches: how the heuristic picks its `kernel_config`, how a config is checked, what the
    autotuner is asked about it, and how it is lowered to `rudnn.launch` ops.
  }];
  let methods = [
    InterfaceMethod<[{
        The kernel_config the heuristic picks for `target` (the op has none yet). An error on the
        op, and failure, when no kernel of the op serves it on that target.
      }],
      "::mlir::FailureOr<::mlir::DictionaryAttr>", "selectHeuristicConfig",
      (ins "const ::rudnn::dialect::KernelTarget&":$target)>,
    InterfaceMethod<[{
        Whether `config` (a kernel_config of this op) names a kernel built on mma.sync m16n8k16,
        which a target without tensor cores cannot compile.
      }],
      "bool", "configUsesTensorCores", (ins "::mlir::DictionaryAttr":$config)>,
    InterfaceMethod<[{
        Whether `config` names a kernel built on Hopper's warpgroup MMA (wgmma, sm_90a alone:
        contracts::has_wgmma). By default a config whose "wgmma" key
        (contracts::kWgmmaConfigKey) is nonzero; a family whose configs name tiles by index says so
        itself.
      }],
      "bool", "configUsesWgmma", (ins "::mlir::DictionaryAttr":$config), [{}], [{
        auto wgmma = config.getAs<::mlir::IntegerAttr>(::rudnn::contracts::kWgmmaConfigKey);
        return wgmma && wgmma.getInt() != 0;
      }]>,
    InterfaceMethod<[{
        Why `config` cannot serve this op (the same rules as the op's verifier), or nothing when it
        can. Used on a config from outside the compiler (the autotuner's answer).
      }],
      "std::optional<std::string>", "checkKernelConfig", (ins "::mlir::DictionaryAttr":$config)>,
    InterfaceMethod<[{
        What rudnn-resolve-strategy asks the ConfigProvider about this op (which operands and
        which option words), or nothing when the op must not be asked (its config is not tuned
        in this form of the op).
      }],
      "std::optional<::rudnn::dialect::TuningQuery>", "getTuningQuery", (ins)>,
    InterfaceMethod<[{
        Replaces the op (which carries a kernel_config) by its rudnn.launch ops.
      }],
      "::mlir::LogicalResult", "lowerToLaunches", (ins "::mlir::RewriterBase&":$rewriter)>,
  ];
}

#endif // RUDNN_DIALECT_RUDNN_KERNEL_OP_INTERFACE_TD
