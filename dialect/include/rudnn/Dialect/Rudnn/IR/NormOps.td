//===- NormOps.td - normalization family --------------------*- tablegen -*-===//
// SPEC §2. Every op works along the last axis and keeps the input's type. The verifiers call
// rudnn::contracts::check_normalization, the same check the public API runs.
#ifndef RUDNN_DIALECT_NORM_OPS_TD
#define RUDNN_DIALECT_NORM_OPS_TD

include "rudnn/Dialect/Rudnn/IR/RudnnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Rudnn_NormOp<string mnemonic> : Rudnn_Op<mnemonic,
    [Pure, AllTypesMatch<["input", "output"]>]> {
  let hasVerifier = 1;
}

def Rudnn_LayerNormOp : Rudnn_NormOp<"layer_norm"> {
  let summary = "y = (x - mean) / sqrt(var + epsilon) * gamma + beta along the last axis";
  let description = [{
    Biased variance; statistics and affine math in f32; `beta` is optional.
    ```mlir
    %y = rudnn.layer_norm %x, %gamma, %beta {epsilon = 1.0e-05 : f32}
           : tensor<?x4096xbf16>, tensor<4096xf32>, tensor<4096xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$gamma,
                       Optional<AnyRankedTensor>:$beta, F32Attr:$epsilon,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $input `,` $gamma (`,` $beta^)? attr-dict `:` type($input) `,` type($gamma) (`,` type($beta)^)?
  }];
}

def Rudnn_RmsNormOp : Rudnn_NormOp<"rms_norm"> {
  let summary = "y = x / sqrt(mean(x^2) + epsilon) * gamma along the last axis";
  let description = [{
    ```mlir
    %y = rudnn.rms_norm %x, %gamma {epsilon = 1.0e-06 : f32} : tensor<?x4096xf16>, tensor<4096xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$gamma, F32Attr:$epsilon,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "$input `,` $gamma attr-dict `:` type($input) `,` type($gamma)";
}

def Rudnn_SoftmaxLastAxisOp : Rudnn_NormOp<"softmax_last_axis"> {
  let summary = "Numerically stable (max-subtracted) softmax along the last axis";
  let description = [{
    ```mlir
    %p = rudnn.softmax_last_axis %logits : tensor<?x?x32000xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

#endif // RUDNN_DIALECT_NORM_OPS_TD
