// Every tunable family in one small graph for the rudnn-autotune CLI test (issue 11): an rms_norm,
// an MoE layer (softmax top-2 routing over 4 experts, dispatch, SwiGLU experts on plain cores,
// combine), attention with the Autotune strategy, a gated delta step, and a convolution forward and
// weight backward with the Autotune strategy, sized to tune quickly on the host emulation device.
func.func @main(%x: tensor<?x16xf32> {rudnn.name = "x"}, %g: tensor<16xf32> {rudnn.name = "gamma"},
                %router: tensor<?x4xf32> {rudnn.name = "router"},
                %gate: tensor<4x16x16xf32> {rudnn.name = "gate"}, %up: tensor<4x16x16xf32> {rudnn.name = "up"},
                %down: tensor<4x16x16xf32> {rudnn.name = "down"},
                %q: tensor<1x2x?x16xf32> {rudnn.name = "q"}, %k: tensor<1x2x?x16xf32> {rudnn.name = "k"},
                %v: tensor<1x2x?x16xf32> {rudnn.name = "v"},
                %gq: tensor<1x1x?x16xf32> {rudnn.name = "gq"}, %gk: tensor<1x1x?x16xf32> {rudnn.name = "gk"},
                %gv: tensor<1x1x?x16xf32> {rudnn.name = "gv"}, %gb: tensor<1x1x?xf32> {rudnn.name = "gbeta"},
                %gg: tensor<1x1x?xf32> {rudnn.name = "gdecay"},
                %cx: tensor<?x6x6x4xf32> {rudnn.name = "conv_x"}, %cw: tensor<4x3x3x4xf32> {rudnn.name = "conv_w"})
    -> (tensor<?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>, tensor<?x6x6x4xf32>, tensor<4x3x3x4xf32>) {
  %n = rudnn.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : tensor<?x16xf32>, tensor<16xf32>
  %i, %w = rudnn.route %router {top_k = 2 : i64, renormalize = true} : tensor<?x4xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  %rows, %offsets, %slots = rudnn.dispatch %n, %i {experts = 4 : i64}
      : tensor<?x16xf32>, tensor<?x2xui32> -> tensor<?x16xf32>, tensor<5xui32>, tensor<?x2xui32>
  %y = rudnn.swiglu_experts %rows, %offsets, %gate, %up, %down {strategy = "scalar"}
      : tensor<?x16xf32>, tensor<5xui32>, tensor<4x16x16xf32>, tensor<4x16x16xf32>, tensor<4x16x16xf32> -> tensor<?x16xf32>
  %out = rudnn.combine %y, %slots, %w : tensor<?x16xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x16xf32>
  %o = rudnn.attention %q, %k, %v {scale = 0.25 : f32, causal = true, strategy = "autotune"}
      : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32> -> tensor<1x2x?x16xf32>
  %go, %gs = rudnn.gated_delta %gq, %gk, %gv, %gb, %gg {query_scale = 0.25 : f32, chunk_size = 0 : i64}
      : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?xf32>, tensor<1x1x?xf32>
        -> tensor<1x1x?x16xf32>, tensor<1x1x16x16xf32>
  %cy = rudnn.conv_forward %cx, %cw {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>,
          groups = 1, channels_last = true, strategy = "autotune"} : tensor<?x6x6x4xf32>, tensor<4x3x3x4xf32> -> tensor<?x6x6x4xf32>
  %cdw = rudnn.conv_weight_backward %cx, %cy {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
           dilation = array<i64: 1, 1>, groups = 1, channels_last = true, strategy = "autotune"}
         : tensor<?x6x6x4xf32>, tensor<?x6x6x4xf32> -> tensor<4x3x3x4xf32>
  return %out, %o, %go, %cy, %cdw : tensor<?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>, tensor<?x6x6x4xf32>,
                                    tensor<4x3x3x4xf32>
}
