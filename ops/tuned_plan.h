#pragma once
// The cold path every tunable op family shares: lower (handing the compiler the autotune provider
// unless autotune is off), build the plan, and remember which variant it runs and where that came
// from (rudnn::autotune::last_choice()). Without the autotune component only the heuristic decides.
#include <memory>

#include "jit.h"
#include "log.h"
#if RUDNN_HAS_AUTOTUNE
#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
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
Result<std::shared_ptr<const TunedPlan>, RuntimeError> make_tuned_plan(const Device& device, [[maybe_unused]] bool ask_autotune,
                                                                       Lower lower) {
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

}  // namespace rudnn::ops
