// Parsing, printing and verification of #rudnn.size and #rudnn.param.
#include "rudnn/Dialect/Rudnn/IR/RudnnAttrs.h"

#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"

using namespace mlir;

#define GET_ATTRDEF_CLASSES
#include "rudnn/Dialect/Rudnn/IR/RudnnAttrs.cpp.inc"

namespace rudnn::dialect {

void RudnnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "rudnn/Dialect/Rudnn/IR/RudnnAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #rudnn.size<rows(0) * dim(0, 1) * 4 ceildiv 2>, #rudnn.size<row_stride(3)>, #rudnn.size<stride(0, 2)>
//===----------------------------------------------------------------------===//

FailureOr<SizeExprAttr> SizeExprAttr::parseBody(AsmParser& parser) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<SizeFactor> factors;
  do {
    std::int64_t a = 0, b = 0;
    if (succeeded(parser.parseOptionalKeyword("rows"))) {
      if (parser.parseLParen() || parser.parseInteger(a) || parser.parseRParen()) return failure();
      factors.push_back(SizeFactor::rows(a));
    } else if (succeeded(parser.parseOptionalKeyword("row_stride"))) {
      if (parser.parseLParen() || parser.parseInteger(a) || parser.parseRParen()) return failure();
      factors.push_back(SizeFactor::rowStride(a));
    } else if (succeeded(parser.parseOptionalKeyword("dim"))) {
      if (parser.parseLParen() || parser.parseInteger(a) || parser.parseComma() || parser.parseInteger(b) ||
          parser.parseRParen())
        return failure();
      factors.push_back(SizeFactor::dimOf(a, b));
    } else if (succeeded(parser.parseOptionalKeyword("stride"))) {
      if (parser.parseLParen() || parser.parseInteger(a) || parser.parseComma() || parser.parseInteger(b) ||
          parser.parseRParen())
        return failure();
      factors.push_back(SizeFactor::strideOf(a, b));
    } else {
      if (parser.parseInteger(a)) return failure();
      // A factor 1 changes nothing; dropping it keeps one spelling per expression.
      if (a != 1) factors.push_back(SizeFactor::constant(a));
    }
  } while (succeeded(parser.parseOptionalStar()));
  std::int64_t divisor = 1;
  if (succeeded(parser.parseOptionalKeyword("ceildiv")) && parser.parseInteger(divisor)) return failure();
  auto attr = SizeExprAttr::getChecked([&] { return parser.emitError(loc); }, parser.getContext(), factors, divisor);
  if (!attr) return failure();
  return attr;
}

void SizeExprAttr::printBody(llvm::raw_ostream& os) const {
  if (getFactors().empty()) os << "1";
  llvm::interleave(
      getFactors(), os,
      [&](const SizeFactor& f) {
        switch (f.kind) {
          case SizeFactor::Kind::Const: os << f.value; break;
          case SizeFactor::Kind::Rows: os << "rows(" << f.operand << ")"; break;
          case SizeFactor::Kind::RowStride: os << "row_stride(" << f.operand << ")"; break;
          case SizeFactor::Kind::Dim: os << "dim(" << f.operand << ", " << f.dim << ")"; break;
          case SizeFactor::Kind::Stride: os << "stride(" << f.operand << ", " << f.dim << ")"; break;
        }
      },
      " * ");
  if (getDivisor() != 1) os << " ceildiv " << getDivisor();
}

Attribute SizeExprAttr::parse(AsmParser& parser, Type) {
  if (parser.parseLess()) return {};
  FailureOr<SizeExprAttr> attr = parseBody(parser);
  if (failed(attr) || parser.parseGreater()) return {};
  return *attr;
}

void SizeExprAttr::print(AsmPrinter& printer) const {
  printer << "<";
  printBody(printer.getStream());
  printer << ">";
}

