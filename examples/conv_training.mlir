// One convolution's training step on rudnn-run, channels-first f32 as PyTorch keeps it: the forward,
// then from the upstream gradient the data gradient (to the previous layer) and the weight and bias
// gradients (to the optimizer). A depthwise 3x3 and a grouped 1-D convolution show the Direct path.
//   rudnn-run examples/conv_training.mlir --random-inputs --dynamic-dim 2
// pack-round-trip: 2|10|output grad_input grad_weight grad_bias depthwise sequence_out|
func.func @main(%x: tensor<?x8x12x12xf32> {rudnn.name = "input"}, %w: tensor<16x8x3x3xf32> {rudnn.name = "weight"},
                %dy: tensor<?x16x6x6xf32> {rudnn.name = "grad_output"},
                %wd: tensor<8x1x3x3xf32> {rudnn.name = "depthwise_weight"},
                %s: tensor<?x6x20xf32> {rudnn.name = "sequence"}, %ws: tensor<6x2x4xf32> {rudnn.name = "sequence_weight"})
    -> (tensor<?x16x6x6xf32> {rudnn.name = "output"}, tensor<?x8x12x12xf32> {rudnn.name = "grad_input"},
        tensor<16x8x3x3xf32> {rudnn.name = "grad_weight"}, tensor<16xf32> {rudnn.name = "grad_bias"},
        tensor<?x8x12x12xf32> {rudnn.name = "depthwise"}, tensor<?x6x10xf32> {rudnn.name = "sequence_out"}) {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = false, strategy = "implicit_gemm"}
       : tensor<?x8x12x12xf32>, tensor<16x8x3x3xf32> -> tensor<?x16x6x6xf32>
  %dx = rudnn.conv_data_backward %dy, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 1, channels_last = false, strategy = "implicit_gemm"}
        : tensor<?x16x6x6xf32>, tensor<16x8x3x3xf32> -> tensor<?x8x12x12xf32>
  %dw, %db = rudnn.conv_weight_backward %x, %dy {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>,
               dilation = array<i64: 1, 1>, groups = 1, channels_last = false, strategy = "implicit_gemm", bias_grad}
             : tensor<?x8x12x12xf32>, tensor<?x16x6x6xf32> -> tensor<16x8x3x3xf32>, tensor<16xf32>
  %z = rudnn.conv_forward %x, %wd {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 8, channels_last = false, strategy = "direct"}
       : tensor<?x8x12x12xf32>, tensor<8x1x3x3xf32> -> tensor<?x8x12x12xf32>
  %t = rudnn.conv_forward %s, %ws {stride = array<i64: 2>, padding = array<i64: 1>, dilation = array<i64: 1>,
         groups = 3, channels_last = false, strategy = "direct"}
       : tensor<?x6x20xf32>, tensor<6x2x4xf32> -> tensor<?x6x10xf32>
  return %y, %dx, %dw, %db, %z, %t : tensor<?x16x6x6xf32>, tensor<?x8x12x12xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>,
                                     tensor<?x8x12x12xf32>, tensor<?x6x10xf32>
}
