//===- ConvOps.td - convolution ------------------------------*- tablegen -*-===//
// SPEC §6. The verifiers call rudnn::contracts::check_conv (core/contracts/conv), the same check the
// public API runs, then check the result types and the kernel_config (ConvConfig.h).
#ifndef RUDNN_DIALECT_CONV_OPS_TD
#define RUDNN_DIALECT_CONV_OPS_TD

include "rudnn/Dialect/Rudnn/IR/RudnnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Options every convolution op carries: per spatial dim (empty = defaults) and the groups; the
// layout of its activations and weights; the strategy the caller prefers ("direct",
// "implicit_gemm", "autotune"). The kernel_config names the algorithm that runs and its tile.
class Rudnn_ConvOp<string mnemonic> : Rudnn_Op<mnemonic, [Pure]> {
  dag convOptions = (ins DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation,
                         I64Attr:$groups, BoolAttr:$channels_last, StrAttr:$strategy,
                         OptionalAttr<DictionaryAttr>:$kernel_config);
  let hasVerifier = 1;
}

def Rudnn_ConvForwardOp : Rudnn_ConvOp<"conv_forward"> {
  let summary = "Convolution forward: 1 to 3 spatial dims, grouped, strided, padded, dilated";
  let description = [{
    input [N, C, spatial...] and weight [O, C/groups, k...] (channels_last: [N, spatial..., C] and
    [O, k..., C/groups]), bias [O] (f32 or the input dtype) → [N, O, out...] (channels_last
    [N, out..., O]) with out = (in + 2·padding − dilation·(k − 1) − 1) / stride + 1.
    ```mlir
    %y = rudnn.conv_forward %x, %w bias(%b : tensor<64xf32>) {stride = array<i64: 1, 1>,
           padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1, channels_last = true,
           strategy = "implicit_gemm"} : tensor<?x56x56x64xbf16>, tensor<64x3x3x64xbf16> -> tensor<?x56x56x64xbf16>
    ```
  }];
  let arguments = !con((ins AnyRankedTensor:$input, AnyRankedTensor:$weight, Optional<AnyRankedTensor>:$bias),
                       convOptions);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict `:` type($input) `,` type($weight)
    `->` type($output)
  }];
}

def Rudnn_ConvDataBackwardOp : Rudnn_ConvOp<"conv_data_backward"> {
  let summary = "Convolution data backward: grad_input from grad_output and weight";
  let description = [{
    grad_output [N, O, out...] and weight [O, C/groups, k...] (channels_last: [N, out..., O],
    [O, k..., C/groups]) → grad_input, whose type gives the forward's input extents.
  }];
  let arguments = !con((ins AnyRankedTensor:$grad_output, AnyRankedTensor:$weight), convOptions);
  let results = (outs AnyRankedTensor:$grad_input);
  let assemblyFormat = [{
    $grad_output `,` $weight attr-dict `:` type($grad_output) `,` type($weight) `->` type($grad_input)
  }];
}

def Rudnn_ConvWeightBackwardOp : Rudnn_ConvOp<"conv_weight_backward"> {
  let summary = "Convolution weight backward: grad_weight (and grad_bias) from input and grad_output";
  let description = [{
    input [N, C, spatial...] and grad_output [N, O, out...] (channels_last: [N, spatial..., C],
    [N, out..., O]) → grad_weight in the input dtype, whose type gives the filter extents, and with
    `bias_grad` also grad_bias f32 [O].
  }];
  let arguments = !con((ins AnyRankedTensor:$input, AnyRankedTensor:$grad_output), convOptions,
                       (ins UnitAttr:$bias_grad));
  let results = (outs Variadic<AnyRankedTensor>:$grads);
  let assemblyFormat = [{
    $input `,` $grad_output attr-dict `:` type($input) `,` type($grad_output) `->` type($grads)
  }];
}

#endif // RUDNN_DIALECT_CONV_OPS_TD
