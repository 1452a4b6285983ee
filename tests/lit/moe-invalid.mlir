// Every routing contract line (SPEC §3–§4) is rejected by the op verifiers with the message of
// rudnn::contracts::check_route / check_route_sigmoid_grouped; plus result types and kernel_config.
// RUN: rudnn-opt %s -split-input-file -verify-diagnostics

func.func @quantized(%x: tensor<?x16xf8E4M3FN>) -> (tensor<?x2xui32>, tensor<?x2xf8E4M3FN>) {
  // expected-error @+1 {{'rudnn.route' op logits: expected non-quantized f32, f16 or bf16, got f8E4M3FN}}
  %i, %w = rudnn.route %x {top_k = 2 : i64, renormalize = true} : tensor<?x16xf8E4M3FN> -> tensor<?x2xui32>, tensor<?x2xf8E4M3FN>
  return %i, %w : tensor<?x2xui32>, tensor<?x2xf8E4M3FN>
}

// -----

func.func @rank(%x: tensor<16xf32>) -> (tensor<?x2xui32>, tensor<?x2xf32>) {
  // expected-error @+1 {{logits: expected rank 2 [tokens, experts], got [16]}}
  %i, %w = rudnn.route %x {top_k = 2 : i64, renormalize = true} : tensor<16xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  return %i, %w : tensor<?x2xui32>, tensor<?x2xf32>
}

// -----

func.func @top_k_too_big(%x: tensor<?x16xf32>) -> (tensor<?x17xui32>, tensor<?x17xf32>) {
  // expected-error @+1 {{top_k: expected 1 <= top_k <= 16 (experts), got 17}}
  %i, %w = rudnn.route %x {top_k = 17 : i64, renormalize = true} : tensor<?x16xf32> -> tensor<?x17xui32>, tensor<?x17xf32>
  return %i, %w : tensor<?x17xui32>, tensor<?x17xf32>
}

// -----

func.func @indices_type(%x: tensor<?x16xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>) {
  // expected-error @+1 {{indices: expected 'tensor<?x2xui32>', got 'tensor<?x2xi32>'}}
  %i, %w = rudnn.route %x {top_k = 2 : i64, renormalize = true} : tensor<?x16xf32> -> tensor<?x2xi32>, tensor<?x2xf32>
  return %i, %w : tensor<?x2xi32>, tensor<?x2xf32>
}

// -----

func.func @weights_type(%x: tensor<?x16xbf16>) -> (tensor<?x2xui32>, tensor<?x2xf32>) {
  // expected-error @+1 {{weights: expected 'tensor<?x2xbf16>', got 'tensor<?x2xf32>'}}
  %i, %w = rudnn.route %x {top_k = 2 : i64, renormalize = true} : tensor<?x16xbf16> -> tensor<?x2xui32>, tensor<?x2xf32>
  return %i, %w : tensor<?x2xui32>, tensor<?x2xf32>
}

// -----

func.func @groups_divide(%x: tensor<?x256xf32>) -> (tensor<?x8xui32>, tensor<?x8xf32>) {
  // expected-error @+1 {{groups: expected a divisor of experts (256), got 6}}
  %i, %w = rudnn.route_sigmoid_grouped %x {top_k = 8 : i64, groups = 6 : i64, selected_groups = 4 : i64,
             group_top_two = true, renormalize = true, scale = 1.0 : f32} : tensor<?x256xf32> -> tensor<?x8xui32>, tensor<?x8xf32>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xf32>
}

// -----

func.func @too_many_experts(%x: tensor<?x2048xf32>) -> (tensor<?x8xui32>, tensor<?x8xf32>) {
  // expected-error @+1 {{logits: expected experts in 1..=1024, got [?, 2048]}}
  %i, %w = rudnn.route_sigmoid_grouped %x {top_k = 8 : i64, groups = 8 : i64, selected_groups = 4 : i64,
             group_top_two = true, renormalize = true, scale = 1.0 : f32} : tensor<?x2048xf32> -> tensor<?x8xui32>, tensor<?x8xf32>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xf32>
}

// -----

func.func @selected_groups(%x: tensor<?x256xf32>) -> (tensor<?x8xui32>, tensor<?x8xf32>) {
  // expected-error @+1 {{selected_groups: expected 1 <= selected_groups <= groups (8), got 9}}
  %i, %w = rudnn.route_sigmoid_grouped %x {top_k = 8 : i64, groups = 8 : i64, selected_groups = 9 : i64,
             group_top_two = true, renormalize = true, scale = 1.0 : f32} : tensor<?x256xf32> -> tensor<?x8xui32>, tensor<?x8xf32>
  return %i, %w : tensor<?x8xui32>, tensor<?x8xf32>
}

