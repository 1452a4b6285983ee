// Every attention kernel takes one argument list (templates/rudnn/attention/problem.cuh):
//   q, k, v, mask, bias, out, [workspace], batch, q_heads, kv_heads, q_len, kv_len, head_dim,
//   value_dim, mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride, causal, scale,
//   then the (batch, head, token) element strides of q, k, v and out (#rudnn.size<stride(k, d)>: the
//   call's views, SPEC §13)
// with unused pointers typed `const void*`/`void*` and passed null (and the strides of an output
// that is not the launch's, 0). Heads and head dims are static in
// the IR (batch and lengths dynamic), so a row tile grid is (⌈group·Tq / block_m⌉, B·Hkv[, ...]); the
// kernels stride over their linear block index, so any grid is correct.
#include "Conversion/AttentionToLaunch/AttentionToLaunch.h"

#include <fmt/format.h>

#include "Conversion/LaunchBuilder.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

using SizeFactor = dialect::SizeFactor;
using dialect::attention_config::Kind;
using dialect::attention_config::Tile;

struct Shapes {
  std::int64_t hq, hkv, d, dv;
  DType dtype;
};

// Operand numbering of every attention launch: q 0, k 1, v 2, [mask], [bias], then the rest.
struct Numbering {
  std::int64_t mask = -1, bias = -1, next = 3;
};

class AttentionLauncher {
 public:
  AttentionLauncher(dialect::AttentionOp op, const Shapes& s) : op_(op), s_(s) {
    operands_ = {op.getQuery(), op.getKey(), op.getValue()};
    if (op.getMask()) {
      n_.mask = n_.next++;
      operands_.push_back(op.getMask());
    }
    if (op.getAttnBias()) {
      n_.bias = n_.next++;
      operands_.push_back(op.getAttnBias());
    }
    elem_ = dialect::cTypeName(s.dtype);
    mb_ = op.getMask() ? "rudnn::u8" : "void";
    bb_ = op.getAttnBias() ? std::string(dialect::cTypeName(*dialect::toDType(
                                 cast<RankedTensorType>(op.getAttnBias().getType()).getElementType())))
                           : std::string("void");
  }

  const SmallVector<Value>& operands() const { return operands_; }
  const Numbering& numbering() const { return n_; }
  const std::string& elem() const { return elem_; }
  const std::string& mb() const { return mb_; }
  const std::string& bb() const { return bb_; }

  // The pointer parameters: q, k, v typed `qkv` (e.g. "const T*" or "const void*"), mask, bias, out
  // (slot `out`, or null), workspace (slot, or none when < -1).
  void pointers(LaunchBuilder& l, bool useQK, bool useV, bool useMods, std::int64_t out, const char* outType,
                std::int64_t workspace, const char* workspaceType) const {
    const std::string t = "const " + elem_ + "*";
    auto ptr = [&](const char* name, bool used, const std::string& type, std::int64_t slot) {
      if (used && slot >= 0)
        l.buffer(name, type, slot);
      else
        l.nullBuffer(name, used ? type : (std::string(type).rfind("const", 0) == 0 ? "const void*" : "void*"));
    };
    ptr("q", useQK, t, 0);
    ptr("k", useQK, t, 1);
    ptr("v", useV, t, 2);
    ptr("mask", useMods && n_.mask >= 0, mb_ == "void" ? "const void*" : "const rudnn::u8*", n_.mask);
    ptr("bias", useMods && n_.bias >= 0, bb_ == "void" ? "const void*" : "const " + bb_ + "*", n_.bias);
    if (out >= 0)
      l.buffer("out", outType, out);
    else
      l.nullBuffer("out", "void*");
    if (workspace >= -1) {
      if (workspace >= 0)
        l.buffer("workspace", workspaceType, workspace);
      else
        l.nullBuffer("workspace", workspaceType);
    }
  }

  // The sizes, the scale and the strides, in the shared order; `out`: the output's slot in this
  // launch (< 0: not one of its operands or results).
  void sizes(LaunchBuilder& l, std::int64_t out) const {
    l.sizeParam("batch", l.size({SizeFactor::dimOf(0, 0)}))
        .constant("q_heads", s_.hq)
        .constant("kv_heads", s_.hkv)
        .sizeParam("q_len", l.size({SizeFactor::dimOf(0, 2)}))
        .sizeParam("kv_len", l.size({SizeFactor::dimOf(1, 2)}))
        .constant("head_dim", s_.d)
        .constant("value_dim", s_.dv);
    broadcastStrides(l, "mask", n_.mask);
    broadcastStrides(l, "bias", n_.bias);
    l.constant("causal", op_.getCausal() ? 1 : 0).f32("scale", op_.getScale().convertToFloat());
    for (auto [name, slot] : {std::pair{"q", std::int64_t{0}}, {"k", 1}, {"v", 2}, {"out", out}})
      for (auto [dim, what] : {std::pair{0, "batch"}, {1, "head"}, {2, "token"}}) {
        const std::string param = std::string(name) + "_" + what + "_stride";
        if (slot < 0)
          l.constant(param, 0);
        else
          l.sizeParam(param, l.size({SizeFactor::strideOf(slot, dim)}));
      }
  }

