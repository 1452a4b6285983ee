// Runs the func.func @main of a `rudnn` module op by op through the public entries.
#include "rudnn/graph.h"

#include <map>
#include <mutex>

#include <fmt/format.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/MLIRContext.h>
#include <mlir/Parser/Parser.h>
#include <llvm/Support/MemoryBuffer.h>

#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/compiler/kernel_op_models.h"
#include "rudnn/compiler/main_function.h"
#include "family.h"
#include "rudnn/stats.h"

namespace rudnn::graph {

namespace {

std::string type_string(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

// An argument or result of @main: a ranked tensor of an element type rudnn has (the dialect's one
// mapping, ui8 included); the error names the type it got.
Result<Value, RuntimeError> describe(mlir::Type type, std::string name) {
  auto ranked = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!ranked) return RuntimeError(ErrorKind::Unsupported, name, "a ranked tensor", type_string(type));
  auto dtype = dialect::toDType(ranked.getElementType());
  if (!dtype)
    return RuntimeError(ErrorKind::UnsupportedDType, name, "f32/f16/bf16/ui8/ui32/i32/i64/f8E4M3FN",
                        type_string(ranked.getElementType()));
  Value v{std::move(name), {}, *dtype};
  for (auto d : ranked.getShape()) v.shape.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d);
  return v;
}

// "[?, 64]": a declared shape, dynamic extents as `?`.
std::string declared_shape(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return s + "]";
}

// A tensor against a declared value (an argument, a result, an op's result type): same dtype, same
// rank, equal static extents (a dynamic extent matches any).
std::optional<RuntimeError> check_tensor(const Value& want, const Tensor& t) {
  bool shape_ok = t.rank() == static_cast<std::int64_t>(want.shape.size());
  for (std::size_t d = 0; shape_ok && d < want.shape.size(); ++d)
    shape_ok = want.shape[d] < 0 || want.shape[d] == t.shape()[d];
  if (!shape_ok)
    return RuntimeError(ErrorKind::ShapeMismatch, want.name, declared_shape(want.shape), shape_to_string(t.shape()));
  if (t.dtype() != want.dtype)
    return RuntimeError(ErrorKind::UnsupportedDType, want.name, std::string(dtype_name(want.dtype)),
                        std::string(dtype_name(t.dtype())));
  return std::nullopt;
}

// The names --input/--output address values by: a repeated one would make one of them unreachable.
std::optional<RuntimeError> check_unique_names(const std::vector<Value>& values, const char* what) {
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (values[i].name == values[j].name)
        return RuntimeError(ErrorKind::InvalidValue, fmt::format("{} {} rudnn.name", what, i),
                            fmt::format("a name no other {} of @main has", what),
                            fmt::format("\"{}\", the name of {} {}", values[i].name, what, j));
  return std::nullopt;
}

}  // namespace

struct Graph::Impl {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp main;
  std::vector<Value> inputs, outputs;
  Impl() : context(mlir::MLIRContext::Threading::DISABLED) { compiler::load_rudnn_dialects(context); }
  mutable std::mutex run_mutex;  // one run at a time per graph (the MLIR objects are not shared)
};

Graph::Graph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
const std::vector<Value>& Graph::inputs() const { return impl_->inputs; }
const std::vector<Value>& Graph::outputs() const { return impl_->outputs; }

Result<Graph, RuntimeError> Graph::parse(const std::string& text, const std::string& source_name) {
  auto impl = std::make_unique<Impl>();
  auto loaded = compiler::parse_main_function(text, source_name, impl->context);
  if (!loaded.ok()) return loaded.error();
  impl->module = std::move(loaded->module);
  impl->main = loaded->main;
  auto fn_type = impl->main.getFunctionType();
  for (unsigned i = 0; i < fn_type.getNumInputs(); ++i) {
    std::string name = fmt::format("arg{}", i);
    if (auto n = impl->main.getArgAttrOfType<mlir::StringAttr>(i, "rudnn.name")) name = n.str();
    auto v = describe(fn_type.getInput(i), name);
    if (!v.ok()) return v.error();
    impl->inputs.push_back(v.value());
  }
  for (unsigned i = 0; i < fn_type.getNumResults(); ++i) {
    std::string name = fmt::format("result{}", i);
    if (auto n = impl->main.getResultAttrOfType<mlir::StringAttr>(i, "rudnn.name")) name = n.str();
    auto v = describe(fn_type.getResult(i), name);
    if (!v.ok()) return v.error();
    impl->outputs.push_back(v.value());
  }
  if (auto e = check_unique_names(impl->inputs, "argument")) return *e;
  if (auto e = check_unique_names(impl->outputs, "result")) return *e;
  for (mlir::Operation& op : impl->main.getBody().front()) {
    const std::string name = op.getName().getStringRef().str();
    if (llvm::isa<mlir::func::ReturnOp>(op) || ops::family_for(name)) continue;
    return RuntimeError(ErrorKind::Unsupported, name,
                        "rudnn ops that rudnn-run can execute (" + ops::registered_op_list() + ")", "an op it cannot");
  }
  return Graph(std::move(impl));
}