// -----

func.func @top_two_needs_two(%x: tensor<?x8xf32>) -> (tensor<?x2xui32>, tensor<?x2xf32>) {
  // expected-error @+1 {{group_top_two: expected at least 2 experts per group, got 1 expert(s) per group}}
  %i, %w = rudnn.route_sigmoid_grouped %x {top_k = 2 : i64, groups = 8 : i64, selected_groups = 4 : i64,
             group_top_two = true, renormalize = true, scale = 1.0 : f32} : tensor<?x8xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  return %i, %w : tensor<?x2xui32>, tensor<?x2xf32>
}

// -----

func.func @scale(%x: tensor<?x8xf32>) -> (tensor<?x2xui32>, tensor<?x2xf32>) {
  // expected-error @+1 {{scale: expected finite and > 0, got 0}}
  %i, %w = rudnn.route_sigmoid_grouped %x {top_k = 2 : i64, groups = 1 : i64, selected_groups = 1 : i64,
             group_top_two = true, renormalize = true, scale = 0.0 : f32} : tensor<?x8xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  return %i, %w : tensor<?x2xui32>, tensor<?x2xf32>
}

// -----

func.func @bias_shape(%x: tensor<?x8xf32>, %b: tensor<4xf32>) -> (tensor<?x2xui32>, tensor<?x2xf32>) {
  // expected-error @+1 {{bias: expected shape [8] (the experts of logits), got [4]}}
  %i, %w = rudnn.route_sigmoid_grouped %x, %b {top_k = 2 : i64, groups = 1 : i64, selected_groups = 1 : i64,
             group_top_two = true, renormalize = true, scale = 1.0 : f32} : tensor<?x8xf32>, tensor<4xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  return %i, %w : tensor<?x2xui32>, tensor<?x2xf32>
}

// -----

func.func @bias_dtype(%x: tensor<?x8xf32>, %b: tensor<8xbf16>) -> (tensor<?x2xui32>, tensor<?x2xf32>) {
  // expected-error @+1 {{bias: expected f32, got bf16}}
  %i, %w = rudnn.route_sigmoid_grouped %x, %b {top_k = 2 : i64, groups = 1 : i64, selected_groups = 1 : i64,
             group_top_two = true, renormalize = true, scale = 1.0 : f32} : tensor<?x8xf32>, tensor<8xbf16> -> tensor<?x2xui32>, tensor<?x2xf32>
  return %i, %w : tensor<?x2xui32>, tensor<?x2xf32>
}

// -----

func.func @config(%x: tensor<?x8xf32>) -> (tensor<?x2xui32>, tensor<?x2xf32>) {
  // expected-error @+1 {{kernel_config: rows_per_block must be 1, 2, 4 or 8, got 3}}
  %i, %w = rudnn.route %x {top_k = 2 : i64, renormalize = true, kernel_config = {rows_per_block = 3}}
           : tensor<?x8xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  return %i, %w : tensor<?x2xui32>, tensor<?x2xf32>
}

// -----

func.func @dispatch_rank(%x: tensor<16xf32>, %i: tensor<?x2xui32>) {
  // expected-error @+1 {{'rudnn.dispatch' op input: expected rank 2 [tokens, hidden], got [16]}}
  %r, %o, %s = rudnn.dispatch %x, %i {experts = 4 : i64} : tensor<16xf32>, tensor<?x2xui32> -> tensor<?x16xf32>, tensor<5xui32>, tensor<?x2xui32>
  return
}

// -----

func.func @dispatch_indices_dtype(%x: tensor<?x16xf32>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{indices: expected u32, got i32}}
  %r, %o, %s = rudnn.dispatch %x, %i {experts = 4 : i64} : tensor<?x16xf32>, tensor<?x2xi32> -> tensor<?x16xf32>, tensor<5xui32>, tensor<?x2xi32>
  return
}

// -----

func.func @dispatch_tokens(%x: tensor<3x16xf32>, %i: tensor<4x2xui32>) {
  // expected-error @+1 {{input: expected 4 tokens (the routing's tokens), got [3, 16]}}
  %r, %o, %s = rudnn.dispatch %x, %i {experts = 4 : i64} : tensor<3x16xf32>, tensor<4x2xui32> -> tensor<8x16xf32>, tensor<5xui32>, tensor<4x2xui32>
  return
}

