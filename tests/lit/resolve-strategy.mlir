// rudnn-resolve-strategy without a ConfigProvider (rudnn-opt has none): the IR is unchanged, and
// rudnn-select-kernel-config's heuristic then applies as before. With a provider (the ops layer's
// autotune one) the pass attaches its answer: tests/autotune/resolve_strategy_test.cpp.
// RUN: rudnn-opt %s --rudnn-resolve-strategy | FileCheck %s
// RUN: rudnn-opt %s --rudnn-resolve-strategy --rudnn-select-kernel-config | FileCheck %s --check-prefix=HEUR

// CHECK-LABEL: func.func @main
// CHECK: rudnn.rms_norm
// CHECK-NOT: kernel_config
// CHECK: return
// HEUR-LABEL: func.func @main
// HEUR: rudnn.rms_norm {{.*}}kernel_config = {rows_per_block = 1 : i64, threads_per_row = 128 : i64, vector_width = 8 : i64}
func.func @main(%x: tensor<?x4096xbf16>, %g: tensor<4096xf32>) -> tensor<?x4096xbf16> {
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16>, tensor<4096xf32>
  return %0 : tensor<?x4096xbf16>
}

// A config already attached is kept either way.
// CHECK-LABEL: func.func @forced
// CHECK: kernel_config = {rows_per_block = 2 : i64, threads_per_row = 64 : i64, vector_width = 2 : i64}
func.func @forced(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %0 = rudnn.softmax_last_axis %x {kernel_config = {threads_per_row = 64, rows_per_block = 2, vector_width = 2}} : tensor<?x4096xbf16>
  return %0 : tensor<?x4096xbf16>
}
