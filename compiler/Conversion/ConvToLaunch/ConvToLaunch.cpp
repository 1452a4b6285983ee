// The launches of one convolution op. Every kernel runs channels-last with the geometry baked in
// (rudnn::conv::Geometry<C, O, G, D, H, W, KD, KH, KW, strides, paddings, dilations>); only the batch
// is a runtime parameter `n`. A channels-first op first swaps its activation(s) and the weight to
// channels-last temporaries (rudnn::conv::swap_last_two), and swaps the result back:
//
//   forward          [swap x, swap w]  fprop_{direct,depthwise,igemm}(x, w, bias?, y, n)  [swap y]
//                                      | fprop_igemm_split(x, w, partial, n, splits);
//                                        split_reduce(partial, bias?, y, ...)
//   data backward    [swap dy, swap w] dgrad_{direct,depthwise,igemm}(dy, w, dx, n)       [swap dx]
//                                      | dgrad_igemm_split(dy, w, partial, n, splits);
//                                        split_reduce(partial, -, dx, ...)
//   weight backward  [swap x, swap dy] wgrad_direct(x, dy, dw, n)
//                                      | wgrad_{igemm,depthwise}(x, dy, partial, n, splits);
//                                        split_reduce(partial, -, dw, ...)
//                                      [swap dw]  [bias_grad(dy, db, rows, O)]
//
// Grids count the work items of each kernel's decomposition; every kernel strides over its items by
// the linear block index, so the launcher may clamp or spread the grid. The implicit GEMM's grid is
// (⌈M/BM⌉, ⌈N/BN⌉, splits [· stride phases]): one block per tile, split and data-backward phase.
#include "Conversion/ConvToLaunch/ConvToLaunch.h"

#include <fmt/format.h>

#include "Conversion/LaunchBuilder.h"
#include "rudnn/Dialect/Rudnn/IR/ConvOps.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/conv/shared_memory.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

using contracts::ConvDirection;
using contracts::ConvGeometry;
using dialect::SizeFactor;
using dialect::conv_config::Algorithm;
using dialect::conv_config::Choice;

// FNV-1a: a stable name for a geometry (entry names must be the same in every build: packs).
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string geometryArg(const ConvGeometry& g) {
  return fmt::format("rudnn::conv::Geometry<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}>",
                     g.channels, g.out_channels, g.groups, g.input[0], g.input[1], g.input[2], g.kernel[0], g.kernel[1],
                     g.kernel[2], g.stride[0], g.stride[1], g.stride[2], g.padding[0], g.padding[1], g.padding[2],
                     g.dilation[0], g.dilation[1], g.dilation[2]);
}

std::string policyArg(const Choice& c) {
  switch (c.algorithm) {
    case Algorithm::Direct: return fmt::format("rudnn::conv::DirectPolicy<{}>", c.threads);
    case Algorithm::Depthwise:
      return fmt::format("rudnn::conv::DepthwisePolicy<{}, {}, {}>", c.depthwise.tileH, c.depthwise.tileW,
                         c.depthwise.channels);
    case Algorithm::ImplicitGemm: break;
  }
  const auto& t = c.gemm;
  if (t.wgmma) return fmt::format("rudnn::gemm::WgmmaPolicy<{}, {}, {}, {}>", t.bm, t.bn, t.bk, t.stages);
  return fmt::format("rudnn::gemm::BlockPolicy<{}, {}, {}, {}, {}, {}, {}>", t.bm, t.bn, t.bk, t.warpsM, t.warpsN,
                     t.stages, t.tensorCore ? "true" : "false");
}

