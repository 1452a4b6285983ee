// The README's rudnn-opt command on every example graph: each rudnn op becomes launches and none
// is left (regression: a chain of two normalization ops crashed rudnn-lower-to-launch).
// RUN: rudnn-opt %S/../../examples/normalization.mlir --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=NORM
// RUN: rudnn-opt %S/../../examples/moe_routing.mlir --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LOWERED
// RUN: rudnn-opt %S/../../examples/moe_forward.mlir --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LOWERED
// RUN: rudnn-opt %S/../../examples/gated_delta.mlir --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LOWERED
// RUN: rudnn-opt %S/../../examples/attention.mlir --rudnn-resolve-strategy --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LOWERED
// RUN: rudnn-opt %S/../../examples/odd_sizes.mlir --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LOWERED
// RUN: rudnn-opt %S/../../examples/moe_training.mlir --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LOWERED
// RUN: rudnn-opt %S/../../examples/paged_serving.mlir --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LOWERED
// RUN: rudnn-opt %S/../../examples/paged_training.mlir --rudnn-select-kernel-config --rudnn-lower-to-launch | FileCheck %s --check-prefix=LOWERED

// NORM: %[[LN:.*]] = rudnn.launch @rudnn_layer_norm_bf16
// NORM: %[[RMS:.*]] = rudnn.launch @rudnn_rms_norm_bf16{{.*}}(%[[LN]],
// NORM: %[[SM:.*]] = rudnn.launch @rudnn_softmax_last_axis_bf16{{.*}}(%[[RMS]])
// NORM: return %[[RMS]], %[[SM]]

// LOWERED: rudnn.launch
// LOWERED-NOT: = rudnn.{{[a-z_]+}} %
