// rudnn._C: what the Python package needs beside the torch.ops.rudnn kernels (which register
// themselves with torch's dispatcher when this module loads; call.h): the error classes the kernels
// raise, and paged plans (docs/pytorch.md).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "errors.h"
#include "paged_plan.h"
#include "rudnn/device.h"
#include "rudnn/error.h"
#include "rudnn/tensor.h"

namespace nb = nanobind;
using namespace rudnn;
using namespace rudnn::python;

namespace {

// (family, kind, argument, expected, actual, detail, message), raised by rudnn.errors.raise_if_failed.
using ErrorTuple =
    std::tuple<std::string, std::string, std::string, std::string, std::string, std::string, std::string>;

ErrorTuple to_tuple(const Error& error) {
  return {"paged_attention", std::string(error_kind_name(error.kind())),
          error.argument(),  error.expected(),
          error.actual(),    error.detail(),
          error.message()};
}

using Tables = std::vector<std::vector<std::int32_t>>;
using Ints = std::vector<std::int64_t>;

// The schedule validated on the host and uploaded to `place`'s queue.
Result<paged_attention::DevicePlan, Error> upload(const PlanPlace& place, std::int64_t page_size, std::int64_t pages,
                                                  const Tables& tables, const Ints& lengths, const Ints& sequence_ids,
                                                  const Ints& positions) {
  std::optional<Queue> queue;
  if (!place.cuda) {
    queue = Queue::default_queue(Device::host());
  } else {
    auto device = Device::cuda(place.ordinal);
    if (!device) return Error(device.error());
    auto wrapped = Queue::wrap(*device, place.stream);
    if (!wrapped) return Error(wrapped.error());
    queue = std::move(wrapped.value());
  }
  auto host = paged_attention::HostPlan::create(page_size, pages, tables, lengths, sequence_ids, positions);
  if (!host) return Error(host.error());
  // upload() takes its device and queue from a query tensor; any tensor on the queue will do.
  auto anchor = Tensor::empty({1}, DType::F32, *queue);
  if (!anchor) return Error(anchor.error());
  auto plan = paged_attention::DevicePlan::upload(*host, *anchor);
  if (!plan) return Error(plan.error());
  if (!place.cuda) {
    if (auto synced = queue->synchronize(); !synced) return Error(synced.error());
  }
  return std::move(plan.value());
}

// (error or None, plan or None).
std::tuple<std::optional<ErrorTuple>, std::shared_ptr<PagedPlanState>> make_plan(
    bool cuda, int ordinal, std::uintptr_t stream, std::int64_t page_size, std::int64_t pages, const Tables& tables,
    const Ints& lengths, const Ints& sequence_ids, const Ints& positions, bool deterministic_backward) {
  nb::gil_scoped_release unlocked;
  const PlanPlace place{.cuda = cuda, .ordinal = ordinal, .stream = reinterpret_cast<void*>(stream)};
  auto plan = upload(place, page_size, pages, tables, lengths, sequence_ids, positions);
  if (!plan) return {to_tuple(plan.error()), nullptr};
  return {std::nullopt, PagedPlanState::make(std::move(plan.value()), place, deterministic_backward)};
}

// A new schedule for `state` (its page size, page count and place), uploaded as a new plan or, with
// `in_place`, written into the current plan's buffers: error or None; on an error the plan keeps its
// schedule.
std::optional<ErrorTuple> replan(PagedPlanState& state, const Tables& tables, const Ints& lengths,
                                 const Ints& sequence_ids, const Ints& positions, bool in_place) {
  nb::gil_scoped_release unlocked;
  const Schedule current = state.schedule();
  const std::int64_t page_size = current.plan->page_size(), pages = current.plan->pages();
  if (in_place) {
    auto host = paged_attention::HostPlan::create(page_size, pages, tables, lengths, sequence_ids, positions);
    if (!host) return to_tuple(host.error());
    if (auto st = state.update(*host); !st) return to_tuple(st.error());
    return std::nullopt;
  }
  auto plan = upload(state.place(), page_size, pages, tables, lengths, sequence_ids, positions);
  if (!plan) return to_tuple(plan.error());
  state.replan(std::move(plan.value()));
  return std::nullopt;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "rudnn's bindings for the PyTorch adapter (use the rudnn package, not this module)";
  // Plans still referenced at interpreter exit (by a module global) are not leaks.
  nb::set_leak_warnings(false);

  m.def("set_error_classes", [](nb::dict families) { set_error_classes(families.ptr()); });

  nb::class_<PagedPlanState>(m, "PagedPlan")
      .def_prop_ro("id", &PagedPlanState::id)
      .def_prop_ro("queries", [](const PagedPlanState& p) { return p.schedule().plan->queries(); })
      .def_prop_ro("sequences", [](const PagedPlanState& p) { return p.schedule().plan->sequences(); })
      .def_prop_ro("page_size", [](const PagedPlanState& p) { return p.schedule().plan->page_size(); })
      .def_prop_ro("pages", [](const PagedPlanState& p) { return p.schedule().plan->pages(); })
      .def_prop_ro("generation", [](const PagedPlanState& p) { return p.schedule().generation; })
      .def_prop_rw("deterministic_backward", &PagedPlanState::deterministic_backward,
                   &PagedPlanState::set_deterministic_backward);
  m.def("paged_plan", &make_plan);
  m.def("paged_replan", &replan);

  m.def("cuda_device_count", [] { return Device::cuda_device_count(); });
}
