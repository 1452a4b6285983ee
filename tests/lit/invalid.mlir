// Every contract line of SPEC §2 is rejected by the op verifiers with the message of
// rudnn::contracts::check_normalization (the public API's check), plus the IR-only rules
// (kernel_config, rudnn.launch, #rudnn.size, #rudnn.param).
// RUN: rudnn-opt %s -split-input-file -verify-diagnostics

// --- input: non-quantized f32/f16/bf16, last dim > 0 ---

func.func @quantized_input(%x: tensor<?x16xf8E4M3FN>, %g: tensor<16xf32>) -> tensor<?x16xf8E4M3FN> {
  // expected-error @+1 {{'rudnn.layer_norm' op input: expected non-quantized f32, f16 or bf16, got f8E4M3FN}}
  %0 = rudnn.layer_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x16xf8E4M3FN>, tensor<16xf32>
  return %0 : tensor<?x16xf8E4M3FN>
}

// -----

func.func @integer_input(%x: tensor<?x16xi32>, %g: tensor<16xf32>) -> tensor<?x16xi32> {
  // expected-error @+1 {{'rudnn.rms_norm' op input: expected f32, f16 or bf16, got i32}}
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x16xi32>, tensor<16xf32>
  return %0 : tensor<?x16xi32>
}

// -----

func.func @f64_input(%x: tensor<?x16xf64>) -> tensor<?x16xf64> {
  // expected-error @+1 {{logits: expected a rudnn element type (f32, f16, bf16, ...), got 'f64'}}
  %0 = rudnn.softmax_last_axis %x : tensor<?x16xf64>
  return %0 : tensor<?x16xf64>
}

// -----

func.func @quantized_logits(%x: tensor<4x16xf8E4M3FN>) -> tensor<4x16xf8E4M3FN> {
  // expected-error @+1 {{logits: expected non-quantized f32, f16 or bf16, got f8E4M3FN}}
  %0 = rudnn.softmax_last_axis %x : tensor<4x16xf8E4M3FN>
  return %0 : tensor<4x16xf8E4M3FN>
}

// -----

func.func @empty_last_dim(%x: tensor<?x0xf32>, %g: tensor<0xf32>) -> tensor<?x0xf32> {
  // expected-error @+1 {{input: expected last dim > 0, got [?, 0]}}
  %0 = rudnn.layer_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x0xf32>, tensor<0xf32>
  return %0 : tensor<?x0xf32>
}

// -----

func.func @empty_last_dim_softmax(%x: tensor<3x0xbf16>) -> tensor<3x0xbf16> {
  // expected-error @+1 {{logits: expected last dim > 0, got [3, 0]}}
  %0 = rudnn.softmax_last_axis %x : tensor<3x0xbf16>
  return %0 : tensor<3x0xbf16>
}

// -----

func.func @rank0_input(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{logits: expected rank >= 1, got a rank-0 tensor}}
  %0 = rudnn.softmax_last_axis %x : tensor<f32>
  return %0 : tensor<f32>
}

// --- gamma and beta: shape [H], f32, non-quantized ---

// -----

func.func @gamma_wrong_length(%x: tensor<?x16xbf16>, %g: tensor<8xf32>) -> tensor<?x16xbf16> {
  // expected-error @+1 {{gamma: expected shape [16] (the last dim of input), got [8]}}
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x16xbf16>, tensor<8xf32>
  return %0 : tensor<?x16xbf16>
}

// -----

func.func @gamma_wrong_rank(%x: tensor<?x16xbf16>, %g: tensor<1x16xf32>) -> tensor<?x16xbf16> {
  // expected-error @+1 {{gamma: expected shape [16] (the last dim of input), got [1, 16]}}
  %0 = rudnn.layer_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x16xbf16>, tensor<1x16xf32>
  return %0 : tensor<?x16xbf16>
}

// -----

