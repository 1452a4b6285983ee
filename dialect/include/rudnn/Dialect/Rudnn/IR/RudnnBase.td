//===- RudnnBase.td - the rudnn dialect ---------------------*- tablegen -*-===//
// The dialect, its attributes and the op base class. Op families live in their own files
// (NormOps.td, LaunchOps.td) and are gathered by RudnnOps.td.
#ifndef RUDNN_DIALECT_RUDNN_BASE_TD
#define RUDNN_DIALECT_RUDNN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Rudnn_Dialect : Dialect {
  let name = "rudnn";
  let cppNamespace = "::rudnn::dialect";
  let summary = "Neural-network operator calls and the kernel launches they lower to";
  let description = [{
    Operator ops (`rudnn.layer_norm`, ...) describe one call of a public rudnn entry on ranked
    tensors whose leading dims may be dynamic. Passes attach a `kernel_config` and lower each
    operator op to `rudnn.launch` ops, which name a CUDA C++ template instantiation and the rules
    that derive grid, block and kernel arguments from the runtime sizes.
  }];
  let useDefaultAttributePrinterParser = 1;
  // Defined next to the attribute storage classes (RudnnAttrs.cpp), which must be complete there.
  let extraClassDeclaration = [{ void registerAttributes(); }];
}

class Rudnn_Op<string mnemonic, list<Trait> traits = []> : Op<Rudnn_Dialect, mnemonic, traits>;
class Rudnn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Rudnn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// ceil_div(product(factors), divisor) over a launch's runtime sizes.
//   #rudnn.size<rows(0) ceildiv 4>      rows (product of all but the last dim) of operand 0, / 4
//   #rudnn.size<dim(0, 1) * 8>          dim 1 of operand 0, times 8
//   #rudnn.size<1>                      the constant 1 (an empty product)
def Rudnn_SizeExprAttr : Rudnn_Attr<"SizeExpr", "size"> {
  let summary = "A launch size computed from the runtime sizes of a launch's operands";
  let parameters = (ins ArrayRefParameter<"::rudnn::dialect::SizeFactor", "factors">:$factors,
                        "int64_t":$divisor);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    // Parses/prints the body between the angle brackets (shared with #rudnn.param).
    static ::mlir::FailureOr<SizeExprAttr> parseBody(::mlir::AsmParser &parser);
    void printBody(::llvm::raw_ostream &os) const;
  }];
}

// One kernel parameter and where its value comes from:
//   #rudnn.param<"input" : "const rudnn::bf16*" = buffer(0)>   operand/result 0's device pointer
//   #rudnn.param<"beta" : "const float*" = null>               an absent optional operand
//   #rudnn.param<"rows" : "long long" = size(rows(0))>         a runtime size
//   #rudnn.param<"epsilon" : "float" = f32(1.0e-05)>           a float baked from an op attribute
def Rudnn_KernelParamAttr : Rudnn_Attr<"KernelParam", "param"> {
  let summary = "A kernel parameter: C type, name and value source";
  let parameters = (ins StringRefParameter<"parameter name">:$name,
                        StringRefParameter<"C type as spelled in the source">:$cType,
                        "::rudnn::dialect::KernelParamKind":$kind,
                        "int64_t":$operand,
                        OptionalParameter<"::rudnn::dialect::SizeExprAttr">:$size,
                        OptionalParameter<"::mlir::FloatAttr">:$value);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Rudnn_SizeExprArrayAttr : TypedArrayAttrBase<Rudnn_SizeExprAttr, "array of #rudnn.size">;
def Rudnn_KernelParamArrayAttr : TypedArrayAttrBase<Rudnn_KernelParamAttr, "array of #rudnn.param">;

#endif // RUDNN_DIALECT_RUDNN_BASE_TD
