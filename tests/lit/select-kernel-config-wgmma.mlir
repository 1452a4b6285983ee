// A kernel_config that names Hopper's warpgroup MMA (wgmma = 1, any family; here the convolution's
// implicit GEMM) is kept on sm_90a with RUDNN_WGMMA=1 (opt-in until a GPU run verifies the wgmma
// kernels) or on the host emulation device reporting sm_90a, and refused otherwise with an error
// naming the requirement (sm_90 without the 'a' features has no wgmma either), not an NVRTC compile
// failure. The heuristic never picks one.
// RUN: env RUDNN_WGMMA=1 rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a host-emulation=1" | FileCheck %s
// RUN: not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_80 host-emulation=1" 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90a" 2>&1 | FileCheck %s --check-prefix=OPTIN
// RUN: env RUDNN_WGMMA=1 not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_90" 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: env RUDNN_WGMMA=1 not rudnn-opt %s --rudnn-select-kernel-config="arch=sm_80" 2>&1 | FileCheck %s --check-prefix=SM80

// CHECK-LABEL: func.func @forced
// CHECK: kernel_config = {algorithm = 2 : i64, bk = 64 : i64, bm = 128 : i64, bn = 128 : i64, splits = 1 : i64, stages = 4 : i64, tensor_core = 1 : i64, warps_m = 8 : i64, warps_n = 1 : i64, wgmma = 1 : i64}
// CHECK-LABEL: func.func @heuristic
// CHECK-NOT: wgmma
// OPTIN: error: 'rudnn.conv_forward' op kernel_config: expected a GPU with wgmma (sm_90a: H100, H200) and RUDNN_WGMMA=1 (opt-in until a GPU run verifies the wgmma kernels) for {{.*}}, got target sm_90a
// SM90: error: 'rudnn.conv_forward' op kernel_config: expected a GPU with wgmma (sm_90a: H100, H200) and RUDNN_WGMMA=1 {{.*}}wgmma = 1 : i64}, got target sm_90
// SM80: error: 'rudnn.conv_forward' op kernel_config: expected a GPU with wgmma (sm_90a: H100, H200) and RUDNN_WGMMA=1 {{.*}}, got target sm_80
func.func @forced(%x: tensor<?x14x14x256xbf16>, %w: tensor<256x3x3x256xbf16>) -> tensor<?x14x14x256xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm",
         kernel_config = {algorithm = 2, bm = 128, bn = 128, bk = 64, warps_m = 8, warps_n = 1, stages = 4,
                          tensor_core = 1, splits = 1, wgmma = 1}}
       : tensor<?x14x14x256xbf16>, tensor<256x3x3x256xbf16> -> tensor<?x14x14x256xbf16>
  return %y : tensor<?x14x14x256xbf16>
}

func.func @heuristic(%x: tensor<?x14x14x256xbf16>, %w: tensor<256x3x3x256xbf16>) -> tensor<?x14x14x256xbf16> {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"}
       : tensor<?x14x14x256xbf16>, tensor<256x3x3x256xbf16> -> tensor<?x14x14x256xbf16>
  return %y : tensor<?x14x14x256xbf16>
}
