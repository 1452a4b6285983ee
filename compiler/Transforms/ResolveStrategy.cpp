// rudnn-resolve-strategy: for every tunable op (normalization, swiglu_experts) without a kernel_config, ask the ConfigProvider
// (the autotune component, through the ops layer) and attach its answer. Strategy choice stays
// separate from carrying it out: this pass only ever produces the kernel_config attribute that
// rudnn-select-kernel-config would otherwise produce, and lowering reads it.
#include "Transforms/ResolveStrategy.h"

#include <map>

#include "Emitter/KernelSource.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/NormConfig.h"
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
  ResolveStrategy() = default;  // the registry's pass: no provider, a no-op
  ResolveStrategy(ConfigProvider* provider, std::vector<std::int64_t> values)
      : provider(provider), argumentDynamicValues(std::move(values)) {}

  void runOnOperation() override {
    if (!provider) return;
    getOperation()->walk([&](func::FuncOp fn) { resolveIn(fn); });
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
        if (it == bound.end()) allKnown = false;
        else query.dynamic_values.push_back(it->second);
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

  void resolveIn(func::FuncOp fn) {
    const auto bound = bindArguments(fn);
    fn.walk([&](Operation* op) {
      if (auto at = dyn_cast<dialect::AttentionOp>(op)) {
        // Only the Autotune strategy asks: a concrete strategy runs its heuristic tile.
        if (at.getKernelConfigAttr() || at.getStrategy() != "autotune") return;
        ConfigQuery query = queryOf(op, {at.getQuery(), at.getKey(), at.getValue(), at.getMask(), at.getAttnBias()},
                                    bound);
        query.options = {at.getCausal() ? 1 : 0, at.getMask() ? 1 : 0, at.getAttnBias() ? 1 : 0,
                         static_cast<std::int64_t>(contracts::AttentionStrategy::Autotune)};
        std::optional<ProvidedConfig> answer = provider->provide(query);
        if (!answer) return;
        auto q = cast<RankedTensorType>(at.getQuery().getType());
        const std::int64_t d = q.getDimSize(3), dv = cast<RankedTensorType>(at.getValue().getType()).getDimSize(3);
        std::optional<std::string> why;
        auto tile = dialect::attentionTileOf(toDictionary(op->getContext(), answer->config), d);
        if (!tile) why = "not an attention tile";
        else why = dialect::attention_config::checkTile(*tile, *dialect::toDType(q.getElementType()), d, dv);
        attach(op, *answer, why);
        return;
      }
      if (auto experts = dyn_cast<dialect::SwiGluExpertsOp>(op)) {
        // The ops layer resolves "auto" before lowering; an unresolved one keeps the heuristic.
        if (experts.getKernelConfigAttr() || experts.getStrategy() == "auto") return;
        ConfigQuery query = queryOf(op, {experts.getRows(), experts.getOffsets(), experts.getGate(), experts.getUp(),
                                         experts.getDown()},
                                    bound);
        const bool tensorCore = experts.getStrategy() == "tensor_core";
        query.options = {tensorCore ? 1 : 0};
        std::optional<ProvidedConfig> answer = provider->provide(query);
        if (!answer) return;
        std::optional<std::string> why;
        auto tile = dialect::expertTileOf(toDictionary(op->getContext(), answer->config));
        if (!tile) why = "not an expert tile";
        else if (tile->tensorCore != tensorCore) why = "a tile of the other strategy";
        else why = dialect::moe_config::checkExpertTile(*tile);
        attach(op, *answer, why);
        return;
      }
      std::optional<dialect::NormOpView> norm = dialect::asNormOp(op);
      if (!norm || norm->kernelConfig || op->hasAttr(dialect::kUnalignedAttrName)) return;
      ConfigQuery query = queryOf(op, {norm->input, norm->gamma, norm->beta}, bound);
      std::optional<ProvidedConfig> answer = provider->provide(query);
      if (!answer) return;
      const DType dtype = query.dtypes.front();
      const std::int64_t h = query.shapes.front().back();
      dialect::norm_config::RowConfig row{answer->config.get(dialect::norm_config::kThreadsPerRow),
                                          answer->config.get(dialect::norm_config::kRowsPerBlock),
                                          answer->config.get(dialect::norm_config::kVectorWidth)};
      attach(op, *answer, dialect::norm_config::checkRowConfig(row, dtype, h));
    });
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
