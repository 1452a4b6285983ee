// The experts backward's wgmma tile ({tile = 5}, gemm::WgmmaPolicy<128, 64, 64, 4>): a config naming
// it is kept where the target has wgmma (sm_90a with RUDNN_WGMMA=1, or the host emulation device
// reporting sm_90a) and refused elsewhere with the requirement, as the convolution's wgmma configs
// (select-kernel-config-wgmma.mlir; the family says which configs use wgmma through its model's
// configUsesWgmma). The heuristic takes tile 5 for tensor cores under the opt-in (the experts
// backward has no Autotune), tile 3 otherwise, the host emulation device included.
// RUN: env RUDNN_WGMMA=1 rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" | FileCheck %s --check-prefix=OPTIN
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a host-emulation=1" | FileCheck %s --check-prefix=HOST
// RUN: not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: env RUDNN_WGMMA=1 not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_80" 2>&1 | FileCheck %s --check-prefix=REFUSED80

// OPTIN-LABEL: func.func @experts_backward
// OPTIN: rudnn.swiglu_experts_backward {{.*}}kernel_config = {tile = 5 : i64}
// OPTIN: rudnn.swiglu_experts_backward {{.*}}kernel_config = {tile = 5 : i64}, strategy = "auto"
// OPTIN: rudnn.swiglu_experts_backward {{.*}}kernel_config = {tile = 1 : i64}, strategy = "scalar"
// HOST-LABEL: func.func @experts_backward
// HOST: rudnn.swiglu_experts_backward {{.*}}kernel_config = {tile = 5 : i64}
// HOST: rudnn.swiglu_experts_backward {{.*}}kernel_config = {tile = 3 : i64}, strategy = "auto"
// REFUSED: error: 'rudnn.swiglu_experts_backward' op kernel_config: expected a GPU with wgmma (sm_90a: H100, H200) and RUDNN_WGMMA=1 (opt-in until a GPU run verifies the wgmma kernels) for {tile = 5 : i64}, got target sm_90a
// REFUSED80: error: 'rudnn.swiglu_experts_backward' op kernel_config: expected a GPU with wgmma {{.*}} for {tile = 5 : i64}, got target sm_80
func.func @experts_backward(%r: tensor<?x32xbf16>, %o: tensor<9xui32>, %sl: tensor<?x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>,
                            %d: tensor<8x32x16xbf16>, %dy: tensor<?x32xbf16>) -> (tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>) {
  %fx, %fg, %fu, %fd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "tensor_core", kernel_config = {tile = 5}}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  %ax, %ag, %au, %ad = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "auto"}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  %sx, %sg, %su, %sd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar"}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return %fx, %ax, %sx : tensor<?x32xbf16>, tensor<?x32xbf16>, tensor<?x32xbf16>
}
