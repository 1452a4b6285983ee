// The launches of the paged ops. Slots: the op's operands in order, then its results, then the
// split workspace (a temporary the public entry may supply: SplitWorkspace).
//
//   paged_attention  q 0, k 1, v 2, page_table 3, lengths 4, sequence_ids 5, positions 6, out 7
//   paged_mla        q 0, qp 1, latent 2, kp 3, page_table 4, lengths 5, sequence_ids 6, positions 7, out 8
//   paged_append     key 0, value 1, key_cache 2, value_cache 3, page_table 4, lengths 5,
//                    sequence_ids 6, positions 7, new_key_cache 8, new_value_cache 9
//
// Head counts and dims are static in the IR and baked in as constants; queries, pages and the
// schedule's extents are runtime sizes. One kernel per (dtype, tile, MLA or not) serves every shape.
#include "Conversion/PagedAttentionToLaunch/PagedAttentionToLaunch.h"

#include <fmt/format.h>

#include "Conversion/LaunchBuilder.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/PagedAttentionOps.h"
#include "rudnn/paged/shared_memory.h"

using namespace mlir;

namespace rudnn::compiler {

namespace {

using SizeFactor = dialect::SizeFactor;
constexpr std::int64_t kMergeThreads = 128;
constexpr std::int64_t kAppendThreads = 128;
// paged_copy's fixed grid: enough blocks to stream a cache at full bandwidth, few enough that the
// in-place case (every block returns at once) costs nothing measurable.
constexpr std::int64_t kCopyBlocks = 1024;
constexpr std::int64_t kCopyThreads = 256;
// The backward's zero and round kernels: 256 threads, 4 elements per thread per grid pass.
constexpr std::int64_t kRoundThreads = 256;

// Operand numbers of one paged attention/MLA op.
struct Slots {
  std::int64_t q, qRope = -1, k, kRope = -1, v = -1, table, lengths, sequenceIds, positions, out;
};

Slots slotsOf(bool mla) {
  if (mla) return {0, 1, 2, 3, -1, 4, 5, 6, 7, 8};
  return {0, -1, 1, -1, 2, 3, 4, 5, 6, 7};
}

}  // namespace

LogicalResult lowerPagedAttentionOpToLaunch(RewriterBase& rewriter, Operation* op) {
  auto sig = dialect::pagedSignatureOf(op);
  if (!sig) return op->emitOpError() << "is not a paged attention op";
  const bool mla = sig->kind == contracts::PagedKind::Mla;
  const contracts::PagedDims d = contracts::paged_dims(*sig);
  for (std::int64_t extent : {d.q_heads, d.kv_heads, d.head_dim, d.rope_dim, d.value_dim})
    if (!contracts::known(extent)) return op->emitOpError() << "needs static head counts and head dims to lower";
  auto tile = dialect::pagedTileOf(op->getAttrOfType<DictionaryAttr>(dialect::kKernelConfigAttrName));
  if (!tile) return op->emitOpError() << "has no kernel_config (run rudnn-select-kernel-config first)";
  const Slots s = slotsOf(mla);
  const std::string elem = dialect::cTypeName(sig->query.dtype), in = "const " + elem + "*";
  const bool split = sig->splits > 1;
  // Five kernels: attention on tensor cores (mma.cuh, or wgmma.cuh on Hopper's warpgroup MMA, with
  // the same parameters: no rope operands), MLA on tensor cores (mla_mma.cuh, or mla_wgmma.cuh) and
  // the plain one (unit.cuh); the MLA and plain kernels share the plain kernel's parameters.
  const bool mma = tile->tensorCore && !mla, mla_mma = tile->tensorCore && mla;
  const char* const mmaKind = tile->wgmma ? "wgmma" : "mma";
  const std::string dtype = std::string(dtype_name(sig->query.dtype));
  const std::string name =
      mma       ? fmt::format("attention_{}_{}_d{}_{}x{}", mmaKind, dtype, d.head_dim, tile->blockRows, tile->blockKeys)
      : mla_mma ? fmt::format("mla_{}_{}_r{}_p{}_{}x{}", mmaKind, dtype, d.head_dim, d.rope_dim, tile->blockRows,
                              tile->blockKeys)
                : fmt::format("{}_{}_{}x{}_l{}_v{}", mla ? "mla" : "attention", dtype, tile->blockRows, tile->blockKeys,
                              tile->rowLanes, tile->maxValueDim);
  MLIRContext* ctx = op->getContext();
  auto config = op->getAttrOfType<DictionaryAttr>(dialect::kKernelConfigAttrName);
  Type outType = op->getResult(0).getType();
  auto workspaceType = RankedTensorType::get({ShapedType::kDynamic}, Float32Type::get(ctx));

  LaunchBuilder unit(op, fmt::format("rudnn_paged_{}{}", name, split ? "_split" : ""),
                     mma       ? fmt::format("rudnn/paged/{}.cuh", mmaKind)
                     : mla_mma ? fmt::format("rudnn/paged/mla_{}.cuh", mmaKind)
                               : "rudnn/paged/unit.cuh",
                     mma       ? fmt::format("rudnn::paged::paged_attention_{}", mmaKind)
                     : mla_mma ? fmt::format("rudnn::paged::paged_mla_{}", mmaKind)
                               : "rudnn::paged::paged_attention_unit");
  std::string policy;
  if (mma && tile->wgmma)
    policy = fmt::format("rudnn::paged::WgmmaPolicy<{}, {}>", d.head_dim, tile->blockKeys);
  else if (mma)
    policy = fmt::format("rudnn::paged::MmaPolicy<{}, {}, {}>", d.head_dim, tile->blockRows, tile->blockKeys);
  else if (mla_mma && tile->wgmma)
    policy = fmt::format("rudnn::paged::MlaWgmmaPolicy<{}, {}>", d.head_dim, d.rope_dim);
  else if (mla_mma)
    policy = fmt::format("rudnn::paged::MlaMmaPolicy<{}, {}, {}>", d.head_dim, d.rope_dim, tile->blockKeys);
  else
    policy = fmt::format("rudnn::paged::UnitPolicy<{}, {}, {}, {}, {}>", tile->blockRows, tile->blockKeys,
                         tile->rowLanes, tile->maxValueDim, mla ? "true" : "false");
  unit.templateArgs({elem, policy}).config(config).operands(op->getOperands());
  // The result: the output (unsplit), or the workspace of splits · Q · Hq · (Dv + 1) floats.
  if (split)
    unit.results({workspaceType}, {unit.size({SizeFactor::constant(sig->splits), SizeFactor::dimOf(s.q, 0),
                                              SizeFactor::constant(d.q_heads * (d.value_dim + 1))})});
  else
    unit.results({outType});
  auto ptr = [&](const char* param, std::int64_t slot, const std::string& type) {
    if (slot >= 0)
      unit.buffer(param, type, slot);
    else
      unit.nullBuffer(param, type);
  };
  // The tensor-core kernel has no rope operands (it serves plain attention only).
  ptr("q", s.q, in);
  if (!mma) ptr("q_rope", s.qRope, in);
  ptr("k", s.k, in);
  if (!mma) ptr("k_rope", s.kRope, in);
  ptr("v", s.v, in);
  ptr("page_table", s.table, "const rudnn::i32*");
  ptr("lengths", s.lengths, "const rudnn::i32*");
  ptr("sequence_ids", s.sequenceIds, "const rudnn::i32*");
  ptr("positions", s.positions, "const rudnn::i32*");
  ptr("out", split ? -1 : s.out, elem + "*");
  ptr("partial", split ? s.out : -1, "float*");  // the unit launch's result slot is the op's first result slot
  unit.sizeParam("queries", unit.size({SizeFactor::dimOf(s.q, 0)}))
      .constant("q_heads", d.q_heads)
      .constant("kv_heads", d.kv_heads)
      .constant("head_dim", d.head_dim);
  if (!mma) unit.constant("rope_dim", d.rope_dim);
  unit.constant("value_dim", d.value_dim)
      .sizeParam("page_size", unit.size({SizeFactor::dimOf(s.k, 1)}))
      .sizeParam("table_stride", unit.size({SizeFactor::dimOf(s.table, 1)}))
      .constant("splits", sig->splits)
      .constant("causal", sig->causal ? 1 : 0)
      .f32("scale", static_cast<float>(sig->scale))
      .grid(unit.size({SizeFactor::dimOf(s.q, 0)}), unit.size({SizeFactor::constant(d.kv_heads * sig->splits)}))
      .block(dialect::paged_config::threads(*tile, dialect::pagedShapeOf(*sig)))
      .shared(dialect::paged_config::sharedBytes(*tile, dialect::pagedShapeOf(*sig)))
      .minBlocks(1);  // __launch_bounds__(threads) alone makes ptxas spill these kernels
  dialect::LaunchOp partials = unit.create(rewriter);
  if (!split) {
    rewriter.replaceOp(op, partials->getResults());
    return success();
  }

  // The merge reads the workspace (slot out) and writes the output (slot out + 1).
  SmallVector<Value> withWorkspace(op->getOperands().begin(), op->getOperands().end());
  withWorkspace.push_back(partials.getResult(0));
  LaunchBuilder merge(op, fmt::format("rudnn_paged_merge_{}", dtype), "rudnn/paged/merge.cuh",
                      "rudnn::paged::paged_merge");
  // One merge kernel per dtype whatever the tile: no config in its source.
  merge.templateArgs({elem, std::to_string(kMergeThreads)})
      .config(DictionaryAttr::get(ctx))
      .operands(withWorkspace)
      .results({outType})
      .buffer("partial", "const float*", s.out)
      .buffer("out", elem + "*", s.out + 1)
      .sizeParam("queries", merge.size({SizeFactor::dimOf(s.q, 0)}))
      .constant("heads", d.q_heads)
      .constant("value_dim", d.value_dim)
      .constant("splits", sig->splits)
      .grid(merge.size({SizeFactor::dimOf(s.q, 0), SizeFactor::constant(d.q_heads)}))
      .block(kMergeThreads)
      .shared(0);
  rewriter.replaceOp(op, merge.create(rewriter)->getResults());
  return success();
}

LogicalResult lowerPagedAppendOpToLaunch(RewriterBase& rewriter, dialect::PagedAppendOp op) {
  auto sig = dialect::pagedAppendSignatureOf(op);
  if (!sig) return op.emitOpError() << "is not a paged append op";
  const std::int64_t hkv = sig->key.shape[1], dim = sig->key.shape[2], dv = sig->value.shape[2];
  for (std::int64_t extent : {hkv, dim, dv})
    if (!contracts::known(extent)) return op.emitOpError() << "needs static head counts and head dims to lower";
  const std::string elem = dialect::cTypeName(sig->key.dtype);
  const std::string dtype = std::string(dtype_name(sig->key.dtype));
  SmallVector<Value> values(op->getOperands().begin(), op->getOperands().end());

  // paged_copy(cache → new cache): a no-op when the entry passes the input as the output.
  auto copy = [&](std::int64_t src, Type type) {
    LaunchBuilder l(op, fmt::format("rudnn_paged_copy_{}", dtype), "rudnn/paged/append.cuh",
                    "rudnn::paged::paged_copy");
    const std::int64_t dst = static_cast<std::int64_t>(values.size());
    l.templateArgs({elem, std::to_string(kCopyThreads)})
        .operands(values)
        .results({type})
        .buffer("src", "const " + elem + "*", src)
        .buffer("dst", elem + "*", dst)
        .sizeParam("elements", l.size({SizeFactor::rows(src), SizeFactor::dimOf(src, 3)}))
        .grid(l.size({SizeFactor::constant(kCopyBlocks)}))
        .block(kCopyThreads)
        .shared(0);
    dialect::LaunchOp launch = l.create(rewriter);
    values.push_back(launch.getResult(0));
    return launch.getResult(0);
  };
  Value newKey = copy(2, op.getNewKeyCache().getType());
  Value newValue = copy(3, op.getNewValueCache().getType());

  LaunchBuilder l(op, fmt::format("rudnn_paged_append_{}", dtype), "rudnn/paged/append.cuh",
                  "rudnn::paged::paged_append");
  l.templateArgs({elem, std::to_string(kAppendThreads)})
      .operands(values)
      .buffer("key", "const " + elem + "*", 0)
      .buffer("value", "const " + elem + "*", 1)
      .buffer("key_cache", elem + "*", 8)
      .buffer("value_cache", elem + "*", 9)
      .buffer("page_table", "const rudnn::i32*", 4)
      .buffer("sequence_ids", "const rudnn::i32*", 6)
      .buffer("positions", "const rudnn::i32*", 7)
      .sizeParam("queries", l.size({SizeFactor::dimOf(0, 0)}))
      .constant("kv_heads", hkv)
      .constant("head_dim", dim)
      .constant("value_dim", dv)
      .sizeParam("page_size", l.size({SizeFactor::dimOf(2, 1)}))
      .sizeParam("table_stride", l.size({SizeFactor::dimOf(4, 1)}))
      .grid(l.size({SizeFactor::dimOf(0, 0), SizeFactor::constant(hkv)}))
      .block(kAppendThreads)
      .shared(0);
  l.create(rewriter);
  rewriter.replaceOp(op, ValueRange{newKey, newValue});
  return success();
}

// The backward. Operands q, [qp,] k, [kp,] v | —, grad_out, page_table, lengths, sequence_ids,
// positions[, history_index, page_order]. A result nobody uses (an output the call did not select)
// is not computed, and its history scratch is not made.
//   atomic   per used history gradient an FP32 scratch (paged_zero), the unit kernel (dq, atomics
//            into the scratch; on tensor cores paged_attention_backward_mma or, for MLA,
//            paged_mla_backward_mma, else the plain paged_attention_backward_unit), per used
//            history gradient paged_round_gradients to the dtype.
//   ordered  the unit kernel (dq and the FP32 row statistics, a temporary the workspace supplies),
//            then the history kernel writing the used history gradients directly
//            (paged_attention_backward_history_mma on tensor cores, else the plain
//            paged_attention_backward_history; MLA: paged_mla_backward_history_mma).
LogicalResult lowerPagedBackwardOpToLaunch(RewriterBase& rewriter, Operation* op) {
  auto sig = dialect::pagedBackwardSignatureOf(op);
  if (!sig) return op->emitOpError() << "is not a paged backward op";
  const bool mla = sig->forward.kind == contracts::PagedKind::Mla;
  const contracts::PagedDims d = contracts::paged_dims(sig->forward);
  for (std::int64_t extent : {d.q_heads, d.kv_heads, d.head_dim, d.rope_dim, d.value_dim})
    if (!contracts::known(extent)) return op->emitOpError() << "needs static head counts and head dims to lower";
  auto config = op->getAttrOfType<DictionaryAttr>(dialect::kKernelConfigAttrName);
  const dialect::paged_config::BackwardConfig backward = dialect::pagedBackwardConfigOf(config);
  const std::int64_t warps = backward.warps;
  const std::int64_t keyLanes = dialect::paged_config::backwardColumnsPerLane(d.head_dim + d.rope_dim),
                     valueLanes = dialect::paged_config::backwardColumnsPerLane(d.value_dim);
  const DType dtype = sig->forward.query.dtype;
  const std::string elem = dialect::cTypeName(dtype), in = "const " + elem + "*";
  MLIRContext* ctx = op->getContext();
  auto f32Vector = RankedTensorType::get({ShapedType::kDynamic}, Float32Type::get(ctx));
  // Operand slots of the op.
  const std::int64_t q = 0, qRope = mla ? 1 : -1, k = mla ? 2 : 1, kRope = mla ? 3 : -1, v = mla ? -1 : 2,
                     gradOut = mla ? 4 : 3, table = gradOut + 1, index = table + 4, order = index + 1;
  const bool ordered = op->getNumOperands() > static_cast<unsigned>(index);
  const bool cacheRows = op->hasAttr("cache_rows"), compact = op->hasAttr("compact_history");
  // Result numbers: the query gradients, then the history gradients (attention dk, dv; MLA dlatent,
  // dk_rope) with the cache operand each has the shape of.
  const SmallVector<unsigned> queryResults = mla ? SmallVector<unsigned>{0, 1} : SmallVector<unsigned>{0};
  const std::int64_t histories[2][2] = {{k, mla ? 2 : 1}, {mla ? kRope : v, mla ? 3 : 2}};
  auto used = [&](std::int64_t result) { return !op->getResult(static_cast<unsigned>(result)).use_empty(); };
  const bool anyHistory = used(histories[0][1]) || used(histories[1][1]);
  SmallVector<Value> values(op->getOperands().begin(), op->getOperands().end());
  DenseMap<std::int64_t, Value> outputs;  // result number → its value

  // Atomic: the zeroed FP32 scratch of each used history gradient.
  std::int64_t scratch[2] = {-1, -1};
  for (int h = 0; h < 2 && !ordered; ++h) {
    if (!used(histories[h][1])) continue;
    const std::int64_t cache = histories[h][0];
    LaunchBuilder l(op, "rudnn_paged_zero", "rudnn/paged/backward.cuh", "rudnn::paged::paged_zero");
    l.templateArgs({std::to_string(kRoundThreads)})
        .config(DictionaryAttr::get(ctx))
        .operands(values)
        .results({f32Vector}, {l.size({SizeFactor::rows(cache), SizeFactor::dimOf(cache, 3)})})
        .buffer("out", "float*", static_cast<std::int64_t>(values.size()))
        .sizeParam("elements", l.size({SizeFactor::rows(cache), SizeFactor::dimOf(cache, 3)}))
        .grid(l.size({SizeFactor::rows(cache), SizeFactor::dimOf(cache, 3)}, kRoundThreads * 4))
        .block(kRoundThreads)
        .shared(0);
    scratch[h] = static_cast<std::int64_t>(values.size());
    values.push_back(l.create(rewriter).getResult(0));
  }

  // The unit kernel: dq (and dq_rope) when used; atomic, the history atomics; ordered, the row
  // statistics. On tensor cores backward_mma.cuh (attention) or mla_backward_mma.cuh (MLA), with the
  // same parameters, else backward.cuh.
  const bool mma = backward.tensorCore;
  const bool mlaMma = mma && mla;
  constexpr std::int64_t kMmaKeys = dialect::paged_config::kBackwardMmaKeys;
  std::string name, header = "rudnn/paged/backward.cuh", function = "rudnn::paged::paged_attention_backward_unit",
                    policy;
  if (mlaMma) {
    name = fmt::format("rudnn_paged_mla_backward_mma_{}_r{}_p{}", dtype_name(dtype), d.value_dim, d.rope_dim);
    header = "rudnn/paged/mla_backward_mma.cuh";
    function = "rudnn::paged::paged_mla_backward_mma";
    policy = fmt::format("rudnn::paged::MlaBackwardMmaPolicy<{}, {}>", d.value_dim, d.rope_dim);
  } else if (mma) {
    name = fmt::format("rudnn_paged_attention_backward_mma_{}_d{}", dtype_name(dtype), d.head_dim);
    header = "rudnn/paged/backward_mma.cuh";
    function = "rudnn::paged::paged_attention_backward_mma";
    policy = fmt::format("rudnn::paged::BackwardMmaPolicy<{}, {}>", d.head_dim, kMmaKeys);
  } else {
    name = fmt::format("rudnn_paged_{}_backward_{}_w{}_k{}_v{}", mla ? "mla" : "attention", dtype_name(dtype), warps,
                       keyLanes, valueLanes);
    policy = fmt::format("rudnn::paged::BackwardPolicy<{}, {}, {}, {}>", warps, keyLanes, valueLanes,
                         mla ? "true" : "false");
  }
  LaunchBuilder unit(op, name, header, function);
  unit.templateArgs({elem, policy}).config(config ? config : DictionaryAttr::get(ctx)).operands(values);
  std::int64_t next = static_cast<std::int64_t>(values.size());
  SmallVector<Type> unitTypes;
  SmallVector<Attribute> unitSizes;
  std::int64_t dqSlot[2] = {-1, -1}, statsSlot = -1;
  for (unsigned r : queryResults)
    if (used(r)) {
      dqSlot[r] = next++;
      unitTypes.push_back(op->getResult(r).getType());
      unitSizes.push_back(unit.size({SizeFactor::rows(r == 0 ? q : qRope), SizeFactor::dimOf(r == 0 ? q : qRope, 2)}));
    }
  if (ordered) {
    statsSlot = next++;
    unitTypes.push_back(f32Vector);
    unitSizes.push_back(unit.size({SizeFactor::rows(q), SizeFactor::constant(2)}));
  }
  unit.results(unitTypes, unitSizes);
  auto ptr = [](LaunchBuilder& l, const char* param, std::int64_t slot, const std::string& type) {
    if (slot >= 0)
      l.buffer(param, type, slot);
    else
      l.nullBuffer(param, type);
  };
  ptr(unit, "q", q, in);
  ptr(unit, "q_rope", qRope, in);
  ptr(unit, "k", k, in);
  ptr(unit, "k_rope", kRope, in);
  ptr(unit, "v", v, in);
  ptr(unit, "grad_out", gradOut, in);
  ptr(unit, "page_table", table, "const rudnn::i32*");
  ptr(unit, "lengths", table + 1, "const rudnn::i32*");
  ptr(unit, "sequence_ids", table + 2, "const rudnn::i32*");
  ptr(unit, "positions", table + 3, "const rudnn::i32*");
  ptr(unit, "dq", dqSlot[0], elem + "*");
  ptr(unit, "dq_rope", dqSlot[1], elem + "*");
  ptr(unit, "dk", scratch[0], "float*");
  ptr(unit, "dk_rope", mla ? scratch[1] : -1, "float*");
  ptr(unit, "dv", mla ? -1 : scratch[1], "float*");
  // The statistics only feed the history kernel: a dq-only ordered call keeps the workspace's slot
  // (the entry's slot layout does not change) but writes nothing there.
  ptr(unit, "row_stats", anyHistory ? statsSlot : -1, "float*");
  unit.sizeParam("queries", unit.size({SizeFactor::dimOf(q, 0)}))
      .constant("q_heads", d.q_heads)
      .constant("kv_heads", d.kv_heads)
      .constant("head_dim", d.head_dim)
      .constant("rope_dim", d.rope_dim)
      .constant("value_dim", d.value_dim)
      .sizeParam("page_size", unit.size({SizeFactor::dimOf(k, 1)}))
      .sizeParam("table_stride", unit.size({SizeFactor::dimOf(table, 1)}))
      .constant("causal", sig->forward.causal ? 1 : 0)
      .f32("scale", static_cast<float>(sig->forward.scale))
      // Tensor cores: one block per (query row, kv head) item, 4 warps (MLA: 8); plain: one warp per
      // (row, head).
      .grid(mma ? unit.size({SizeFactor::dimOf(q, 0), SizeFactor::constant(d.kv_heads)})
                : unit.size({SizeFactor::dimOf(q, 0), SizeFactor::constant(d.q_heads)}, warps))
      .block(mlaMma ? 256
             : mma  ? 128
                    : 32 * warps)
      .shared(mlaMma ? shared_memory::paged_mla_backward_mma(d.value_dim, d.rope_dim)
              : mma  ? shared_memory::paged_backward_mma(kMmaKeys, d.head_dim)
                     : 0)
      .minBlocks(1);  // as the forward's unit kernel: __launch_bounds__(threads) alone makes ptxas spill
  dialect::LaunchOp main = unit.create(rewriter);
  {
    unsigned i = 0;
    for (unsigned r : queryResults)
      if (used(r)) outputs[r] = main.getResult(i++);
  }
  for (Value r : main.getResults()) values.push_back(r);

  if (!ordered) {
    // The T gradients from their scratch.
    for (int h = 0; h < 2; ++h) {
      if (scratch[h] < 0) continue;
      const std::int64_t cache = histories[h][0];
      LaunchBuilder l(op, fmt::format("rudnn_paged_round_gradients_{}", dtype_name(dtype)), "rudnn/paged/backward.cuh",
                      "rudnn::paged::paged_round_gradients");
      l.templateArgs({elem, std::to_string(kRoundThreads)})
          .config(DictionaryAttr::get(ctx))
          .operands(values)
          .results({op->getResult(static_cast<unsigned>(histories[h][1])).getType()})
          .buffer("scratch", "const float*", scratch[h])
          .buffer("out", elem + "*", static_cast<std::int64_t>(values.size()))
          .sizeParam("elements", l.size({SizeFactor::rows(cache), SizeFactor::dimOf(cache, 3)}))
          .grid(l.size({SizeFactor::rows(cache), SizeFactor::dimOf(cache, 3)}, kRoundThreads * 4))
          .block(kRoundThreads)
          .shared(0);
      Value rounded = l.create(rewriter).getResult(0);
      values.push_back(rounded);
      outputs[histories[h][1]] = rounded;
    }
  } else if (anyHistory) {
    // The history gradients key by key, in the schedule's order: on tensor cores
    // paged_attention_backward_history_mma or paged_mla_backward_history_mma (their items always
    // staged: cache_rows selects nothing), else the plain kernel.
    const char* compactSuffix = compact ? "_compact" : "";
    const char* compactArg = compact ? "true" : "false";
    std::string historyName, historyHeader = "rudnn/paged/backward.cuh",
                             historyFunction = "rudnn::paged::paged_attention_backward_history", historyPolicy;
    if (mlaMma) {
      historyName = fmt::format("rudnn_paged_mla_backward_history_mma_{}_r{}_p{}{}", dtype_name(dtype), d.value_dim,
                                d.rope_dim, compactSuffix);
      historyHeader = "rudnn/paged/mla_backward_mma.cuh";
      historyFunction = "rudnn::paged::paged_mla_backward_history_mma";
      historyPolicy = fmt::format("rudnn::paged::MlaHistoryMmaPolicy<{}, {}, {}>", d.value_dim, d.rope_dim, compactArg);
    } else if (mma) {
      historyName = fmt::format("rudnn_paged_attention_backward_history_mma_{}_d{}{}", dtype_name(dtype), d.head_dim,
                                compactSuffix);
      historyHeader = "rudnn/paged/backward_mma.cuh";
      historyFunction = "rudnn::paged::paged_attention_backward_history_mma";
      historyPolicy = fmt::format("rudnn::paged::HistoryMmaPolicy<{}, {}>", d.head_dim, compactArg);
    } else {
      historyName =
          fmt::format("rudnn_paged_{}_backward_history_{}_w{}_k{}_v{}{}{}", mla ? "mla" : "attention",
                      dtype_name(dtype), warps, keyLanes, valueLanes, cacheRows ? "_rows" : "", compactSuffix);
      historyPolicy = fmt::format("rudnn::paged::HistoryPolicy<{}, {}, {}, {}, {}, {}>", warps, keyLanes, valueLanes,
                                  mla ? "true" : "false", cacheRows ? "true" : "false", compactArg);
    }
    LaunchBuilder h(op, historyName, historyHeader, historyFunction);
    h.templateArgs({elem, historyPolicy}).config(config ? config : DictionaryAttr::get(ctx)).operands(values);
    std::int64_t slot = static_cast<std::int64_t>(values.size());
    SmallVector<Type> types;
    std::int64_t historySlot[2] = {-1, -1};
    for (int i = 0; i < 2; ++i)
      if (used(histories[i][1])) {
        historySlot[i] = slot++;
        types.push_back(op->getResult(static_cast<unsigned>(histories[i][1])).getType());
      }
    h.results(types);
    ptr(h, "q", q, in);
    ptr(h, "q_rope", qRope, in);
    ptr(h, "k", k, in);
    ptr(h, "k_rope", kRope, in);
    ptr(h, "v", v, in);
    ptr(h, "grad_out", gradOut, in);
    ptr(h, "lengths", table + 1, "const rudnn::i32*");
    ptr(h, "positions", table + 3, "const rudnn::i32*");
    ptr(h, "row_stats", statsSlot, "const float*");
    ptr(h, "history_index", index, "const rudnn::i32*");
    ptr(h, "page_order", compact ? order : -1, "const rudnn::i32*");
    ptr(h, "dk", historySlot[0], elem + "*");
    ptr(h, "dk_rope", mla ? historySlot[1] : -1, elem + "*");
    ptr(h, "dv", mla ? -1 : historySlot[1], elem + "*");
    h.sizeParam("queries", h.size({SizeFactor::dimOf(q, 0)}))
        .sizeParam("sequences", h.size({SizeFactor::dimOf(table + 1, 0)}))
        .sizeParam("pages", h.size({SizeFactor::dimOf(k, 0)}))
        .constant("q_heads", d.q_heads)
        .constant("kv_heads", d.kv_heads)
        .constant("head_dim", d.head_dim)
        .constant("rope_dim", d.rope_dim)
        .constant("value_dim", d.value_dim)
        .sizeParam("page_size", h.size({SizeFactor::dimOf(k, 1)}))
        .constant("causal", sig->forward.causal ? 1 : 0)
        .f32("scale", static_cast<float>(sig->forward.scale))
        .grid(h.size({SizeFactor::dimOf(k, 0), SizeFactor::constant(d.kv_heads)}))
        .block(mlaMma ? 256
               : mma  ? 128
                      : 32 * warps)
        .shared(mlaMma ? shared_memory::paged_mla_history_mma(d.value_dim, d.rope_dim)
                : mma  ? shared_memory::paged_history_mma(d.head_dim)
                       : shared_memory::paged_history(keyLanes, valueLanes, cacheRows))
        .minBlocks(1);
    dialect::LaunchOp history = h.create(rewriter);
    unsigned i = 0;
    for (int j = 0; j < 2; ++j)
      if (historySlot[j] >= 0) outputs[histories[j][1]] = history.getResult(i++);
  }
  for (unsigned r = 0; r < op->getNumResults(); ++r)
    if (used(r)) rewriter.replaceAllUsesWith(op->getResult(r), outputs.lookup(r));
  rewriter.eraseOp(op);
  return success();
}

}  // namespace rudnn::compiler
