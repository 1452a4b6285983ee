// One MoE routing training step on rudnn-run (SPEC §10), with identity experts (the experts'
// backward is not in this slice): route top-2 of 16 experts; rudnn.router_weights recomputes the
// selected weights in FP32 from the logits (RoutingPlan::into_training: the dispatch below uses
// them); dispatch, combine; then from the upstream gradient (`grad_output`, e.g. 2·output for a
// sum-of-squares loss) the gradients of combine (expert rows and routing weights), of dispatch (the
// input) and of the router (the logits).
//   rudnn-run examples/moe_training.mlir --random-inputs --dynamic-dim 8
// pack-round-trip: 8|12|output grad_input grad_logits grad_weights|
func.func @main(%logits: tensor<?x16xf32> {rudnn.name = "logits"}, %x: tensor<?x32xf32> {rudnn.name = "input"},
                %g: tensor<?x32xf32> {rudnn.name = "grad_output"})
    -> (tensor<?x32xf32> {rudnn.name = "output"}, tensor<?x32xf32> {rudnn.name = "grad_input"},
        tensor<?x16xf32> {rudnn.name = "grad_logits"}, tensor<?x2xf32> {rudnn.name = "grad_weights"}) {
  %i, %w0 = rudnn.route %logits {top_k = 2 : i64, renormalize = true} : tensor<?x16xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  %w = rudnn.router_weights %logits, %i {scoring = "softmax", renormalize = true, scale = 1.0 : f32}
       : tensor<?x16xf32>, tensor<?x2xui32> -> tensor<?x2xf32>
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 16 : i64}
       : tensor<?x32xf32>, tensor<?x2xui32> -> tensor<?x32xf32>, tensor<17xui32>, tensor<?x2xui32>
  %y = rudnn.combine %rows, %slots, %w : tensor<?x32xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x32xf32>
  %drows, %dw = rudnn.combine_backward %rows, %g, %slots, %w {strategy = "serial"}
       : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x32xf32>, tensor<?x2xf32>
  %dx = rudnn.dispatch_backward %drows, %slots : tensor<?x32xf32>, tensor<?x2xui32> -> tensor<?x32xf32>
  %dlogits = rudnn.router_backward %logits, %i, %dw {scoring = "softmax", renormalize = true, scale = 1.0 : f32}
       : tensor<?x16xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x16xf32>
  return %y, %dx, %dlogits, %dw : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x2xf32>
}