  // grid (⌈group·Tq / blockM⌉, B·Hkv, z): a row tile per block of each panel; with one head per panel
  // (rudnn.head_panels), (⌈Tq / blockM⌉, B·Hq).
  void rowTileGrid(LaunchBuilder& l, std::int64_t blockM, dialect::SizeExprAttr z = {}, bool headPanels = false) const {
    const std::int64_t panelHeads = headPanels ? 1 : s_.hq / s_.hkv;
    l.grid(l.size({SizeFactor::constant(panelHeads), SizeFactor::dimOf(0, 2)}, blockM),
           l.size({SizeFactor::dimOf(0, 0), SizeFactor::constant(s_.hq / panelHeads)}), z);
  }

 private:
  // Element strides of a [B or 1, Hq or 1, Tq, Tk] mask/bias: 0 along a broadcast (static 1) dim.
  void broadcastStrides(LaunchBuilder& l, const char* name, std::int64_t slot) const {
    const std::string b = std::string(name) + "_batch_stride", h = std::string(name) + "_head_stride";
    if (slot < 0) {
      l.constant(b, 0).constant(h, 0);
      return;
    }
    auto type = cast<RankedTensorType>(operands_[static_cast<std::size_t>(slot)].getType());
    auto tqtk = [&](SmallVector<SizeFactor> f) {
      f.push_back(SizeFactor::dimOf(slot, 2));
      f.push_back(SizeFactor::dimOf(slot, 3));
      return l.size(f);
    };
    if (type.getDimSize(0) == 1)
      l.constant(b, 0);
    else
      l.sizeParam(b, tqtk({SizeFactor::dimOf(slot, 1)}));
    if (type.getDimSize(1) == 1)
      l.constant(h, 0);
    else
      l.sizeParam(h, tqtk({}));
  }

  mutable dialect::AttentionOp op_;  // op handles are not const-correct
  Shapes s_;
  SmallVector<Value> operands_;
  Numbering n_;
  std::string elem_, mb_, bb_;
};

std::string tileName(const Tile& t) {
  switch (t.kind) {
    // A wgmma tile's entry differs by its kernel part (flash_wgmma), not here.
    case Kind::FlashMma: return fmt::format("d{}_m{}_n{}", t.headDim, t.blockM, t.blockN);
    case Kind::FlashUnit: return fmt::format("m{}_n{}_t{}_v{}", t.blockM, t.blockN, t.threadsPerRow, t.maxValueDim);
    case Kind::Fallback: return fmt::format("m{}_s{}", t.blockM, t.softmaxThreads);
  }
  return "?";
}

}  // namespace

