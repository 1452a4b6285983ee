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

#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/compiler/main_function.h"
#include "rudnn/attention.h"
#include "rudnn/gated_delta.h"
#include "rudnn/moe.h"
#include "rudnn/normalization.h"

namespace rudnn::graph {

namespace {

std::optional<DType> to_dtype(mlir::Type t) {
  if (t.isF32()) return DType::F32;
  if (t.isF16()) return DType::F16;
  if (t.isBF16()) return DType::BF16;
  if (t.isInteger(32)) return t.isUnsignedInteger() ? DType::U32 : DType::I32;
  if (t.isInteger(64)) return DType::I64;
  if (llvm::isa<mlir::Float8E4M3FNType>(t)) return DType::FP8E4M3;
  return std::nullopt;
}

Result<Value, RuntimeError> describe(mlir::Type type, std::string name) {
  auto ranked = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!ranked) return RuntimeError(ErrorKind::Unsupported, name, "a ranked tensor", "another type");
  auto dtype = to_dtype(ranked.getElementType());
  if (!dtype) return RuntimeError(ErrorKind::UnsupportedDType, name, "f32/f16/bf16/ui32/i32/i64/f8E4M3FN", "other");
  Value v{std::move(name), {}, *dtype};
  for (auto d : ranked.getShape()) v.shape.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d);
  return v;
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
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Value& want = impl_->inputs[i];
    const Tensor& t = inputs[i];
    bool shape_ok = t.rank() == static_cast<std::int64_t>(want.shape.size());
    for (std::size_t d = 0; shape_ok && d < want.shape.size(); ++d)
      shape_ok = want.shape[d] < 0 || want.shape[d] == t.shape()[d];
    if (!shape_ok)
      return RuntimeError(ErrorKind::ShapeMismatch, want.name, shape_to_string(want.shape), shape_to_string(t.shape()));
    if (t.dtype() != want.dtype)
      return RuntimeError(ErrorKind::UnsupportedDType, want.name, std::string(dtype_name(want.dtype)),
                          std::string(dtype_name(t.dtype())));
  }
  llvm::DenseMap<mlir::Value, Tensor*> env;
  std::vector<std::unique_ptr<Tensor>> storage;
  auto& block = impl_->main.getBody().front();
  for (unsigned i = 0; i < block.getNumArguments(); ++i)
    env[block.getArgument(i)] = storage.emplace_back(std::make_unique<Tensor>(inputs[i])).get();
  auto bind = [&](mlir::Value v, Result<Tensor, NormalizationError> r, mlir::Operation* op) -> std::optional<RuntimeError> {
    if (!r.ok()) return wrap(r.error(), op);
    env[v] = storage.emplace_back(std::make_unique<Tensor>(std::move(r.value()))).get();
    return std::nullopt;
  };
  // MoE steps pass objects, not only tensors, along the graph: the routing plan a dispatch starts
  // from (keyed by its indices value) and the dispatched rows that experts and combine read (keyed
  // by the dispatch's rows and slots values).
  llvm::DenseMap<mlir::Value, std::shared_ptr<moe::RoutingPlan>> routings;
  llvm::DenseMap<mlir::Value, std::shared_ptr<moe::Dispatched>> dispatches;
  auto bind_routing = [&](mlir::Operation* op, Result<moe::RoutingPlan, MoeError> r) -> std::optional<RuntimeError> {
    if (!r.ok()) return wrap(r.error(), op);
    env[op->getResult(0)] = storage.emplace_back(std::make_unique<Tensor>(r->expert_indices())).get();
    env[op->getResult(1)] = storage.emplace_back(std::make_unique<Tensor>(r->weights())).get();
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
      auto d = routing->dispatch(*env[dp.getInput()]);
      if (!d.ok()) return wrap(d.error(), &op);
      auto shared = std::make_shared<moe::Dispatched>(std::move(d.value()));
      env[dp.getRows()] = storage.emplace_back(std::make_unique<Tensor>(shared->rows())).get();
      env[dp.getOffsets()] = storage.emplace_back(std::make_unique<Tensor>(shared->expert_offsets())).get();
      env[dp.getSlots()] = storage.emplace_back(std::make_unique<Tensor>(shared->slots())).get();
      dispatches[dp.getRows()] = shared;
      dispatches[dp.getSlots()] = shared;
    } else if (auto ex = llvm::dyn_cast<dialect::SwiGluExpertsOp>(op)) {
      auto d = dispatches.lookup(ex.getRows());
      if (!d) return moe_error(&op, "rows", "the rows result of a rudnn.dispatch in this graph");
      auto experts = moe::SwiGluExperts::create(*env[ex.getGate()], *env[ex.getUp()], *env[ex.getDown()]);
      if (!experts.ok()) return wrap(experts.error(), &op);
      const llvm::StringRef s = ex.getStrategy();
      const auto strategy = s == "tensor_core" ? moe::GroupedStrategy::TensorCore
                            : s == "auto"      ? moe::GroupedStrategy::Auto
                                               : moe::GroupedStrategy::Scalar;
      auto out = experts->forward_dispatched_with_strategy(*d, strategy);
      if (!out.ok()) return wrap(out.error(), &op);
      env[ex.getOutput()] = storage.emplace_back(std::make_unique<Tensor>(std::move(out.value()))).get();
    } else if (auto cb = llvm::dyn_cast<dialect::CombineOp>(op)) {
      auto d = dispatches.lookup(cb.getSlots());
      if (!d) return moe_error(&op, "slots", "the slots result of a rudnn.dispatch in this graph");
      if (env[cb.getWeights()]->data() != d->routing().weights().data())
        return moe_error(&op, "weights", "the weights of the routing the slots came from");
      auto out = d->combine(*env[cb.getExpertRows()]);
      if (!out.ok()) return wrap(out.error(), &op);
      env[cb.getOutput()] = storage.emplace_back(std::make_unique<Tensor>(std::move(out.value()))).get();
    } else if (auto gd = llvm::dyn_cast<dialect::GatedDeltaOp>(op)) {
      gated_delta::GatedDeltaInput in{*env[gd.getQuery()], *env[gd.getKey()],      *env[gd.getValue()],
                                      *env[gd.getBeta()],  *env[gd.getLogDecay()], std::nullopt,
                                      gd.getQueryScale().convertToFloat()};
      if (gd.getInitialState()) in.initial_state = *env[gd.getInitialState()];
      const std::int64_t chunk = gd.getChunkSizeAttr().getInt();
      auto r = chunk > 0 ? gated_delta::chunk_gated_delta_rule(in, chunk) : gated_delta::gated_delta_rule(in);
      if (!r.ok()) return wrap(r.error(), &op);
      env[gd.getOutput()] = storage.emplace_back(std::make_unique<Tensor>(r->output)).get();
      env[gd.getFinalState()] = storage.emplace_back(std::make_unique<Tensor>(r->final_state)).get();
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
      env[at.getOutput()] = storage.emplace_back(std::make_unique<Tensor>(std::move(r.value()))).get();
    } else if (auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (mlir::Value v : ret.getOperands()) results.push_back(*env[v]);
    }
    if (err) return *err;
  }
  return results;
}

}  // namespace rudnn::graph
