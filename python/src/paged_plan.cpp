#include "paged_plan.h"

#include <unordered_map>

namespace rudnn::python {

namespace {

std::mutex g_registry_mutex;
std::unordered_map<std::int64_t, std::weak_ptr<PagedPlanState>> g_registry;
std::int64_t g_next_id = 1;

}  // namespace

std::string PlanPlace::describe() const {
  if (!cuda) return "the host device";
  return device() + " stream " + std::to_string(reinterpret_cast<std::uintptr_t>(stream));
}

PagedPlanState::PagedPlanState(paged_attention::DevicePlan plan, PlanPlace place, bool deterministic_backward)
    : place_(place),
      id_(0),
      deterministic_backward_(deterministic_backward),
      schedule_{std::make_shared<paged_attention::DevicePlan>(std::move(plan)), 1} {}

PagedPlanState::~PagedPlanState() {
  std::lock_guard lock(g_registry_mutex);
  if (auto found = g_registry.find(id_); found != g_registry.end() && found->second.expired()) g_registry.erase(found);
}

std::shared_ptr<PagedPlanState> PagedPlanState::make(paged_attention::DevicePlan plan, PlanPlace place,
                                                     bool deterministic_backward) {
  auto state = std::make_shared<PagedPlanState>(std::move(plan), place, deterministic_backward);
  std::lock_guard lock(g_registry_mutex);
  state->id_ = g_next_id++;
  g_registry.emplace(state->id_, state);
  return state;
}

std::shared_ptr<PagedPlanState> PagedPlanState::find(std::int64_t id) {
  std::lock_guard lock(g_registry_mutex);
  auto found = g_registry.find(id);
  return found == g_registry.end() ? nullptr : found->second.lock();
}

Schedule PagedPlanState::schedule() const {
  std::lock_guard lock(schedule_mutex_);
  return schedule_;
}

void PagedPlanState::replan(paged_attention::DevicePlan plan) {
  auto next = std::make_shared<paged_attention::DevicePlan>(std::move(plan));
  std::lock_guard lock(schedule_mutex_);
  schedule_ = Schedule{std::move(next), schedule_.generation + 1};
}

Status<PagedAttentionError> PagedPlanState::update(const paged_attention::HostPlan& host) {
  // Under the workspace lock, so that the copies never land between a split call's partial and merge
  // kernels or the ordered backward's two; a call without it racing the update is the caller's race.
  std::lock_guard workspaces(workspace_mutex_);
  const Schedule current = schedule();
  if (auto st = current.plan->update(host); !st) return st;
  std::lock_guard lock(schedule_mutex_);
  ++schedule_.generation;
  return {};
}

PagedPlanState::Workspaces& PagedPlanState::workspaces_of(const Schedule& schedule) {
  if (workspaces_.schedule.generation == schedule.generation) return workspaces_;
  if (workspaces_.schedule.plan == schedule.plan) {
    // An in-place update: the split workspaces depend on shapes only and stay — a CUDA graph captured
    // over a split call keeps writing them; the ordered ones hold the old schedule's index.
    workspaces_.schedule = schedule;
    workspaces_.ordered.clear();
  } else {
    workspaces_ = Workspaces{schedule, {}, {}};
  }
  return workspaces_;
}

Result<paged_attention::SplitWorkspace*, PagedAttentionError> PagedPlanState::split_workspace(
    const Schedule& schedule, const Tensor& q, std::int64_t heads, std::int64_t value_dim, std::int64_t splits) {
  auto& kept = workspaces_of(schedule).splits;
  auto key = std::make_tuple(heads, value_dim, splits);
  if (auto found = kept.find(key); found != kept.end()) return &found->second;
  auto made = paged_attention::SplitWorkspace::create(q, schedule.plan->queries(), heads, value_dim, splits);
  if (!made) return made.error();
  return &kept.emplace(key, std::move(made.value())).first->second;
}

Result<paged_attention::OrderedBackwardWorkspace*, PagedAttentionError> PagedPlanState::ordered_workspace(
    const Schedule& schedule, const Tensor& q) {
  auto& kept = workspaces_of(schedule).ordered;
  if (auto found = kept.find(q.dim(1)); found != kept.end()) return &found->second;
  auto made = paged_attention::OrderedBackwardWorkspace::create(*schedule.plan, q);
  if (!made) return made.error();
  return &kept.emplace(q.dim(1), std::move(made.value())).first->second;
}

}  // namespace rudnn::python
