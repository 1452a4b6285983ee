// rudnn-select-kernel-config on the MoE training ops: router ops {warps = 4} (a warp per token row,
// 4 rows per block), combine and dispatch backward {threads = 128} per token; a given config stays.
// RUN: rudnn-opt %s --rudnn-select-kernel-config | FileCheck %s

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
