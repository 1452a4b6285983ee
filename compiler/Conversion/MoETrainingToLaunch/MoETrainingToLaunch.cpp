// One launch per MoE training op; every extent is a runtime size (dims of the op's operands), so one
// kernel per (dtypes, config, variant) serves every shape. Slots: the op's operands in order, then
// its results.
//   router_weights    logits 0, indices 1 → weights 2
//   router_backward   logits 0, indices 1, grad_weights 2 → grad_logits 3
//   combine_backward  expert_rows 0, grad_output 1, slots 2, weights 3 → dexpert 4, dweights 5
//   dispatch_backward drows 0, slots 1 → dinput 2
//   swiglu_experts_backward  rows 0, offsets 1, slots 2, gate 3, up 4, down 5, dexpert 6 → dinput 7,
//                    dgate 8, dup 9, ddown 10; temporaries order (u32 [N]), dA, dB, Hh ([N, I]: FP32
//                    for a scalar tile, the weights' dtype for a tensor-core one): six launches — row
//                    order, hidden (dA, dB, Hh), input (dinput), three weight gradients
#include "Conversion/MoETrainingToLaunch/MoETrainingToLaunch.h"

#include <fmt/format.h>

#include "Conversion/LaunchBuilder.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/MoEConfig.h"
#include "rudnn/Dialect/Rudnn/IR/MoETrainingOps.h"
#include "rudnn/shared_memory.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

using SizeFactor = dialect::SizeFactor;
constexpr std::int64_t kOrderThreads = 256;

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
                  "rudnn/moe/router_weights.cuh",
                  backward ? "rudnn::moe::router_backward" : "rudnn::moe::router_weights");
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

// The experts backward's kernels for one tile: scalar (moe/experts_backward_scalar.cuh, FP32
// temporaries) or tensor cores (moe/experts_backward_mma.cuh, T temporaries: the next products'
// 16-bit operands).
struct ExpertsBackwardKernels {
  std::string policy, tileName, header, suffix;
  std::int64_t threads, hiddenShared, inputShared, weightShared;
  DType temporary;

  ExpertsBackwardKernels(const dialect::moe_config::ExpertTile& t, DType dtype) : threads(t.threads()) {
    if (t.wgmma) {
      policy = fmt::format("rudnn::gemm::WgmmaPolicy<{}, {}, {}, {}>", t.blockM, t.blockN, t.blockK, t.stages);
      tileName = fmt::format("wgmma_{}x{}x{}_s{}", t.blockM, t.blockN, t.blockK, t.stages);
      header = "rudnn/moe/experts_backward_mma.cuh";
      suffix = "mma";
      hiddenShared = shared_memory::experts_backward_hidden_wgmma(t.stages, t.blockM, t.blockN, t.blockK);
      inputShared = weightShared = shared_memory::block_gemm_wgmma(t.stages, t.blockM, t.blockN, t.blockK, 2);
      temporary = dtype;
    } else if (t.tensorCore) {
      policy = fmt::format("rudnn::gemm::BlockPolicy<{}, {}, {}, {}, {}, {}, true>", t.blockM, t.blockN, t.blockK, t.a,
                           t.b, t.stages);
      tileName = fmt::format("{}x{}x{}_w{}x{}_s{}", t.blockM, t.blockN, t.blockK, t.a, t.b, t.stages);
      header = "rudnn/moe/experts_backward_mma.cuh";
      suffix = "mma";
      hiddenShared = shared_memory::experts_backward_hidden_mma(t.stages, t.blockM, t.blockN, t.blockK);
      inputShared = shared_memory::block_gemm(t.stages, t.blockM, t.blockN, t.blockK, 2, false, true);
      weightShared = shared_memory::block_gemm(t.stages, t.blockM, t.blockN, t.blockK, 2, true, true);
      temporary = dtype;
    } else {
      policy = fmt::format("rudnn::moe::ScalarGemmPolicy<{}, {}, {}, {}, {}>", t.blockM, t.blockN, t.blockK, t.a, t.b);
      tileName = fmt::format("{}x{}x{}_t{}x{}", t.blockM, t.blockN, t.blockK, t.a, t.b);
      header = "rudnn/moe/experts_backward_scalar.cuh";
      suffix = "scalar";
      hiddenShared = shared_memory::experts_scalar(t.blockM, t.blockN, t.blockK, 2);
      inputShared = weightShared = shared_memory::experts_scalar(t.blockM, t.blockN, t.blockK, 1);
      temporary = DType::F32;
    }
  }
};

