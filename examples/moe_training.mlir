// One MoE layer's first-order training step on rudnn-run (SPEC §10), f32: route top-2 of 8 experts;
// rudnn.router_weights recomputes the selected weights in FP32 from the logits
// (RoutingPlan::into_training: the dispatch below uses them); dispatch, SwiGLU experts (H = 32,
// I = 16), combine. Then from the upstream gradient (`grad_output`, e.g. 2·output for a
// sum-of-squares loss) the backward in order: combine (expert rows, routing weights), the experts
// (their input rows and the gate/up/down gradients, pre-activations recomputed), dispatch (the
// input) and the router (the logits).
//   rudnn-run examples/moe_training.mlir --random-inputs --dynamic-dim 8
// pack-round-trip: 8|12|output grad_input grad_logits grad_gate grad_up grad_down|
func.func @main(%logits: tensor<?x8xf32> {rudnn.name = "logits"}, %x: tensor<?x32xf32> {rudnn.name = "input"},
                %gate: tensor<8x16x32xf32> {rudnn.name = "gate"}, %up: tensor<8x16x32xf32> {rudnn.name = "up"},
                %down: tensor<8x32x16xf32> {rudnn.name = "down"}, %g: tensor<?x32xf32> {rudnn.name = "grad_output"})
    -> (tensor<?x32xf32> {rudnn.name = "output"}, tensor<?x32xf32> {rudnn.name = "grad_input"},
        tensor<?x8xf32> {rudnn.name = "grad_logits"}, tensor<8x16x32xf32> {rudnn.name = "grad_gate"},
        tensor<8x16x32xf32> {rudnn.name = "grad_up"}, tensor<8x32x16xf32> {rudnn.name = "grad_down"}) {
  %i, %w0 = rudnn.route %logits {top_k = 2 : i64, renormalize = true} : tensor<?x8xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  %w = rudnn.router_weights %logits, %i {scoring = "softmax", renormalize = true, scale = 1.0 : f32}
       : tensor<?x8xf32>, tensor<?x2xui32> -> tensor<?x2xf32>
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 8 : i64}
       : tensor<?x32xf32>, tensor<?x2xui32> -> tensor<?x32xf32>, tensor<9xui32>, tensor<?x2xui32>
  %y = rudnn.swiglu_experts %rows, %offsets, %gate, %up, %down {strategy = "scalar"}
       : tensor<?x32xf32>, tensor<9xui32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32> -> tensor<?x32xf32>
  %out = rudnn.combine %y, %slots, %w : tensor<?x32xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x32xf32>
  %dy, %dw = rudnn.combine_backward %y, %g, %slots, %w {strategy = "serial"}
       : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x32xf32>, tensor<?x2xf32>
  %drows, %dgate, %dup, %ddown = rudnn.swiglu_experts_backward %rows, %offsets, %slots, %gate, %up, %down, %dy
       {strategy = "scalar"} : tensor<?x32xf32>, tensor<9xui32>, tensor<?x2xui32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>, tensor<?x32xf32>
       -> tensor<?x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  %dx = rudnn.dispatch_backward %drows, %slots : tensor<?x32xf32>, tensor<?x2xui32> -> tensor<?x32xf32>
  %dlogits = rudnn.router_backward %logits, %i, %dw {scoring = "softmax", renormalize = true, scale = 1.0 : f32}
       : tensor<?x8xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x8xf32>
  return %out, %dx, %dlogits, %dgate, %dup, %ddown : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x8xf32>,
         tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
}