func.func @beta_wrong_length(%x: tensor<?x16xf16>, %g: tensor<16xf32>, %b: tensor<17xf32>) -> tensor<?x16xf16> {
  // expected-error @+1 {{beta: expected shape [16] (the last dim of input), got [17]}}
  %0 = rudnn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x16xf16>, tensor<16xf32>, tensor<17xf32>
  return %0 : tensor<?x16xf16>
}

// -----

func.func @gamma_wrong_dtype(%x: tensor<?x16xbf16>, %g: tensor<16xbf16>) -> tensor<?x16xbf16> {
  // expected-error @+1 {{gamma: expected f32, got bf16}}
  %0 = rudnn.layer_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x16xbf16>, tensor<16xbf16>
  return %0 : tensor<?x16xbf16>
}

// -----

func.func @beta_wrong_dtype(%x: tensor<?x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf16>) -> tensor<?x16xf32> {
  // expected-error @+1 {{beta: expected f32, got f16}}
  %0 = rudnn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf16>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @gamma_quantized(%x: tensor<?x16xf32>, %g: tensor<16xf8E4M3FN>) -> tensor<?x16xf32> {
  // expected-error @+1 {{gamma: expected non-quantized f32, got f8E4M3FN}}
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x16xf32>, tensor<16xf8E4M3FN>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @beta_quantized(%x: tensor<?x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf8E4M3FN>) -> tensor<?x16xf32> {
  // expected-error @+1 {{beta: expected non-quantized f32, got f8E4M3FN}}
  %0 = rudnn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf8E4M3FN>
  return %0 : tensor<?x16xf32>
}

// --- epsilon finite and > 0 ---

// -----

func.func @epsilon_zero(%x: tensor<?x16xf32>, %g: tensor<16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{epsilon: expected finite and > 0, got 0}}
  %0 = rudnn.layer_norm %x, %g {epsilon = 0.0 : f32} : tensor<?x16xf32>, tensor<16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @epsilon_negative(%x: tensor<?x16xf32>, %g: tensor<16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{epsilon: expected finite and > 0, got -0.5}}
  %0 = rudnn.rms_norm %x, %g {epsilon = -0.5 : f32} : tensor<?x16xf32>, tensor<16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @epsilon_inf(%x: tensor<?x16xf32>, %g: tensor<16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{epsilon: expected finite and > 0, got inf}}
  %0 = rudnn.layer_norm %x, %g {epsilon = 0x7F800000 : f32} : tensor<?x16xf32>, tensor<16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @epsilon_nan(%x: tensor<?x16xf32>, %g: tensor<16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{epsilon: expected finite and > 0, got nan}}
  %0 = rudnn.rms_norm %x, %g {epsilon = 0x7FC00000 : f32} : tensor<?x16xf32>, tensor<16xf32>
  return %0 : tensor<?x16xf32>
}

// --- IR-only rules ---

// -----

func.func @result_type_differs(%x: tensor<?x16xf32>) -> tensor<?x16xf16> {
  // expected-error @+1 {{all of {input, output} have same type}}
  %0 = "rudnn.softmax_last_axis"(%x) : (tensor<?x16xf32>) -> tensor<?x16xf16>
  return %0 : tensor<?x16xf16>
}

// -----

func.func @config_vector_too_wide(%x: tensor<?x16xbf16>, %g: tensor<16xf32>) -> tensor<?x16xbf16> {
  // expected-error @+1 {{kernel_config: vector_width 16 is not legal for bf16 with last dim 16 (legal: 8, 4, 2, 1)}}
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-05 : f32, kernel_config = {threads_per_row = 32, rows_per_block = 1, vector_width = 16}} : tensor<?x16xbf16>, tensor<16xf32>
  return %0 : tensor<?x16xbf16>
}

// -----

func.func @config_vector_not_dividing(%x: tensor<?x12xf32>) -> tensor<?x12xf32> {
  // expected-error @+1 {{kernel_config: vector_width 8 is not legal for f32 with last dim 12 (legal: 4, 2, 1)}}
  %0 = rudnn.softmax_last_axis %x {kernel_config = {threads_per_row = 32, rows_per_block = 1, vector_width = 8}} : tensor<?x12xf32>
  return %0 : tensor<?x12xf32>
}