// -----

func.func @dispatch_offsets(%x: tensor<?x16xf32>, %i: tensor<?x2xui32>) {
  // expected-error @+1 {{offsets: expected 'tensor<5xui32>', got 'tensor<4xui32>'}}
  %r, %o, %s = rudnn.dispatch %x, %i {experts = 4 : i64} : tensor<?x16xf32>, tensor<?x2xui32> -> tensor<?x16xf32>, tensor<4xui32>, tensor<?x2xui32>
  return
}

// -----

// Issue 10 item 7: a dispatch whose `experts` differs from the routing that made its indices.
func.func @dispatch_experts_vs_route(%x: tensor<?x16xf32>, %l: tensor<?x8xf32>) {
  %i, %w = rudnn.route %l {top_k = 2 : i64, renormalize = true} : tensor<?x8xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  // expected-error @+1 {{'rudnn.dispatch' op experts: expected 8 (the experts of the rudnn.route its indices come from), got 4}}
  %r, %o, %s = rudnn.dispatch %x, %i {experts = 4 : i64} : tensor<?x16xf32>, tensor<?x2xui32> -> tensor<?x16xf32>, tensor<5xui32>, tensor<?x2xui32>
  return
}

// -----

func.func @dispatch_experts_vs_grouped_route(%x: tensor<?x16xf32>, %l: tensor<?x8xf32>) {
  %i, %w = rudnn.route_sigmoid_grouped %l {top_k = 2 : i64, groups = 2 : i64, selected_groups = 1 : i64, group_top_two = true, renormalize = true, scale = 1.0 : f32} : tensor<?x8xf32> -> tensor<?x2xui32>, tensor<?x2xf32>
  // expected-error @+1 {{'rudnn.dispatch' op experts: expected 8 (the experts of the rudnn.route_sigmoid_grouped its indices come from), got 16}}
  %r, %o, %s = rudnn.dispatch %x, %i {experts = 16 : i64} : tensor<?x16xf32>, tensor<?x2xui32> -> tensor<?x16xf32>, tensor<17xui32>, tensor<?x2xui32>
  return
}

// -----

func.func @experts_strategy(%r: tensor<?x16xbf16>, %o: tensor<5xui32>, %g: tensor<4x8x16xbf16>, %u: tensor<4x8x16xbf16>, %d: tensor<4x16x8xbf16>) {
  // expected-error @+1 {{strategy: expected "scalar", "tensor_core" or "auto", got "fast"}}
  %y = rudnn.swiglu_experts %r, %o, %g, %u, %d {strategy = "fast"} : tensor<?x16xbf16>, tensor<5xui32>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x16x8xbf16> -> tensor<?x16xbf16>
  return
}

// -----

func.func @experts_down_shape(%r: tensor<?x16xbf16>, %o: tensor<5xui32>, %g: tensor<4x8x16xbf16>, %u: tensor<4x8x16xbf16>, %d: tensor<4x8x16xbf16>) {
  // expected-error @+1 {{down: expected [4, 16, 8] ([experts, hidden, inter] of gate), got [4, 8, 16]}}
  %y = rudnn.swiglu_experts %r, %o, %g, %u, %d {strategy = "scalar"} : tensor<?x16xbf16>, tensor<5xui32>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16> -> tensor<?x16xbf16>
  return
}

// -----

func.func @experts_offsets(%r: tensor<?x16xbf16>, %o: tensor<9xui32>, %g: tensor<4x8x16xbf16>, %u: tensor<4x8x16xbf16>, %d: tensor<4x16x8xbf16>) {
  // expected-error @+1 {{offsets: expected [5] (experts + 1: the routing must cover the experts' 4 experts), got [9]}}
  %y = rudnn.swiglu_experts %r, %o, %g, %u, %d {strategy = "scalar"} : tensor<?x16xbf16>, tensor<9xui32>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x16x8xbf16> -> tensor<?x16xbf16>
  return
}

// -----

