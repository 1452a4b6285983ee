//===- LaunchOps.td - kernel launches -----------------------*- tablegen -*-===//
#ifndef RUDNN_DIALECT_LAUNCH_OPS_TD
#define RUDNN_DIALECT_LAUNCH_OPS_TD

include "rudnn/Dialect/Rudnn/IR/RudnnBase.td"

def Rudnn_LaunchOp : Rudnn_Op<"launch"> {
  let summary = "One kernel launch at tensor level: a template instantiation and its launch rules";
  let description = [{
    Tensor operands in, tensor results out; the runtime allocates the results. The kernel is the
    `extern "C"` symbol `kernel`, defined by a translation unit that includes `header` and
    instantiates `function<args...>`. Operands and results are numbered together: operand i is
    i, result r is (number of operands + r); `buffer(k)` params and `rows(k)`/`dim(k, d)` sizes
    use this numbering. `grid` has 3 entries (x, y, z), `block` 3 extents, `shared` the dynamic
    shared-memory bytes. `config` is the kernel configuration the instantiation was made from;
    `origin` names the op that was lowered (for the generated source's header comment).
    `result_elements` (one size per result, in the launch's numbering) gives the element count of
    results that another launch consumes without @main returning them: the runtime allocates those
    as call-scoped temporaries.
    ```mlir
    %y = rudnn.launch @rudnn_rms_norm_f32_t32_r4_v4(%x, %g)
           header "rudnn/norm/row_norm.cuh" function "rudnn::norm::row_norm"
           args ["rudnn::norm::RmsNorm", "float", "rudnn::norm::RowPolicy<32, 4, 4>"]
           config {rows_per_block = 4 : i64, threads_per_row = 32 : i64, vector_width = 4 : i64}
           grid [#rudnn.size<rows(0) ceildiv 4>, #rudnn.size<1>, #rudnn.size<1>]
           block [128, 1, 1] shared 32
           params [#rudnn.param<"input" : "const float*" = buffer(0)>, ...]
           {origin = "rudnn.rms_norm"} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, Variadic<AnyRankedTensor>:$inputs,
                       StrAttr:$template_header, StrAttr:$template_function,
                       StrArrayAttr:$template_args, DictionaryAttr:$kernel_config,
                       Rudnn_SizeExprArrayAttr:$grid, DenseI64ArrayAttr:$block,
                       I64Attr:$dynamic_shared_bytes, Rudnn_KernelParamArrayAttr:$params,
                       OptionalAttr<StrAttr>:$origin,
                       OptionalAttr<Rudnn_SizeExprArrayAttr>:$result_elements);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $kernel `(` $inputs `)`
    `header` $template_header `function` $template_function `args` $template_args
    `config` $kernel_config `grid` $grid `block` $block `shared` $dynamic_shared_bytes
    `params` $params attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

#endif // RUDNN_DIALECT_LAUNCH_OPS_TD
