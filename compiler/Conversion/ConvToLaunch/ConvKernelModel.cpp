// KernelOpInterface model of the convolution ops (rudnn.conv_forward, conv_data_backward,
// conv_weight_backward); their kernel_config names the algorithm that runs and its tile.
//   heuristic:    conv_config::heuristicChoice on the op's batch, else its rudnn.batch_hint (split
//                 counts follow the batch's bucket) — strategy "direct": the direct kernel (the depthwise
//                 ones for a depthwise call, any direction); "implicit_gemm" and "autotune" without a tuned
//                 answer: the implicit GEMM (tensor cores for f16/bf16 where the target has
//                 mma.sync m16n8k16), except the guide's substitutions (grouped, and 3-D f32, run
//                 Direct); only kernels within the target's shared memory (a depthwise call whose
//                 halo does not fit runs the direct kernel).
//   tuning query: strategy "autotune" only. Operands: the op's (their dtypes, and the batch as the
//                 dynamic value); options: contracts::conv_key_words (direction, layout, groups,
//                 bias_grad, bias dtype, the options and the input/weight shapes but the batch).
//   config check: conv_config::checkChoice (a registered tile of an algorithm that serves the call;
//                 tensor_core = 1 uses mma.sync m16n8k16).
#include "Conversion/ConvToLaunch/ConvToLaunch.h"
#include "contracts/arch.h"
#include "rudnn/Dialect/Rudnn/IR/ConvOps.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/compiler/kernel_op_models.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

namespace conv_config = dialect::conv_config;

template <class Op>
struct ConvKernelModel : dialect::KernelOpInterface::ExternalModel<ConvKernelModel<Op>, Op> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget& target) const {
    auto sig = dialect::convSignatureOf(op);
    if (!sig) return op->emitOpError() << "is not a convolution op";
    const auto h = conv_config::heuristicChoice(sig->direction, dialect::convHeuristicGeometry(op, *sig),
                                                sig->input.dtype, cast<Op>(op).getStrategy() != "direct",
                                                contracts::has_mma_m16n8k16(target.arch), target.maxSharedBytes);
    return dialect::convChoiceConfig(op->getContext(), h.choice);
  }

  bool configUsesTensorCores(Operation*, DictionaryAttr config) const {
    auto choice = dialect::convChoiceOf(config);
    return choice && choice->algorithm == conv_config::Algorithm::ImplicitGemm && choice->gemm.tensorCore;
  }

  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    return dialect::checkConvConfig(op, config);
  }

  std::optional<dialect::TuningQuery> getTuningQuery(Operation* op) const {
    auto conv = cast<Op>(op);
    if (conv.getStrategy() != "autotune") return std::nullopt;
    auto sig = dialect::convSignatureOf(op);
    if (!sig) return std::nullopt;
    return dialect::TuningQuery{{op->getOperands().begin(), op->getOperands().end()},
                                contracts::conv_key_words(*sig, op->getNumResults() > 1)};
  }

  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerConvOpToLaunch(rewriter, op);
  }
};

void attachConvKernelModels(MLIRContext& ctx) {
  dialect::ConvForwardOp::attachInterface<ConvKernelModel<dialect::ConvForwardOp>>(ctx);
  dialect::ConvDataBackwardOp::attachInterface<ConvKernelModel<dialect::ConvDataBackwardOp>>(ctx);
  dialect::ConvWeightBackwardOp::attachInterface<ConvKernelModel<dialect::ConvWeightBackwardOp>>(ctx);
}

const KernelModelRegistration kRegistered(&attachConvKernelModels);

}  // namespace

}  // namespace rudnn::compiler