// -----

func.func @config_unaligned_vector(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{kernel_config: vector_width must be 1 for an op marked rudnn.unaligned, got 4}}
  %0 = rudnn.softmax_last_axis %x {rudnn.unaligned, kernel_config = {threads_per_row = 32, rows_per_block = 1, vector_width = 4}} : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @config_missing_key(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{kernel_config: expected an integer 'vector_width'}}
  %0 = rudnn.softmax_last_axis %x {kernel_config = {threads_per_row = 32, rows_per_block = 1}} : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @config_bad_threads(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{kernel_config: threads_per_row must be one of 32, 64, ..., 1024, got 48}}
  %0 = rudnn.softmax_last_axis %x {kernel_config = {threads_per_row = 48, rows_per_block = 1, vector_width = 1}} : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @config_block_too_big(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{kernel_config: threads_per_row * rows_per_block must be <= 1024, got 2048}}
  %0 = rudnn.softmax_last_axis %x {kernel_config = {threads_per_row = 512, rows_per_block = 4, vector_width = 1}} : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @config_extra_key(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{kernel_config: expected exactly threads_per_row, rows_per_block and vector_width}}
  %0 = rudnn.softmax_last_axis %x {kernel_config = {threads_per_row = 32, rows_per_block = 1, vector_width = 1, stages = 2}} : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @launch_grid_rank(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{grid: expected 3 sizes, got 2}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<1>, #rudnn.size<1>]
         block [32, 1, 1] shared 0 params [] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @launch_buffer_out_of_range(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{param 'y': operand 2 out of range (the launch has 2 operands and results)}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<1>, #rudnn.size<1>, #rudnn.size<1>]
         block [32, 1, 1] shared 0 params [#rudnn.param<"y" : "float*" = buffer(2)>] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @launch_dim_out_of_range(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{grid[0]: dim 2 out of range for 'tensor<?x16xf32>'}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<dim(0, 2)>, #rudnn.size<1>, #rudnn.size<1>]
         block [32, 1, 1] shared 0 params [] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @launch_stride_dim_out_of_range(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{param 's': dim 2 out of range for 'tensor<?x16xf32>'}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<1>, #rudnn.size<1>, #rudnn.size<1>]
         block [32, 1, 1] shared 0 params [#rudnn.param<"s" : "long long" = size(stride(0, 2))>] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @launch_stride_negative_dim(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{size dim index must be >= 0, got -1}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<stride(0, -1)>, #rudnn.size<1>, #rudnn.size<1>]
         block [32, 1, 1] shared 0 params [] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @launch_row_stride_of_rank_zero(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{param 's': rows of a rank-0 operand}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<1>, #rudnn.size<1>, #rudnn.size<1>]
         block [32, 1, 1] shared 0 params [#rudnn.param<"s" : "long long" = size(row_stride(0))>] : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @launch_block_zero(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{block: extents must be >= 1}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<1>, #rudnn.size<1>, #rudnn.size<1>]
         block [0, 1, 1] shared 0 params [] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @size_divisor_zero(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{size divisor must be >= 1, got 0}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<rows(0) ceildiv 0>, #rudnn.size<1>, #rudnn.size<1>]
         block [32, 1, 1] shared 0 params [] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @param_f32_needs_value(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+2 {{expected buffer(k), null, size(...) or f32(...)}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<1>, #rudnn.size<1>, #rudnn.size<1>]
         block [32, 1, 1] shared 0 params [#rudnn.param<"e" : "float" = float(1.0)>] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @launch_negative_shared(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{shared: must be >= 0}}
  %0 = rudnn.launch @k(%x) header "h" function "f" args [] config {} grid [#rudnn.size<1>, #rudnn.size<1>, #rudnn.size<1>]
         block [32, 1, 1] shared -4 params [] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}
