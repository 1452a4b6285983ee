#include "family.h"

#include <algorithm>
#include <deque>
#include <mutex>

#include <fmt/format.h>
#include <mlir/IR/BuiltinTypes.h>

#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

namespace rudnn::ops {

namespace {

std::string type_string(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

std::string declared_shape(mlir::RankedTensorType type) {
  std::string s = "[";
  for (std::int64_t d = 0; d < type.getRank(); ++d)
    s += (d ? ", " : "") + (type.isDynamicDim(d) ? std::string("?") : std::to_string(type.getDimSize(d)));
  return s + "]";
}

struct Registry {
  std::mutex mutex;
  std::deque<OpFamily> families;  // registration order; pointers stay valid
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::optional<RuntimeError> GraphValues::bind(mlir::Value result, Tensor t) {
  mlir::Operation* op = result.getDefiningOp();
  const std::string name = fmt::format("{} result {}", op ? op->getName().getStringRef().str() : "@main",
                                       llvm::cast<mlir::OpResult>(result).getResultNumber());
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(result.getType());
  if (!type) return RuntimeError(ErrorKind::Unsupported, name, "a ranked tensor", type_string(result.getType()));
  const auto dtype = dialect::toDType(type.getElementType());
  bool shape_ok = dtype && t.rank() == type.getRank();
  for (std::int64_t d = 0; shape_ok && d < type.getRank(); ++d)
    shape_ok = type.isDynamicDim(d) || type.getDimSize(d) == t.shape()[static_cast<std::size_t>(d)];
  if (!shape_ok) return RuntimeError(ErrorKind::ShapeMismatch, name, declared_shape(type), shape_to_string(t.shape()));
  if (t.dtype() != *dtype)
    return RuntimeError(ErrorKind::UnsupportedDType, name, std::string(dtype_name(*dtype)),
                        std::string(dtype_name(t.dtype())));
  tensors_[result] = storage_.emplace_back(std::make_unique<Tensor>(std::move(t))).get();
  return std::nullopt;
}

void GraphValues::bind_argument(mlir::Value argument, Tensor t) {
  tensors_[argument] = storage_.emplace_back(std::make_unique<Tensor>(std::move(t))).get();
}

RuntimeError foreign_value(mlir::Operation& op, const char* argument, const char* expected) {
  return RuntimeError(ErrorKind::Unsupported, fmt::format("{} {}", op.getName().getStringRef().str(), argument),
                      expected, "a value from elsewhere");
}

RuntimeError op_error(const Error& e, mlir::Operation& op) {
  const std::string where = fmt::format("in {}", op.getName().getStringRef().str());
  return RuntimeError(e.kind(), e.argument(), e.expected(), e.actual(),
                      e.detail().empty() ? where : e.detail() + "; " + where);
}

contracts::NormOperand operand_of(mlir::Value v) {
  auto type = llvm::cast<mlir::RankedTensorType>(v.getType());  // every rudnn op's verifier demands one
  contracts::NormOperand o;
  o.dtype = dialect::toDType(type.getElementType()).value_or(DType::F32);  // the verifier accepted it
  o.device = 0;                                                            // one device: the graph's
  for (std::int64_t d : type.getShape()) o.shape.push_back(mlir::ShapedType::isDynamic(d) ? contracts::kDynamic : d);
  return o;
}

std::optional<RuntimeError> require_static(mlir::Value v, std::initializer_list<int> dims, const std::string& where,
                                           const char* name) {
  auto type = llvm::cast<mlir::RankedTensorType>(v.getType());
  for (int d : dims) {
    const std::int64_t dim = d < 0 ? type.getRank() + d : d;
    if (dim < 0 || dim >= type.getRank() || !type.isDynamicDim(dim)) continue;
    return RuntimeError(ErrorKind::ShapeMismatch, fmt::format("{} {}", where, name),
                        dim + 1 == type.getRank()
                            ? std::string("a static last dim (the kernels are specialized on it)")
                            : fmt::format("a static dim {} (the kernels are specialized on it)", dim),
                        fmt::format("{} with a dynamic dim {}", declared_shape(type), dim));
  }
  return std::nullopt;
}

bool register_family(OpFamily family) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.families.push_back(std::move(family));
  return true;
}

const OpFamily* family_for(std::string_view op_name) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& f : r.families)
    if (std::find(f.op_names.begin(), f.op_names.end(), op_name) != f.op_names.end()) return &f;
  return nullptr;
}

std::vector<std::string> registered_op_names() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& f : r.families) names.insert(names.end(), f.op_names.begin(), f.op_names.end());
  std::sort(names.begin(), names.end());
  return names;
}

std::string registered_op_list() {
  std::string s;
  for (const auto& n : registered_op_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace rudnn::ops
