#pragma once
// A PagedPlan of the Python package (rudnn.paged_attention.PagedPlan holds one through rudnn._C): a
// DevicePlan uploaded once for a schedule, the split-KV and deterministic-backward workspaces its
// calls have needed (made once per shape and kept), and an id by which the torch.ops.rudnn.paged_*
// kernels find it (torch's op schemas carry no C++ objects). Free of torch's headers: the nanobind
// module makes plans, the torch kernels use them.
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

class PagedPlanState {
 public:
  PagedPlanState(paged_attention::DevicePlan plan, PlanPlace place, bool deterministic_backward);
  ~PagedPlanState();
  PagedPlanState(const PagedPlanState&) = delete;
  PagedPlanState& operator=(const PagedPlanState&) = delete;

  std::int64_t id() const { return id_; }
  const paged_attention::DevicePlan& plan() const { return plan_; }
  const PlanPlace& place() const { return place_; }
  // The backward's path, read when a backward runs: the ordered, deterministic one, or the atomic one.
  bool deterministic_backward() const { return deterministic_backward_.load(); }
  void set_deterministic_backward(bool on) { deterministic_backward_.store(on); }

  // The split-KV workspace for (heads, value dim, splits) and the ordered backward's for q's heads,
  // made on first use. Both under workspace_mutex(): a split call's partial and merge kernels and the
  // ordered backward's state must not interleave with another thread's call through the same plan.
  Result<paged_attention::SplitWorkspace*, PagedAttentionError> split_workspace(const Tensor& q, std::int64_t heads,
                                                                                std::int64_t value_dim,
                                                                                std::int64_t splits);
  Result<paged_attention::OrderedBackwardWorkspace*, PagedAttentionError> ordered_workspace(const Tensor& q);
  std::mutex& workspace_mutex() { return workspace_mutex_; }

  // The live plan of `id`, or null.
  static std::shared_ptr<PagedPlanState> find(std::int64_t id);
  // Makes a plan and enters it in the registry find() reads.
  static std::shared_ptr<PagedPlanState> make(paged_attention::DevicePlan plan, PlanPlace place,
                                              bool deterministic_backward);

 private:
  paged_attention::DevicePlan plan_;
  PlanPlace place_;
  std::int64_t id_;
  std::atomic<bool> deterministic_backward_;
  std::mutex workspace_mutex_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, paged_attention::SplitWorkspace> splits_;
  std::map<std::int64_t, paged_attention::OrderedBackwardWorkspace> ordered_;
};

}  // namespace rudnn::python
