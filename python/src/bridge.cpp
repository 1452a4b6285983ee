#include "bridge.h"

#include <string>

namespace rudnn::python {

namespace {
constexpr int kLastDType = static_cast<int>(DType::U8);
}

std::optional<Tensor> Views::operator()(const TensorArg& arg, const char* argument) {
  if (error_) return std::nullopt;
  const auto& [address, shape, code] = arg;
  if (code < 0 || code > kLastDType) {
    error_ = Error(ErrorKind::UnsupportedDType, argument, "a rudnn dtype", "code " + std::to_string(code));
    return std::nullopt;
  }
  auto view = Tensor::view(reinterpret_cast<void*>(address), shape, {}, static_cast<DType>(code), queue_);
  if (!view) {
    const Error& e = view.error();
    // The view's own argument ("data", "shape") is this call's tensor `argument`.
    error_ = Error(e.kind(), argument, e.expected(), e.actual(), e.argument() + ": " + e.detail());
    return std::nullopt;
  }
  return std::move(view.value());
}

std::optional<Tensor> Views::operator()(const OptionalTensor& arg, const char* argument) {
  if (!arg) return std::nullopt;
  return (*this)(*arg, argument);
}

ErrorTuple to_tuple(const char* family, const Error& error) {
  return {family,           std::string(error_kind_name(error.kind())),
          error.argument(), error.expected(),
          error.actual(),   error.detail(),
          error.message()};
}

std::optional<Queue> open_queue(const Place& place, std::optional<Error>& error) {
  const auto& [kind, ordinal, stream] = place;
  if (kind == 0) return Queue::default_queue(Device::host());
  auto device = Device::cuda(ordinal);
  if (!device) {
    error = Error(device.error());
    return std::nullopt;
  }
  auto queue = Queue::wrap(*device, reinterpret_cast<void*>(stream));
  if (!queue) {
    error = Error(queue.error());
    return std::nullopt;
  }
  return std::move(queue.value());
}

}  // namespace rudnn::python
