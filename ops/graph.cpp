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
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/compiler/kernel_op_models.h"
#include "rudnn/compiler/main_function.h"
#include "rudnn/attention.h"
#include "rudnn/gated_delta.h"
#include "rudnn/moe.h"
#include "rudnn/normalization.h"

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
  if (!shape_ok) return RuntimeError(ErrorKind::ShapeMismatch, want.name, declared_shape(want.shape), shape_to_string(t.shape()));
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

RuntimeError wrap(const Error& e, mlir::Operation* op) {
  const std::string where = fmt::format("in {}", op->getName().getStringRef().str());
  return RuntimeError(e.kind(), e.argument(), e.expected(), e.actual(),
                      e.detail().empty() ? where : e.detail() + "; " + where);
}

}  // namespace

struct Graph::Impl {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp main;
  std::vector<Value> inputs, outputs;
  Impl() : context(mlir::MLIRContext::Threading::DISABLED) {
    mlir::DialectRegistry registry;
    registry.insert<mlir::func::FuncDialect, rudnn::dialect::RudnnDialect>();
    compiler::registerKernelOpInterfaceModels(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
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
    if (llvm::isa<mlir::func::ReturnOp, dialect::LayerNormOp, dialect::RmsNormOp, dialect::SoftmaxLastAxisOp,
                  dialect::RouteOp, dialect::RouteSigmoidGroupedOp, dialect::DispatchOp, dialect::SwiGluExpertsOp,
                  dialect::CombineOp, dialect::GatedDeltaOp, dialect::AttentionOp>(op))
      continue;
    return RuntimeError(ErrorKind::Unsupported, op.getName().getStringRef().str(),
                        "rudnn ops that rudnn-run can execute", "an op it cannot");
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
  llvm::DenseMap<mlir::Value, Tensor*> env;
  std::vector<std::unique_ptr<Tensor>> storage;
  auto& block = impl_->main.getBody().front();
  for (unsigned i = 0; i < block.getNumArguments(); ++i)
    env[block.getArgument(i)] = storage.emplace_back(std::make_unique<Tensor>(inputs[i])).get();
  // Every value an op produces is bound here, checked against the type the IR declares for it: an
  // entry that disagrees with the verifier's types (an attribute the entry does not see, a shape
  // rule that differs) is an error at the op that produced it, not a wrong result downstream.
  auto set = [&](mlir::Value v, Tensor t, mlir::Operation* op) -> std::optional<RuntimeError> {
    auto declared = describe(v.getType(), fmt::format("{} result {}", op->getName().getStringRef().str(),
                                                      llvm::cast<mlir::OpResult>(v).getResultNumber()));
    if (!declared.ok()) return declared.error();
    if (auto e = check_tensor(declared.value(), t)) return e;
    env[v] = storage.emplace_back(std::make_unique<Tensor>(std::move(t))).get();
    return std::nullopt;
  };
  auto bind = [&](mlir::Value v, Result<Tensor, NormalizationError> r, mlir::Operation* op) -> std::optional<RuntimeError> {
    if (!r.ok()) return wrap(r.error(), op);
    return set(v, std::move(r.value()), op);
  };
  // MoE steps pass objects, not only tensors, along the graph: the routing plan a dispatch starts
  // from (keyed by its indices value) and the dispatched rows that experts and combine read (keyed
  // by the dispatch's rows, offsets and slots values).
  llvm::DenseMap<mlir::Value, std::shared_ptr<moe::RoutingPlan>> routings;
  llvm::DenseMap<mlir::Value, std::shared_ptr<moe::Dispatched>> dispatches;
  auto bind_routing = [&](mlir::Operation* op, Result<moe::RoutingPlan, MoeError> r) -> std::optional<RuntimeError> {
    if (!r.ok()) return wrap(r.error(), op);
    if (auto e = set(op->getResult(0), r->expert_indices(), op)) return e;
    if (auto e = set(op->getResult(1), r->weights(), op)) return e;
    routings[op->getResult(0)] = std::make_shared<moe::RoutingPlan>(std::move(r.value()));
    return std::nullopt;
  };
  auto moe_error = [&](mlir::Operation* op, const char* argument, const char* expected) {
    return RuntimeError(ErrorKind::Unsupported, fmt::format("{} {}", op->getName().getStringRef().str(), argument),
                        expected, "a value from elsewhere");
  };
  std::vector<Tensor> results;
  for (mlir::Operation& op : block) {
    std::optional<RuntimeError> err;
    if (auto ln = llvm::dyn_cast<dialect::LayerNormOp>(op)) {
      std::optional<Tensor> beta;
      if (ln.getBeta()) beta = *env[ln.getBeta()];
      err = bind(ln.getOutput(), normalization::layer_norm(*env[ln.getInput()], *env[ln.getGamma()], beta,
                                                           ln.getEpsilon().convertToFloat()), &op);
    } else if (auto rn = llvm::dyn_cast<dialect::RmsNormOp>(op)) {
      err = bind(rn.getOutput(), normalization::rms_norm(*env[rn.getInput()], *env[rn.getGamma()],
                                                         rn.getEpsilon().convertToFloat()), &op);
    } else if (auto sm = llvm::dyn_cast<dialect::SoftmaxLastAxisOp>(op)) {
      err = bind(sm.getOutput(), normalization::softmax_last_axis(*env[sm.getInput()]), &op);
    } else if (auto ro = llvm::dyn_cast<dialect::RouteOp>(op)) {
      err = bind_routing(&op, moe::route(*env[ro.getLogits()],
                                         {static_cast<std::int64_t>(ro.getTopK()), ro.getRenormalize()}));
    } else if (auto rg = llvm::dyn_cast<dialect::RouteSigmoidGroupedOp>(op)) {
      std::optional<Tensor> bias;
      if (rg.getBias()) bias = *env[rg.getBias()];
      moe::GroupRoutingOptions o;
      o.top_k = static_cast<std::int64_t>(rg.getTopK());
      o.groups = static_cast<std::int64_t>(rg.getGroups());
      o.selected_groups = static_cast<std::int64_t>(rg.getSelectedGroups());
      o.group_top_two = rg.getGroupTopTwo();
      o.renormalize = rg.getRenormalize();
      o.scale = rg.getScale().convertToFloat();
      err = bind_routing(&op, moe::route_sigmoid_grouped(*env[rg.getLogits()], bias, o));
    } else if (auto dp = llvm::dyn_cast<dialect::DispatchOp>(op)) {
      auto routing = routings.lookup(dp.getIndices());
      if (!routing) return moe_error(&op, "indices", "the indices result of a routing op in this graph");
      // The attribute sizes the offsets; the routing's logits fixed the expert count that runs.
      const std::int64_t experts = dp.getExpertsAttr().getInt();
      if (experts != routing->experts())
        return RuntimeError(ErrorKind::InvalidValue, "rudnn.dispatch experts",
                            fmt::format("{} (the expert count of the routing its indices come from)",
                                        routing->experts()),
                            std::to_string(experts));
      auto d = routing->dispatch(*env[dp.getInput()]);
      if (!d.ok()) return wrap(d.error(), &op);
      auto shared = std::make_shared<moe::Dispatched>(std::move(d.value()));
      if (!(err = set(dp.getRows(), shared->rows(), &op)) && !(err = set(dp.getOffsets(), shared->expert_offsets(), &op)))
        err = set(dp.getSlots(), shared->slots(), &op);
      dispatches[dp.getRows()] = shared;
      dispatches[dp.getSlots()] = shared;
    } else if (auto ex = llvm::dyn_cast<dialect::SwiGluExpertsOp>(op)) {
      auto d = dispatches.lookup(ex.getRows());
      if (!d) return moe_error(&op, "rows", "the rows result of a rudnn.dispatch in this graph");
      // The experts run on the dispatch object, which carries its own offsets: offsets from anywhere
      // else would be ignored, so they are an error (as combine's foreign weights are).
      if (env[ex.getOffsets()]->data() != d->expert_offsets().data())
        return moe_error(&op, "offsets", "the offsets of the dispatch the rows came from");
      auto experts = moe::SwiGluExperts::create(*env[ex.getGate()], *env[ex.getUp()], *env[ex.getDown()]);
      if (!experts.ok()) return wrap(experts.error(), &op);
      const llvm::StringRef s = ex.getStrategy();
      const auto strategy = s == "tensor_core" ? moe::GroupedStrategy::TensorCore
                            : s == "auto"      ? moe::GroupedStrategy::Auto
                                               : moe::GroupedStrategy::Scalar;
      auto out = experts->forward_dispatched_with_strategy(*d, strategy);
      if (!out.ok()) return wrap(out.error(), &op);
      err = set(ex.getOutput(), std::move(out.value()), &op);
    } else if (auto cb = llvm::dyn_cast<dialect::CombineOp>(op)) {
      auto d = dispatches.lookup(cb.getSlots());
      if (!d) return moe_error(&op, "slots", "the slots result of a rudnn.dispatch in this graph");
      if (env[cb.getWeights()]->data() != d->routing().weights().data())
        return moe_error(&op, "weights", "the weights of the routing the slots came from");
      auto out = d->combine(*env[cb.getExpertRows()]);
      if (!out.ok()) return wrap(out.error(), &op);
      err = set(cb.getOutput(), std::move(out.value()), &op);
    } else if (auto gd = llvm::dyn_cast<dialect::GatedDeltaOp>(op)) {
      gated_delta::GatedDeltaInput in{*env[gd.getQuery()], *env[gd.getKey()],      *env[gd.getValue()],
                                      *env[gd.getBeta()],  *env[gd.getLogDecay()], std::nullopt,
                                      gd.getQueryScale().convertToFloat()};
      if (gd.getInitialState()) in.initial_state = *env[gd.getInitialState()];
      const std::int64_t chunk = gd.getChunkSizeAttr().getInt();
      auto r = chunk > 0 ? gated_delta::chunk_gated_delta_rule(in, chunk) : gated_delta::gated_delta_rule(in);
      if (!r.ok()) return wrap(r.error(), &op);
      if (!(err = set(gd.getOutput(), r->output, &op))) err = set(gd.getFinalState(), r->final_state, &op);
    } else if (auto at = llvm::dyn_cast<dialect::AttentionOp>(op)) {
      std::optional<Tensor> mask, bias;
      if (at.getMask()) mask = *env[at.getMask()];
      if (at.getAttnBias()) bias = *env[at.getAttnBias()];
      const auto s = contracts::parse_attention_strategy(at.getStrategy());  // the verifier accepted it
      const attention::AttentionStrategy strategy[] = {
          attention::AttentionStrategy::FlashBlackboxAccelerated, attention::AttentionStrategy::FlashUnit,
          attention::AttentionStrategy::Fallback, attention::AttentionStrategy::Autotune};
      auto r = attention::attention(*env[at.getQuery()], *env[at.getKey()], *env[at.getValue()], mask, bias,
                                    {at.getScale().convertToFloat(), at.getCausal()},
                                    strategy[static_cast<int>(*s)]);
      if (!r.ok()) return wrap(r.error(), &op);
      err = set(at.getOutput(), std::move(r.value()), &op);
    } else if (auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (mlir::Value v : ret.getOperands()) results.push_back(*env[v]);
    }
    if (err) return *err;
  }
  // What ran against what @main declares, named as --output names them.
  for (std::size_t i = 0; i < results.size(); ++i)
    if (auto e = check_tensor(impl_->outputs[i], results[i])) return *e;
  return results;
}

}  // namespace rudnn::graph