LogicalResult SizeExprAttr::verify(function_ref<InFlightDiagnostic()> emitError, ArrayRef<SizeFactor> factors,
                                   std::int64_t divisor) {
  if (divisor < 1) return emitError() << "size divisor must be >= 1, got " << divisor;
  for (const SizeFactor& f : factors) {
    if (f.kind == SizeFactor::Kind::Const && f.value < 0)
      return emitError() << "size constant must be >= 0, got " << f.value;
    if (f.kind != SizeFactor::Kind::Const && f.operand < 0)
      return emitError() << "size operand index must be >= 0, got " << f.operand;
    if ((f.kind == SizeFactor::Kind::Dim || f.kind == SizeFactor::Kind::Stride) && f.dim < 0)
      return emitError() << "size dim index must be >= 0, got " << f.dim;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// #rudnn.param<"name" : "c type" = buffer(k) | null | size(expr) | f32(value)>
//===----------------------------------------------------------------------===//

Attribute KernelParamAttr::parse(AsmParser& parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name, cType;
  if (parser.parseLess() || parser.parseString(&name) || parser.parseColon() || parser.parseString(&cType) ||
      parser.parseEqual())
    return {};
  KernelParamKind kind;
  std::int64_t operand = -1;
  SizeExprAttr size;
  FloatAttr value;
  if (succeeded(parser.parseOptionalKeyword("buffer"))) {
    kind = KernelParamKind::Buffer;
    if (parser.parseLParen() || parser.parseInteger(operand) || parser.parseRParen()) return {};
  } else if (succeeded(parser.parseOptionalKeyword("null"))) {
    kind = KernelParamKind::NullBuffer;
  } else if (succeeded(parser.parseOptionalKeyword("size"))) {
    kind = KernelParamKind::Size;
    if (parser.parseLParen()) return {};
    FailureOr<SizeExprAttr> parsed = SizeExprAttr::parseBody(parser);
    if (failed(parsed) || parser.parseRParen()) return {};
    size = *parsed;
  } else if (succeeded(parser.parseOptionalKeyword("f32"))) {
    kind = KernelParamKind::F32;
    if (parser.parseLParen() || parser.parseAttribute(value, Float32Type::get(parser.getContext())) ||
        parser.parseRParen())
      return {};
  } else {
    parser.emitError(parser.getCurrentLocation(), "expected buffer(k), null, size(...) or f32(...)");
    return {};
  }
  if (parser.parseGreater()) return {};
  return KernelParamAttr::getChecked([&] { return parser.emitError(loc); }, parser.getContext(), name, cType, kind,
                                     operand, size, value);
}

void KernelParamAttr::print(AsmPrinter& printer) const {
  printer << "<";
  printer.printString(getName());
  printer << " : ";
  printer.printString(getCType());
  printer << " = ";
  switch (getKind()) {
    case KernelParamKind::Buffer: printer << "buffer(" << getOperand() << ")"; break;
    case KernelParamKind::NullBuffer: printer << "null"; break;
    case KernelParamKind::Size:
      printer << "size(";
      getSize().printBody(printer.getStream());
      printer << ")";
      break;
    case KernelParamKind::F32:
      printer << "f32(";
      printer.printAttributeWithoutType(getValue());
      printer << ")";
      break;
  }
  printer << ">";
}

LogicalResult KernelParamAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef name, StringRef cType,
                                      KernelParamKind kind, std::int64_t operand, SizeExprAttr size, FloatAttr value) {
  if (name.empty() || cType.empty()) return emitError() << "kernel param needs a name and a C type";
  switch (kind) {
    case KernelParamKind::Buffer:
      if (operand < 0) return emitError() << "buffer param '" << name << "' needs an operand index >= 0";
      break;
    case KernelParamKind::NullBuffer: break;
    case KernelParamKind::Size:
      if (!size) return emitError() << "size param '" << name << "' needs a size expression";
      break;
    case KernelParamKind::F32:
      if (!value || !value.getType().isF32()) return emitError() << "f32 param '" << name << "' needs an f32 value";
      break;
  }
  return success();
}

}  // namespace rudnn::dialect