std::string tileName(const Choice& c) {
  switch (c.algorithm) {
    case Algorithm::Direct: return fmt::format("direct_t{}", c.threads);
    case Algorithm::Depthwise:
      return fmt::format("depthwise_{}x{}x{}", c.depthwise.tileH, c.depthwise.tileW, c.depthwise.channels);
    case Algorithm::ImplicitGemm: break;
  }
  const auto& t = c.gemm;
  if (t.wgmma) return fmt::format("igemm_wgmma_{}x{}x{}_s{}", t.bm, t.bn, t.bk, t.stages);
  return fmt::format("igemm{}_{}x{}x{}_w{}x{}_s{}", t.tensorCore ? "_tc" : "", t.bm, t.bn, t.bk, t.warpsM, t.warpsN,
                     t.stages);
}

// Builds the chain of launches of one op. Values flow through `values` (the op's operands, then
// each temporary as it is made); kernels see them by index.
class ConvLaunches {
 public:
  ConvLaunches(Operation* op, const contracts::ConvSignature& sig, const Choice& choice, DictionaryAttr config)
      : op_(op), sig_(sig), g_(contracts::conv_geometry(sig)), choice_(choice), config_(config) {
    values_.assign(op->getOperands().begin(), op->getOperands().end());
    dtype_ = sig.direction == ConvDirection::DataBackward ? sig.grad_output->dtype : sig.input.dtype;
    elem_ = dialect::cTypeName(dtype_);
    // The implicit GEMM runs at C rounded up to whole vectors, on zero-padded copies (gemmGeometry).
    kg_ = choice.algorithm == Algorithm::ImplicitGemm ? dialect::conv_config::gemmGeometry(g_, dtype_) : g_;
    suffix_ = fmt::format("{}_{}_g{:016x}", dtype_name(dtype_), tileName(choice), fnv1a(geometryArg(kg_)));
  }

  // copy_channels(src [rows, from] → [rows, to]: zero-padded or cut); `rows` counts per image
  // (activations, times the batch) or is a constant (weights). Returns the destination's index: a
  // new temporary, or `resultType`.
  std::int64_t copyChannels(RewriterBase& rewriter, std::int64_t src, bool batched, std::int64_t rows,
                            std::int64_t from, std::int64_t to, Type resultType = {}) {
    LaunchBuilder l(op_, fmt::format("rudnn_conv_copy_channels_{}", dtype_name(dtype_)), "rudnn/conv/layout.cuh",
                    "rudnn::conv::copy_channels");
    l.templateArgs({elem_}).config(config_).operands(values_);
    auto times = [&](std::int64_t k) {
      return batched ? SmallVector<SizeFactor>{batch(), SizeFactor::constant(k)}
                     : SmallVector<SizeFactor>{SizeFactor::constant(k)};
    };
    const SmallVector<SizeFactor> count = times(rows), elements = times(rows * to);
    if (resultType)
      l.results({resultType});
    else
      l.results({tempType()}, {l.size(elements)});
    const std::int64_t dst = static_cast<std::int64_t>(values_.size());
    l.buffer("src", "const " + elem_ + "*", src)
        .buffer("dst", elem_ + "*", dst)
        .sizeParam("rows", l.size(count))
        .constant("src_c", from)
        .constant("dst_c", to)
        .grid(l.size(elements, 256))
        .block(256)
        .shared(0);
    return push(rewriter, l);
  }

  // swap_last_two(src [a, b, s] → dst [a, s, b]); `a` is the batch of value `src` (activations) or a
  // constant (weights). Returns the index of the destination: a new temporary, or `result` type.
  std::int64_t swap(RewriterBase& rewriter, std::int64_t src, bool batched, std::int64_t a, std::int64_t b,
                    std::int64_t s, Type resultType = {}) {
    LaunchBuilder l(op_, fmt::format("rudnn_conv_swap_{}", dtype_name(dtype_)), "rudnn/conv/layout.cuh",
                    "rudnn::conv::swap_last_two");
    l.templateArgs({elem_}).config(config_).operands(values_);
    const SizeFactor rows = batched ? batch() : SizeFactor::constant(a);
    Type type = resultType
                    ? resultType
                    : RankedTensorType::get({ShapedType::kDynamic}, dialect::toElementType(op_->getContext(), dtype_));
    l.results({type},
              resultType ? ArrayRef<Attribute>{} : ArrayRef<Attribute>{l.size({rows, SizeFactor::constant(b * s)})});
    const std::int64_t dst = static_cast<std::int64_t>(values_.size());
    l.buffer("src", "const " + elem_ + "*", src)
        .buffer("dst", elem_ + "*", dst)
        .sizeParam("a", l.size({rows}))
        .constant("b", b)
        .constant("s", s)
        .grid(l.size({rows, SizeFactor::constant(((b + 31) / 32) * ((s + 31) / 32))}))
        .block(256)
        .shared(conv::shared_memory::swap_last_two(static_cast<std::int64_t>(dtype_size(dtype_))));
    return push(rewriter, l);
  }

