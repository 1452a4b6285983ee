// A ResNet-style block on rudnn-run, channels-last bf16 (the layout tensor cores want): a 3x3
// convolution, a strided 3x3 convolution that doubles the channels, and a 1x1 projection with bias,
// each run by the implicit GEMM on tensor cores where the device has them (docs/convolution.md).
//   rudnn-run examples/resnet_block.mlir --random-inputs --dynamic-dim 2
// pack-round-trip: 2|9|output|
func.func @main(%x: tensor<?x16x16x32xbf16> {rudnn.name = "input"},
                %w1: tensor<32x3x3x32xbf16> {rudnn.name = "conv1_weight"},
                %w2: tensor<64x3x3x32xbf16> {rudnn.name = "conv2_weight"},
                %w3: tensor<64x1x1x64xbf16> {rudnn.name = "proj_weight"},
                %b3: tensor<64xf32> {rudnn.name = "proj_bias"})
    -> (tensor<?x8x8x64xbf16> {rudnn.name = "output"}) {
  %y1 = rudnn.conv_forward %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm"}
        : tensor<?x16x16x32xbf16>, tensor<32x3x3x32xbf16> -> tensor<?x16x16x32xbf16>
  %y2 = rudnn.conv_forward %y1, %w2 {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm"}
        : tensor<?x16x16x32xbf16>, tensor<64x3x3x32xbf16> -> tensor<?x8x8x64xbf16>
  %y3 = rudnn.conv_forward %y2, %w3 bias(%b3 : tensor<64xf32>) {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>,
          dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm"}
        : tensor<?x8x8x64xbf16>, tensor<64x1x1x64xbf16> -> tensor<?x8x8x64xbf16>
  return %y3 : tensor<?x8x8x64xbf16>
}
