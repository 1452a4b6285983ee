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
