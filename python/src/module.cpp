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

// The schedule validated on the host and uploaded to `place`'s queue: (error or None, plan or None).
std::tuple<std::optional<ErrorTuple>, std::shared_ptr<PagedPlanState>> make_plan(
    bool cuda, int ordinal, std::uintptr_t stream, std::int64_t page_size, std::int64_t pages, const Tables& tables,
    const Ints& lengths, const Ints& sequence_ids, const Ints& positions, bool deterministic_backward) {
  nb::gil_scoped_release unlocked;
  auto failed = [](const Error& e) { return std::make_tuple(std::optional(to_tuple(e)), nullptr); };
  const PlanPlace place{.cuda = cuda, .ordinal = ordinal, .stream = reinterpret_cast<void*>(stream)};
  std::optional<Queue> queue;
  if (!cuda) {
    queue = Queue::default_queue(Device::host());
  } else {
    auto device = Device::cuda(ordinal);
    if (!device) return failed(Error(device.error()));
    auto wrapped = Queue::wrap(*device, place.stream);
    if (!wrapped) return failed(Error(wrapped.error()));
    queue = std::move(wrapped.value());
  }
  auto host = paged_attention::HostPlan::create(page_size, pages, tables, lengths, sequence_ids, positions);
  if (!host) return failed(Error(host.error()));
  // upload() takes its device and queue from a query tensor; any tensor on the queue will do.
  auto anchor = Tensor::empty({1}, DType::F32, *queue);
  if (!anchor) return failed(Error(anchor.error()));
  auto plan = paged_attention::DevicePlan::upload(*host, *anchor);
  if (!plan) return failed(Error(plan.error()));
  if (!cuda) {
    if (auto synced = queue->synchronize(); !synced) return failed(Error(synced.error()));
  }
  return {std::nullopt, PagedPlanState::make(std::move(plan.value()), place, deterministic_backward)};
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "rudnn's bindings for the PyTorch adapter (use the rudnn package, not this module)";
  // Plans still referenced at interpreter exit (by a module global) are not leaks.
  nb::set_leak_warnings(false);

  m.def("set_error_classes", [](nb::dict families) { set_error_classes(families.ptr()); });

  nb::class_<PagedPlanState>(m, "PagedPlan")
      .def_prop_ro("id", &PagedPlanState::id)
      .def_prop_ro("queries", [](const PagedPlanState& p) { return p.plan().queries(); })
      .def_prop_ro("sequences", [](const PagedPlanState& p) { return p.plan().sequences(); })
      .def_prop_ro("page_size", [](const PagedPlanState& p) { return p.plan().page_size(); })
      .def_prop_ro("pages", [](const PagedPlanState& p) { return p.plan().pages(); })
      .def_prop_rw("deterministic_backward", &PagedPlanState::deterministic_backward,
                   &PagedPlanState::set_deterministic_backward);
  m.def("paged_plan", &make_plan);

  m.def("cuda_device_count", [] { return Device::cuda_device_count(); });
}
