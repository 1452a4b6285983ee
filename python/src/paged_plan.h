#pragma once
// A PagedPlan of the Python package (rudnn.paged_attention.PagedPlan holds one through rudnn._C): the
// DevicePlan of the current schedule, the split-KV and deterministic-backward workspaces its calls have
// needed (made once per shape and kept), and an id by which the torch.ops.rudnn.paged_* kernels find
// it (torch's op schemas carry no C++ objects). Free of torch's headers: the nanobind module makes and
// re-plans plans, the torch kernels use them.
//
// replan() swaps in a new schedule under the same id — what a serving loop does every step, and what
// keeps a torch.compile'd graph (in which the id is a constant) valid across steps; update() writes it
// into the current DevicePlan's own buffers instead (DevicePlan::update), which is what a CUDA graph
// captured over the plan's calls needs. Each schedule has a generation; a call works on one snapshot of
// it from start to end (after an update, on buffers that changed under it: the caller's race), and a
// backward checks that the schedule is still its forward's.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "rudnn/paged_attention.h"

namespace rudnn::python {

// Where a plan's calls run: the host device (cuda false), or a GPU and the CUstream current when the
// plan was made (a plan's metadata lives on that stream's queue).
struct PlanPlace {
  bool cuda = false;
  int ordinal = 0;
  void* stream = nullptr;
  bool operator==(const PlanPlace&) const = default;
  std::string device() const { return cuda ? "cuda:" + std::to_string(ordinal) : "cpu"; }
  std::string describe() const;  // the device, and the stream on a GPU
};

// One schedule of a plan: its DevicePlan (kept alive by every call that uses it) and its generation.
struct Schedule {
  std::shared_ptr<paged_attention::DevicePlan> plan;
  std::uint64_t generation = 0;
};

class PagedPlanState {
 public:
  PagedPlanState(paged_attention::DevicePlan plan, PlanPlace place, bool deterministic_backward);
  ~PagedPlanState();
  PagedPlanState(const PagedPlanState&) = delete;
  PagedPlanState& operator=(const PagedPlanState&) = delete;

  std::int64_t id() const { return id_; }
  const PlanPlace& place() const { return place_; }
  // The current schedule, and the swap to a new one (uploaded on this plan's place).
  Schedule schedule() const;
  void replan(paged_attention::DevicePlan plan);
  // The new schedule written into the current plan's buffers (its extents: DevicePlan::update), as the
  // next generation; on an error the schedule and generation stay.
  Status<PagedAttentionError> update(const paged_attention::HostPlan& host);

  // The backward's path, read when a backward runs: the ordered, deterministic one, or the atomic one.
  bool deterministic_backward() const { return deterministic_backward_.load(); }
  void set_deterministic_backward(bool on) { deterministic_backward_.store(on); }

  // The split-KV workspace for (heads, value dim, splits) and the ordered backward's for q's heads, of
  // `schedule`, made on first use. Both under workspace_mutex(): a split call's partial and merge
  // kernels and the ordered backward's state must not interleave with another thread's call through
  // the same plan. The kept workspaces belong to one schedule; a call with another starts them over
  // (after an in-place update only the ordered ones: the split ones depend on shapes alone).
  Result<paged_attention::SplitWorkspace*, PagedAttentionError> split_workspace(const Schedule& schedule,
                                                                                const Tensor& q, std::int64_t heads,
                                                                                std::int64_t value_dim,
                                                                                std::int64_t splits);
  Result<paged_attention::OrderedBackwardWorkspace*, PagedAttentionError> ordered_workspace(const Schedule& schedule,
                                                                                            const Tensor& q);
  std::mutex& workspace_mutex() { return workspace_mutex_; }

  // The live plan of `id`, or null.
  static std::shared_ptr<PagedPlanState> find(std::int64_t id);
  // Makes a plan and enters it in the registry find() reads.
  static std::shared_ptr<PagedPlanState> make(paged_attention::DevicePlan plan, PlanPlace place,
                                              bool deterministic_backward);

 private:
  // The workspaces of one schedule (which they keep alive: they were made for its metadata).
  struct Workspaces {
    Schedule schedule;
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, paged_attention::SplitWorkspace> splits;
    std::map<std::int64_t, paged_attention::OrderedBackwardWorkspace> ordered;
  };
  Workspaces& workspaces_of(const Schedule& schedule);

  PlanPlace place_;
  std::int64_t id_;
  std::atomic<bool> deterministic_backward_;
  mutable std::mutex schedule_mutex_;
  Schedule schedule_;
  std::mutex workspace_mutex_;
  Workspaces workspaces_;
};

}  // namespace rudnn::python
