// MoE routing on rudnn-run: softmax top-8 routing over 64 experts, and DeepSeek-V3 grouped sigmoid
// routing (256 experts, 8 groups, 4 selected, top-8, scale 2.5, correction bias).
//   rudnn-run examples/moe_routing.mlir --device host --random-inputs --dynamic-dim 16
// pack-round-trip: 16|5|indices weights grouped_indices grouped_weights|
func.func @main(%logits: tensor<?x64xbf16> {rudnn.name = "logits"},
                %router: tensor<?x256xbf16> {rudnn.name = "router_logits"},
                %bias: tensor<256xf32> {rudnn.name = "bias"})
    -> (tensor<?x8xui32> {rudnn.name = "indices"}, tensor<?x8xbf16> {rudnn.name = "weights"},
        tensor<?x8xui32> {rudnn.name = "grouped_indices"}, tensor<?x8xbf16> {rudnn.name = "grouped_weights"}) {
  %i, %w = rudnn.route %logits {top_k = 8 : i64, renormalize = true}
             : tensor<?x64xbf16> -> tensor<?x8xui32>, tensor<?x8xbf16>
  %gi, %gw = rudnn.route_sigmoid_grouped %router, %bias {top_k = 8 : i64, groups = 8 : i64,
               selected_groups = 4 : i64, group_top_two = true, renormalize = true, scale = 2.5 : f32}
             : tensor<?x256xbf16>, tensor<256xf32> -> tensor<?x8xui32>, tensor<?x8xbf16>
  return %i, %w, %gi, %gw : tensor<?x8xui32>, tensor<?x8xbf16>, tensor<?x8xui32>, tensor<?x8xbf16>
}
