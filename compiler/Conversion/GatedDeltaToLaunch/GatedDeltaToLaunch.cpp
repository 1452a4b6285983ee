// One launch, one block per (b, h, slice of state columns), block-strided:
//   rudnn::gated_delta::gated_delta_recurrent<T, G, RecurrentPolicy<warps, rows_per_thread>>(
//       q, k, v, beta, log_decay, initial_state, output, final_state, batch, heads, seq, key_dim,
//       value_dim, query_scale)                                   32 columns per block
//   rudnn::gated_delta::gated_delta_chunked<T, G, ChunkPolicy<threads, columns>>(
//       ..., value_dim, chunk, query_scale)                       `columns` per block
// grid.x = B · H · ceil(V / columns); the initial state is a null pointer when absent (zeros).
#include "Conversion/GatedDeltaToLaunch/GatedDeltaToLaunch.h"

#include <fmt/format.h>

#include "Conversion/LaunchBuilder.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"

using namespace mlir;

namespace rudnn::compiler {

LogicalResult lowerGatedDeltaOpToLaunch(RewriterBase& rewriter, dialect::GatedDeltaOp op) {
  using SizeFactor = dialect::SizeFactor;
  DictionaryAttr config = op.getKernelConfigAttr();
  if (!config) return op.emitOpError() << "has no kernel_config (run rudnn-select-kernel-config first)";
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  const std::int64_t keyDim = q.getDimSize(3), valueDim = v.getDimSize(3);
  if (ShapedType::isDynamic(keyDim) || ShapedType::isDynamic(valueDim))
    return op.emitOpError() << "needs static key_dim and value_dim to lower";
  const DType dtype = *dialect::toDType(q.getElementType());
  const DType gtype = *dialect::toDType(cast<RankedTensorType>(op.getBeta().getType()).getElementType());
  const std::string elem = dialect::cTypeName(dtype), gelem = dialect::cTypeName(gtype);
  const std::int64_t chunk = op.getChunkSizeAttr().getInt();

  std::string entry, function, policy;
  std::int64_t threads = 0, columns = 0, shared = 0;
  if (chunk == 0) {
    auto tile = *dialect::recurrentTileOf(config);
    threads = tile.threads();
    columns = 32;
    shared = tile.sharedBytes();
    policy = fmt::format("rudnn::gated_delta::RecurrentPolicy<{}, {}>", tile.warps, tile.rowsPerThread);
    function = "rudnn::gated_delta::gated_delta_recurrent";
    entry = fmt::format("rudnn_gated_delta_recurrent_{}_{}_w{}_r{}", dtype_name(dtype), dtype_name(gtype), tile.warps,
                        tile.rowsPerThread);
  } else {
    auto tile = *dialect::chunkTileOf(config);
    threads = tile.threads;
    columns = tile.columns;
    shared = contracts::chunk_shared_bytes(chunk, keyDim, tile.columns, tile.tensorCore);
    policy = fmt::format("rudnn::gated_delta::ChunkPolicy<{}, {}, {}>", tile.threads, tile.columns,
                         tile.tensorCore ? "true" : "false");
    function = "rudnn::gated_delta::gated_delta_chunked";
    entry = fmt::format("rudnn_gated_delta_chunked_{}_{}_t{}_c{}{}", dtype_name(dtype), dtype_name(gtype), tile.threads,
                        tile.columns, tile.tensorCore ? "_tc" : "");
  }
  const char* header = chunk == 0 ? "rudnn/gated_delta/recurrent.cuh" : "rudnn/gated_delta/chunked.cuh";

  // Launch numbering: q 0, k 1, v 2, beta 3, log_decay 4, [initial_state 5], then output, final_state.
  SmallVector<Value> operands = {op.getQuery(), op.getKey(), op.getValue(), op.getBeta(), op.getLogDecay()};
  if (op.getInitialState()) operands.push_back(op.getInitialState());
  const std::int64_t out = static_cast<std::int64_t>(operands.size());
  LaunchBuilder launch(op, entry, header, function);
  launch.templateArgs({elem, gelem, policy})
      .config(config)
      .operands(operands)
      .results(op->getResultTypes())
      .buffer("query", "const " + elem + "*", 0)
      .buffer("key", "const " + elem + "*", 1)
      .buffer("value", "const " + elem + "*", 2)
      .buffer("beta", "const " + gelem + "*", 3)
      .buffer("log_decay", "const " + gelem + "*", 4);
  if (op.getInitialState())
    launch.buffer("initial_state", "const float*", 5);
  else
    launch.nullBuffer("initial_state", "const float*");
  launch.buffer("output", elem + "*", out)
      .buffer("final_state", "float*", out + 1)
      .sizeParam("batch", launch.size({SizeFactor::dimOf(0, 0)}))
      .sizeParam("heads", launch.size({SizeFactor::dimOf(0, 1)}))
      .sizeParam("seq", launch.size({SizeFactor::dimOf(0, 2)}))
      .constant("key_dim", keyDim)
      .constant("value_dim", valueDim);
  if (chunk > 0) launch.constant("chunk", chunk);
  launch.f32("query_scale", op.getQueryScale().convertToFloat())
      .grid(launch.size(
          {SizeFactor::dimOf(0, 0), SizeFactor::dimOf(0, 1), SizeFactor::constant((valueDim + columns - 1) / columns)}))
      .block(threads)
      .shared(shared);
  // The chunked kernel's register budget: 128 per thread (two 256-thread blocks or four of 128 per
  // SM, as many as its shared memory allows at C = 32, K = 128). __launch_bounds__(threads) alone
  // lets ptxas aim at ~80 for 256 threads on sm_80, where the tensor-core kernels spill.
  if (chunk > 0) launch.minBlocks(65536 / (threads * 128));
  rewriter.replaceOp(op, launch.create(rewriter)->getResults());
  return success();
}

}  // namespace rudnn::compiler
