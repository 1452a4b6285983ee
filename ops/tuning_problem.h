#pragma once
// How autotune times a candidate of any family: the family describes the call's operand slots (the
// shapes of the tuning key, how each input is filled, which slots are outputs) and how to lower a
// config; this one problem makes the random inputs, builds candidates with the same build_plan as
// real calls (so tuned kernels land in the disk cache) and launches them. A family's file then only
// turns a TuningKey into slots and a lowering (ops/tuning/<family>.cpp).
#if RUDNN_HAS_AUTOTUNE
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tuned_plan.h"

namespace rudnn::ops {

struct TuningSlot {
  enum class Role {
    Input,        // one tensor for every input set (weights, offsets, masks: they dominate the bytes)
    PerSetInput,  // a fresh tensor per input set (activations), so L2 rotation sees new data
    Output,       // written by the kernels; one tensor
    Absent,       // an optional operand the call does not have (its slot stays empty)
  };
  Role role = Role::PerSetInput;
  std::string name;  // "rows": names the operand in allocation errors
  Shape shape;
  DType dtype = DType::F32;
  // Element `index`'s value; empty: uniform in [-1, 1).
  std::function<double(std::mt19937_64& rng, std::int64_t index)> fill;
};

class SlotTuningProblem final : public PlanTuningProblem {
 public:
  using Lower = std::function<Result<compiler::LoweredOp, RuntimeError>(const compiler::KernelConfig& config,
                                                                        const compiler::Target& target)>;
  // `slots` in the lowering's slot order.
  static Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                             std::vector<TuningSlot> slots,
                                                                             Lower lower);

  Result<compiler::LoweredOp, RuntimeError> lower(const compiler::KernelConfig& config) const override {
    return lower_(config, target());
  }
  std::size_t input_bytes() const override;
  Status<RuntimeError> make_input_sets(int sets) override;

 private:
  SlotTuningProblem(Device device, Queue queue, std::vector<TuningSlot> slots, Lower lower)
      : PlanTuningProblem(std::move(device), std::move(queue)), slots_(std::move(slots)), lower_(std::move(lower)) {}
  Status<RuntimeError> launch_plan(const Plan& plan, int input_set) override;

  std::vector<TuningSlot> slots_;
  Lower lower_;
  std::vector<std::vector<std::optional<Tensor>>> sets_;  // per set, per slot
};

// The factory registration every tunable family makes from its tuning file.
bool register_tuning_problem(std::string_view family, autotune::ProblemFactory factory);

}  // namespace rudnn::ops
#endif
