// rudnn-resolve-strategy: for every operator op without a kernel_config whose KernelOpInterface
// model gives a tuning query, ask the ConfigProvider (the autotune component, through the ops
// layer) and attach its answer when the model's config check accepts it. Strategy choice stays
// separate from carrying it out: this pass only ever produces the kernel_config attribute that
// rudnn-select-kernel-config would otherwise produce, and lowering reads it.
#include "Transforms/ResolveStrategy.h"

#include <map>

#include "Emitter/KernelSource.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"

namespace rudnn::dialect {
#define GEN_PASS_DEF_RESOLVESTRATEGYPASS
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h.inc"
}  // namespace rudnn::dialect

using namespace mlir;

namespace rudnn::compiler {

std::string_view config_source_name(ConfigSource source) {
  switch (source) {
    case ConfigSource::Heuristic: return "heuristic";
    case ConfigSource::Cache: return "cache";
    case ConfigSource::Tuned: return "tuned";
    case ConfigSource::Forced: return "forced";
  }
  return "?";
}

namespace {

struct ResolveStrategy : dialect::impl::ResolveStrategyPassBase<ResolveStrategy> {
  ResolveStrategy() = default;  // the registry's pass: no provider, asks nothing
  ResolveStrategy(ConfigProvider* provider, std::vector<std::int64_t> values)
      : provider(provider), argumentDynamicValues(std::move(values)) {}

  // Without a provider nothing is asked, but an operator op without a model is still an error, as
  // in the other passes.
  void runOnOperation() override {
    WalkResult walk = getOperation()->walk(
        [&](func::FuncOp fn) { return failed(resolveIn(fn)) ? WalkResult::interrupt() : WalkResult::advance(); });
    if (walk.wasInterrupted()) signalPassFailure();
  }

 private:
  // (argument number, dim) → this call's value, for @main's dynamic argument extents.
  std::map<std::pair<unsigned, std::size_t>, std::int64_t> bindArguments(func::FuncOp fn) const {
    std::map<std::pair<unsigned, std::size_t>, std::int64_t> bound;
    if (fn.getSymName() != "main") return bound;
    std::size_t next = 0;
    for (BlockArgument arg : fn.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type) continue;
      for (std::size_t d = 0; d < static_cast<std::size_t>(type.getRank()); ++d) {
        if (!ShapedType::isDynamic(type.getDimSize(static_cast<unsigned>(d)))) continue;
        if (next >= argumentDynamicValues.size()) return {};  // fewer values than extents: unknown
        bound[{arg.getArgNumber(), d}] = argumentDynamicValues[next++];
      }
    }
    return bound;
  }

  // The query of `op` over its present `operands`, with this call's values of their dynamic extents
  // (cleared when any is unknown).
  static ConfigQuery queryOf(Operation* op, ArrayRef<Value> operands,
                             const std::map<std::pair<unsigned, std::size_t>, std::int64_t>& bound) {
    ConfigQuery query;
    query.op_name = op->getName().getStringRef().str();
    bool allKnown = true;
    for (Value v : operands) {
      if (!v) continue;
      auto type = cast<RankedTensorType>(v.getType());
      query.dtypes.push_back(*dialect::toDType(type.getElementType()));  // the verifier accepted it
      std::vector<std::int64_t> shape;
      for (std::size_t d = 0; d < static_cast<std::size_t>(type.getRank()); ++d) {
        const std::int64_t extent = type.getDimSize(static_cast<unsigned>(d));
        if (!ShapedType::isDynamic(extent)) {
          shape.push_back(extent);
          continue;
        }
        shape.push_back(-1);
        auto arg = dyn_cast<BlockArgument>(v);
        auto it = arg ? bound.find({arg.getArgNumber(), d}) : bound.end();
        if (it == bound.end())
          allKnown = false;
        else
          query.dynamic_values.push_back(it->second);
      }
      query.shapes.push_back(std::move(shape));
    }
    if (!allKnown) query.dynamic_values.clear();
    return query;
  }

  // Attaches a provided config the op's verifier rules accept; a stale one (not in today's space)
  // is dropped with a warning rather than failing the lowering.
  static void attach(Operation* op, const ProvidedConfig& answer, const std::optional<std::string>& why) {
    if (why) {
      op->emitWarning() << "rudnn-resolve-strategy: provided config " << answer.config.to_string()
                        << " ignored: " << *why;
      return;
    }
    op->setAttr(dialect::kKernelConfigAttrName, toDictionary(op->getContext(), answer.config));
  }

  // Asks about every operator op that has no kernel_config and whose model gives a tuning query.
  LogicalResult resolveIn(func::FuncOp fn) {
    const auto bound = bindArguments(fn);
    WalkResult walk = fn.walk([&](Operation* op) -> WalkResult {
      if (!dialect::isOperatorOp(op)) return WalkResult::advance();
      FailureOr<dialect::KernelOpInterface> kernel = dialect::getKernelOpInterface(op);
      if (failed(kernel)) return WalkResult::interrupt();
      if (!provider || op->hasAttr(dialect::kKernelConfigAttrName)) return WalkResult::advance();
      std::optional<dialect::TuningQuery> tuning = kernel->getTuningQuery();
      if (!tuning) return WalkResult::advance();
      ConfigQuery query = queryOf(op, tuning->operands, bound);
      query.options = tuning->options;
      std::optional<ProvidedConfig> answer = provider->provide(query);
      if (!answer) return WalkResult::advance();
      attach(op, *answer, kernel->checkKernelConfig(toDictionary(op->getContext(), answer->config)));
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  ConfigProvider* provider = nullptr;
  std::vector<std::int64_t> argumentDynamicValues;
};

}  // namespace

std::unique_ptr<mlir::Pass> createResolveStrategyPass(ConfigProvider* provider,
                                                      std::vector<std::int64_t> argumentDynamicValues) {
  return std::make_unique<ResolveStrategy>(provider, std::move(argumentDynamicValues));
}

}  // namespace rudnn::compiler
