// Few output tiles, long reductions (a UNet-style bottleneck at batch 2) on rudnn-run, channels-last
// bf16: the forward 4x4x256 -> 64 is one GEMM tile over 72 K blocks, so it runs split-K (FP32 split
// sums reduced in order); the data backward of a stride-2 3x3 256 -> 256 layer runs by stride phase
// (four stride-1 GEMMs with 4, 2, 2 and 1 taps instead of 9 masked) and split-K as well
// (docs/convolution.md). The split counts follow the batch's power-of-two bucket.
//   rudnn-run examples/conv_split_k.mlir --random-inputs --dynamic-dim 2
// pack-round-trip: 2|11|output grad_input|
func.func @main(%x: tensor<?x4x4x256xbf16> {rudnn.name = "input"},
                %w: tensor<64x3x3x256xbf16> {rudnn.name = "weight"},
                %dy: tensor<?x4x4x256xbf16> {rudnn.name = "grad_output"},
                %ws: tensor<256x3x3x256xbf16> {rudnn.name = "strided_weight"})
    -> (tensor<?x4x4x64xbf16> {rudnn.name = "output"}, tensor<?x8x8x256xbf16> {rudnn.name = "grad_input"}) {
  %y = rudnn.conv_forward %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
         groups = 1, channels_last = true, strategy = "implicit_gemm"}
       : tensor<?x4x4x256xbf16>, tensor<64x3x3x256xbf16> -> tensor<?x4x4x64xbf16>
  %dx = rudnn.conv_data_backward %dy, %ws {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>,
          dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "implicit_gemm"}
        : tensor<?x4x4x256xbf16>, tensor<256x3x3x256xbf16> -> tensor<?x8x8x256xbf16>
  return %y, %dx : tensor<?x4x4x64xbf16>, tensor<?x8x8x256xbf16>
}
