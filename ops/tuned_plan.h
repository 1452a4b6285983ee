#pragma once
// The cold path every tunable op family shares: lower (handing the compiler the autotune provider
// unless autotune is off), build the plan, and remember which variant it runs and where that came
// from (rudnn::autotune::last_choice()). Without the autotune component only the heuristic decides.
#include <memory>
#include <vector>

#include "env.h"
#include "jit.h"
#include "log.h"
#if RUDNN_HAS_AUTOTUNE
#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/tuner.h"
#endif

namespace rudnn::ops {

// A cached plan and, with autotune, the variant it runs. Every tunable family caches these.
struct TunedPlan : Plan {
#if RUDNN_HAS_AUTOTUNE
  std::shared_ptr<const autotune::Choice> choice;
#endif
};

// `lower(provider)` lowers the call (provider: null, or the autotune provider to hand the compiler).
template <class Lower>
Result<std::shared_ptr<const TunedPlan>, RuntimeError> make_tuned_plan(const Device& device,
                                                                       [[maybe_unused]] bool ask_autotune,
                                                                       Lower lower) {
  // Before lowering: an undocumented RUDNN_AUTOTUNE must not be tuned with (build_plan checks too).
  if (auto env = runtime::check_environment(); !env.ok()) return env.error();
  compiler::ConfigProvider* provider_ptr = nullptr;
#if RUDNN_HAS_AUTOTUNE
  std::optional<autotune::AutotuneProvider> provider;
  if (ask_autotune) {
    provider.emplace(device, autotune::mode());
    provider_ptr = &*provider;
  }
#endif
  Result<compiler::LoweredOp, RuntimeError> lowered = lower(provider_ptr);
  if (!lowered.ok()) return lowered.error();
  auto built = build_plan(device, lowered.value());
  if (!built.ok()) return built.error();
  auto plan = std::make_shared<TunedPlan>();
  static_cast<Plan&>(*plan) = *built.value();
  const auto& first = plan->kernels.front().launch;
  std::string source = "heuristic", key;
#if RUDNN_HAS_AUTOTUNE
  auto choice = std::make_shared<autotune::Choice>();
  choice->op = plan->op_name;
  choice->kernel = first.entry;
  choice->config = first.config.to_string();
  if (provider && provider->answer()) choice->source = autotune::to_source(provider->answer()->source);
  if (provider && provider->key()) choice->key = provider->key()->to_string();
  source = autotune::source_name(choice->source);
  key = choice->key;
  plan->choice = std::move(choice);
#endif
  runtime::log_info("plan {} on {}: {} ({}; {})", key.empty() ? plan->op_name : key, device.to_string(), first.entry,
                    first.config.to_string(), source);
  return std::shared_ptr<const TunedPlan>(std::move(plan));
}

// Notes the plan's choice for last_choice() (a no-op without the autotune component).
inline void note_choice([[maybe_unused]] const Plan& plan) {
#if RUDNN_HAS_AUTOTUNE
  autotune::note_choice(static_cast<const TunedPlan&>(plan).choice);
#endif
}

#if RUDNN_HAS_AUTOTUNE
// What every family's autotune problem shares: its device, the queue candidates are timed on, and
// candidates built by the same build_plan as real calls (so tuned kernels land in the disk cache)
// and launched through the family's launch_plan. A family adds make(), lower(), its inputs, and
// launch_plan. Kernels that write only their outputs need nothing restored between launches.
class PlanTuningProblem : public autotune::TuningProblem {
 public:
  const Device& device() const override { return device_; }
  const Queue& queue() const override { return queue_; }
  compiler::Target target() const override { return target_for(device_); }

  Result<std::unique_ptr<autotune::TimedCandidate>, RuntimeError> prepare(const compiler::KernelConfig& config,
                                                                          const compiler::LoweredOp& lowered) override {
    auto plan = build_plan(device_, lowered);
    if (!plan.ok()) return plan.error();
    return std::unique_ptr<autotune::TimedCandidate>(new Candidate(*this, plan.value(), config.to_string()));
  }

 protected:
  PlanTuningProblem(Device device, Queue queue) : device_(std::move(device)), queue_(std::move(queue)) {}
  // A tensor of `shape` on queue() filled by `draw()`, or the error: the shape comes from a tuning
  // key (rows anchored from a user's --rows), so its size is checked and an allocation failure is an
  // OutOfMemory naming the operand rather than an exception.
  template <class Draw>
  Result<Tensor, RuntimeError> random_tensor(const char* operand, const Shape& shape, DType dtype, Draw draw) const {
    const auto count = checked_byte_count(shape, dtype) ? checked_element_count(shape) : std::nullopt;
    if (!count)
      return RuntimeError(ErrorKind::InvalidValue, operand, "a tuning shape whose size fits in 64 bits",
                          shape_to_string(shape));
    std::vector<double> values;
    try {
      values.resize(static_cast<std::size_t>(*count));
    } catch (const std::exception&) {
      return RuntimeError(ErrorKind::OutOfMemory, operand,
                          std::to_string(*count * static_cast<std::int64_t>(sizeof(double))) + " bytes of host memory",
                          "allocation failure");
    }
    for (double& x : values) x = draw();
    return Tensor::upload(HostData::from_f64(shape, dtype, values), queue_);
  }

  // Queues `plan`'s kernels on queue() reading input copy `input_set`.
  virtual Status<RuntimeError> launch_plan(const Plan& plan, int input_set) = 0;

  Device device_;
  Queue queue_;

 private:
  class Candidate final : public autotune::TimedCandidate {
   public:
    Candidate(PlanTuningProblem& p, std::shared_ptr<const Plan> plan, std::string name)
        : p_(p), plan_(std::move(plan)), name_(std::move(name)) {}
    const std::string& name() const override { return name_; }
    Status<RuntimeError> launch(int input_set) override { return p_.launch_plan(*plan_, input_set); }

   private:
    PlanTuningProblem& p_;
    std::shared_ptr<const Plan> plan_;
    std::string name_;
  };
};
#endif

}  // namespace rudnn::ops
