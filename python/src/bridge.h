#pragma once
// What every binding of the Python package shares (docs/pytorch.md). A torch tensor crosses as
// (address, shape, dtype code) — the Python side has made it contiguous and 16-byte aligned, and
// checked that every tensor of a call is on one device — and becomes a rudnn::Tensor::view on the
// call's queue: the host device's default queue for CPU tensors, torch's current CUDA stream
// (Queue::wrap) for CUDA tensors. A call returns nothing on success, or the library's error as a
// tuple that the Python side raises as the family's rudnn.Error subclass; no C++ exception and no
// crash reaches the interpreter.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <deque>
#include <exception>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "rudnn/device.h"
#include "rudnn/error.h"
#include "rudnn/tensor.h"

namespace rudnn::python {

namespace nb = nanobind;

// (address, shape, rudnn::DType as its number)
using TensorArg = std::tuple<std::uintptr_t, std::vector<std::int64_t>, int>;
using OptionalTensor = std::optional<TensorArg>;
// Where a call runs: (0 host / 1 cuda, ordinal, the CUstream torch runs on; 0 is the legacy default stream)
using Place = std::tuple<int, int, std::uintptr_t>;
// (family, kind, argument, expected, actual, detail, message)
using ErrorTuple =
    std::tuple<std::string, std::string, std::string, std::string, std::string, std::string, std::string>;
using Outcome = std::optional<ErrorTuple>;

// The rudnn::Tensor views of one call's torch tensors, on its queue. The first failure is kept and
// named after the argument; later conversions return nullopt.
class Views {
 public:
  explicit Views(Queue queue) : queue_(std::move(queue)) {}
  const Queue& queue() const { return queue_; }
  const std::optional<Error>& error() const { return error_; }

  std::optional<Tensor> operator()(const TensorArg& arg, const char* argument);
  // nullopt when absent (and then error() is unchanged).
  std::optional<Tensor> operator()(const OptionalTensor& arg, const char* argument);

 private:
  Queue queue_;
  std::optional<Error> error_;
};

ErrorTuple to_tuple(const char* family, const Error& error);

// Opens the call's queue, runs `body(views)` without the GIL, waits for the host device's queue (a
// CPU tensor is ready when a torch op returns), and turns every failure into an ErrorTuple.
// `body` returns std::optional<Error>: nullopt on success.
std::optional<Queue> open_queue(const Place& place, std::optional<Error>& error);

template <class Body>
Outcome run(const char* family, const Place& place, Body&& body) {
  nb::gil_scoped_release unlocked;
  try {
    std::optional<Error> error;
    std::optional<Queue> queue = open_queue(place, error);
    if (!queue) return to_tuple(family, *error);
    Views views(*queue);
    error = body(views);
    if (!error && views.error()) error = views.error();
    if (error) return to_tuple(family, *error);
    if (std::get<0>(place) == 0) {
      if (auto synced = queue->synchronize(); !synced) return to_tuple(family, synced.error());
    }
    return std::nullopt;
  } catch (const std::exception& e) {
    return to_tuple(family, Error(ErrorKind::Internal, "call", "no exception", e.what()));
  }
}

// The status of a library call as the body's result.
template <class E>
std::optional<Error> failure(const Status<E>& status) {
  if (status) return std::nullopt;
  return Error(status.error());
}

// Each family's bindings (one file each).
void bind_normalization(nb::module_& m);
void bind_attention(nb::module_& m);
void bind_convolution(nb::module_& m);
void bind_gated_delta(nb::module_& m);
void bind_moe(nb::module_& m);
void bind_paged_attention(nb::module_& m);

}  // namespace rudnn::python
