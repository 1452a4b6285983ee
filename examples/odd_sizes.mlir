// Odd last dims (no vector loads possible) and a 3-D input in f32 and f16.
// pack-round-trip: 2|4|a_rms b_softmax|
func.func @main(%a: tensor<?x3x4097xf32> {rudnn.name = "a"}, %g: tensor<4097xf32> {rudnn.name = "g"},
                %b: tensor<?x1xf16> {rudnn.name = "b"})
    -> (tensor<?x3x4097xf32> {rudnn.name = "a_rms"}, tensor<?x1xf16> {rudnn.name = "b_softmax"}) {
  %0 = rudnn.rms_norm %a, %g {epsilon = 1.0e-05 : f32} : tensor<?x3x4097xf32>, tensor<4097xf32>
  %1 = rudnn.softmax_last_axis %b : tensor<?x1xf16>
  return %0, %1 : tensor<?x3x4097xf32>, tensor<?x1xf16>
}
