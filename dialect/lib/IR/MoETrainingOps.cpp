// Verifiers of the MoE training ops. The contracts are core/contracts/moe_training.cpp's, as in the
// public API; then the result types and the one-key kernel_config.
#include "rudnn/Dialect/Rudnn/IR/MoETrainingOps.h"

#include "contracts/arch.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/MoEConfig.h"

using namespace mlir;

namespace rudnn::dialect {

namespace {

bool matches(Value result, const Shape& want, std::optional<DType> dtype) {
  auto o = contractOperandOf(result);
  if (!o || (dtype && o->dtype != *dtype) || o->shape.size() != want.size()) return false;
  for (std::size_t d = 0; d < want.size(); ++d)
    if (!contracts::same_extent(o->shape[d], want[d])) return false;
  return true;
}

LogicalResult checkResult(Operation* op, Value result, const char* name, const Shape& want, DType dtype) {
  if (matches(result, want, dtype)) return success();
  return op->emitOpError() << name << ": expected " << shape_to_string(want) << " " << dtype_name(dtype) << ", got "
                           << result.getType();
}

LogicalResult checkConfig(Operation* op) {
  if (auto config = op->getAttrOfType<DictionaryAttr>(kKernelConfigAttrName))
    if (auto why = moe_training_config::check(op, config)) return op->emitOpError() << "kernel_config: " << *why;
  return success();
}

template <class Op>
LogicalResult verifyRouter(Op op, Value result, bool backward) {
  if (op.getScoring() != "softmax" && op.getScoring() != "sigmoid")
    return op.emitOpError() << "scoring: expected \"softmax\" or \"sigmoid\", got \"" << op.getScoring() << "\"";
  auto sig = routerSignatureOf(op);
  if (!sig) return op.emitOpError() << "expected rudnn element types";
  if (auto e = contracts::check_router_weights(*sig)) return op.emitOpError() << e->message();
  const Shape& x = sig->logits.shape;
  if (failed(backward ? checkResult(op, result, "grad_logits", x, sig->logits.dtype)
                      : checkResult(op, result, "weights", sig->indices.shape, DType::F32)))
    return failure();
  return checkConfig(op);
}

}  // namespace

std::optional<contracts::RouterWeightsSignature> routerSignatureOf(Operation* op) {
  contracts::RouterWeightsSignature sig;
  auto fill = [&](auto r) -> bool {
    auto x = contractOperandOf(r.getLogits()), i = contractOperandOf(r.getIndices());
    if (!x || !i) return false;
    sig.logits = *x;
    sig.indices = *i;
    sig.scoring = r.getScoring() == "sigmoid" ? contracts::RouterScore::Sigmoid : contracts::RouterScore::Softmax;
    sig.renormalize = r.getRenormalize();
    sig.scale = r.getScale().convertToDouble();
    return true;
  };
  if (auto w = dyn_cast<RouterWeightsOp>(op)) return fill(w) ? std::optional(sig) : std::nullopt;
  if (auto b = dyn_cast<RouterBackwardOp>(op)) {
    if (!fill(b)) return std::nullopt;
    sig.grad_weights = contractOperandOf(b.getGradWeights());
    if (!sig.grad_weights) return std::nullopt;
    return sig;
  }
  return std::nullopt;
}

std::optional<contracts::CombineBackwardSignature> combineBackwardSignatureOf(CombineBackwardOp op) {
  auto y = contractOperandOf(op.getExpertRows()), g = contractOperandOf(op.getGradOutput()),
       s = contractOperandOf(op.getSlots()), w = contractOperandOf(op.getWeights());
  if (!y || !g || !s || !w) return std::nullopt;
  return contracts::CombineBackwardSignature{{*y, *s, *w}, *g};
}

std::optional<contracts::DispatchBackwardSignature> dispatchBackwardSignatureOf(DispatchBackwardOp op) {
  auto d = contractOperandOf(op.getDrows()), s = contractOperandOf(op.getSlots());
  if (!d || !s) return std::nullopt;
  return contracts::DispatchBackwardSignature{*d, *s};
}

std::optional<contracts::ExpertsBackwardSignature> expertsBackwardSignatureOf(SwiGluExpertsBackwardOp op) {
  auto rows = contractOperandOf(op.getRows()), offsets = contractOperandOf(op.getOffsets()),
       slots = contractOperandOf(op.getSlots()), gate = contractOperandOf(op.getGate()),
       up = contractOperandOf(op.getUp()), down = contractOperandOf(op.getDown()),
       d = contractOperandOf(op.getDexpert());
  if (!rows || !offsets || !slots || !gate || !up || !down || !d) return std::nullopt;
  return contracts::ExpertsBackwardSignature{{{*gate, *up, *down}, *rows, *offsets}, *slots, *d};
}

namespace moe_training_config {

namespace {
bool router(Operation* op) { return isa<RouterWeightsOp, RouterBackwardOp>(op); }
bool experts(Operation* op) { return isa<SwiGluExpertsBackwardOp>(op); }
}  // namespace

const char* keyOf(Operation* op) { return router(op) ? kWarps : experts(op) ? kTile : kThreads; }

namespace {

// The experts backward's strategy on `arch` (an empty arch is not a constraint): true for tensor
// cores.
bool expertsTensorCore(SwiGluExpertsBackwardOp op, const std::string& arch) {
  if (op.getStrategy() != "auto") return op.getStrategy() == "tensor_core";
  auto sig = expertsBackwardSignatureOf(op);
  return sig && !contracts::check_tensor_core_experts(sig->experts.weights, arch);
}

}  // namespace

// The experts backward: the backward tile of its strategy (MoEConfig.h); on tensor cores the wgmma
// tile where the target has wgmma (sm_90a with the RUDNN_WGMMA=1 opt-in: the experts backward has
// no Autotune, so the opt-in is how a GPU run compares the two) and its shared memory fits.
std::int64_t heuristicValue(Operation* op, const std::string& arch, std::int64_t maxSharedBytes) {
  if (auto eb = dyn_cast<SwiGluExpertsBackwardOp>(op)) {
    if (!expertsTensorCore(eb, arch)) return moe_config::kBackwardScalarTile;
    // An empty arch (valueOf without a config) is no target: the portable tile, never the sm_90a one.
    const auto& wgmma = moe_config::backwardTiles()[static_cast<std::size_t>(moe_config::kBackwardWgmmaTile)];
    const bool fits =
        maxSharedBytes <= 0 || shared_memory::experts_backward_hidden_wgmma(wgmma.stages, wgmma.blockM, wgmma.blockN,
                                                                            wgmma.blockK) <= maxSharedBytes;
    return contracts::heuristics_take_wgmma(arch) && fits ? moe_config::kBackwardWgmmaTile
                                                          : moe_config::kBackwardTensorCoreTile;
  }
  return router(op) ? 4 : 128;
}

std::optional<std::string> check(Operation* op, DictionaryAttr config) {
  auto value = config.getAs<IntegerAttr>(keyOf(op));
  const std::int64_t v = value ? value.getInt() : -1;
  std::string why;
  llvm::raw_string_ostream os(why);
  if (auto eb = dyn_cast<SwiGluExpertsBackwardOp>(op)) {
    const auto& tiles = moe_config::backwardTiles();
    const StringRef strategy = eb.getStrategy();
    if (!value || config.size() != 1 || v < 0 || v >= static_cast<std::int64_t>(tiles.size())) {
      os << "expected {tile = 0.." << tiles.size() - 1 << "} (0-2 scalar, 3-5 tensor_core, 5 on wgmma), got " << config;
      return why;
    }
    const bool tensorCore = tiles[static_cast<std::size_t>(v)].tensorCore;
    if (strategy != "auto" && tensorCore != (strategy == "tensor_core")) {
      os << "tile " << v << " is a " << (tensorCore ? "tensor_core" : "scalar") << " tile, the strategy is \""
         << strategy << "\"";
      return why;
    }
    return std::nullopt;
  }
  const bool ok = value && config.size() == 1 &&
                  (router(op) ? (v == 1 || v == 2 || v == 4 || v == 8) : (v == 64 || v == 128 || v == 256));
  if (ok) return std::nullopt;
  os << "expected {" << keyOf(op) << " = " << (router(op) ? "1, 2, 4 or 8" : "64, 128 or 256") << "}, got " << config;
  return why;
}

std::int64_t valueOf(Operation* op, DictionaryAttr config) {
  auto value = config ? config.getAs<IntegerAttr>(keyOf(op)) : IntegerAttr();
  return value ? value.getInt() : heuristicValue(op, "");
}

}  // namespace moe_training_config

LogicalResult RouterWeightsOp::verify() { return verifyRouter(*this, getWeights(), false); }

LogicalResult RouterBackwardOp::verify() { return verifyRouter(*this, getGradLogits(), true); }

LogicalResult CombineBackwardOp::verify() {
  if (getStrategy() != "serial" && getStrategy() != "plane")
    return emitOpError() << "strategy: expected \"serial\" or \"plane\", got \"" << getStrategy() << "\"";
  auto sig = combineBackwardSignatureOf(*this);
  if (!sig) return emitOpError() << "expected rudnn element types";
  if (auto e = contracts::check_combine_backward(*sig)) return emitOpError() << e->message();
  if (failed(checkResult(*this, getDexpert(), "dexpert", sig->combine.expert_rows.shape,
                         sig->combine.expert_rows.dtype)) ||
      failed(checkResult(*this, getDweights(), "dweights", sig->combine.slots.shape, DType::F32)))
    return failure();
  return checkConfig(*this);
}

LogicalResult SwiGluExpertsBackwardOp::verify() {
  const StringRef strategy = getStrategy();
  if (strategy != "scalar" && strategy != "tensor_core" && strategy != "auto")
    return emitOpError() << "strategy: expected \"scalar\", \"tensor_core\" or \"auto\", got \"" << strategy << "\"";
  auto sig = expertsBackwardSignatureOf(*this);
  if (!sig) return emitOpError() << "expected rudnn element types";
  if (auto e = contracts::check_experts_backward(*sig)) return emitOpError() << e->message();
  // A tensor-core strategy or tile needs what the tensor-core kernels need (the architecture is
  // checked when a target is known).
  bool tensorCore = strategy == "tensor_core";
  if (DictionaryAttr config = getKernelConfigAttr())
    if (!moe_training_config::check(*this, config))
      tensorCore =
          moe_config::backwardTiles()[static_cast<std::size_t>(moe_training_config::valueOf(*this, config))].tensorCore;
  if (tensorCore)
    if (auto e = contracts::check_tensor_core_experts(sig->experts.weights, "")) return emitOpError() << e->message();
  const contracts::ExpertWeights& w = sig->experts.weights;
  if (failed(checkResult(*this, getDinput(), "dinput", sig->experts.rows.shape, sig->experts.rows.dtype)) ||
      failed(checkResult(*this, getDgate(), "dgate", w.gate.shape, DType::F32)) ||
      failed(checkResult(*this, getDup(), "dup", w.up.shape, DType::F32)) ||
      failed(checkResult(*this, getDdown(), "ddown", w.down.shape, DType::F32)))
    return failure();
  return checkConfig(*this);
}

LogicalResult DispatchBackwardOp::verify() {
  auto sig = dispatchBackwardSignatureOf(*this);
  if (!sig) return emitOpError() << "expected rudnn element types";
  if (auto e = contracts::check_dispatch_backward(*sig)) return emitOpError() << e->message();
  if (failed(checkResult(*this, getDinput(), "dinput", {sig->slots.shape[0], sig->drows.shape[1]}, sig->drows.dtype)))
    return failure();
  return checkConfig(*this);
}

}  // namespace rudnn::dialect
