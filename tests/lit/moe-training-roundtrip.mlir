// The MoE training ops parse, verify and print back (SPEC §10): router weights and backward with
// each scoring and index dtype, combine backward with each strategy, dispatch backward.
// RUN: rudnn-opt %s | rudnn-opt | FileCheck %s

// CHECK-LABEL: func.func @router
// CHECK: rudnn.router_weights %{{.*}}, %{{.*}} {renormalize = true, scale = 1.000000e+00 : f32, scoring = "softmax"} : tensor<?x64xbf16>, tensor<?x8xui32> -> tensor<?x8xf32>
// CHECK: rudnn.router_backward %{{.*}}, %{{.*}}, %{{.*}} {renormalize = false, scale = 2.500000e+00 : f32, scoring = "sigmoid"} : tensor<?x64xbf16>, tensor<?x8xi64>, tensor<?x8xf32> -> tensor<?x64xbf16>
func.func @router(%x: tensor<?x64xbf16>, %i: tensor<?x8xui32>, %j: tensor<?x8xi64>, %g: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x64xbf16>) {
  %w = rudnn.router_weights %x, %i {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<?x64xbf16>, tensor<?x8xui32> -> tensor<?x8xf32>
  %d = rudnn.router_backward %x, %j, %g {scoring = "sigmoid", renormalize = false, scale = 2.5 : f32} : tensor<?x64xbf16>, tensor<?x8xi64>, tensor<?x8xf32> -> tensor<?x64xbf16>
  return %w, %d : tensor<?x8xf32>, tensor<?x64xbf16>
}

// CHECK-LABEL: func.func @combine_dispatch
// CHECK: rudnn.combine_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {strategy = "plane"} : tensor<32x128xf16>, tensor<4x128xf16>, tensor<4x8xui32>, tensor<4x8xf16> -> tensor<32x128xf16>, tensor<4x8xf32>
// CHECK: rudnn.dispatch_backward %{{.*}}, %{{.*}} {kernel_config = {threads = 64 : i64}} : tensor<32x128xf16>, tensor<4x8xui32> -> tensor<4x128xf16>
func.func @combine_dispatch(%y: tensor<32x128xf16>, %g: tensor<4x128xf16>, %s: tensor<4x8xui32>, %w: tensor<4x8xf16>) -> (tensor<32x128xf16>, tensor<4x8xf32>, tensor<4x128xf16>) {
  %dy, %dw = rudnn.combine_backward %y, %g, %s, %w {strategy = "plane"} : tensor<32x128xf16>, tensor<4x128xf16>, tensor<4x8xui32>, tensor<4x8xf16> -> tensor<32x128xf16>, tensor<4x8xf32>
  %dx = rudnn.dispatch_backward %dy, %s {kernel_config = {threads = 64}} : tensor<32x128xf16>, tensor<4x8xui32> -> tensor<4x128xf16>
  return %dy, %dw, %dx : tensor<32x128xf16>, tensor<4x8xf32>, tensor<4x128xf16>
}

// CHECK-LABEL: func.func @experts_backward
// CHECK: rudnn.swiglu_experts_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {strategy = "scalar"} : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16> -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
func.func @experts_backward(%r: tensor<?x32xbf16>, %o: tensor<9xui32>, %sl: tensor<?x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>,
                            %d: tensor<8x32x16xbf16>, %dy: tensor<?x32xbf16>)
    -> (tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>) {
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar"}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return %dx, %dg, %du, %dd : tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
}

// CHECK-LABEL: func.func @experts_backward_strategies
// CHECK: rudnn.swiglu_experts_backward {{.*}} {strategy = "tensor_core"}
// CHECK: rudnn.swiglu_experts_backward {{.*}} {kernel_config = {tile = 4 : i64}, strategy = "auto"}
func.func @experts_backward_strategies(%r: tensor<?x32xbf16>, %o: tensor<9xui32>, %sl: tensor<?x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>,
                                       %d: tensor<8x32x16xbf16>, %dy: tensor<?x32xbf16>) -> (tensor<?x32xbf16>, tensor<?x32xbf16>) {
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "tensor_core"}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  %ax, %ag, %au, %ad = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "auto", kernel_config = {tile = 4}}
      : tensor<?x32xbf16>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<?x32xbf16>
      -> tensor<?x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return %dx, %ax : tensor<?x32xbf16>, tensor<?x32xbf16>
}
