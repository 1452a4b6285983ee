// Attention (rudnn.attention) in the graph runner and rudnn-precompile.
#include "contracts/arch.h"
#include "family.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/attention.h"

namespace rudnn::ops {
namespace {

std::optional<RuntimeError> run(mlir::Operation& op, GraphValues& values) {
  auto at = llvm::cast<dialect::AttentionOp>(op);
  const auto s = contracts::parse_attention_strategy(at.getStrategy());  // the verifier accepted it
  const attention::AttentionStrategy strategies[] = {
      attention::AttentionStrategy::FlashBlackboxAccelerated, attention::AttentionStrategy::FlashUnit,
      attention::AttentionStrategy::Fallback, attention::AttentionStrategy::Autotune};
  auto r = attention::attention(values[at.getQuery()], values[at.getKey()], values[at.getValue()],
                                values.optional(at.getMask()), values.optional(at.getAttnBias()),
                                {at.getScale().convertToFloat(), at.getCausal()}, strategies[static_cast<int>(*s)]);
  if (!r.ok()) return op_error(r.error(), op);
  return values.bind(at.getOutput(), std::move(r.value()));
}

// The entry keeps a mask's or bias's broadcast dims (0, 1) static when they are 1 (and the head dim
// static always): a graph that declares one dynamic may pass 1 or the full extent, so both are lowered.
Result<std::vector<compiler::LoweredOp>, RuntimeError> kernels(mlir::Operation& op, const compiler::Target& target,
                                                               bool with_candidates, const std::string& where) {
  auto at = llvm::cast<dialect::AttentionOp>(op);
  if (auto e = require_static(at.getQuery(), {1, 3}, where, "query")) return *e;
  if (auto e = require_static(at.getKey(), {1, 3}, where, "key")) return *e;
  if (auto e = require_static(at.getValue(), {1, 3}, where, "value")) return *e;
  compiler::AttentionRequest request;
  request.strategy = *contracts::parse_attention_strategy(at.getStrategy());
  // An engine that calls with token-major views and grouped heads marks the op (docs/serving.md).
  request.head_panels = at->hasAttr(dialect::kHeadPanelsAttrName);
  auto& sig = request.signature;
  sig.query = operand_of(at.getQuery());
  sig.key = operand_of(at.getKey());
  sig.value = operand_of(at.getValue());
  sig.scale = at.getScale().convertToFloat();
  sig.causal = at.getCausal();
  // Each broadcastable operand's variants: its dims 0 and 1 as declared, or (declared dynamic) 1.
  // A head dim declared dynamic that is not 1 is the query's head count at run time.
  auto variants = [&sig](mlir::Value v) {
    std::vector<std::optional<contracts::AttentionOperand>> out;
    if (!v) return std::vector<std::optional<contracts::AttentionOperand>>{std::nullopt};
    const contracts::AttentionOperand declared = operand_of(v);
    for (int ones = 0; ones < 4; ++ones) {
      contracts::AttentionOperand o = declared;
      bool valid = true;
      for (int d = 0; d < 2; ++d)
        if (ones & (1 << d)) {
          valid = valid && o.shape[static_cast<std::size_t>(d)] == contracts::kDynamic;
          o.shape[static_cast<std::size_t>(d)] = 1;
        }
      if (o.shape[1] == contracts::kDynamic) o.shape[1] = sig.query.shape[1];
      if (valid) out.push_back(o);
    }
    return out;
  };
  std::vector<std::optional<compiler::KernelConfig>> configs = {std::nullopt};
  if (with_candidates)  // those the target accepts (the host emulator takes wgmma ones without the opt-in)
    for (auto& c :
         compiler::attention_variants(request.strategy, sig.query.dtype, sig.query.shape[3], sig.value.shape[3],
                                      contracts::has_wgmma(target.arch, target.host_emulation)))
      configs.push_back(c);
  // The entry's rudnn.short_panels hint (ops/attention.cpp: decode-like calls keep the mma.sync
  // tiles where the heuristic would take a wgmma one) depends on Tq, which the graph leaves dynamic:
  // where the entry may set it, the heuristic kernel is lowered both ways.
  const bool entry_may_hint = compiler::attention_hints_short_panels(request.strategy, target.arch);
  std::vector<compiler::LoweredOp> out;
  for (const auto& mask : variants(at.getMask()))
    for (const auto& bias : variants(at.getAttnBias()))
      for (const auto& config : configs)
        for (bool short_panels : {false, true}) {
          if (short_panels && (config || !entry_may_hint)) continue;
          sig.mask = mask;
          sig.bias = bias;
          request.config = config;
          request.short_panels = short_panels;
          auto lowered = compiler::lower_attention(request, target);
          if (!lowered.ok()) return lowered.error();
          out.push_back(std::move(lowered.value()));
        }
  return out;
}

const bool kRegistered =
    register_family({"attention", {dialect::AttentionOp::getOperationName().str()}, &run, &kernels});

}  // namespace
}  // namespace rudnn::ops
