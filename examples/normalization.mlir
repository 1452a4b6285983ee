// A transformer block's normalizations: layer_norm → rms_norm → softmax over the last axis.
// Leading dims are dynamic: one compiled plan serves every token count.
// pack-round-trip: 5|3|normed probs|
func.func @main(%x: tensor<?x4096xbf16> {rudnn.name = "x"},
                %ln_gamma: tensor<4096xf32> {rudnn.name = "ln_gamma"},
                %ln_beta: tensor<4096xf32> {rudnn.name = "ln_beta"},
                %rms_gamma: tensor<4096xf32> {rudnn.name = "rms_gamma"})
    -> (tensor<?x4096xbf16> {rudnn.name = "normed"}, tensor<?x4096xbf16> {rudnn.name = "probs"}) {
  %0 = rudnn.layer_norm %x, %ln_gamma, %ln_beta {epsilon = 1.0e-05 : f32}
         : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
  %1 = rudnn.rms_norm %0, %rms_gamma {epsilon = 1.0e-06 : f32} : tensor<?x4096xbf16>, tensor<4096xf32>
  %2 = rudnn.softmax_last_axis %1 : tensor<?x4096xbf16>
  return %1, %2 : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
