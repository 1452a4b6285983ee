// The whole normalization search space for rudnn-precompile --with-autotune-candidates: the three
// ops x f32/f16/bf16 at H = 4096 (every vector width legal), 4098 (widths <= 2) and 4097 (width 1
// only). Kernels take H at run time, so other H reuse these kernels; identical keys are merged.
// pack-round-trip: 2|9|result0 result1 result2 result3 result4 result5 result6 result7 result8 result9 result10 result11 result12 result13 result14 result15 result16 result17 result18 result19 result20 result21 result22 result23 result24 result25 result26|
func.func @main(%x_f32_4096: tensor<?x4096xf32>,
                %g_f32_4096: tensor<4096xf32>,
                %b_f32_4096: tensor<4096xf32>,
                %x_f32_4098: tensor<?x4098xf32>,
                %g_f32_4098: tensor<4098xf32>,
                %b_f32_4098: tensor<4098xf32>,
                %x_f32_4097: tensor<?x4097xf32>,
                %g_f32_4097: tensor<4097xf32>,
                %b_f32_4097: tensor<4097xf32>,
                %x_f16_4096: tensor<?x4096xf16>,
                %g_f16_4096: tensor<4096xf32>,
                %b_f16_4096: tensor<4096xf32>,
                %x_f16_4098: tensor<?x4098xf16>,
                %g_f16_4098: tensor<4098xf32>,
                %b_f16_4098: tensor<4098xf32>,
                %x_f16_4097: tensor<?x4097xf16>,
                %g_f16_4097: tensor<4097xf32>,
                %b_f16_4097: tensor<4097xf32>,
                %x_bf16_4096: tensor<?x4096xbf16>,
                %g_bf16_4096: tensor<4096xf32>,
                %b_bf16_4096: tensor<4096xf32>,
                %x_bf16_4098: tensor<?x4098xbf16>,
                %g_bf16_4098: tensor<4098xf32>,
                %b_bf16_4098: tensor<4098xf32>,
                %x_bf16_4097: tensor<?x4097xbf16>,
                %g_bf16_4097: tensor<4097xf32>,
                %b_bf16_4097: tensor<4097xf32>)
    -> (tensor<?x4096xf32>, tensor<?x4096xf32>, tensor<?x4096xf32>, tensor<?x4098xf32>, tensor<?x4098xf32>, tensor<?x4098xf32>, tensor<?x4097xf32>, tensor<?x4097xf32>, tensor<?x4097xf32>, tensor<?x4096xf16>, tensor<?x4096xf16>, tensor<?x4096xf16>, tensor<?x4098xf16>, tensor<?x4098xf16>, tensor<?x4098xf16>, tensor<?x4097xf16>, tensor<?x4097xf16>, tensor<?x4097xf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4098xbf16>, tensor<?x4098xbf16>, tensor<?x4098xbf16>, tensor<?x4097xbf16>, tensor<?x4097xbf16>, tensor<?x4097xbf16>) {
  %ln_f32_4096 = rudnn.layer_norm %x_f32_4096, %g_f32_4096, %b_f32_4096 {epsilon = 1.0e-05 : f32} : tensor<?x4096xf32>, tensor<4096xf32>, tensor<4096xf32>
  %rms_f32_4096 = rudnn.rms_norm %x_f32_4096, %g_f32_4096 {epsilon = 1.0e-06 : f32} : tensor<?x4096xf32>, tensor<4096xf32>
  %sm_f32_4096 = rudnn.softmax_last_axis %x_f32_4096 : tensor<?x4096xf32>
  %ln_f32_4098 = rudnn.layer_norm %x_f32_4098, %g_f32_4098, %b_f32_4098 {epsilon = 1.0e-05 : f32} : tensor<?x4098xf32>, tensor<4098xf32>, tensor<4098xf32>
  %rms_f32_4098 = rudnn.rms_norm %x_f32_4098, %g_f32_4098 {epsilon = 1.0e-06 : f32} : tensor<?x4098xf32>, tensor<4098xf32>
  %sm_f32_4098 = rudnn.softmax_last_axis %x_f32_4098 : tensor<?x4098xf32>
  %ln_f32_4097 = rudnn.layer_norm %x_f32_4097, %g_f32_4097, %b_f32_4097 {epsilon = 1.0e-05 : f32} : tensor<?x4097xf32>, tensor<4097xf32>, tensor<4097xf32>
  %rms_f32_4097 = rudnn.rms_norm %x_f32_4097, %g_f32_4097 {epsilon = 1.0e-06 : f32} : tensor<?x4097xf32>, tensor<4097xf32>
  %sm_f32_4097 = rudnn.softmax_last_axis %x_f32_4097 : tensor<?x4097xf32>
  %ln_f16_4096 = rudnn.layer_norm %x_f16_4096, %g_f16_4096, %b_f16_4096 {epsilon = 1.0e-05 : f32} : tensor<?x4096xf16>, tensor<4096xf32>, tensor<4096xf32>
  %rms_f16_4096 = rudnn.rms_norm %x_f16_4096, %g_f16_4096 {epsilon = 1.0e-06 : f32} : tensor<?x4096xf16>, tensor<4096xf32>
  %sm_f16_4096 = rudnn.softmax_last_axis %x_f16_4096 : tensor<?x4096xf16>
  %ln_f16_4098 = rudnn.layer_norm %x_f16_4098, %g_f16_4098, %b_f16_4098 {epsilon = 1.0e-05 : f32} : tensor<?x4098xf16>, tensor<4098xf32>, tensor<4098xf32>
  %rms_f16_4098 = rudnn.rms_norm %x_f16_4098, %g_f16_4098 {epsilon = 1.0e-06 : f32} : tensor<?x4098xf16>, tensor<4098xf32>
  %sm_f16_4098 = rudnn.softmax_last_axis %x_f16_4098 : tensor<?x4098xf16>
  %ln_f16_4097 = rudnn.layer_norm %x_f16_4097, %g_f16_4097, %b_f16_4097 {epsilon = 1.0e-05 : f32} : tensor<?x4097xf16>, tensor<4097xf32>, tensor<4097xf32>
  %rms_f16_4097 = rudnn.rms_norm %x_f16_4097, %g_f16_4097 {epsilon = 1.0e-06 : f32} : tensor<?x4097xf16>, tensor<4097xf32>
  %sm_f16_4097 = rudnn.softmax_last_axis %x_f16_4097 : tensor<?x4097xf16>
  %ln_bf16_4096 = rudnn.layer_norm %x_bf16_4096, %g_bf16_4096, %b_bf16_4096 {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
  %rms_bf16_4096 = rudnn.rms_norm %x_bf16_4096, %g_bf16_4096 {epsilon = 1.0e-06 : f32} : tensor<?x4096xbf16>, tensor<4096xf32>
  %sm_bf16_4096 = rudnn.softmax_last_axis %x_bf16_4096 : tensor<?x4096xbf16>
  %ln_bf16_4098 = rudnn.layer_norm %x_bf16_4098, %g_bf16_4098, %b_bf16_4098 {epsilon = 1.0e-05 : f32} : tensor<?x4098xbf16>, tensor<4098xf32>, tensor<4098xf32>
  %rms_bf16_4098 = rudnn.rms_norm %x_bf16_4098, %g_bf16_4098 {epsilon = 1.0e-06 : f32} : tensor<?x4098xbf16>, tensor<4098xf32>
  %sm_bf16_4098 = rudnn.softmax_last_axis %x_bf16_4098 : tensor<?x4098xbf16>
  %ln_bf16_4097 = rudnn.layer_norm %x_bf16_4097, %g_bf16_4097, %b_bf16_4097 {epsilon = 1.0e-05 : f32} : tensor<?x4097xbf16>, tensor<4097xf32>, tensor<4097xf32>
  %rms_bf16_4097 = rudnn.rms_norm %x_bf16_4097, %g_bf16_4097 {epsilon = 1.0e-06 : f32} : tensor<?x4097xbf16>, tensor<4097xf32>
  %sm_bf16_4097 = rudnn.softmax_last_axis %x_bf16_4097 : tensor<?x4097xbf16>
  return %ln_f32_4096, %rms_f32_4096, %sm_f32_4096, %ln_f32_4098, %rms_f32_4098, %sm_f32_4098, %ln_f32_4097, %rms_f32_4097, %sm_f32_4097, %ln_f16_4096, %rms_f16_4096, %sm_f16_4096, %ln_f16_4098, %rms_f16_4098, %sm_f16_4098, %ln_f16_4097, %rms_f16_4097, %sm_f16_4097, %ln_bf16_4096, %rms_bf16_4096, %sm_bf16_4096, %ln_bf16_4098, %rms_bf16_4098, %sm_bf16_4098, %ln_bf16_4097, %rms_bf16_4097, %sm_bf16_4097 : tensor<?x4096xf32>, tensor<?x4096xf32>, tensor<?x4096xf32>, tensor<?x4098xf32>, tensor<?x4098xf32>, tensor<?x4098xf32>, tensor<?x4097xf32>, tensor<?x4097xf32>, tensor<?x4097xf32>, tensor<?x4096xf16>, tensor<?x4096xf16>, tensor<?x4096xf16>, tensor<?x4098xf16>, tensor<?x4098xf16>, tensor<?x4098xf16>, tensor<?x4097xf16>, tensor<?x4097xf16>, tensor<?x4097xf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4098xbf16>, tensor<?x4098xbf16>, tensor<?x4098xbf16>, tensor<?x4097xbf16>, tensor<?x4097xbf16>, tensor<?x4097xbf16>
}
