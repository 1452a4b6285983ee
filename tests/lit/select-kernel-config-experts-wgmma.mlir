// rudnn.swiglu_experts on Hopper's warpgroup MMA (MoEConfig.cpp tensorCoreTiles(): wgmma 64x128x64 s4
// and 128x128x64 s4, WgmmaExpertsPolicy): a config naming a wgmma tile is kept where the target has
// wgmma (sm_90a with RUDNN_WGMMA=1, or the host emulation device reporting sm_90a) and refused
// elsewhere with the requirement, as every family's wgmma configs (select-kernel-config-wgmma.mlir).
// Under the opt-in the heuristic takes the wgmma tiles for loads over 16 rows per expert (the
// smallest whose block_m covers the load, the largest when none does, the smaller one when the load
// is unknown) and keeps the 16-row mma.sync tile for decode; without it, the mma.sync tiles
// (select-kernel-config-experts.mlir), the host emulation device included.
// RUN: env RUDNN_WGMMA=1 rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" | FileCheck %s --check-prefix=OPTIN
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a host-emulation=1" | FileCheck %s --check-prefix=HOST
// RUN: not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: env RUDNN_WGMMA=1 not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_80" 2>&1 | FileCheck %s --check-prefix=REFUSED80

// OPTIN-LABEL: func.func @experts
// OPTIN: kernel_config = {block_k = 64 : i64, block_m = 128 : i64, block_n = 128 : i64, stages = 4 : i64, tensor_core = 1 : i64, warps_m = 8 : i64, warps_n = 1 : i64, wgmma = 1 : i64}
// OPTIN: kernel_config = {block_k = 64 : i64, block_m = 16 : i64, block_n = 64 : i64, stages = 3 : i64, tensor_core = 1 : i64, warps_m = 1 : i64, warps_n = 4 : i64}
// OPTIN: kernel_config = {block_k = 64 : i64, block_m = 64 : i64, block_n = 128 : i64, stages = 4 : i64, tensor_core = 1 : i64, warps_m = 4 : i64, warps_n = 1 : i64, wgmma = 1 : i64}
// OPTIN: kernel_config = {block_k = 64 : i64, block_m = 128 : i64, block_n = 128 : i64, stages = 4 : i64, tensor_core = 1 : i64, warps_m = 8 : i64, warps_n = 1 : i64, wgmma = 1 : i64}
// OPTIN: kernel_config = {block_k = 64 : i64, block_m = 64 : i64, block_n = 128 : i64, stages = 4 : i64, tensor_core = 1 : i64, warps_m = 4 : i64, warps_n = 1 : i64, wgmma = 1 : i64}
// HOST-LABEL: func.func @experts
// HOST: kernel_config = {block_k = 64 : i64, block_m = 128 : i64, block_n = 128 : i64, stages = 4 : i64, tensor_core = 1 : i64, warps_m = 8 : i64, warps_n = 1 : i64, wgmma = 1 : i64}
// HOST: kernel_config = {block_k = 64 : i64, block_m = 16 : i64, block_n = 64 : i64, stages = 3 : i64, tensor_core = 1 : i64, warps_m = 1 : i64, warps_n = 4 : i64}
// HOST: kernel_config = {block_k = 32 : i64, block_m = 64 : i64, block_n = 64 : i64, stages = 4 : i64, tensor_core = 1 : i64, warps_m = 2 : i64, warps_n = 2 : i64}
// HOST: kernel_config = {block_k = 32 : i64, block_m = 128 : i64, block_n = 128 : i64, stages = 3 : i64, tensor_core = 1 : i64, warps_m = 2 : i64, warps_n = 4 : i64}
// HOST: kernel_config = {block_k = 32 : i64, block_m = 64 : i64, block_n = 64 : i64, stages = 4 : i64, tensor_core = 1 : i64, warps_m = 2 : i64, warps_n = 2 : i64}
// REFUSED: error: 'rudnn.swiglu_experts' op kernel_config: expected a GPU with wgmma (sm_90a: H100, H200) and RUDNN_WGMMA=1 (opt-in until a GPU run verifies the wgmma kernels) for {{.*}}wgmma = 1 : i64}, got target sm_90a
// REFUSED80: error: 'rudnn.swiglu_experts' op kernel_config: expected a GPU with wgmma {{.*}}wgmma = 1 : i64}, got target sm_80
func.func @experts(%rows: tensor<?x64xbf16>, %off: tensor<9xui32>, %g: tensor<8x32x64xbf16>, %u: tensor<8x32x64xbf16>,
                   %d: tensor<8x64x32xbf16>) -> (tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>) {
  %given = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "tensor_core",
         kernel_config = {tensor_core = 1, block_m = 128, block_n = 128, block_k = 64, warps_m = 8, warps_n = 1, stages = 4, wgmma = 1}}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  %decode = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "auto", rudnn.rows_per_expert = 16 : i64}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  %mid = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "tensor_core", rudnn.rows_per_expert = 17 : i64}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  %prefill = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "tensor_core", rudnn.rows_per_expert = 100000 : i64}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  %unknown = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "auto"}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  return %given, %decode, %mid, %prefill, %unknown : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16>
}
