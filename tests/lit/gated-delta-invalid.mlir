// Every gated delta contract line (SPEC §7) the IR can express is rejected by the verifier with the
// message of rudnn::contracts::check_gated_delta; plus result types and kernel_config.
// RUN: rudnn-opt %s -split-input-file -verify-diagnostics

func.func @value_dtype(%q: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x16xf32>, %b: tensor<1x2x8xbf16>) {
  // expected-error @+1 {{'rudnn.gated_delta' op value: expected bf16 (the query dtype), got f32}}
  %o, %s = rudnn.gated_delta %q, %q, %v, %b, %b {query_scale = 1.0 : f32, chunk_size = 0 : i64} : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xf32>, tensor<1x2x8xbf16>, tensor<1x2x8xbf16> -> tensor<1x2x8x16xbf16>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @beta_shape(%q: tensor<1x2x8x16xbf16>, %b: tensor<1x2x7xbf16>) {
  // expected-error @+1 {{beta: expected [1, 2, 8] (batch, heads, seq of query), got [1, 2, 7]}}
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 1.0 : f32, chunk_size = 0 : i64} : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x7xbf16>, tensor<1x2x7xbf16> -> tensor<1x2x8x16xbf16>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @state_dtype(%q: tensor<1x2x8x16xbf16>, %b: tensor<1x2x8xbf16>, %s0: tensor<1x2x16x16xbf16>) {
  // expected-error @+1 {{initial_state: expected f32, got bf16}}
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b, %s0 {query_scale = 1.0 : f32, chunk_size = 16 : i64} : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8xbf16>, tensor<1x2x8xbf16>, tensor<1x2x16x16xbf16> -> tensor<1x2x8x16xbf16>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @key_dim(%q: tensor<1x2x8x512xf32>, %b: tensor<1x2x8xf32>) {
  // expected-error @+1 {{query: expected key_dim <= 256, got [1, 2, 8, 512]}}
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 1.0 : f32, chunk_size = 0 : i64} : tensor<1x2x8x512xf32>, tensor<1x2x8x512xf32>, tensor<1x2x8x512xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32> -> tensor<1x2x8x512xf32>, tensor<1x2x512x512xf32>
  return
}

// -----

func.func @final_state_type(%q: tensor<1x2x8x16xf32>, %b: tensor<1x2x8xf32>) {
  // expected-error @+1 {{final_state: expected 'tensor<1x2x16x16xf32>', got 'tensor<1x2x16x8xf32>'}}
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 1.0 : f32, chunk_size = 0 : i64} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>
  return
}

// -----

func.func @recurrent_tile(%q: tensor<1x2x8x128xf32>, %b: tensor<1x2x8xf32>) {
  // expected-error @+1 {{kernel_config: warps = 4, rows_per_thread = 4 holds key_dim <= 64, got 128}}
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 1.0 : f32, chunk_size = 0 : i64, kernel_config = {warps = 4, rows_per_thread = 4}} : tensor<1x2x8x128xf32>, tensor<1x2x8x128xf32>, tensor<1x2x8x128xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32> -> tensor<1x2x8x128xf32>, tensor<1x2x128x128xf32>
  return
}

// -----

func.func @chunk_tile(%q: tensor<1x2x8x16xf32>, %b: tensor<1x2x8xf32>) {
  // expected-error @+1 {{kernel_config: {threads = 64, columns = 32} is not a registered chunk tile}}
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 1.0 : f32, chunk_size = 16 : i64, kernel_config = {threads = 64, columns = 32, tensor_core = 0}} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

func.func @chunk_tensor_core_f32(%q: tensor<1x2x8x16xf32>, %b: tensor<1x2x8xf32>) {
  // expected-error @+1 {{kernel_config: tensor_core = 1 needs f16 or bf16 inputs}}
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 1.0 : f32, chunk_size = 16 : i64, kernel_config = {threads = 128, columns = 32, tensor_core = 1}} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}

// -----

// A chunk whose 4·(C² + C) overflows int64 (2^62): rejected by the contract's bound, not wrapped.
func.func @chunk_overflow(%q: tensor<1x2x8x16xf32>, %b: tensor<1x2x8xf32>) {
  // expected-error @+1 {{chunk_size: expected 0 (the recurrence) or 1..1024, got 4611686018427387904}}
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 1.0 : f32, chunk_size = 4611686018427387904 : i64} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32> -> tensor<1x2x8x16xf32>, tensor<1x2x16x16xf32>
  return
}