  // The batch: dim 0 of the op's first operand (x or dy, in either layout). Temporaries are flat,
  // so kernels on them still read the batch from there.
  static SizeFactor batch() { return SizeFactor::dimOf(0, 0); }

  std::int64_t push(RewriterBase& rewriter, LaunchBuilder& l) {
    dialect::LaunchOp launch = l.create(rewriter);
    for (Value r : launch.getResults()) values_.push_back(r);
    last_ = launch;
    return static_cast<std::int64_t>(values_.size()) - 1;
  }

  Type tempType() const {
    return RankedTensorType::get({ShapedType::kDynamic}, dialect::toElementType(op_->getContext(), dtype_));
  }

  LogicalResult build(RewriterBase& rewriter);

 private:
  std::int64_t convKernel(RewriterBase& rewriter, std::int64_t a, std::int64_t b, std::int64_t bias, Type resultType);
  std::int64_t splitConvKernels(RewriterBase& rewriter, std::int64_t a, std::int64_t b, std::int64_t bias,
                                Type resultType);
  // The implicit GEMM's grid (M tiles, N tiles, splits · phases): conv_config::outputGemm.
  void gemmGrid(LaunchBuilder& l, std::int64_t splits) const {
    const auto gemm = dialect::conv_config::outputGemm(sig_.direction, kg_);
    l.grid(l.size({batch(), SizeFactor::constant(gemm.rowsPerImage)}, choice_.gemm.bm),
           l.size({SizeFactor::constant((gemm.columns + choice_.gemm.bn - 1) / choice_.gemm.bn)}),
           l.size({SizeFactor::constant(splits * gemm.phases)}));
  }
  std::string biasTag(std::int64_t bias) const {
    // Entry names carry dtype names, never C++ spellings ("rudnn::bf16" is no identifier).
    if (sig_.direction != ConvDirection::Forward) return "";
    return bias >= 0 ? std::string(dtype_name(sig_.bias->dtype)) + "bias_" : std::string("nobias_");
  }
  std::string biasType(std::int64_t bias) const {
    return sig_.direction == ConvDirection::Forward && bias >= 0 ? dialect::cTypeName(sig_.bias->dtype) : "void";
  }
  std::int64_t weightGradKernels(RewriterBase& rewriter, std::int64_t x, std::int64_t dy, Type resultType);
  std::int64_t reduceKernel(RewriterBase& rewriter, std::int64_t partial, std::int64_t bias, Type resultType,
                            ArrayRef<SizeFactor> elements, std::int64_t columns);

  Operation* op_;
  contracts::ConvSignature sig_;
  ConvGeometry g_;
  ConvGeometry kg_;  // the geometry the kernels are compiled for: g_, or its padded channels (gemmGeometry)
  Choice choice_;
  DictionaryAttr config_;
  DType dtype_;
  std::string elem_, suffix_;
  SmallVector<Value> values_;
  dialect::LaunchOp last_;
  SmallVector<Value> results_;
};

