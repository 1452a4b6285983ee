#include "tuning_problem.h"

#if RUDNN_HAS_AUTOTUNE
#include <array>
#include <span>

namespace rudnn::ops {

Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> SlotTuningProblem::make(const Device& device,
                                                                                       std::vector<TuningSlot> slots,
                                                                                       Lower lower) {
  auto queue = Queue::create(device);
  if (!queue.ok()) return queue.error();
  return std::unique_ptr<autotune::TuningProblem>(
      new SlotTuningProblem(device, queue.value(), std::move(slots), std::move(lower)));
}

std::size_t SlotTuningProblem::input_bytes() const {
  std::size_t bytes = 0;
  for (const auto& s : slots_)
    if (s.role == TuningSlot::Role::Input || s.role == TuningSlot::Role::PerSetInput)
      bytes += static_cast<std::size_t>(checked_byte_count(s.shape, s.dtype).value_or(0));
  return bytes;
}

Status<RuntimeError> SlotTuningProblem::make_input_sets(int sets) {
  std::mt19937_64 rng(0x5eed);  // fixed: values do not change a kernel's time
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  auto make = [&](const TuningSlot& s) -> Result<Tensor, RuntimeError> {
    if (s.role == TuningSlot::Role::Output) return Tensor::empty(s.shape, s.dtype, queue_);
    std::int64_t index = 0;
    return random_tensor(s.name.c_str(), s.shape, s.dtype, [&] { return s.fill ? s.fill(rng, index++) : unit(rng); });
  };
  sets_.assign(static_cast<std::size_t>(sets), std::vector<std::optional<Tensor>>(slots_.size()));
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const TuningSlot& s = slots_[i];
    if (s.role == TuningSlot::Role::Absent) continue;
    for (int set = 0; set < sets; ++set) {
      if (set > 0 && s.role != TuningSlot::Role::PerSetInput) {
        sets_[static_cast<std::size_t>(set)][i] = sets_[0][i];  // shared: the same buffer
        continue;
      }
      auto t = make(s);
      if (!t.ok()) return t.error();
      sets_[static_cast<std::size_t>(set)][i].emplace(std::move(t.value()));
    }
  }
  return queue_.synchronize();
}

Status<RuntimeError> SlotTuningProblem::launch_plan(const Plan& plan, int input_set) {
  std::array<OperandView, 16> views{};
  const auto& set = sets_[static_cast<std::size_t>(input_set)];
  for (std::size_t i = 0; i < set.size() && i < views.size(); ++i)
    if (set[i]) views[i] = {set[i]->data(), &set[i]->shape(), &set[i]->strides()};
  return run_plan(plan, queue_, std::span(views.data(), set.size()));
}

bool register_tuning_problem(std::string_view family, autotune::ProblemFactory factory) {
  autotune::register_problem_factory(std::string(family), std::move(factory));
  return true;
}

}  // namespace rudnn::ops
#endif