LogicalResult lowerAttentionOpToLaunch(RewriterBase& rewriter, dialect::AttentionOp op) {
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  const Shapes s{q.getDimSize(1), k.getDimSize(1), q.getDimSize(3), v.getDimSize(3),
                 *dialect::toDType(q.getElementType())};
  if (ShapedType::isDynamic(s.hq) || ShapedType::isDynamic(s.hkv) || ShapedType::isDynamic(s.d) ||
      ShapedType::isDynamic(s.dv))
    return op.emitOpError() << "needs static head counts and head dims to lower";
  std::optional<Tile> tile = dialect::attentionTileOf(op.getKernelConfigAttr(), s.d);
  if (!tile) return op.emitOpError() << "has no kernel_config (run rudnn-select-kernel-config first)";
  AttentionLauncher a(op, s);
  const std::int64_t out = static_cast<std::int64_t>(a.operands().size());
  const std::string t = a.elem(),
                    suffix =
                        fmt::format("{}_{}_{}_{}", dtype_name(s.dtype), a.mb() == "void" ? "nomask" : "mask",
                                    a.bb() == "void" ? "nobias" : "bias" + std::string(a.bb() == "float" ? "f32" : ""),
                                    tileName(*tile));
  const std::string mods = fmt::format("{}, {}", a.mb(), a.bb());
  if (tile->kind != Kind::Fallback) {
    const bool mma = tile->kind == Kind::FlashMma;
    // Only the tensor-core kernels need to know (the others place any row of any layout).
    const bool headPanels = mma && op->hasAttr(dialect::kHeadPanelsAttrName);
    // flash_mma's kernel: on mma.sync, or on Hopper's warpgroup MMA (same contract and arguments).
    const char* const kernel = !mma ? "unit" : tile->wgmma ? "wgmma" : "mma";  // flash_<kernel>.cuh
    const std::string policy =
        mma ? fmt::format("rudnn::attention::Flash{}Policy<{}, {}, {}{}>", tile->wgmma ? "Wgmma" : "Mma", s.d,
                          tile->blockM, tile->blockN, headPanels ? ", true" : "")
            : fmt::format("rudnn::attention::FlashUnitPolicy<{}, {}, {}, {}>", tile->blockM, tile->blockN,
                          tile->threadsPerRow, tile->maxValueDim);
    LaunchBuilder l(op, fmt::format("rudnn_attention_flash_{}_{}{}", kernel, suffix, headPanels ? "_head_panels" : ""),
                    fmt::format("rudnn/attention/flash_{}.cuh", kernel),
                    fmt::format("rudnn::attention::flash_attention_{}", kernel));
    l.templateArgs({t, a.mb(), a.bb(), policy})
        .config(op.getKernelConfigAttr())
        .operands(a.operands())
        .results({op.getOutput().getType()});
    a.pointers(l, true, true, true, out, (t + "*").c_str(), -2, "");
    a.sizes(l, out);
    a.rowTileGrid(l, tile->blockM, {}, headPanels);
    l.block(dialect::attention_config::threads(*tile))
        .shared(mma ? dialect::attention_config::flashMmaSharedBytes(*tile)
                    : dialect::attention_config::flashUnitSharedBytes(*tile, s.d, s.dv));
    // FlashUnit's 256 threads with a budget of 128 registers (two blocks per SM): under
    // __launch_bounds__(256) alone ptxas picks as few as 64-80 for some builds and spills.
    if (!mma) l.minBlocks(2);
    rewriter.replaceOp(op, l.create(rewriter)->getResults());
    return success();
  }

  // Fallback: 1. scores → workspace (a temporary of B·Hq·Tq·Tk floats), 2. softmax in place (a launch
  // with no result that writes its operand), 3. weighted sum → out.
  const std::string tilePolicy = tile->blockM == 64 ? "rudnn::attention::FallbackTilePolicy<64, 64, 16, 4, 4>"
                                                    : "rudnn::attention::FallbackTilePolicy<16, 64, 16, 1, 4>";
  MLIRContext* ctx = op.getContext();
  auto workspaceType = RankedTensorType::get({ShapedType::kDynamic}, Float32Type::get(ctx));
  LaunchBuilder scores(op, "rudnn_attention_scores_" + suffix, "rudnn/attention/fallback.cuh",
                       "rudnn::attention::attention_scores");
  scores.templateArgs({t, a.mb(), a.bb(), tilePolicy})
      .config(op.getKernelConfigAttr())
      .operands(a.operands())
      .results({workspaceType}, {scores.size({SizeFactor::dimOf(0, 0), SizeFactor::constant(s.hq),
                                              SizeFactor::dimOf(0, 2), SizeFactor::dimOf(1, 2)})});
  a.pointers(scores, true, false, true, -1, "", out, "float*");
  a.sizes(scores, -1);
  a.rowTileGrid(scores, tile->blockM, scores.size({SizeFactor::dimOf(1, 2)}, 64));
  scores.block(256).shared(dialect::attention_config::fallbackTileSharedBytes(*tile));
  dialect::LaunchOp scored = scores.create(rewriter);

  SmallVector<Value> withWorkspace = a.operands();
  withWorkspace.push_back(scored.getResult(0));
  const std::int64_t rows = dialect::attention_config::fallbackSoftmaxRows(*tile);
  LaunchBuilder softmax(op, fmt::format("rudnn_attention_softmax_t{}_r{}", tile->softmaxThreads, rows),
                        "rudnn/attention/fallback.cuh", "rudnn::attention::attention_softmax");
  softmax.templateArgs({fmt::format("rudnn::attention::FallbackSoftmaxPolicy<{}, {}>", tile->softmaxThreads, rows)})
      .config(op.getKernelConfigAttr())
      .operands(withWorkspace);
  a.pointers(softmax, false, false, false, -1, "", out, "float*");
  a.sizes(softmax, -1);
  softmax.grid(softmax.size({SizeFactor::dimOf(0, 0), SizeFactor::constant(s.hq), SizeFactor::dimOf(0, 2)}, rows))
      .block(tile->softmaxThreads * rows)
      .shared(dialect::attention_config::fallbackSoftmaxSharedBytes(*tile));
  softmax.create(rewriter);

  LaunchBuilder sum(op, "rudnn_attention_weighted_sum_" + std::string(dtype_name(s.dtype)) + "_" + tileName(*tile),
                    "rudnn/attention/fallback.cuh", "rudnn::attention::attention_weighted_sum");
  sum.templateArgs({t, tilePolicy})
      .config(op.getKernelConfigAttr())
      .operands(withWorkspace)
      .results({op.getOutput().getType()});
  a.pointers(sum, false, true, false, out + 1, (t + "*").c_str(), out, "const float*");
  a.sizes(sum, out + 1);
  a.rowTileGrid(sum, tile->blockM, sum.size({SizeFactor::constant(s.dv)}, 64));
  sum.block(256).shared(dialect::attention_config::fallbackTileSharedBytes(*tile));
  rewriter.replaceOp(op, sum.create(rewriter)->getResults());
  return success();
}

}  // namespace rudnn::compiler
