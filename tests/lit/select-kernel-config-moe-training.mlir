// rudnn-select-kernel-config on the MoE training ops: router ops {warps = 4} (a warp per token row,
// 4 rows per block), combine and dispatch backward {threads = 128} per token; a given config stays.
// The experts backward takes its strategy's tile: scalar {tile = 1}, tensor_core {tile = 3} (lit
// lower-to-launch-moe-training.mlir), auto {tile = 3} where the target has mma.sync m16n8k16 (sm_80 on) and {tile = 1} where it does not.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_75" | FileCheck %s --check-prefix=TURING

// CHECK-LABEL: func.func @heuristics
// CHECK: rudnn.router_weights {{.*}}kernel_config = {warps = 4 : i64}
// CHECK: rudnn.router_backward {{.*}}kernel_config = {warps = 4 : i64}
// CHECK: rudnn.combine_backward {{.*}}kernel_config = {threads = 128 : i64}
// CHECK: rudnn.dispatch_backward {{.*}}kernel_config = {threads = 256 : i64}
func.func @heuristics(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %g: tensor<?x2xf32>, %y: tensor<?x16xf32>,
                      %go: tensor<?x16xf32>, %s: tensor<?x2xui32>) -> (tensor<?x2xf32>, tensor<?x64xf32>, tensor<?x16xf32>) {
  %w = rudnn.router_weights %x, %i {scoring = "sigmoid", renormalize = false, scale = 1.0 : f32} : tensor<?x64xf32>, tensor<?x2xi32> -> tensor<?x2xf32>
  %d = rudnn.router_backward %x, %i, %g {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32> -> tensor<?x64xf32>
  %dy, %dw = rudnn.combine_backward %y, %go, %s, %w {strategy = "serial"} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x16xf32>, tensor<?x2xf32>
  %dx = rudnn.dispatch_backward %dy, %s {kernel_config = {threads = 256}} : tensor<?x16xf32>, tensor<?x2xui32> -> tensor<?x16xf32>
  return %dw, %d, %dx : tensor<?x2xf32>, tensor<?x64xf32>, tensor<?x16xf32>
}

// CHECK-LABEL: func.func @experts_backward
// CHECK: rudnn.swiglu_experts_backward {{.*}}kernel_config = {tile = 1 : i64}
// CHECK: rudnn.swiglu_experts_backward {{.*}}kernel_config = {tile = 3 : i64}
// TURING-LABEL: func.func @experts_backward
// TURING: rudnn.swiglu_experts_backward {{.*}}kernel_config = {tile = 1 : i64}
// TURING: rudnn.swiglu_experts_backward {{.*}}kernel_config = {tile = 1 : i64}
func.func @experts_backward(%r: tensor<?x32xbf16>, %o: tensor<9xui32>, %sl: tensor<?x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>,
                            %d: tensor<8x32x16xbf16>, %dy: tensor<?x32xbf16>) -> (tensor<?x32xbf16>, tensor<?x32xbf16>) {
  %sx, %sg, %su, %sd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar"}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  %ax, %ag, %au, %ad = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "auto"}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return %sx, %ax : tensor<?x32xbf16>, tensor<?x32xbf16>
}
