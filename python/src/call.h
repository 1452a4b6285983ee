#pragma once
// How a torch.ops.rudnn kernel calls the library (docs/pytorch.md). The kernels are C++ functions
// registered with torch's dispatcher (TORCH_LIBRARY_IMPL), so a call from Python crosses no Python
// code of ours: torch parses the arguments, releases the GIL and calls the kernel, which reads and
// writes the tensors' storage in place through rudnn::Tensor views on the call's queue — the host
// device's default queue for CPU tensors, torch's current CUDA stream (Queue::wrap) for CUDA ones.
//
// A rejected call raises the family's rudnn.Error subclass (python/rudnn/errors.py) through torch's
// python_error, which torch re-raises unchanged; nothing has been written then.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/csrc/Exceptions.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rudnn/device.h"
#include "rudnn/error.h"
#include "rudnn/tensor.h"

namespace rudnn::python {

// Raises `error` as `family`'s rudnn.Error subclass (the classes are installed by rudnn._C's
// set_error_classes when the package loads).
[[noreturn]] void raise(const char* family, const Error& error);

// One kernel call: its family (for errors), its device — every tensor argument must be on the
// first one's — and queue, and the contiguous copies made for it.
class Call {
 public:
  using Named = std::pair<const char*, const at::Tensor*>;  // (argument, tensor or null when absent)
  Call(const char* family, std::initializer_list<Named> tensors);

  const char* family() const { return family_; }
  const c10::Device& device() const { return device_; }
  // torch's current stream on the call's GPU (its CUstream; null for the legacy default stream and
  // on the host).
  void* stream() const { return stream_; }
  const Queue& queue() const { return queue_; }

  // The view of an input: a rudnn dtype, made contiguous and 16-byte aligned (a copy, kept for the
  // call, when it is not). `as` reads an integer tensor of the same width as that dtype (an int32
  // tensor holding U32 indices); any other tensor is UnsupportedDType naming the argument.
  Tensor in(const at::Tensor& tensor, const char* argument, std::optional<DType> as = std::nullopt);
  std::optional<Tensor> in(const std::optional<at::Tensor>& tensor, const char* argument);
  // A new output from torch's allocator (its caching allocator on CUDA) on the call's device, NaN
  // (0xFF bytes) when RUDNN_TORCH_POISON=1, so an element the library forgot cannot pass for a result.
  at::Tensor empty(at::IntArrayRef shape, c10::ScalarType dtype) const;
  // The view of a tensor written in place (an output from empty(), or a cache the op mutates).
  Tensor out(const at::Tensor& tensor, const char* argument, std::optional<DType> as = std::nullopt);

  [[noreturn]] void fail(const Error& error) const { raise(family_, error); }
  template <class E>
  void check(const Status<E>& status) const {
    if (!status) fail(Error(status.error()));
  }
  template <class T, class E>
  T take(Result<T, E>&& result) const {
    if (!result) fail(Error(result.error()));
    return std::move(result.value());
  }
  // The end of a successful call: waits for the host device's queue (a CPU tensor is ready when a
  // torch op returns); a CUDA call stays queued on torch's stream.
  void finish() const;

 private:
  // rudnn's dtype of `tensor` (`as` when given), or the UnsupportedDType error naming `argument`.
  DType dtype_for(const at::Tensor& tensor, const char* argument, std::optional<DType> as) const;
  Tensor view(const at::Tensor& tensor, const char* argument, DType dtype);

  const char* family_;
  c10::Device device_;
  void* stream_;
  Queue queue_;
  std::vector<at::Tensor> kept_;
};

// A kernel as registered: a C++ exception escaping it (std::bad_alloc from a container, ...) becomes
// the family's Internal error. The library's own errors are values, raised by Call; torch's
// python_error (a raised rudnn.Error) and c10::Error pass through unchanged.
//   m.impl("rms_norm", guarded<kFamily, &rms_norm>);   with  constexpr char kFamily[] = "...";
template <const char* Family, auto Kernel>
struct Guarded;
template <const char* Family, class R, class... Args, R (*Kernel)(Args...)>
struct Guarded<Family, Kernel> {
  static R call(Args... args) {
    try {
      return Kernel(std::forward<Args>(args)...);
    } catch (const python_error&) {
      throw;
    } catch (const c10::Error&) {
      throw;
    } catch (const std::exception& e) {
      raise(Family, Error(ErrorKind::Internal, "call", "no C++ exception", e.what()));
    }
  }
};
template <const char* Family, auto Kernel>
constexpr auto guarded = &Guarded<Family, Kernel>::call;

// A library enum's value from a string option, or the family's InvalidValue naming `argument`.
template <class Enum>
using Choice = std::pair<const char*, Enum>;
template <class Enum>
Enum choose(const Call& call, const char* argument, std::string_view value,
            std::initializer_list<Choice<Enum>> choices) {
  std::string names;
  for (const auto& [name, chosen] : choices) {
    if (value == name) return chosen;
    names += names.empty() ? name : std::string(", ") + name;
  }
  call.fail(Error(ErrorKind::InvalidValue, argument, "one of " + names, "'" + std::string(value) + "'"));
}

}  // namespace rudnn::python