Result<Graph, RuntimeError> Graph::parse_file(const std::string& path) {
  // Through the compiler's bounded reader: a directory, /dev/zero or a file over the input limit
  // is an error before anything is read whole (parse() checks the nesting limit).
  auto text = compiler::read_source_file(path);
  if (!text.ok()) return text.error();
  return parse(text.value(), path);
}

Result<std::vector<Tensor>, RuntimeError> Graph::run(const std::vector<Tensor>& inputs) const {
  std::lock_guard lock(impl_->run_mutex);
  if (inputs.size() != impl_->inputs.size())
    return RuntimeError(ErrorKind::ShapeMismatch, "inputs", fmt::format("{} tensors", impl_->inputs.size()),
                        std::to_string(inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (auto e = check_tensor(impl_->inputs[i], inputs[i])) return *e;
  ops::GraphValues values;
  auto& block = impl_->main.getBody().front();
  for (unsigned i = 0; i < block.getNumArguments(); ++i) values.bind_argument(block.getArgument(i), inputs[i]);
  std::vector<Tensor> results;
  for (mlir::Operation& op : block) {
    if (auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (mlir::Value v : ret.getOperands()) results.push_back(values[v]);
      continue;
    }
    // parse() admitted only ops with a registered family.
    const ops::OpFamily* family = ops::family_for(op.getName().getStringRef());
    if (auto e = family->run(op, values)) return *e;
  }
  // What ran against what @main declares, named as --output names them.
  for (std::size_t i = 0; i < results.size(); ++i)
    if (auto e = check_tensor(impl_->outputs[i], results[i])) return *e;
  return results;
}

Result<PrepareReport, RuntimeError> Graph::prepare(const std::vector<std::vector<Shape>>& buckets,
                                                   const Queue& queue) const {
  const Stats before = stats();
  PrepareReport report;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const std::vector<Shape>& shapes = buckets[b];
    const std::string where = fmt::format("buckets[{}]", b);
    if (shapes.size() != impl_->inputs.size())
      return RuntimeError(ErrorKind::ShapeMismatch, where,
                          fmt::format("{} shapes (one per input)", impl_->inputs.size()),
                          std::to_string(shapes.size()));
    std::vector<Tensor> inputs;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const Value& declared = impl_->inputs[i];
      const auto bytes = checked_byte_count(shapes[i], declared.dtype);
      if (!bytes)
        return RuntimeError(ErrorKind::InvalidValue, fmt::format("{}[{}]", where, i), "extents >= 0 that fit in memory",
                            shape_to_string(shapes[i]), "input " + declared.name);
      HostData zeros{shapes[i], declared.dtype, {}};
      try {
        zeros.bytes.assign(static_cast<std::size_t>(*bytes), std::byte{0});
      } catch (const std::exception&) {
        return RuntimeError(ErrorKind::OutOfMemory, fmt::format("{}[{}]", where, i),
                            fmt::format("{} bytes of host memory", *bytes), "allocation failure");
      }
      auto t = Tensor::upload(zeros, queue);
      if (!t.ok()) return t.error();
      inputs.push_back(std::move(t.value()));
    }
    auto ran = run(inputs);  // checks each shape against @main's argument, naming it
    if (!ran.ok()) {
      const RuntimeError& e = ran.error();
      return RuntimeError(e.kind(), e.argument(), e.expected(), e.actual(),
                          e.detail().empty() ? where : e.detail() + "; " + where);
    }
    ++report.runs;
  }
  if (auto s = queue.synchronize(); !s.ok()) return s.error();
  const Stats after = stats();
  report.plans_made = static_cast<std::int64_t>(after.plan_cache_misses - before.plan_cache_misses);
  report.kernels_compiled = static_cast<std::int64_t>(after.jit_compiles - before.jit_compiles);
  return report;
}

}  // namespace rudnn::graph
