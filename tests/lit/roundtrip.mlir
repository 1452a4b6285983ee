// Custom and generic forms of every rudnn op parse, print and parse again to the same IR.
// RUN: rudnn-opt %s | rudnn-opt | FileCheck %s
// RUN: rudnn-opt %s --mlir-print-op-generic | rudnn-opt | FileCheck %s

// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<?x4096xbf16>, %g: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<?x4096xbf16> {
  // CHECK: rudnn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
  %0 = rudnn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
  return %0 : tensor<?x4096xbf16>
}

// CHECK-LABEL: func.func @layer_norm_no_beta
func.func @layer_norm_no_beta(%x: tensor<2x?x768xf16>, %g: tensor<768xf32>) -> tensor<2x?x768xf16> {
  // CHECK: rudnn.layer_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f32} : tensor<2x?x768xf16>, tensor<768xf32>{{$}}
  %0 = rudnn.layer_norm %x, %g {epsilon = 1.0e-03 : f32} : tensor<2x?x768xf16>, tensor<768xf32>
  return %0 : tensor<2x?x768xf16>
}

// CHECK-LABEL: func.func @rms_norm_configured
func.func @rms_norm_configured(%x: tensor<?x64xf32>, %g: tensor<64xf32>) -> tensor<?x64xf32> {
  // CHECK: rudnn.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32, kernel_config = {rows_per_block = 4 : i64, threads_per_row = 32 : i64, vector_width = 1 : i64}, rudnn.unaligned} : tensor<?x64xf32>, tensor<64xf32>
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-06 : f32, rudnn.unaligned,
                              kernel_config = {threads_per_row = 32, rows_per_block = 4, vector_width = 1}}
       : tensor<?x64xf32>, tensor<64xf32>
  return %0 : tensor<?x64xf32>
}

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<?x?x32000xf32>) -> tensor<?x?x32000xf32> {
  // CHECK: rudnn.softmax_last_axis %{{.*}} : tensor<?x?x32000xf32>
  %0 = rudnn.softmax_last_axis %x : tensor<?x?x32000xf32>
  return %0 : tensor<?x?x32000xf32>
}

// A dynamic H is legal IR (the pipeline always makes it static).
// CHECK-LABEL: func.func @dynamic_h
func.func @dynamic_h(%x: tensor<?x?xbf16>, %g: tensor<?xf32>) -> tensor<?x?xbf16> {
  // CHECK: rudnn.rms_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-01 : f32} : tensor<?x?xbf16>, tensor<?xf32>
  %0 = rudnn.rms_norm %x, %g {epsilon = 0.1 : f32} : tensor<?x?xbf16>, tensor<?xf32>
  return %0 : tensor<?x?xbf16>
}

// CHECK-LABEL: func.func @launch
func.func @launch(%x: tensor<?x64xf32>, %g: tensor<64xf32>) -> tensor<?x64xf32> {
  // CHECK: rudnn.launch @k(%{{.*}}, %{{.*}}) header "h.cuh" function "ns::f" args ["A", "float"]
  // CHECK-SAME: config {rows_per_block = 4 : i64}
  // CHECK-SAME: grid [#rudnn.size<rows(0) ceildiv 4>, #rudnn.size<dim(0, 1) * 2 * rows(1)>, #rudnn.size<1>]
  // CHECK-SAME: block [128, 1, 1] shared 32
  // CHECK-SAME: params [#rudnn.param<"x" : "const float*" = buffer(0)>, #rudnn.param<"none" : "const float*" = null>,
  // CHECK-SAME: #rudnn.param<"y" : "float*" = buffer(2)>, #rudnn.param<"n" : "long long" = size(rows(0) ceildiv 2)>,
  // CHECK-SAME: #rudnn.param<"eps" : "float" = f32(5.000000e-01)>, #rudnn.param<"inf" : "float" = f32(0x7F800000)>,
  // CHECK-SAME: #rudnn.param<"pitch" : "long long" = size(row_stride(2))>,
  // CHECK-SAME: #rudnn.param<"token" : "long long" = size(stride(0, 0) * 2)>]
  // CHECK-SAME: {origin = "rudnn.rms_norm"} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %0 = rudnn.launch @k(%x, %g) header "h.cuh" function "ns::f" args ["A", "float"]
         config {rows_per_block = 4} grid [#rudnn.size<rows(0) ceildiv 4>, #rudnn.size<dim(0, 1) * 2 * rows(1)>, #rudnn.size<1 * 1>]
         block [128, 1, 1] shared 32
         params [#rudnn.param<"x" : "const float*" = buffer(0)>, #rudnn.param<"none" : "const float*" = null>,
                 #rudnn.param<"y" : "float*" = buffer(2)>, #rudnn.param<"n" : "long long" = size(rows(0) ceildiv 2)>,
                 #rudnn.param<"eps" : "float" = f32(0.5)>, #rudnn.param<"inf" : "float" = f32(0x7F800000)>,
                 #rudnn.param<"pitch" : "long long" = size(row_stride(2))>,
                 #rudnn.param<"token" : "long long" = size(stride(0, 0) * 2)>]
         {origin = "rudnn.rms_norm"} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