// The forward or data-backward kernel on channels-last values `a` (x or dy) and `b` (w).
std::int64_t ConvLaunches::convKernel(RewriterBase& rewriter, std::int64_t a, std::int64_t b, std::int64_t bias,
                                      Type resultType) {
  if (choice_.algorithm == Algorithm::ImplicitGemm && choice_.splits > 1)
    return splitConvKernels(rewriter, a, b, bias, resultType);
  const bool forward = sig_.direction == ConvDirection::Forward;
  static const char* kNames[] = {"direct", "depthwise", "igemm"};
  const char* alg = kNames[static_cast<int>(choice_.algorithm)];
  const char* header = choice_.algorithm == Algorithm::Direct ? "rudnn/conv/direct.cuh"
                       : choice_.algorithm == Algorithm::Depthwise
                           ? (forward ? "rudnn/conv/depthwise.cuh" : "rudnn/conv/depthwise_backward.cuh")
                           : "rudnn/conv/implicit_gemm.cuh";
  LaunchBuilder l(op_, fmt::format("rudnn_conv_{}_{}_{}{}", forward ? "fprop" : "dgrad", alg, biasTag(bias), suffix_),
                  header, fmt::format("rudnn::conv::conv_{}_{}", forward ? "fprop" : "dgrad", alg));
  std::vector<std::string> args = {elem_};
  if (forward) args.push_back(biasType(bias));
  args.push_back(geometryArg(kg_));
  args.push_back(policyArg(choice_));
  l.templateArgs(args).config(config_).operands(values_);
  const std::int64_t outPixels = forward ? g_.output_pixels() : g_.input_pixels();
  const std::int64_t outChannels = forward ? g_.out_channels : kg_.channels;
  if (resultType)
    l.results({resultType});
  else
    l.results({tempType()}, {l.size({batch(), SizeFactor::constant(outPixels * outChannels)})});
  const std::int64_t out = static_cast<std::int64_t>(values_.size());
  l.buffer(forward ? "x" : "dy", "const " + elem_ + "*", a).buffer("w", "const " + elem_ + "*", b);
  if (forward) {
    if (bias >= 0)
      l.buffer("bias", "const " + biasType(bias) + "*", bias);
    else
      l.nullBuffer("bias", "const void*");
  }
  l.buffer(forward ? "y" : "dx", elem_ + "*", out).sizeParam("n", l.size({batch()}));
  const std::int64_t shared = dialect::conv_config::sharedBytes(choice_, sig_.direction, g_, dtype_);
  switch (choice_.algorithm) {
    case Algorithm::Direct:
      l.grid(l.size({batch(), SizeFactor::constant(outPixels * outChannels)}, choice_.threads))
          .block(choice_.threads)
          .shared(shared);
      break;
    case Algorithm::Depthwise: {
      // Tiles of y (forward) or dx (data backward), in chunks of input channels.
      const auto& t = choice_.depthwise;
      const std::int64_t* ext = forward ? g_.output.data() : g_.input.data();
      const std::int64_t tiles = ext[0] * ((ext[1] + t.tileH - 1) / t.tileH) * ((ext[2] + t.tileW - 1) / t.tileW) *
                                 ((g_.channels + t.channels - 1) / t.channels);
      l.grid(l.size({batch(), SizeFactor::constant(tiles)}))
          .block(conv::shared_memory::depthwise_threads(t.tileH, t.tileW, t.channels))
          .shared(shared);
      break;
    }
    case Algorithm::ImplicitGemm:
      gemmGrid(l, 1);
      l.block(choice_.gemm.threads()).shared(shared);
      break;
  }
  return push(rewriter, l);
}

