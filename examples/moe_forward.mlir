// A DeepSeek-V3-shaped MoE layer on rudnn-run: grouped sigmoid routing (256 experts, 8 groups,
// 4 selected, top-8, scale 2.5, correction bias) → dispatch → SwiGLU experts (strategy auto:
// tensor cores for bf16) → combine. H = 64 and I = 32 keep it quick on the host emulation device;
// the real layer has H = 7168, I = 2048.
//   rudnn-run examples/moe_forward.mlir --random-inputs --dynamic-dim 16
// pack-round-trip: 16|6|moe_out expert_offsets|
func.func @main(%x: tensor<?x64xbf16> {rudnn.name = "hidden"},
                %router: tensor<?x256xbf16> {rudnn.name = "router_logits"},
                %bias: tensor<256xf32> {rudnn.name = "bias"},
                %gate: tensor<256x32x64xbf16> {rudnn.name = "gate"},
                %up: tensor<256x32x64xbf16> {rudnn.name = "up"},
                %down: tensor<256x64x32xbf16> {rudnn.name = "down"})
    -> (tensor<?x64xbf16> {rudnn.name = "moe_out"}, tensor<257xui32> {rudnn.name = "expert_offsets"}) {
  %i, %w = rudnn.route_sigmoid_grouped %router, %bias {top_k = 8 : i64, groups = 8 : i64,
             selected_groups = 4 : i64, group_top_two = true, renormalize = true, scale = 2.5 : f32}
           : tensor<?x256xbf16>, tensor<256xf32> -> tensor<?x8xui32>, tensor<?x8xbf16>
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 256 : i64}
           : tensor<?x64xbf16>, tensor<?x8xui32> -> tensor<?x64xbf16>, tensor<257xui32>, tensor<?x8xui32>
  %y = rudnn.swiglu_experts %rows, %offsets, %gate, %up, %down {strategy = "auto"}
           : tensor<?x64xbf16>, tensor<257xui32>, tensor<256x32x64xbf16>, tensor<256x32x64xbf16>,
             tensor<256x64x32xbf16> -> tensor<?x64xbf16>
  %out = rudnn.combine %y, %slots, %w
           : tensor<?x64xbf16>, tensor<?x8xui32>, tensor<?x8xbf16> -> tensor<?x64xbf16>
  return %out, %offsets : tensor<?x64xbf16>, tensor<257xui32>
}
