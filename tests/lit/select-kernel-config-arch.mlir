// rudnn-select-kernel-config on a target without mma.sync m16n8k16 (sm_75, a T4): the heuristics
// never pick a tensor-core kernel (attention falls to flash_unit, the chunked gated delta rule to
// its plain-core tile, auto experts to the scalar tile), and a tensor-core kernel_config attached
// beforehand is an error naming the requirement, not an NVRTC compile failure.
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_75" | FileCheck %s
// RUN: rudnn-opt %s --rudnn-select-kernel-config="arch=sm_80" | FileCheck %s --check-prefix=AMPERE
// RUN: rudnn-opt %S/select-kernel-config-arch.invalid --split-input-file --verify-diagnostics --rudnn-select-kernel-config="arch=sm_75"

// CHECK-LABEL: func.func @heuristics
// CHECK: rudnn.attention {{.*}}kernel_config = {{{.*}}strategy = 1 : i64, threads_per_row
// CHECK: rudnn.gated_delta {{.*}}kernel_config = {columns = 32 : i64, tensor_core = 0 : i64, threads = 256 : i64}
// CHECK: rudnn.swiglu_experts {{.*}}kernel_config = {{{.*}}tensor_core = 0
// AMPERE-LABEL: func.func @heuristics
// AMPERE: rudnn.attention {{.*}}kernel_config = {block_m = {{[0-9]+}} : i64, block_n = {{[0-9]+}} : i64, strategy = 0 : i64}
// AMPERE: rudnn.gated_delta {{.*}}kernel_config = {columns = 32 : i64, tensor_core = 1 : i64, threads = 256 : i64}
// AMPERE: rudnn.swiglu_experts {{.*}}kernel_config = {{{.*}}tensor_core = 1
func.func @heuristics(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>,
                      %gq: tensor<1x2x8x128xbf16>, %gb: tensor<1x2x8xbf16>,
                      %rows: tensor<?x64xbf16>, %off: tensor<9xui32>, %g: tensor<8x32x64xbf16>, %u: tensor<8x32x64xbf16>,
                      %d: tensor<8x64x32xbf16>) {
  %o = rudnn.attention %q, %k, %v {scale = 0.125 : f32, causal = true, strategy = "autotune"}
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  %go, %gs = rudnn.gated_delta %gq, %gq, %gq, %gb, %gb {query_scale = 1.0 : f32, chunk_size = 64 : i64} : tensor<1x2x8x128xbf16>, tensor<1x2x8x128xbf16>, tensor<1x2x8x128xbf16>, tensor<1x2x8xbf16>, tensor<1x2x8xbf16> -> tensor<1x2x8x128xbf16>, tensor<1x2x128x128xf32>
  %y = rudnn.swiglu_experts %rows, %off, %g, %u, %d {strategy = "auto"}
      : tensor<?x64xbf16>, tensor<9xui32>, tensor<8x32x64xbf16>, tensor<8x32x64xbf16>, tensor<8x64x32xbf16> -> tensor<?x64xbf16>
  return
}