// Split-K forward / data backward: FP32 split sums [splits, n·pixels, columns], then the ordered
// reduce (which adds the forward's bias).
std::int64_t ConvLaunches::splitConvKernels(RewriterBase& rewriter, std::int64_t a, std::int64_t b, std::int64_t bias,
                                            Type resultType) {
  const bool forward = sig_.direction == ConvDirection::Forward;
  const char* pass = forward ? "fprop" : "dgrad";
  const std::int64_t pixels = forward ? g_.output_pixels() : g_.input_pixels();
  const std::int64_t columns = forward ? g_.out_channels : kg_.channels;
  const std::int64_t splits = choice_.splits;
  LaunchBuilder k(op_, fmt::format("rudnn_conv_{}_igemm_split_{}", pass, suffix_), "rudnn/conv/implicit_gemm.cuh",
                  fmt::format("rudnn::conv::conv_{}_igemm_split", pass));
  k.templateArgs({elem_, geometryArg(kg_), policyArg(choice_)}).config(config_).operands(values_);
  k.results({RankedTensorType::get({ShapedType::kDynamic}, Float32Type::get(op_->getContext()))},
            {k.size({batch(), SizeFactor::constant(splits * pixels * columns)})});
  const std::int64_t partial = static_cast<std::int64_t>(values_.size());
  k.buffer(forward ? "x" : "dy", "const " + elem_ + "*", a)
      .buffer("w", "const " + elem_ + "*", b)
      .buffer("partial", "float*", partial)
      .sizeParam("n", k.size({batch()}))
      .constant("splits", splits);
  gemmGrid(k, splits);
  k.block(choice_.gemm.threads()).shared(dialect::conv_config::sharedBytes(choice_, sig_.direction, g_, dtype_));
  push(rewriter, k);

  return reduceKernel(rewriter, partial, bias, resultType, {batch(), SizeFactor::constant(pixels * columns)}, columns);
}

// The ordered reduce of FP32 split sums [splits, elements] into the result, the forward's bias added
// per column (conv_split_reduce): after the split forward / data backward and the weight backward.
std::int64_t ConvLaunches::reduceKernel(RewriterBase& rewriter, std::int64_t partial, std::int64_t bias,
                                        Type resultType, ArrayRef<SizeFactor> elements, std::int64_t columns) {
  LaunchBuilder r(op_, fmt::format("rudnn_conv_split_reduce_{}_{}", dtype_name(dtype_), biasTag(bias)),
                  "rudnn/conv/implicit_gemm.cuh", "rudnn::conv::conv_split_reduce");
  r.templateArgs({elem_, biasType(bias)}).config(config_).operands(values_);
  if (resultType)
    r.results({resultType});
  else
    r.results({tempType()}, {r.size(elements)});
  const std::int64_t out = static_cast<std::int64_t>(values_.size());
  r.buffer("partial", "const float*", partial);
  if (bias >= 0)
    r.buffer("bias", "const " + biasType(bias) + "*", bias);
  else
    r.nullBuffer("bias", "const void*");
  r.buffer("out", elem_ + "*", out)
      .sizeParam("elements", r.size(elements))
      .constant("columns", columns)
      .constant("splits", choice_.splits)
      .grid(r.size(elements, 256))
      .block(256)
      .shared(0);
  return push(rewriter, r);
}

