// Every MoE training contract line the IR can express is rejected by the verifier with the message
// of core/contracts/moe_training; plus result types, options and kernel_config.
// RUN: rudnn-opt %s -split-input-file -verify-diagnostics

func.func @logits_dtype(%x: tensor<4x8xi32>, %i: tensor<4x2xui32>) {
  // expected-error @+1 {{logits: expected f32, f16 or bf16, got i32}}
  %w = rudnn.router_weights %x, %i {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<4x8xi32>, tensor<4x2xui32> -> tensor<4x2xf32>
  return
}

// -----

func.func @index_dtype(%x: tensor<4x8xf32>, %i: tensor<4x2xf32>) {
  // expected-error @+1 {{indices: expected u32, i32 or i64, got f32}}
  %w = rudnn.router_weights %x, %i {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<4x8xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @top_k(%x: tensor<4x8xf32>, %i: tensor<4x9xui32>) {
  // expected-error @+1 {{indices: expected top_k in 1..=8 (min(experts, 64)), got 9}}
  %w = rudnn.router_weights %x, %i {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<4x8xf32>, tensor<4x9xui32> -> tensor<4x9xf32>
  return
}

// -----

func.func @tokens(%x: tensor<4x8xf32>, %i: tensor<3x2xui32>) {
  // expected-error @+1 {{indices: expected [4, top_k] (the logits' tokens), got [3, 2]}}
  %w = rudnn.router_weights %x, %i {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<4x8xf32>, tensor<3x2xui32> -> tensor<3x2xf32>
  return
}

// -----

func.func @scale(%x: tensor<4x8xf32>, %i: tensor<4x2xui32>) {
  // expected-error @+1 {{scale: expected a finite value > 0, got 0}}
  %w = rudnn.router_weights %x, %i {scoring = "softmax", renormalize = true, scale = 0.0 : f32} : tensor<4x8xf32>, tensor<4x2xui32> -> tensor<4x2xf32>
  return
}

// -----

func.func @scoring(%x: tensor<4x8xf32>, %i: tensor<4x2xui32>) {
  // expected-error @+1 {{scoring: expected "softmax" or "sigmoid", got "relu"}}
  %w = rudnn.router_weights %x, %i {scoring = "relu", renormalize = true, scale = 1.0 : f32} : tensor<4x8xf32>, tensor<4x2xui32> -> tensor<4x2xf32>
  return
}

// -----

func.func @weights_result(%x: tensor<4x8xf32>, %i: tensor<4x2xui32>) {
  // expected-error @+1 {{weights: expected [4, 2] f32, got 'tensor<4x2xf16>'}}
  %w = rudnn.router_weights %x, %i {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<4x8xf32>, tensor<4x2xui32> -> tensor<4x2xf16>
  return
}

// -----

func.func @grad_weights_dtype(%x: tensor<4x8xf32>, %i: tensor<4x2xui32>, %g: tensor<4x2xf16>) {
  // expected-error @+1 {{grad_weights: expected f32, got f16}}
  %d = rudnn.router_backward %x, %i, %g {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<4x8xf32>, tensor<4x2xui32>, tensor<4x2xf16> -> tensor<4x8xf32>
  return
}

// -----

func.func @grad_weights_shape(%x: tensor<4x8xf32>, %i: tensor<4x2xui32>, %g: tensor<4x3xf32>) {
  // expected-error @+1 {{grad_weights: expected [4, 2] ([tokens, top_k], the indices' shape), got [4, 3]}}
  %d = rudnn.router_backward %x, %i, %g {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<4x8xf32>, tensor<4x2xui32>, tensor<4x3xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @grad_logits_result(%x: tensor<4x8xf32>, %i: tensor<4x2xui32>, %g: tensor<4x2xf32>) {
  // expected-error @+1 {{grad_logits: expected [4, 8] f32, got 'tensor<4x8xf16>'}}
  %d = rudnn.router_backward %x, %i, %g {scoring = "softmax", renormalize = true, scale = 1.0 : f32} : tensor<4x8xf32>, tensor<4x2xui32>, tensor<4x2xf32> -> tensor<4x8xf16>
  return
}

// -----

func.func @router_config(%x: tensor<4x8xf32>, %i: tensor<4x2xui32>) {
  // expected-error @+1 {{kernel_config: expected {warps = 1, 2, 4 or 8}}}
  %w = rudnn.router_weights %x, %i {scoring = "softmax", renormalize = true, scale = 1.0 : f32, kernel_config = {warps = 3}} : tensor<4x8xf32>, tensor<4x2xui32> -> tensor<4x2xf32>
  return
}

// -----

func.func @grad_output_dtype(%y: tensor<8x16xf32>, %g: tensor<4x16xf16>, %s: tensor<4x2xui32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{grad_output: expected f32 (the expert output's dtype), got f16}}
  %dy, %dw = rudnn.combine_backward %y, %g, %s, %w {strategy = "serial"} : tensor<8x16xf32>, tensor<4x16xf16>, tensor<4x2xui32>, tensor<4x2xf32> -> tensor<8x16xf32>, tensor<4x2xf32>
  return
}

// -----

func.func @grad_output_shape(%y: tensor<8x16xf32>, %g: tensor<4x15xf32>, %s: tensor<4x2xui32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{grad_output: expected [4, 16] ([tokens, hidden]), got [4, 15]}}
  %dy, %dw = rudnn.combine_backward %y, %g, %s, %w {strategy = "serial"} : tensor<8x16xf32>, tensor<4x15xf32>, tensor<4x2xui32>, tensor<4x2xf32> -> tensor<8x16xf32>, tensor<4x2xf32>
  return
}

// -----

func.func @expert_rows(%y: tensor<7x16xf32>, %g: tensor<4x16xf32>, %s: tensor<4x2xui32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{expert_output: expected [8, hidden] (tokens x top_k = 4 x 2 rows), got [7, 16]}}
  %dy, %dw = rudnn.combine_backward %y, %g, %s, %w {strategy = "serial"} : tensor<7x16xf32>, tensor<4x16xf32>, tensor<4x2xui32>, tensor<4x2xf32> -> tensor<7x16xf32>, tensor<4x2xf32>
  return
}

// -----

func.func @strategy(%y: tensor<8x16xf32>, %g: tensor<4x16xf32>, %s: tensor<4x2xui32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{strategy: expected "serial" or "plane", got "warp"}}
  %dy, %dw = rudnn.combine_backward %y, %g, %s, %w {strategy = "warp"} : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4x2xui32>, tensor<4x2xf32> -> tensor<8x16xf32>, tensor<4x2xf32>
  return
}

// -----

func.func @dweights_result(%y: tensor<8x16xf32>, %g: tensor<4x16xf32>, %s: tensor<4x2xui32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{dweights: expected [4, 2] f32, got 'tensor<4x2xf16>'}}
  %dy, %dw = rudnn.combine_backward %y, %g, %s, %w {strategy = "serial"} : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4x2xui32>, tensor<4x2xf32> -> tensor<8x16xf32>, tensor<4x2xf16>
  return
}

// -----

func.func @drows_rows(%d: tensor<9x16xf32>, %s: tensor<4x2xui32>) {
  // expected-error @+1 {{drows: expected [8, hidden] (tokens x top_k = 4 x 2 rows), got [9, 16]}}
  %dx = rudnn.dispatch_backward %d, %s : tensor<9x16xf32>, tensor<4x2xui32> -> tensor<4x16xf32>
  return
}

// -----

func.func @slots_dtype(%d: tensor<8x16xf32>, %s: tensor<4x2xi32>) {
  // expected-error @+1 {{slots: expected u32 [tokens, top_k], got i32 [4, 2]}}
  %dx = rudnn.dispatch_backward %d, %s : tensor<8x16xf32>, tensor<4x2xi32> -> tensor<4x16xf32>
  return
}

// -----

func.func @dinput_result(%d: tensor<8x16xf32>, %s: tensor<4x2xui32>) {
  // expected-error @+1 {{dinput: expected [4, 16] f32, got 'tensor<4x16xbf16>'}}
  %dx = rudnn.dispatch_backward %d, %s : tensor<8x16xf32>, tensor<4x2xui32> -> tensor<4x16xbf16>
  return
}

// -----

func.func @threads(%d: tensor<8x16xf32>, %s: tensor<4x2xui32>) {
  // expected-error @+1 {{kernel_config: expected {threads = 64, 128 or 256}}}
  %dx = rudnn.dispatch_backward %d, %s {kernel_config = {threads = 100}} : tensor<8x16xf32>, tensor<4x2xui32> -> tensor<4x16xf32>
  return
}

// -----

func.func @dexpert_dtype(%r: tensor<4x32xbf16>, %o: tensor<9xui32>, %sl: tensor<2x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>, %d: tensor<8x32x16xbf16>, %dy: tensor<4x32xf32>) {
  // expected-error @+1 {{dexpert: expected bf16 (the experts' dtype), got f32}}
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar"} : tensor<4x32xbf16>, tensor<9xui32>, tensor<2x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<4x32xf32> -> tensor<4x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return
}

// -----

func.func @dexpert_shape(%r: tensor<4x32xbf16>, %o: tensor<9xui32>, %sl: tensor<2x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>, %d: tensor<8x32x16xbf16>, %dy: tensor<5x32xbf16>) {
  // expected-error @+1 {{dexpert: expected [4, 32] ([rows, hidden], the dispatched rows' shape), got [5, 32]}}
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar"} : tensor<4x32xbf16>, tensor<9xui32>, tensor<2x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<5x32xbf16> -> tensor<4x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return
}

// -----

func.func @experts_strategy(%r: tensor<4x32xbf16>, %o: tensor<9xui32>, %sl: tensor<2x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>, %d: tensor<8x32x16xbf16>, %dy: tensor<4x32xbf16>) {
  // expected-error @+1 {{strategy: expected "scalar", "tensor_core" or "auto", got "warp"}}
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "warp"} : tensor<4x32xbf16>, tensor<9xui32>, tensor<2x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return
}

// -----

func.func @dgate_result(%r: tensor<4x32xbf16>, %o: tensor<9xui32>, %sl: tensor<2x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>, %d: tensor<8x32x16xbf16>, %dy: tensor<4x32xbf16>) {
  // expected-error @+1 {{dgate: expected [8, 16, 32] f32, got 'tensor<8x16x32xbf16>'}}
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar"} : tensor<4x32xbf16>, tensor<9xui32>, tensor<2x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>, tensor<8x16x32xbf16>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return
}

// -----

func.func @experts_tile(%r: tensor<4x32xbf16>, %o: tensor<9xui32>, %sl: tensor<2x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>, %d: tensor<8x32x16xbf16>, %dy: tensor<4x32xbf16>) {
  // expected-error @+1 {{kernel_config: expected {tile = 0..5} (0-2 scalar, 3-5 tensor_core, 5 on wgmma), got {tile = 6 : i64}}}
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar", kernel_config = {tile = 6}} : tensor<4x32xbf16>, tensor<9xui32>, tensor<2x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return
}

// -----

func.func @experts_tile_of_the_other_strategy(%r: tensor<4x32xbf16>, %o: tensor<9xui32>, %sl: tensor<2x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>, %d: tensor<8x32x16xbf16>, %dy: tensor<4x32xbf16>) {
  // expected-error @+1 {{kernel_config: tile 3 is a tensor_core tile, the strategy is "scalar"}}
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar", kernel_config = {tile = 3}} : tensor<4x32xbf16>, tensor<9xui32>, tensor<2x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return
}

// -----

func.func @experts_tensor_core_f32(%r: tensor<4x32xf32>, %o: tensor<9xui32>, %sl: tensor<2x2xui32>, %g: tensor<8x16x32xf32>, %u: tensor<8x16x32xf32>, %d: tensor<8x32x16xf32>, %dy: tensor<4x32xf32>) {
  // expected-error @+1 {{f16 or bf16 expert weights for TensorCore}}
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "tensor_core"} : tensor<4x32xf32>, tensor<9xui32>, tensor<2x2xui32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>, tensor<4x32xf32> -> tensor<4x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return
}

// -----

func.func @experts_auto_tensor_core_tile_needs_multiples_of_8(%r: tensor<4x12xbf16>, %o: tensor<9xui32>, %sl: tensor<2x2xui32>, %g: tensor<8x16x12xbf16>, %u: tensor<8x16x12xbf16>, %d: tensor<8x12x16xbf16>, %dy: tensor<4x12xbf16>) {
  // expected-error @+1 {{hidden and inter multiples of 8 for TensorCore}}
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "auto", kernel_config = {tile = 4}} : tensor<4x12xbf16>, tensor<9xui32>, tensor<2x2xui32>, tensor<8x16x12xbf16>, tensor<8x16x12xbf16>, tensor<8x12x16xbf16>, tensor<4x12xbf16> -> tensor<4x12xbf16>, tensor<8x16x12xf32>, tensor<8x16x12xf32>, tensor<8x12x16xf32>
  return
}

// -----

func.func @experts_slots(%r: tensor<4x32xbf16>, %o: tensor<9xui32>, %sl: tensor<3x2xui32>, %g: tensor<8x16x32xbf16>, %u: tensor<8x16x32xbf16>, %d: tensor<8x32x16xbf16>, %dy: tensor<4x32xbf16>) {
  // expected-error @+1 {{slots: expected tokens x top_k = 4 (the rows), got [3, 2]}}
  %dx, %dg, %du, %dd = rudnn.swiglu_experts_backward %r, %o, %sl, %g, %u, %d, %dy {strategy = "scalar"} : tensor<4x32xbf16>, tensor<9xui32>, tensor<3x2xui32>, tensor<8x16x32xbf16>, tensor<8x16x32xbf16>, tensor<8x32x16xbf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>, tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x32x16xf32>
  return
}
