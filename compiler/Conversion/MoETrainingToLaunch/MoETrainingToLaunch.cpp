// One launch per MoE training op; every extent is a runtime size (dims of the op's operands), so one
// kernel per (dtypes, config, variant) serves every shape. Slots: the op's operands in order, then
// its results.
//   router_weights    logits 0, indices 1 → weights 2
//   router_backward   logits 0, indices 1, grad_weights 2 → grad_logits 3
//   combine_backward  expert_rows 0, grad_output 1, slots 2, weights 3 → dexpert 4, dweights 5
//   dispatch_backward drows 0, slots 1 → dinput 2
#include "Conversion/MoETrainingToLaunch/MoETrainingToLaunch.h"

#include <fmt/format.h>

#include "Conversion/LaunchBuilder.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/MoETrainingOps.h"
#include "rudnn/shared_memory.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

using SizeFactor = dialect::SizeFactor;

DType dtypeOf(Value v) { return *dialect::toDType(cast<RankedTensorType>(v.getType()).getElementType()); }
std::string cType(Value v) { return dialect::cTypeName(dtypeOf(v)); }

LogicalResult lowerRouter(RewriterBase& rewriter, Operation* op, bool backward) {
  auto sig = dialect::routerSignatureOf(op);
  if (!sig) return op->emitOpError() << "is not a router training op";
  auto config = op->getAttrOfType<DictionaryAttr>(dialect::kKernelConfigAttrName);
  const std::int64_t warps = dialect::moe_training_config::valueOf(op, config);
  const Value logits = op->getOperand(0), indices = op->getOperand(1);
  const std::string t = cType(logits), i = cType(indices);
  LaunchBuilder l(op,
                  fmt::format("rudnn_{}_{}_{}_w{}", backward ? "router_backward" : "router_weights",
                              dtype_name(dtypeOf(logits)), dtype_name(dtypeOf(indices)), warps),
                  "rudnn/moe/router_weights.cuh", backward ? "rudnn::moe::router_backward" : "rudnn::moe::router_weights");
  l.templateArgs({t, i, std::to_string(warps)})
      .config(config)
      .operands(op->getOperands())
      .results({op->getResult(0).getType()})
      .buffer("logits", "const " + t + "*", 0)
      .buffer("indices", "const " + i + "*", 1);
  if (backward)
    l.buffer("grad_weights", "const float*", 2).buffer("grad_logits", t + "*", 3);
  else
    l.buffer("weights", "float*", 2);
  l.sizeParam("tokens", l.size({SizeFactor::dimOf(0, 0)}))
      .sizeParam("experts", l.size({SizeFactor::dimOf(0, 1)}))
      .sizeParam("top_k", l.size({SizeFactor::dimOf(1, 1)}))
      .constant("sigmoid", sig->scoring == contracts::RouterScore::Sigmoid ? 1 : 0)
      .constant("renormalize", sig->renormalize ? 1 : 0)
      .f32("scale", static_cast<float>(sig->scale))
      .grid(l.size({SizeFactor::dimOf(0, 0)}, warps))
      .block(32 * warps)
      .shared(backward ? shared_memory::router_backward(warps) : 0);
  rewriter.replaceOp(op, l.create(rewriter)->getResults());
  return success();
}

}  // namespace

LogicalResult lowerMoETrainingOpToLaunch(RewriterBase& rewriter, Operation* op) {
  if (isa<dialect::RouterWeightsOp>(op)) return lowerRouter(rewriter, op, false);
  if (isa<dialect::RouterBackwardOp>(op)) return lowerRouter(rewriter, op, true);
  auto config = op->getAttrOfType<DictionaryAttr>(dialect::kKernelConfigAttrName);
  const std::int64_t threads = dialect::moe_training_config::valueOf(op, config);
  if (auto cb = dyn_cast<dialect::CombineBackwardOp>(op)) {
    const std::string t = cType(cb.getExpertRows()), w = cType(cb.getWeights());
    const bool plane = cb.getStrategy() == "plane";
    LaunchBuilder l(op,
                    fmt::format("rudnn_combine_backward_{}_{}_t{}_{}", dtype_name(dtypeOf(cb.getExpertRows())),
                                dtype_name(dtypeOf(cb.getWeights())), threads, plane ? "plane" : "serial"),
                    "rudnn/moe/combine_backward.cuh", "rudnn::moe::combine_backward");
    l.templateArgs({t, w, std::to_string(threads), plane ? "true" : "false"})
        .config(config)
        .operands(op->getOperands())
        .results({cb.getDexpert().getType(), cb.getDweights().getType()})
        .buffer("expert_output", "const " + t + "*", 0)
        .buffer("grad_output", "const " + t + "*", 1)
        .buffer("weights", "const " + w + "*", 3)
        .buffer("slots", "const rudnn::u32*", 2)
        .buffer("dexpert", t + "*", 4)
        .buffer("dweights", "float*", 5)
        .sizeParam("tokens", l.size({SizeFactor::dimOf(2, 0)}))
        .sizeParam("top_k", l.size({SizeFactor::dimOf(2, 1)}))
        .sizeParam("hidden", l.size({SizeFactor::dimOf(0, 1)}))
        .grid(l.size({SizeFactor::dimOf(2, 0)}))
        .block(threads)
        .shared(0);
    rewriter.replaceOp(op, l.create(rewriter)->getResults());
    return success();
  }
  auto db = cast<dialect::DispatchBackwardOp>(op);
  const std::string t = cType(db.getDrows());
  LaunchBuilder l(op, fmt::format("rudnn_dispatch_backward_{}_t{}", dtype_name(dtypeOf(db.getDrows())), threads),
                  "rudnn/moe/combine_backward.cuh", "rudnn::moe::dispatch_backward");
  l.templateArgs({t, std::to_string(threads)})
      .config(config)
      .operands(op->getOperands())
      .results({db.getDinput().getType()})
      .buffer("drows", "const " + t + "*", 0)
      .buffer("slots", "const rudnn::u32*", 1)
      .buffer("out", t + "*", 2)
      .sizeParam("tokens", l.size({SizeFactor::dimOf(1, 0)}))
      .sizeParam("top_k", l.size({SizeFactor::dimOf(1, 1)}))
      .sizeParam("hidden", l.size({SizeFactor::dimOf(0, 1)}))
      .grid(l.size({SizeFactor::dimOf(1, 0)}))
      .block(threads)
      .shared(0);
  rewriter.replaceOp(op, l.create(rewriter)->getResults());
  return success();
}

}  // namespace rudnn::compiler