// The weight-backward kernels on channels-last x and dy; the result is dw [O, taps, C/G].
std::int64_t ConvLaunches::weightGradKernels(RewriterBase& rewriter, std::int64_t x, std::int64_t dy, Type resultType) {
  const std::int64_t weights = kg_.out_channels * kg_.taps() * (kg_.channels / kg_.groups);
  if (choice_.algorithm == Algorithm::Direct) {
    LaunchBuilder l(op_, "rudnn_conv_wgrad_direct_" + suffix_, "rudnn/conv/direct.cuh",
                    "rudnn::conv::conv_wgrad_direct");
    l.templateArgs({elem_, geometryArg(kg_), policyArg(choice_)}).config(config_).operands(values_);
    if (resultType)
      l.results({resultType});
    else
      l.results({tempType()}, {l.size({SizeFactor::constant(weights)})});
    const std::int64_t out = static_cast<std::int64_t>(values_.size());
    l.buffer("x", "const " + elem_ + "*", x)
        .buffer("dy", "const " + elem_ + "*", dy)
        .buffer("dw", elem_ + "*", out)
        .sizeParam("n", l.size({batch()}))
        .grid(l.size({SizeFactor::constant(conv::shared_memory::wgrad_direct_items(
            g_.out_channels, g_.groups, g_.taps() * (g_.channels / g_.groups)))}))
        .block(choice_.threads)
        .shared(dialect::conv_config::sharedBytes(choice_, sig_.direction, g_, dtype_));
    return push(rewriter, l);
  }
  // Split sums FP32 [splits, O, taps·C/G], then the ordered reduce.
  const bool dwise = choice_.algorithm == Algorithm::Depthwise;
  LaunchBuilder w(op_, fmt::format("rudnn_conv_wgrad_{}_{}", dwise ? "depthwise" : "igemm", suffix_),
                  dwise ? "rudnn/conv/depthwise_backward.cuh" : "rudnn/conv/implicit_gemm.cuh",
                  dwise ? "rudnn::conv::conv_wgrad_depthwise" : "rudnn::conv::conv_wgrad_igemm");
  w.templateArgs({elem_, geometryArg(kg_), policyArg(choice_)}).config(config_).operands(values_);
  w.results({RankedTensorType::get({ShapedType::kDynamic}, Float32Type::get(op_->getContext()))},
            {w.size({SizeFactor::constant(choice_.splits * weights)})});
  const std::int64_t partial = static_cast<std::int64_t>(values_.size());
  w.buffer("x", "const " + elem_ + "*", x)
      .buffer("dy", "const " + elem_ + "*", dy)
      .buffer("partial", "float*", partial)
      .sizeParam("n", w.size({batch()}))
      .constant("splits", choice_.splits);
  if (dwise) {
    const auto& t = choice_.depthwise;
    const std::int64_t threads = conv::shared_memory::depthwise_threads(t.tileH, t.tileW, t.channels);
    w.grid(w.size({SizeFactor::constant(
               conv::shared_memory::depthwise_wgrad_items(g_.out_channels, t.channels, choice_.splits))}))
        .block(threads)
        .shared(dialect::conv_config::sharedBytes(choice_, sig_.direction, g_, dtype_));
  } else {
    const auto& t = choice_.gemm;
    const std::int64_t filter = kg_.taps() * kg_.channels;
    w.grid(w.size({SizeFactor::constant(((g_.out_channels + t.bm - 1) / t.bm) * ((filter + t.bn - 1) / t.bn) *
                                        choice_.splits)}))
        .block(t.threads())
        .shared(dialect::conv_config::sharedBytes(choice_, sig_.direction, g_, dtype_));
  }
  push(rewriter, w);

  return reduceKernel(rewriter, partial, -1, resultType, {SizeFactor::constant(weights)}, 1);
}