func.func @experts_tensor_core_f32(%r: tensor<?x16xf32>, %o: tensor<5xui32>, %g: tensor<4x8x16xf32>, %u: tensor<4x8x16xf32>, %d: tensor<4x16x8xf32>) {
  // expected-error @+1 {{strategy: expected f16 or bf16 expert weights for TensorCore, got f32}}
  %y = rudnn.swiglu_experts %r, %o, %g, %u, %d {strategy = "tensor_core"} : tensor<?x16xf32>, tensor<5xui32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @experts_tile(%r: tensor<?x16xbf16>, %o: tensor<5xui32>, %g: tensor<4x8x16xbf16>, %u: tensor<4x8x16xbf16>, %d: tensor<4x16x8xbf16>) {
  // expected-error @+1 {{kernel_config: scalar 8x8x8 t1x1 is not a registered tile}}
  %y = rudnn.swiglu_experts %r, %o, %g, %u, %d {strategy = "scalar", kernel_config = {tensor_core = 0, block_m = 8, block_n = 8, block_k = 8, thread_m = 1, thread_n = 1}} : tensor<?x16xbf16>, tensor<5xui32>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x16x8xbf16> -> tensor<?x16xbf16>
  return
}

// -----

func.func @experts_tile_wgmma(%r: tensor<?x16xbf16>, %o: tensor<5xui32>, %g: tensor<4x8x16xbf16>, %u: tensor<4x8x16xbf16>, %d: tensor<4x16x8xbf16>) {
  // expected-error @+1 {{kernel_config: wgmma 64x64x64 s2 is not a registered tile}}
  %y = rudnn.swiglu_experts %r, %o, %g, %u, %d {strategy = "tensor_core", kernel_config = {tensor_core = 1, block_m = 64, block_n = 64, block_k = 64, warps_m = 4, warps_n = 1, stages = 2, wgmma = 1}} : tensor<?x16xbf16>, tensor<5xui32>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x16x8xbf16> -> tensor<?x16xbf16>
  return
}

// -----

func.func @experts_tile_wgmma_scalar(%r: tensor<?x16xbf16>, %o: tensor<5xui32>, %g: tensor<4x8x16xbf16>, %u: tensor<4x8x16xbf16>, %d: tensor<4x16x8xbf16>) {
  // expected-error @+1 {{kernel_config: expected integers tensor_core, block_m, block_n, block_k and thread_m, thread_n (scalar) or warps_m, warps_n, stages (tensor core), and wgmma = 1 on a wgmma tile (0 or absent elsewhere), got}}
  %y = rudnn.swiglu_experts %r, %o, %g, %u, %d {strategy = "scalar", kernel_config = {tensor_core = 0, block_m = 32, block_n = 64, block_k = 16, thread_m = 4, thread_n = 4, wgmma = 1}} : tensor<?x16xbf16>, tensor<5xui32>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x16x8xbf16> -> tensor<?x16xbf16>
  return
}

// -----

func.func @experts_tile_strategy(%r: tensor<?x16xbf16>, %o: tensor<5xui32>, %g: tensor<4x8x16xbf16>, %u: tensor<4x8x16xbf16>, %d: tensor<4x16x8xbf16>) {
  // expected-error @+1 {{kernel_config: a tensor_core tile for strategy "scalar"}}
  %y = rudnn.swiglu_experts %r, %o, %g, %u, %d {strategy = "scalar", kernel_config = {tensor_core = 1, block_m = 64, block_n = 64, block_k = 32, warps_m = 2, warps_n = 2, stages = 4}} : tensor<?x16xbf16>, tensor<5xui32>, tensor<4x8x16xbf16>, tensor<4x8x16xbf16>, tensor<4x16x8xbf16> -> tensor<?x16xbf16>
  return
}

// -----

func.func @combine_rows(%y: tensor<6x16xf32>, %s: tensor<4x2xui32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{expert_output: expected [8, hidden] (tokens x top_k = 4 x 2 rows), got [6, 16]}}
  %o = rudnn.combine %y, %s, %w : tensor<6x16xf32>, tensor<4x2xui32>, tensor<4x2xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @combine_weights(%y: tensor<?x16xf32>, %s: tensor<?x2xui32>, %w: tensor<?x3xf32>) {
  // expected-error @+1 {{weights: expected [?, 2] (the routing's shape), got [?, 3]}}
  %o = rudnn.combine %y, %s, %w : tensor<?x16xf32>, tensor<?x2xui32>, tensor<?x3xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @combine_config(%y: tensor<?x16xf32>, %s: tensor<?x2xui32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{kernel_config: vector_width 8 is not legal for f32 rows of 16 (legal: 4, 2, 1)}}
  %o = rudnn.combine %y, %s, %w {kernel_config = {threads = 64, vector_width = 8}} : tensor<?x16xf32>, tensor<?x2xui32>, tensor<?x2xf32> -> tensor<?x16xf32>
  return
}
