// KernelOpInterface model of the normalization family (rudnn.layer_norm, rudnn.rms_norm,
// rudnn.softmax_last_axis).
//   heuristic:    vector_width = the widest legal vector for (dtype, h), 1 when h is dynamic or the
//                 op is rudnn.unaligned; threads_per_row = min(max threads, max(32,
//                 next_pow2(ceil(h / (vector_width * 4))))), 256 (capped) for a dynamic h;
//                 rows_per_block = 4 when threads_per_row == 32, else 1.
//   tuning query: operands {input, gamma?, beta?}, no options; not asked for an op marked
//                 rudnn.unaligned (vector width 1 is the only choice there).
//   config check: norm_config::checkRowConfig for (dtype, h); no tensor-core kernels.
#include "Conversion/NormToLaunch/NormToLaunch.h"
#include "llvm/Support/MathExtras.h"
#include "mlir/IR/Builders.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/compiler/kernel_op_models.h"
#include "rudnn/Dialect/Rudnn/IR/NormConfig.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

namespace norm_config = dialect::norm_config;

norm_config::RowConfig heuristicRowConfig(DType dtype, std::int64_t h, bool unaligned,
                                          std::int64_t maxThreadsPerBlock) {
  norm_config::RowConfig c;
  // Widest legal vector: 16-byte loads when h allows, narrower otherwise; 1 if h is unknown or
  // buffers may be misaligned.
  c.vectorWidth = unaligned ? 1 : norm_config::legalVectorWidths(dtype, h).front();
  const std::int64_t maxThreads = std::min(norm_config::kMaxThreadsPerBlock, maxThreadsPerBlock);
  if (h < 0) {
    c.threadsPerRow = std::min<std::int64_t>(256, maxThreads);  // a middle size for an unknown row length
  } else {
    // About four vectors per thread: enough work per thread to hide latency, rows spread wide.
    const std::int64_t vectorsPerThread = c.vectorWidth * 4;
    const auto wanted = static_cast<std::int64_t>(llvm::PowerOf2Ceil((h + vectorsPerThread - 1) / vectorsPerThread));
    c.threadsPerRow = std::min(maxThreads, std::max<std::int64_t>(32, wanted));
  }
  // A one-warp row leaves most of a block idle: pack four rows per block instead.
  c.rowsPerBlock = c.threadsPerRow == 32 ? 4 : 1;
  return c;
}

// (dtype, h) of the op's input; h = -1 when the last dim is dynamic.
std::pair<DType, std::int64_t> rowShape(const dialect::NormOpView& norm) {
  RankedTensorType type = norm.inputType();
  std::int64_t h = type.getShape().back();
  if (ShapedType::isDynamic(h)) h = -1;
  return {*dialect::toDType(type.getElementType()), h};  // the verifier accepted the dtype
}

template <typename OpT>
struct NormKernelModel : dialect::KernelOpInterface::ExternalModel<NormKernelModel<OpT>, OpT> {
  FailureOr<DictionaryAttr> selectHeuristicConfig(Operation* op, const dialect::KernelTarget& target) const {
    const auto [dtype, h] = rowShape(*dialect::asNormOp(op));
    const norm_config::RowConfig c =
        heuristicRowConfig(dtype, h, op->hasAttr(dialect::kUnalignedAttrName), target.maxThreadsPerBlock);
    Builder b(op->getContext());
    return b.getDictionaryAttr({
        b.getNamedAttr(norm_config::kThreadsPerRow, b.getI64IntegerAttr(c.threadsPerRow)),
        b.getNamedAttr(norm_config::kRowsPerBlock, b.getI64IntegerAttr(c.rowsPerBlock)),
        b.getNamedAttr(norm_config::kVectorWidth, b.getI64IntegerAttr(c.vectorWidth)),
    });
  }

  bool configUsesTensorCores(Operation*, DictionaryAttr) const { return false; }

  std::optional<std::string> checkKernelConfig(Operation* op, DictionaryAttr config) const {
    const auto [dtype, h] = rowShape(*dialect::asNormOp(op));
    auto get = [&](const char* key) {
      auto value = config.getAs<IntegerAttr>(key);
      return value ? value.getInt() : 0;  // a missing key fails the check
    };
    return norm_config::checkRowConfig(
        {get(norm_config::kThreadsPerRow), get(norm_config::kRowsPerBlock), get(norm_config::kVectorWidth)}, dtype, h);
  }

  std::optional<dialect::TuningQuery> getTuningQuery(Operation* op) const {
    if (op->hasAttr(dialect::kUnalignedAttrName)) return std::nullopt;
    const dialect::NormOpView norm = *dialect::asNormOp(op);
    return dialect::TuningQuery{{norm.input, norm.gamma, norm.beta}, {}};
  }

  LogicalResult lowerToLaunches(Operation* op, RewriterBase& rewriter) const {
    return lowerNormOpToLaunch(rewriter, *dialect::asNormOp(op));
  }
};

void attachNormKernelModels(MLIRContext& ctx) {
  dialect::LayerNormOp::attachInterface<NormKernelModel<dialect::LayerNormOp>>(ctx);
  dialect::RmsNormOp::attachInterface<NormKernelModel<dialect::RmsNormOp>>(ctx);
  dialect::SoftmaxLastAxisOp::attachInterface<NormKernelModel<dialect::SoftmaxLastAxisOp>>(ctx);
}

const KernelModelRegistration kRegistered(&attachNormKernelModels);

}  // namespace

}  // namespace rudnn::compiler
