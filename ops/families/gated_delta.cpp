// The gated delta rule (rudnn.gated_delta: chunk_size 0 is the recurrence, else chunked) in the
// graph runner and rudnn-precompile.
#include "family.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/gated_delta.h"

namespace rudnn::ops {
namespace {

std::optional<RuntimeError> run(mlir::Operation& op, GraphValues& values) {
  auto gd = llvm::cast<dialect::GatedDeltaOp>(op);
  gated_delta::GatedDeltaInput in{values[gd.getQuery()],
                                  values[gd.getKey()],
                                  values[gd.getValue()],
                                  values[gd.getBeta()],
                                  values[gd.getLogDecay()],
                                  values.optional(gd.getInitialState()),
                                  gd.getQueryScale().convertToFloat()};
  const std::int64_t chunk = gd.getChunkSizeAttr().getInt();
  auto r = chunk > 0 ? gated_delta::chunk_gated_delta_rule(in, chunk) : gated_delta::gated_delta_rule(in);
  if (!r.ok()) return op_error(r.error(), op);
  if (auto e = values.bind(gd.getOutput(), r->output)) return e;
  return values.bind(gd.getFinalState(), r->final_state);
}

Result<std::vector<compiler::LoweredOp>, RuntimeError> kernels(mlir::Operation& op, const compiler::Target& target,
                                                               bool with_candidates, const std::string& where) {
  auto gd = llvm::cast<dialect::GatedDeltaOp>(op);
  // B, H and T are dynamic in the lowered IR; the key and value dims are the kernel's.
  if (auto e = require_static(gd.getQuery(), {3}, where, "query")) return *e;
  if (auto e = require_static(gd.getValue(), {3}, where, "value")) return *e;
  compiler::GatedDeltaRequest request;
  auto& sig = request.signature;
  sig.query = operand_of(gd.getQuery());
  sig.key = operand_of(gd.getKey());
  sig.value = operand_of(gd.getValue());
  sig.beta = operand_of(gd.getBeta());
  sig.log_decay = operand_of(gd.getLogDecay());
  if (gd.getInitialState()) sig.initial_state = operand_of(gd.getInitialState());
  sig.query_scale = gd.getQueryScale().convertToFloat();
  sig.chunk_size = gd.getChunkSizeAttr().getInt();
  return lower_configs(request,
                       with_candidates
                           ? compiler::gated_delta_variants(sig.chunk_size > 0, sig.query.shape[3], sig.query.dtype)
                           : std::vector<compiler::KernelConfig>{},
                       target, &compiler::lower_gated_delta);
}

const bool kRegistered =
    register_family({"gated delta", {dialect::GatedDeltaOp::getOperationName().str()}, &run, &kernels});

}  // namespace
}  // namespace rudnn::ops