LogicalResult lowerExpertsBackward(RewriterBase& rewriter, dialect::SwiGluExpertsBackwardOp op) {
  auto config = op->getAttrOfType<DictionaryAttr>(dialect::kKernelConfigAttrName);
  const auto& tile =
      dialect::moe_config::backwardTiles()[static_cast<std::size_t>(dialect::moe_training_config::valueOf(op, config))];
  const DType dtype = dtypeOf(op.getRows());
  const ExpertsBackwardKernels k(tile, dtype);
  const std::string t = dialect::cTypeName(dtype), ct = "const " + t + "*";
  const std::string tmp = dialect::cTypeName(k.temporary), tmpName(dtype_name(k.temporary));
  MLIRContext* ctx = op.getContext();
  auto tmpFlat = RankedTensorType::get({ShapedType::kDynamic}, dialect::toElementType(ctx, k.temporary));
  auto u32Flat = RankedTensorType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 32, IntegerType::Unsigned));
  SmallVector<Value> values(op->getOperands().begin(), op->getOperands().end());
  // Operands: rows 0, offsets 1, slots 2, gate 3, up 4, down 5, dexpert 6; then the temporaries
  // order 7, dA 8, dB 9, Hh 10; each launch's result follows its operands.
  enum : std::int64_t { kRows, kOffsets, kSlots, kGate, kUp, kDown, kDexpert, kOrder, kDA, kDB, kHh, kOut };
  const SizeFactor n = SizeFactor::dimOf(kRows, 0), e = SizeFactor::dimOf(kGate, 0),
                   inter = SizeFactor::dimOf(kGate, 1), hidden = SizeFactor::dimOf(kGate, 2);
  auto sizes = [&](LaunchBuilder& l) {
    l.sizeParam("n_rows", l.size({n}))
        .sizeParam("experts", l.size({e}))
        .sizeParam("hidden", l.size({hidden}))
        .sizeParam("inter", l.size({inter}));
  };
  auto push = [&](dialect::LaunchOp launch) {
    for (Value v : launch.getResults()) values.push_back(v);
  };

  // 0. Each expert's rows in token order, for the weight gradients' fixed summation order.
  LaunchBuilder order(op, "rudnn_expert_row_order", "rudnn/moe/experts_backward_scalar.cuh",
                      "rudnn::moe::expert_row_order");
  order.templateArgs({std::to_string(kOrderThreads)})
      .config(DictionaryAttr::get(ctx))
      .operands(values)
      .results({u32Flat}, {order.size({n})})
      .buffer("slots", "const rudnn::u32*", kSlots)
      .buffer("offsets", "const rudnn::u32*", kOffsets)
      .buffer("order", "rudnn::u32*", kOrder)
      .sizeParam("assignments", order.size({SizeFactor::dimOf(kSlots, 0), SizeFactor::dimOf(kSlots, 1)}))
      .sizeParam("experts", order.size({e}))
      .grid(order.size({e}))
      .block(kOrderThreads)
      .shared(shared_memory::expert_row_order(kOrderThreads));
  push(order.create(rewriter));

  // 1. dA, dB, Hh.
  LaunchBuilder h(op, fmt::format("rudnn_swiglu_backward_hidden_{}_{}", dtype_name(dtype), k.tileName), k.header,
                  "rudnn::moe::swiglu_backward_hidden_" + k.suffix);
  h.templateArgs({t, k.policy})
      .config(config)
      .operands(values)
      .results({tmpFlat, tmpFlat, tmpFlat}, {h.size({n, inter}), h.size({n, inter}), h.size({n, inter})})
      .buffer("rows", ct, kRows)
      .buffer("dy", ct, kDexpert)
      .buffer("offsets", "const rudnn::u32*", kOffsets)
      .buffer("gate", ct, kGate)
      .buffer("up", ct, kUp)
      .buffer("down", ct, kDown)
      .buffer("da", tmp + "*", kDA)
      .buffer("db", tmp + "*", kDB)
      .buffer("hh", tmp + "*", kHh);
  sizes(h);
  h.grid(h.size({inter}, tile.blockN), h.size({n}, tile.blockM)).block(k.threads).shared(k.hiddenShared);
  push(h.create(rewriter));

  // 2. dinput = dA·gate + dB·up.
  LaunchBuilder in(op, fmt::format("rudnn_swiglu_backward_input_{}_{}", dtype_name(dtype), k.tileName), k.header,
                   "rudnn::moe::swiglu_backward_input_" + k.suffix);
  in.templateArgs({t, k.policy})
      .config(config)
      .operands(values)
      .results({op.getDinput().getType()})
      .buffer("da", "const " + tmp + "*", kDA)
      .buffer("db", "const " + tmp + "*", kDB)
      .buffer("offsets", "const rudnn::u32*", kOffsets)
      .buffer("gate", ct, kGate)
      .buffer("up", ct, kUp)
      .buffer("dx", t + "*", kOut);
  sizes(in);
  in.grid(in.size({hidden}, tile.blockN), in.size({n}, tile.blockM)).block(k.threads).shared(k.inputShared);
  Value dinput = in.create(rewriter).getResult(0);

  // 3. out_e = P_eᵀ·Q_e over the rows in token order: (dA, rows) → dgate, (dB, rows) → dup,
  //    (dexpert, Hh) → ddown. The scalar kernel takes each operand's type; the tensor-core one one T.
  auto weightGrad = [&](std::int64_t p, const std::string& tp, std::int64_t q, const std::string& tq, SizeFactor m,
                        SizeFactor k2, Type type) {
    const std::string pName(tp == t ? dtype_name(dtype) : tmpName), qName(tq == t ? dtype_name(dtype) : tmpName);
    LaunchBuilder l(op, fmt::format("rudnn_experts_weight_grad_{}_{}_{}", pName, qName, k.tileName), k.header,
                    "rudnn::moe::experts_weight_grad_" + k.suffix);
    if (tile.tensorCore)
      l.templateArgs({t, k.policy});
    else
      l.templateArgs({tp, tq, k.policy});
    l.config(config)
        .operands(values)
        .results({type})
        .buffer("p", "const " + tp + "*", p)
        .buffer("q", "const " + tq + "*", q)
        .buffer("offsets", "const rudnn::u32*", kOffsets)
        .buffer("order", "const rudnn::u32*", kOrder)
        .buffer("out", "float*", kOut)
        .sizeParam("n_rows", l.size({n}))
        .sizeParam("experts", l.size({e}))
        .sizeParam("M", l.size({m}))
        .sizeParam("K2", l.size({k2}))
        .grid(l.size({m, k2}, tile.blockM * tile.blockN), l.size({e}))  // ≈ the M × K2 tiles (strided)
        .block(k.threads)
        .shared(k.weightShared);
    return l.create(rewriter).getResult(0);
  };
  Value dgate = weightGrad(kDA, tmp, kRows, t, inter, hidden, op.getDgate().getType());
  Value dup = weightGrad(kDB, tmp, kRows, t, inter, hidden, op.getDup().getType());
  Value ddown = weightGrad(kDexpert, t, kHh, tmp, hidden, inter, op.getDdown().getType());
  rewriter.replaceOp(op, ValueRange{dinput, dgate, dup, ddown});
  return success();
}

}  // namespace

LogicalResult lowerMoETrainingOpToLaunch(RewriterBase& rewriter, Operation* op) {
  if (auto eb = dyn_cast<dialect::SwiGluExpertsBackwardOp>(op)) return lowerExpertsBackward(rewriter, eb);
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
