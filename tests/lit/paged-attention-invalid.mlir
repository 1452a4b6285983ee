// Every paged attention contract line (SPEC §8) the IR can express is rejected by the verifier with
// the message of rudnn::contracts::check_paged_attention / check_paged_append; plus the result
// types and the kernel_config (paged_config::checkTile, plain and tensor-core tiles). Device lines
// have no IR form.
// RUN: rudnn-opt %s -split-input-file -verify-diagnostics

// The query: a float dtype, not quantized, rank 3, non-empty, D in 1..=1024.

func.func @query_dtype(%a0: tensor<?x32x128xi32>, %a1: tensor<64x16x8x128xi32>, %a2: tensor<64x16x8x128xi32>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{query: expected f32, f16 or bf16, got i32}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xi32>, tensor<64x16x8x128xi32>, tensor<64x16x8x128xi32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xi32>
  return
}

// -----

func.func @query_quantized(%a0: tensor<?x32x128xf8E4M3FN>, %a1: tensor<64x16x8x128xf8E4M3FN>, %a2: tensor<64x16x8x128xf8E4M3FN>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{query: expected non-quantized f32, f16 or bf16, got f8E4M3FN}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xf8E4M3FN>, tensor<64x16x8x128xf8E4M3FN>, tensor<64x16x8x128xf8E4M3FN>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xf8E4M3FN>
  return
}

// -----

func.func @not_rudnn_type(%a0: tensor<?x32x128xf64>, %a1: tensor<64x16x8x128xf64>, %a2: tensor<64x16x8x128xf64>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{expected rudnn element types (f32, f16, bf16, i32)}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xf64>, tensor<64x16x8x128xf64>, tensor<64x16x8x128xf64>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xf64>
  return
}

// -----