LogicalResult ConvLaunches::build(RewriterBase& rewriter) {
  const bool cl = sig_.channels_last;
  const std::int64_t cg = g_.channels / g_.groups, taps = g_.taps();
  const bool padded = kg_.channels != g_.channels;  // the implicit GEMM at whole-vector channels
  SmallVector<Value> replacements;
  auto resultType = [&](unsigned i) { return op_->getResult(i).getType(); };
  switch (sig_.direction) {
    case ConvDirection::Forward: {
      const std::int64_t bias = op_->getNumOperands() > 2 ? 2 : -1;
      std::int64_t x = 0, w = 1;
      if (!cl) {
        x = swap(rewriter, 0, true, 0, g_.channels, g_.input_pixels());
        w = swap(rewriter, 1, false, g_.out_channels, cg, taps);
      }
      if (padded) {
        x = copyChannels(rewriter, x, true, g_.input_pixels(), g_.channels, kg_.channels);
        w = copyChannels(rewriter, w, false, g_.out_channels * taps, g_.channels, kg_.channels);
      }
      if (cl) {
        convKernel(rewriter, x, w, bias, resultType(0));
      } else {
        const std::int64_t y = convKernel(rewriter, x, w, bias, {});
        swap(rewriter, y, true, 0, g_.output_pixels(), g_.out_channels, resultType(0));
      }
      replacements.push_back(last_.getResult(0));
      break;
    }
    case ConvDirection::DataBackward: {
      std::int64_t dy = 0, w = 1;
      if (!cl) {
        dy = swap(rewriter, 0, true, 0, g_.out_channels, g_.output_pixels());
        w = swap(rewriter, 1, false, g_.out_channels, cg, taps);
      }
      if (padded) w = copyChannels(rewriter, w, false, g_.out_channels * taps, g_.channels, kg_.channels);
      // dx at the kernel's channels: the op's result when channels-last and unpadded, else a temporary.
      std::int64_t dx = convKernel(rewriter, dy, w, -1, cl && !padded ? resultType(0) : Type{});
      if (padded)
        dx =
            copyChannels(rewriter, dx, true, g_.input_pixels(), kg_.channels, g_.channels, cl ? resultType(0) : Type{});
      if (!cl) swap(rewriter, dx, true, 0, g_.input_pixels(), g_.channels, resultType(0));
      replacements.push_back(last_.getResult(0));
      break;
    }
    case ConvDirection::WeightBackward: {
      std::int64_t x = 0, dy = 1;
      if (!cl) {
        x = swap(rewriter, 0, true, 0, g_.channels, g_.input_pixels());
        dy = swap(rewriter, 1, true, 0, g_.out_channels, g_.output_pixels());
      }
      if (padded) x = copyChannels(rewriter, x, true, g_.input_pixels(), g_.channels, kg_.channels);
      std::int64_t dw = weightGradKernels(rewriter, x, dy, cl && !padded ? resultType(0) : Type{});
      if (padded)
        dw = copyChannels(rewriter, dw, false, g_.out_channels * taps, kg_.channels, g_.channels,
                          cl ? resultType(0) : Type{});
      if (!cl) swap(rewriter, dw, false, g_.out_channels, taps, cg, resultType(0));
      replacements.push_back(last_.getResult(0));
      if (op_->getNumResults() > 1) {
        LaunchBuilder l(op_, fmt::format("rudnn_conv_bias_grad_{}", dtype_name(dtype_)), "rudnn/conv/direct.cuh",
                        "rudnn::conv::conv_bias_grad");
        l.templateArgs({elem_, "rudnn::conv::DirectPolicy<256>"}).config(config_).operands(values_);
        l.results({resultType(1)});
        const std::int64_t out = static_cast<std::int64_t>(values_.size());
        l.buffer("dy", "const " + elem_ + "*", dy)
            .buffer("db", "float*", out)
            .sizeParam("rows", l.size({batch(), SizeFactor::constant(g_.output_pixels())}))
            .constant("channels", g_.out_channels)
            .grid(l.size({SizeFactor::constant(conv::shared_memory::bias_grad_blocks(g_.out_channels))}))
            .block(256)
            .shared(conv::shared_memory::bias_grad(256));
        push(rewriter, l);
        replacements.push_back(last_.getResult(0));
      }
      break;
    }
  }
  rewriter.replaceOp(op_, replacements);
  return success();
}

}  // namespace

LogicalResult lowerConvOpToLaunch(RewriterBase& rewriter, Operation* op) {
  auto sig = dialect::convSignatureOf(op);
  if (!sig) return op->emitOpError() << "is not a convolution op";
  auto config = op->getAttrOfType<DictionaryAttr>(dialect::kKernelConfigAttrName);
  auto choice = dialect::convChoiceOf(config);
  if (!choice) return op->emitOpError() << "has no kernel_config (run rudnn-select-kernel-config first)";
  const ConvGeometry g = contracts::conv_geometry(*sig);
  for (int d = 0; d < 3; ++d)
    if (!contracts::known(g.input[d]) || !contracts::known(g.kernel[d]))
      return op->emitOpError() << "needs static spatial and filter extents to lower";
  if (!contracts::known(g.channels) || !contracts::known(g.out_channels))
    return op->emitOpError() << "needs static channel counts to lower";
  ConvLaunches launches(op, *sig, *choice, config);
  return launches.build(rewriter);
}

}  // namespace rudnn::compiler
