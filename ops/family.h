#pragma once
// One registration per op family in the ops layer. A family tells, from its own file
// (ops/families/<family>.cpp), how the graph runner runs its ops (rudnn::graph::Graph, rudnn-run)
// and which kernels the runtime may build for one of them (rudnn-precompile); the runner and the
// tools look families up by op name and never name one. docs/architecture.md, "Adding an op family".
#include <any>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/ADT/DenseMap.h>
#include <mlir/IR/Operation.h>
#include <mlir/IR/Value.h>

#include "contracts/normalization.h"
#include "jit.h"  // launch_over_shared_memory
#include "rudnn/compiler/kernel_launch.h"
#include "rudnn/compiler/pipeline.h"
#include "rudnn/error.h"
#include "rudnn/tensor.h"

namespace rudnn::ops {

// The values of one graph run: a tensor for every value bound so far, and the objects a family
// passes from one of its ops to the next (an MoE routing plan, a dispatch), keyed by a value.
class GraphValues {
 public:
  // The tensor of `v`: an argument of @main or a result of an earlier op (MLIR's dominance rule,
  // checked by the verifier, guarantees it is bound).
  const Tensor& operator[](mlir::Value v) const { return *tensors_.lookup(v); }
  // The tensor of an optional operand, or nothing when the op has none.
  std::optional<Tensor> optional(mlir::Value v) const {
    if (!v) return std::nullopt;
    return (*this)[v];
  }
  // Binds an op's result, checked against the type the IR declares for it: an entry that disagrees
  // with the verifier is an error at the op that produced it, not a wrong result downstream.
  std::optional<RuntimeError> bind(mlir::Value result, Tensor t);
  // Binds an argument of @main (already checked against the function type).
  void bind_argument(mlir::Value argument, Tensor t);

  template <class T>
  void attach(mlir::Value v, std::shared_ptr<T> object) {
    objects_[v] = std::move(object);
  }
  // The object of type T attached to `v`, or null (none, or one of another type).
  template <class T>
  std::shared_ptr<T> attached(mlir::Value v) const {
    auto it = objects_.find(v);
    if (it == objects_.end()) return nullptr;
    const auto* p = std::any_cast<std::shared_ptr<T>>(&it->second);
    return p ? *p : nullptr;
  }

 private:
  llvm::DenseMap<mlir::Value, Tensor*> tensors_;
  std::vector<std::unique_ptr<Tensor>> storage_;
  llvm::DenseMap<mlir::Value, std::any> objects_;
};

// `e`, raised by the entry that ran `op`, with the op named in its detail.
RuntimeError op_error(const Error& e, mlir::Operation& op);

// Unsupported naming `op`'s `argument`: a value that must come from another op of this graph (the
// routing an MoE dispatch starts from, the dispatch a combine reads, ...) came from elsewhere.
RuntimeError foreign_value(mlir::Operation& op, const char* argument, const char* expected);

// One op of a graph as a contract sees it: shape (a dynamic extent is contracts::kDynamic) and
// dtype. The one MLIR value → operand conversion of the ops layer and the tools.
contracts::NormOperand operand_of(mlir::Value v);

// ShapeMismatch naming `where` and `name` unless every dim of `v` listed in `dims` (negative:
// counted from the end) is static: the kernels are specialized on those extents.
std::optional<RuntimeError> require_static(mlir::Value v, std::initializer_list<int> dims, const std::string& where,
                                           const char* name);

// `lower(request, target)` once per config: the heuristic (no config) first, then each of
// `candidates` forced: what a family's `kernels` returns for most ops. A candidate the target
// cannot launch (more shared memory than it has) is left out, as the autotuner prunes it there;
// the heuristic's lowering is always kept (rudnn-precompile refuses one that does not fit).
template <class Request, class Lower>
Result<std::vector<compiler::LoweredOp>, RuntimeError> lower_configs(
    Request request, const std::vector<compiler::KernelConfig>& candidates, const compiler::Target& target,
    Lower lower) {
  std::vector<std::optional<compiler::KernelConfig>> configs = {std::nullopt};
  configs.insert(configs.end(), candidates.begin(), candidates.end());
  std::vector<compiler::LoweredOp> out;
  for (auto& config : configs) {
    request.config = config;
    auto lowered = lower(request, target);
    if (!lowered.ok()) return lowered.error();
    if (config && launch_over_shared_memory(*lowered, target.limits.shared_memory_per_block_optin)) continue;
    out.push_back(std::move(lowered.value()));
  }
  return out;
}

struct OpFamily {
  std::string name;                   // "normalization"
  std::vector<std::string> op_names;  // "rudnn.layer_norm", ...
  // Runs `op` through the family's public entry with operands from `values`, binding its results.
  std::optional<RuntimeError> (*run)(mlir::Operation& op, GraphValues& values) = nullptr;
  // Every lowering the runtime may make for `op` on `target`: the heuristic config of each variant
  // the entry picks at call time (aligned or not, each strategy or load bucket) and, with
  // `with_candidates`, every config of the op's autotune search space. Dims the op declares
  // dynamic stay dynamic; `where` names the op in errors ("file.mlir: rudnn.rms_norm #2").
  Result<std::vector<compiler::LoweredOp>, RuntimeError> (*kernels)(mlir::Operation& op, const compiler::Target& target,
                                                                    bool with_candidates,
                                                                    const std::string& where) = nullptr;
};

// Called once per family at load time (a static initializer in the family's file).
bool register_family(OpFamily family);
// The family of `op_name` ("rudnn.rms_norm"), or null.
const OpFamily* family_for(std::string_view op_name);
// Every registered op name, sorted: for messages that list what a tool accepts.
std::vector<std::string> registered_op_names();
// "rudnn.attention, rudnn.combine, ...".
std::string registered_op_list();

}  // namespace rudnn::ops