func.func @query_rank(%a0: tensor<?x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{query: expected rank 3 [queries, q_heads, head_dim], got [?, 128]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @query_empty(%a0: tensor<4x0x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{query: expected queries and heads > 0, got [4, 0, 128]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<4x0x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<4x0x128xbf16>
  return
}

// -----

func.func @head_dim_zero(%a0: tensor<?x32x0xbf16>, %a1: tensor<64x16x8x0xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{query: expected head_dim (D) in 1..=1024, got 0}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x0xbf16>, tensor<64x16x8x0xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @head_dim_too_big(%a0: tensor<?x32x1025xbf16>, %a1: tensor<64x16x8x1025xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{query: expected head_dim (D) in 1..=1024, got 1025}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x1025xbf16>, tensor<64x16x8x1025xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

// The key and value caches: the query's dtype, rank 4, [pages, page_size, Hkv, D] / [.., Dv].

func.func @key_dtype(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{key: expected bf16 (the query dtype), got f16}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @key_not_float(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xi32>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{key: expected f32, f16 or bf16, got i32}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xi32>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @key_rank(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x1024xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{key: expected rank 4 [pages, page_size, kv_heads, head_dim], got [64, 16, 1024]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x1024xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @key_empty(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x0x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{key: expected pages, page_size and kv_heads > 0, got [64, 0, 8, 128]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x0x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @key_head_dim(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x64xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{key: expected [?, ?, ?, 128] ([pages, page_size, kv_heads, head_dim]), got [64, 16, 8, 64]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x64xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @gqa_divides(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x6x128xbf16>, %a2: tensor<64x16x6x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{key: expected kv_heads dividing q_heads = 32, got 6}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x6x128xbf16>, tensor<64x16x6x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @value_dtype(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xf32>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{value: expected bf16 (the query dtype), got f32}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @value_rank(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{value: expected rank 4 [pages, page_size, kv_heads, value_dim], got [64, 16, 8]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @value_pages(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<32x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{value: expected [64, 16, 8, 128] ([pages, page_size, kv_heads, value_dim]), got [32, 16, 8, 128]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<32x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @value_page_size(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x8x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{value: expected [64, 16, 8, 128] ([pages, page_size, kv_heads, value_dim]), got [64, 8, 8, 128]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x8x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @value_heads(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x4x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{value: expected [64, 16, 8, 128] ([pages, page_size, kv_heads, value_dim]), got [64, 16, 4, 128]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x4x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @value_dim_too_big(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x2048xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{value: expected value_dim (Dv) in 1..=1024, got 2048}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x2048xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x2048xbf16>
  return
}

// -----

func.func @value_dim_zero(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x0xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{value: expected value_dim (Dv) in 1..=1024, got 0}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x0xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x0xbf16>
  return
}

// -----

func.func @page_size_too_big(%a0: tensor<?x32x128xbf16>, %a1: tensor<1x65537x8x128xbf16>, %a2: tensor<1x65537x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{key: expected page_size in 1..=65536, got 65537}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<1x65537x8x128xbf16>, tensor<1x65537x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

// The schedule: i32 page_table [sequences, table_pages], lengths [sequences], sequence_ids and positions [queries].

func.func @lengths_dtype(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi64>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{lengths: expected i32 (the plan's metadata), got i64}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi64>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @lengths_rank(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<2x3xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{lengths: expected [?] ([sequences]), got [2, 3]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<2x3xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @page_table_dtype(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xui32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{page_table: expected i32 (the plan's metadata), got ui32}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xui32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @page_table_sequences(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<3x?xi32>, %a4: tensor<4xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{page_table: expected [4, ?] ([sequences, table_pages]), got [3, ?]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<3x?xi32>, tensor<4xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @page_table_rank(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{page_table: expected [?, ?] ([sequences, table_pages]), got [?]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @sequence_ids_dtype(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi64>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{sequence_ids: expected i32 (the plan's metadata), got i64}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi64>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @sequence_ids_rows(%a0: tensor<5x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<6xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{sequence_ids: expected [5] ([queries]), got [6]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<5x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<6xi32>, tensor<?xi32> -> tensor<5x32x128xbf16>
  return
}

// -----

func.func @positions_dtype(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xf32>) {
  // expected-error @+1 {{positions: expected i32 (the plan's metadata), got f32}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @positions_rows(%a0: tensor<5x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<4xi32>) {
  // expected-error @+1 {{positions: expected [5] ([queries]), got [4]}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<5x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<4xi32> -> tensor<5x32x128xbf16>
  return
}

// -----

// scale: finite and > 0.

func.func @scale_zero(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{scale: expected a finite value > 0, got 0}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.0 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @scale_negative(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{scale: expected a finite value > 0, got -0.125}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = -0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @scale_nan(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{scale: expected a finite value > 0, got nan}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0x7FC00000 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @scale_inf(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{scale: expected a finite value > 0, got inf}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0x7F800000 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

// splits: 1 (unsplit) or 2..=32.

func.func @splits_zero(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{splits: expected 1 (unsplit) or 2..=32, got 0}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 0} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @splits_negative(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{splits: expected 1 (unsplit) or 2..=32, got -2}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = -2} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @splits_too_many(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{splits: expected 1 (unsplit) or 2..=32, got 33}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 33} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

// The result: [Q, Hq, Dv] of the query dtype.

func.func @result_dtype(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{output: expected [?, 32, 128] of 'bf16', got 'tensor<?x32x128xf32>'}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xf32>
  return
}

// -----

func.func @result_shape(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x64xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{output: expected [?, 32, 64] of 'bf16', got 'tensor<?x32x128xbf16>'}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @result_rows(%a0: tensor<5x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{output: expected [5, 32, 128] of 'bf16', got 'tensor<6x32x128xbf16>'}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<5x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<6x32x128xbf16>
  return
}

// -----

func.func @result_rank(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{output: expected [?, 32, 128] of 'bf16', got 'tensor<?x4096xbf16>'}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x4096xbf16>
  return
}

// -----

// kernel_config: exactly {block_rows, block_keys, row_lanes, max_value_dim}, integers, and a tile that serves the call.

func.func @config_missing_key(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{(docs/paged_attention.md), got {block_keys = 32 : i64, block_rows = 8 : i64, max_value_dim = 128 : i64, row_lanes = 16 : i64}}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {block_rows = 8, block_keys = 32, row_lanes = 16, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_unknown_key(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{(docs/paged_attention.md), got {block_keys = 32 : i64, block_rows = 8 : i64, max_value_dim = 128 : i64, row_lanes = 16 : i64, stages = 2 : i64, tensor_core = 0 : i64}}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 8, block_keys = 32, row_lanes = 16, max_value_dim = 128, stages = 2}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_not_integer(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{(docs/paged_attention.md), got {block_keys = 32 : i64, block_rows = 8 : i64, max_value_dim = "128", row_lanes = 16 : i64, tensor_core = 0 : i64}}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 8, block_keys = 32, row_lanes = 16, max_value_dim = "128"}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_block_rows(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: block_rows: a power of two ≤ 64, got 6}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 6, block_keys = 32, row_lanes = 16, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_block_rows_big(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: block_rows: a power of two ≤ 64, got 128}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 128, block_keys = 32, row_lanes = 4, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_row_lanes(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: row_lanes: a power of two ≤ 32, got 64}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 4, block_keys = 64, row_lanes = 64, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_warps(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: block_rows · row_lanes: whole warps, at most 1024 threads, got 16}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 4, block_keys = 32, row_lanes = 4, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_block_keys_lanes(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: block_keys: a multiple of 4 and of row_lanes in 4..=128, got 8}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 8, block_keys = 8, row_lanes = 16, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_block_keys_big(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: block_keys: a multiple of 4 and of row_lanes in 4..=128, got 256}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 8, block_keys = 256, row_lanes = 16, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_value_dim_small(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: max_value_dim: a power of two ≥ value_dim 128 and ≥ row_lanes, ≤ 1024, at most 64 per lane; got 64}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 8, block_keys = 32, row_lanes = 16, max_value_dim = 64}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_values_per_lane(%a0: tensor<?x32x1024xbf16>, %a1: tensor<64x16x8x1024xbf16>, %a2: tensor<64x16x8x1024xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: max_value_dim: a power of two ≥ value_dim 1024 and ≥ row_lanes, ≤ 1024, at most}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 8, block_keys = 32, row_lanes = 8, max_value_dim = 1024}} : tensor<?x32x1024xbf16>, tensor<64x16x8x1024xbf16>, tensor<64x16x8x1024xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x1024xbf16>
  return
}

// -----

func.func @config_shared_memory(%a0: tensor<?x8x1024xf32>, %a1: tensor<64x16x8x1024xf32>, %a2: tensor<64x16x8x1024xf32>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_unit 4x32 lanes32 dv1024 needs 279680 bytes of shared memory for key dim 1024 value dim 1024 (at most 232448)}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 4, block_keys = 32, row_lanes = 32, max_value_dim = 1024}} : tensor<?x8x1024xf32>, tensor<64x16x8x1024xf32>, tensor<64x16x8x1024xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x1024xf32>
  return
}

// -----

func.func @config_tensor_core_value(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{(docs/paged_attention.md), got {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 2 : i64}}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 2, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

// tensor_core 1 (attention): f16/bf16, D = Dv in {64, 96, 128, 256}; 64 or 128 rows, block_keys a multiple of 16 in 16..=128, row_lanes 0, max_value_dim D, shared memory ≤ 227 KiB.

func.func @config_tensor_core_f32(%a0: tensor<?x32x128xf32>, %a1: tensor<64x16x8x128xf32>, %a2: tensor<64x16x8x128xf32>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: tensor_core 1 needs f16/bf16 and D = Dv in {64, 96, 128, 256}; got key dim 128 value dim 128}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 128}} : tensor<?x32x128xf32>, tensor<64x16x8x128xf32>, tensor<64x16x8x128xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xf32>
  return
}

// -----

func.func @config_tensor_core_value_dim(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x64xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: tensor_core 1 needs f16/bf16 and D = Dv in {64, 96, 128, 256}; got key dim 128 value dim 64}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x64xbf16>
  return
}

// -----

func.func @config_tensor_core_head_dim(%a0: tensor<?x32x192xbf16>, %a1: tensor<64x16x8x192xbf16>, %a2: tensor<64x16x8x192xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: tensor_core 1 needs f16/bf16 and D = Dv in {64, 96, 128, 256}; got key dim 192 value dim 192}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 192}} : tensor<?x32x192xbf16>, tensor<64x16x8x192xbf16>, tensor<64x16x8x192xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x192xbf16>
  return
}

// -----

func.func @config_tensor_core_rows(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_mma 32x64 d128: expected block_rows 64 or 128, block_keys a multiple of 16 in 16..=128, row_lanes 0, max_value_dim 128}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 32, block_keys = 64, row_lanes = 0, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_tensor_core_keys(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_mma 64x40 d128: expected block_rows 64 or 128, block_keys a multiple of 16 in 16..=128, row_lanes 0, max_value_dim 128}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 40, row_lanes = 0, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_tensor_core_lanes(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_mma 64x64 d128: expected block_rows 64 or 128, block_keys a multiple of 16 in 16..=128, row_lanes 0, max_value_dim 128}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 32, max_value_dim = 128}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

// wgmma 1 (paged/wgmma.cuh, paged/mla_wgmma.cuh): tensor_core 1; attention in f16/bf16 with D = Dv in {64, 128, 256}, 64 rows, block_keys 64 (32 at D = 256), row_lanes 0, max_value_dim D; MLA with R in {128, 256, 512}, R + Pr whole 64-column panels, 64 rows, 64 keys, max_value_dim R.

func.func @config_wgmma_head_dim(%a0: tensor<?x32x96xbf16>, %a1: tensor<64x16x8x96xbf16>, %a2: tensor<64x16x8x96xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: wgmma 1 needs attention in f16/bf16 with D = Dv in {64, 128, 256}; got key dim 96 value dim 96}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 96, wgmma = 1}} : tensor<?x32x96xbf16>, tensor<64x16x8x96xbf16>, tensor<64x16x8x96xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x96xbf16>
  return
}

// -----

func.func @config_wgmma_plain(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_unit 8x32 lanes16 dv128: wgmma 1 needs tensor_core 1}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 0, block_rows = 8, block_keys = 32, row_lanes = 16, max_value_dim = 128, wgmma = 1}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_wgmma_rows(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_wgmma 128x64 d128: expected block_rows 64, block_keys 64, row_lanes 0, max_value_dim 128}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 128, block_keys = 64, row_lanes = 0, max_value_dim = 128, wgmma = 1}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_wgmma_value(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{(docs/paged_attention.md), got {block_keys = 64 : i64, block_rows = 64 : i64, max_value_dim = 128 : i64, row_lanes = 0 : i64, tensor_core = 1 : i64, wgmma = 2 : i64}}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 128, wgmma = 2}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_mla_wgmma_panels(%q: tensor<?x16x128xbf16>, %qp: tensor<?x16x16xbf16>, %c: tensor<64x16x1x128xbf16>, %kp: tensor<64x16x1x16xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: wgmma 1 for MLA needs f16/bf16, R in {128, 256, 512}, Pr a multiple of 16 in 16..=256, R + Pr a multiple of 64 and the 64-key tile within 232448 bytes of shared memory; got R 128 Pr 16}}
  %o = rudnn.paged_mla %q, %qp, %c, %kp, %t, %l, %s, %p {scale = 0.0721687824 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 128, wgmma = 1}} : tensor<?x16x128xbf16>, tensor<?x16x16xbf16>, tensor<64x16x1x128xbf16>, tensor<64x16x1x16xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x128xbf16>
  return
}

// -----

func.func @config_mla_wgmma_shared(%q: tensor<?x16x512xbf16>, %qp: tensor<?x16x128xbf16>, %c: tensor<64x16x1x512xbf16>, %kp: tensor<64x16x1x128xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: wgmma 1 for MLA needs f16/bf16, R in {128, 256, 512}, Pr a multiple of 16 in 16..=256, R + Pr a multiple of 64 and the 64-key tile within 232448 bytes of shared memory; got R 512 Pr 128}}
  %o = rudnn.paged_mla %q, %qp, %c, %kp, %t, %l, %s, %p {scale = 0.0721687824 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 512, wgmma = 1}} : tensor<?x16x512xbf16>, tensor<?x16x128xbf16>, tensor<64x16x1x512xbf16>, tensor<64x16x1x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @config_mla_wgmma_keys(%q: tensor<?x16x512xbf16>, %qp: tensor<?x16x64xbf16>, %c: tensor<64x16x1x512xbf16>, %kp: tensor<64x16x1x64xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_wgmma 64x32 d512: expected block_rows 64, block_keys 64, row_lanes 0, max_value_dim 512 (R)}}
  %o = rudnn.paged_mla %q, %qp, %c, %kp, %t, %l, %s, %p {scale = 0.0721687824 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 32, row_lanes = 0, max_value_dim = 512, wgmma = 1}} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x16x1x512xbf16>, tensor<64x16x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @config_tensor_core_max_value_dim(%a0: tensor<?x32x128xbf16>, %a1: tensor<64x16x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_mma 64x64 d256: expected block_rows 64 or 128, block_keys a multiple of 16 in 16..=128, row_lanes 0, max_value_dim 128}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 256}} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return
}

// -----

func.func @config_tensor_core_shared_memory(%a0: tensor<?x32x256xf16>, %a1: tensor<64x16x8x256xf16>, %a2: tensor<64x16x8x256xf16>, %a3: tensor<?x?xi32>, %a4: tensor<?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_mma 128x128 d256 needs 337920 bytes of shared memory (at most 232448)}}
  %o = rudnn.paged_attention %a0, %a1, %a2, %a3, %a4, %a5, %a6 {scale = 0.125 : f32, causal = true, splits = 1, kernel_config = {tensor_core = 1, block_rows = 128, block_keys = 128, row_lanes = 0, max_value_dim = 256}} : tensor<?x32x256xf16>, tensor<64x16x8x256xf16>, tensor<64x16x8x256xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x32x256xf16>
  return
}

// -----

// MLA: query [Q, H, R], query_rope [Q, H, P], latent [pages, page_size, 1, R], key_rope [pages, page_size, 1, P]; R ≤ 1024, P ≤ 256.

func.func @mla_query_rank(%a0: tensor<?x16x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{query: expected rank 3 [queries, heads, latent_dim], got [?, 16, 16, 512]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_latent_dim(%a0: tensor<?x16x2048xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x2048xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{query: expected latent_dim (R) in 1..=1024, got 2048}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x2048xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x2048xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x2048xbf16>
  return
}

// -----

func.func @mla_latent_dtype(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{latent: expected bf16 (the query dtype), got f16}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_latent_rank(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{latent: expected rank 4 [pages, page_size, 1, latent_dim], got [64, 64, 512]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_latent_heads(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x2x512xbf16>, %a3: tensor<64x64x2x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{latent: expected [?, ?, 1, 512] ([pages, page_size, 1, latent_dim]), got [64, 64, 2, 512]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x2x512xbf16>, tensor<64x64x2x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_latent_width(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x256xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{latent: expected [?, ?, 1, 512] ([pages, page_size, 1, latent_dim]), got [64, 64, 1, 256]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x256xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_latent_empty(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<0x64x1x512xbf16>, %a3: tensor<0x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{latent: expected pages, page_size and kv_heads > 0, got [0, 64, 1, 512]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<0x64x1x512xbf16>, tensor<0x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_rope_dtype(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xf32>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{query_rope: expected bf16 (the query dtype), got f32}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xf32>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_rope_rank(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x1024xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{query_rope: expected rank 3 [queries, heads, rope_dim], got [?, 1024]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x1024xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_rope_heads(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x8x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{query_rope: expected [?, 16, 64] ([queries, heads, rope_dim]), got [?, 8, 64]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x8x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_rope_rows(%a0: tensor<3x16x512xbf16>, %a1: tensor<4x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{query_rope: expected [3, 16, 64] ([queries, heads, rope_dim]), got [4, 16, 64]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<3x16x512xbf16>, tensor<4x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<3x16x512xbf16>
  return
}

// -----

func.func @mla_rope_dim(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x512xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x512xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{query_rope: expected rope_dim (P) in 1..=256, got 512}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x512xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x512xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_rope_dim_zero(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x0xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x0xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{query_rope: expected rope_dim (P) in 1..=256, got 0}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x0xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x0xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_key_rope_dtype(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key_rope: expected bf16 (the query dtype), got f16}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_key_rope_shape(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x32x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key_rope: expected [64, 64, 1, 64] ([pages, page_size, 1, rope_dim]), got [64, 32, 1, 64]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x32x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_key_rope_width(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x32xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key_rope: expected [64, 64, 1, 64] ([pages, page_size, 1, rope_dim]), got [64, 64, 1, 32]}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_metadata(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi64>) {
  // expected-error @+1 {{positions: expected i32 (the plan's metadata), got i64}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi64> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_scale(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{scale: expected a finite value > 0, got -inf}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0xFF800000 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_splits(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{splits: expected 1 (unsplit) or 2..=32, got 64}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 64} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_result(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{output: expected [?, 16, 512] of 'bf16', got 'tensor<?x16x576xbf16>'}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x576xbf16>
  return
}

// -----

func.func @mla_config_tensor_core(%a0: tensor<?x16x192xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x192xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: tensor_core 1 for MLA needs f16/bf16, R a multiple of 128 up to 512, Pr a multiple of 16 in 16..=256 and a 32-key tile within 163 KiB of shared memory; got R 192 Pr 64}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 32, row_lanes = 0, max_value_dim = 192}} : tensor<?x16x192xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x192xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x192xbf16>
  return
}

// -----

// MLA on tensor cores: f32 is the plain kernel's.
func.func @mla_config_tensor_core_f32(%a0: tensor<?x16x128xf32>, %a1: tensor<?x16x64xf32>, %a2: tensor<64x64x1x128xf32>, %a3: tensor<64x64x1x64xf32>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: tensor_core 1 for MLA needs f16/bf16, R a multiple of 128 up to 512, Pr a multiple of 16 in 16..=256 and a 32-key tile within 163 KiB of shared memory; got R 128 Pr 64}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 32, row_lanes = 0, max_value_dim = 128}} : tensor<?x16x128xf32>, tensor<?x16x64xf32>, tensor<64x64x1x128xf32>, tensor<64x64x1x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x128xf32>
  return
}

// -----

// MLA on tensor cores: 64 panel rows only.
func.func @mla_config_tensor_core_rows(%a0: tensor<?x16x128xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x128xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_mma 128x32 d128: expected block_rows 64, block_keys 32 or 64, row_lanes 0, max_value_dim 128 (R)}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1, kernel_config = {tensor_core = 1, block_rows = 128, block_keys = 32, row_lanes = 0, max_value_dim = 128}} : tensor<?x16x128xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x128xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x128xbf16>
  return
}

// -----

// MLA on tensor cores at R = 512 / P = 64 with 64-key tiles: two stages of 576-column rows next to Q
// pass 227 KiB.
func.func @mla_config_tensor_core_shared(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: paged_mma 64x64 d512 needs 234240 bytes of shared memory (at most 232448)}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1, kernel_config = {tensor_core = 1, block_rows = 64, block_keys = 64, row_lanes = 0, max_value_dim = 512}} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

func.func @mla_config(%a0: tensor<?x16x512xbf16>, %a1: tensor<?x16x64xbf16>, %a2: tensor<64x64x1x512xbf16>, %a3: tensor<64x64x1x64xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: max_value_dim: a power of two ≥ value_dim 512 and ≥ row_lanes, ≤ 1024, at most 64 per lane; got 256}}
  %o = rudnn.paged_mla %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {scale = 0.125 : f32, causal = false, splits = 1, kernel_config = {tensor_core = 0, block_rows = 16, block_keys = 32, row_lanes = 8, max_value_dim = 256}} : tensor<?x16x512xbf16>, tensor<?x16x64xbf16>, tensor<64x64x1x512xbf16>, tensor<64x64x1x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xbf16>
  return
}

// -----

// Append: key [Q, Hkv, D], value [Q, Hkv, Dv], caches [pages, page_size, Hkv, D / Dv], one float dtype, the schedule as above.

func.func @append_key_dtype(%a0: tensor<?x8x128xi32>, %a1: tensor<?x8x128xi32>, %a2: tensor<64x16x8x128xi32>, %a3: tensor<64x16x8x128xi32>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key: expected f32, f16 or bf16, got i32}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xi32>, tensor<?x8x128xi32>, tensor<64x16x8x128xi32>, tensor<64x16x8x128xi32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xi32>, tensor<64x16x8x128xi32>
  return
}

// -----

func.func @append_key_rank(%a0: tensor<?x1024xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key: expected rank 3 [queries, kv_heads, head_dim], got [?, 1024]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x1024xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_key_empty(%a0: tensor<?x0x128xbf16>, %a1: tensor<?x0x128xbf16>, %a2: tensor<64x16x0x128xbf16>, %a3: tensor<64x16x0x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key: expected queries and kv_heads > 0, got [?, 0, 128]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x0x128xbf16>, tensor<?x0x128xbf16>, tensor<64x16x0x128xbf16>, tensor<64x16x0x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x0x128xbf16>, tensor<64x16x0x128xbf16>
  return
}

// -----

func.func @append_head_dim(%a0: tensor<?x8x1056xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x1056xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key: expected head_dim (D) in 1..=1024, got 1056}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x1056xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x1056xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x1056xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_value_dtype(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{value: expected bf16 (the key dtype), got f16}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xf16>
  return
}

// -----

func.func @append_value_rank(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128x1xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{value: expected rank 3 [queries, kv_heads, value_dim], got [?, 8, 128, 1]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128x1xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_value_heads(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x4x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x4x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{value: expected [?, 8, 128] ([queries, kv_heads, value_dim]), got [?, 4, 128]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x4x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x4x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x4x128xbf16>
  return
}

// -----

func.func @append_value_rows(%a0: tensor<3x8x128xbf16>, %a1: tensor<2x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{value: expected [3, 8, 128] ([queries, kv_heads, value_dim]), got [2, 8, 128]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<3x8x128xbf16>, tensor<2x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_value_dim(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x4096xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x4096xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{value: expected value_dim (Dv) in 1..=1024, got 4096}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x4096xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x4096xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x4096xbf16>
  return
}

// -----

func.func @append_key_cache_dtype(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x128xf32>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key_cache: expected bf16 (the key dtype), got f32}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x128xf32>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xf32>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_key_cache_rank(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<1024x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key_cache: expected rank 4 [pages, page_size, kv_heads, head_dim], got [1024, 8, 128]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<1024x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<1024x8x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_key_cache_heads(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x4x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key_cache: expected [64, 16, 8, 128] ([pages, page_size, kv_heads, head_dim]), got [64, 16, 4, 128]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x16x4x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x4x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_key_cache_width(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x64xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key_cache: expected [64, 16, 8, 128] ([pages, page_size, kv_heads, head_dim]), got [64, 16, 8, 64]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x64xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x64xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_key_cache_empty(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x0x8x128xbf16>, %a3: tensor<64x0x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{key_cache: expected pages and page_size > 0, got [64, 0, 8, 128]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x0x8x128xbf16>, tensor<64x0x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x0x8x128xbf16>, tensor<64x0x8x128xbf16>
  return
}

// -----

func.func @append_value_cache_dtype(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{value_cache: expected bf16 (the key dtype), got f16}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xf16>
  return
}

// -----

func.func @append_value_cache_pages(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<32x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{value_cache: expected [64, 16, 8, 128] ([pages, page_size, kv_heads, value_dim]), got [32, 16, 8, 128]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<32x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<32x16x8x128xbf16>
  return
}

// -----

func.func @append_value_cache_width(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x64xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{value_cache: expected [64, 16, 8, 64] ([pages, page_size, kv_heads, value_dim]), got [64, 16, 8, 128]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x64xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_positions(%a0: tensor<4x8x128xbf16>, %a1: tensor<4x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<5xi32>) {
  // expected-error @+1 {{positions: expected [4] ([queries]), got [5]}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<4x8x128xbf16>, tensor<4x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<5xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_lengths(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xui32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{lengths: expected i32 (the plan's metadata), got ui32}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xui32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

// The results are the cache types exactly; the kernel_config is none or {}.

func.func @append_result_key(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{new_key_cache: expected the key_cache type 'tensor<64x16x8x128xbf16>', got 'tensor<?x16x8x128xbf16>'}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x8x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

func.func @append_result_value(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{new_value_cache: expected the value_cache type 'tensor<64x16x8x128xbf16>', got 'tensor<64x16x8x128xf32>'}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xf32>
  return
}

// -----

func.func @append_config(%a0: tensor<?x8x128xbf16>, %a1: tensor<?x8x128xbf16>, %a2: tensor<64x16x8x128xbf16>, %a3: tensor<64x16x8x128xbf16>, %a4: tensor<?x?xi32>, %a5: tensor<?xi32>, %a6: tensor<?xi32>, %a7: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: expected none or {} (the append has one kernel), got {threads = 128 : i64}}}
  %k, %v = rudnn.paged_append %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 {kernel_config = {threads = 128}} : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<64x16x8x128xbf16>, tensor<64x16x8x128xbf16>
  return
}

// -----

// The backward (SPEC §9): grad_out [Q, Hq, Dv] in the query's dtype, each gradient its input's type,
// {warps} 2, 4 or 8; the forward's lines through it.

func.func @backward_grad_out_shape(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x64xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{grad_out: expected [?, 8, 32] ([queries, q_heads, value_dim])}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return
}

// -----

func.func @backward_grad_out_dtype(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{grad_out: expected bf16 (the query dtype), got f16}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return
}

// -----

func.func @backward_gradient_type(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{gradients: expected 'tensor<?x16x2x32xbf16>' (the input's type), got 'tensor<?x16x2x32xf32>'}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xf32>
  return
}

// -----

func.func @backward_warps(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: warps: expected 2, 4 or 8, got 3}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, kernel_config = {warps = 3}} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return
}

// -----

func.func @backward_config_keys(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x64xbf16>, %go: tensor<?x8x64xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: expected {warps} or {warps, tensor_core}, got {block_rows = 64 : i64, warps = 4 : i64}}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, kernel_config = {warps = 4, block_rows = 64}} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x8x64xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x64xbf16>
  return
}

// -----

// The tensor-core backward: f16/bf16, attention with D = Dv in {64, 96, 128}, MLA with R a multiple of 128
// up to 512 and Pr a multiple of 16 in 16..256 within sm_80's shared memory.
func.func @backward_tensor_core_value_dim(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: tensor_core 1 needs f16/bf16 with attention's D = Dv in {64, 96, 128} or MLA's R a multiple of 128 up to 512, Pr a multiple of 16 in 16..256 and 166912 bytes of shared memory at most; got key dim 64 value dim 32}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, kernel_config = {warps = 4, tensor_core = 1}} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return
}

// -----

func.func @backward_tensor_core_f32(%q: tensor<?x8x64xf32>, %k: tensor<?x16x2x64xf32>, %v: tensor<?x16x2x64xf32>, %go: tensor<?x8x64xf32>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: tensor_core 1 needs f16/bf16 with attention's D = Dv in {64, 96, 128} or MLA's R a multiple of 128 up to 512, Pr a multiple of 16 in 16..256 and 166912 bytes of shared memory at most; got a 32-bit dtype, key dim 64 value dim 64}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, kernel_config = {warps = 4, tensor_core = 1}} : tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x64xf32>, tensor<?x8x64xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xf32>, tensor<?x16x2x64xf32>, tensor<?x16x2x64xf32>
  return
}

// -----

// MLA at R = 512 with Pr = 96: two key stages of 616-column rows pass sm_80's shared memory.
func.func @mla_backward_tensor_core_shared(%q: tensor<?x16x512xf16>, %qp: tensor<?x16x96xf16>, %c: tensor<32x64x1x512xf16>, %kp: tensor<32x64x1x96xf16>, %go: tensor<?x16x512xf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{kernel_config: tensor_core 1 needs f16/bf16 with attention's D = Dv in {64, 96, 128} or MLA's R a multiple of 128 up to 512, Pr a multiple of 16 in 16..256 and 166912 bytes of shared memory at most; got key dim 608 value dim 512 (MLA)}}
  %a, %b, %cc, %d = rudnn.paged_mla_backward %q, %qp, %c, %kp, %go, %t, %l, %s, %p {scale = 0.04 : f32, causal = false, kernel_config = {warps = 4, tensor_core = 1}} : tensor<?x16x512xf16>, tensor<?x16x96xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x96xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xf16>, tensor<?x16x96xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x96xf16>
  return
}

// -----

func.func @backward_scale(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{scale: expected a finite value > 0, got -1}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = -1.0 : f32, causal = true} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return
}

// -----

func.func @mla_backward_grad_out(%q: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %c: tensor<32x64x1x512xf16>, %kp: tensor<32x64x1x64xf16>, %go: tensor<?x16x64xf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{grad_out: expected [?, 16, 512] ([queries, heads, latent_dim])}}
  %a, %b, %cc, %d = rudnn.paged_mla_backward %q, %qp, %c, %kp, %go, %t, %l, %s, %p {scale = 0.04 : f32, causal = false} : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x64xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  return
}

// -----

// The ordered form: history_index and page_order are i32 vectors; cache_rows / compact_history only
// with it.

func.func @backward_cache_rows_atomic(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{cache_rows / compact_history: expected only on the ordered form (ordered(...)), got them on the atomic one}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p {scale = 0.125 : f32, causal = true, cache_rows} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return
}

// -----

func.func @mla_backward_compact_atomic(%q: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %c: tensor<32x64x1x512xf16>, %kp: tensor<32x64x1x64xf16>, %go: tensor<?x16x512xf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{cache_rows / compact_history: expected only on the ordered form (ordered(...)), got them on the atomic one}}
  %a, %b, %cc, %d = rudnn.paged_mla_backward %q, %qp, %c, %kp, %go, %t, %l, %s, %p {scale = 0.04 : f32, causal = false, compact_history} : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  return
}

// -----

func.func @backward_history_index_rank(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>, %i: tensor<?x2xi32>, %o: tensor<?xi32>) {
  // expected-error @+1 {{history_index: expected a 1-D i32 tensor (the ordered workspace's index), got 'tensor<?x2xi32>'}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p ordered(%i, %o : tensor<?x2xi32>, tensor<?xi32>) {scale = 0.125 : f32, causal = true} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return
}

// -----

func.func @backward_history_index_dtype(%q: tensor<?x8x64xbf16>, %k: tensor<?x16x2x64xbf16>, %v: tensor<?x16x2x32xbf16>, %go: tensor<?x8x32xbf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>, %i: tensor<?xf32>, %o: tensor<?xi32>) {
  // expected-error @+1 {{history_index: expected a 1-D i32 tensor (the ordered workspace's index), got 'tensor<?xf32>'}}
  %dq, %dk, %dv = rudnn.paged_attention_backward %q, %k, %v, %go, %t, %l, %s, %p ordered(%i, %o : tensor<?xf32>, tensor<?xi32>) {scale = 0.125 : f32, causal = true, cache_rows} : tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>, tensor<?x8x32xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x8x64xbf16>, tensor<?x16x2x64xbf16>, tensor<?x16x2x32xbf16>
  return
}

// -----

func.func @mla_backward_page_order_dtype(%q: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>, %c: tensor<32x64x1x512xf16>, %kp: tensor<32x64x1x64xf16>, %go: tensor<?x16x512xf16>, %t: tensor<?x?xi32>, %l: tensor<?xi32>, %s: tensor<?xi32>, %p: tensor<?xi32>, %i: tensor<?xi32>, %o: tensor<32xi64>) {
  // expected-error @+1 {{page_order: expected a 1-D i32 tensor (the ordered workspace's index), got 'tensor<32xi64>'}}
  %a, %b, %cc, %d = rudnn.paged_mla_backward %q, %qp, %c, %kp, %go, %t, %l, %s, %p ordered(%i, %o : tensor<?xi32>, tensor<32xi64>) {scale = 0.04 : f32, causal = false, compact_history} : tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>, tensor<?x16x512xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32> -> tensor<?x16x512xf16>, tensor<?x16x64xf16>, tensor<32x64x1x512xf16>, tensor<32x64x1x64xf16>
  return
}
