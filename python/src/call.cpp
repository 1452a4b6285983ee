#include "call.h"

#include <ATen/ops/empty.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/Exceptions.h>

#include <cstdlib>
#include <exception>

#include "errors.h"

namespace rudnn::python {

namespace {

// RUDNN_TORCH_POISON=1 (the tests): outputs start as NaN.
const bool kPoison = [] {
  const char* value = std::getenv("RUDNN_TORCH_POISON");
  return value && std::string(value) == "1";
}();

// torch's name of a dtype, as Python prints it without "torch.".
std::string torch_dtype_name(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::UInt16: return "uint16";
    case c10::ScalarType::UInt32: return "uint32";
    case c10::ScalarType::UInt64: return "uint64";
    case c10::ScalarType::ComplexHalf: return "complex32";
    case c10::ScalarType::ComplexFloat: return "complex64";
    case c10::ScalarType::ComplexDouble: return "complex128";
    case c10::ScalarType::Float8_e4m3fn: return "float8_e4m3fn";
    case c10::ScalarType::Float8_e5m2: return "float8_e5m2";
    default: return c10::toString(type);
  }
}

c10::Device device_of(const char* family, std::initializer_list<Call::Named> tensors) {
  const char* first = nullptr;
  std::optional<c10::Device> device;
  for (const auto& [name, tensor] : tensors) {
    if (!tensor || !tensor->defined()) continue;
    if (!device) {
      device = tensor->device();
      first = name;
    } else if (tensor->device() != *device) {
      raise(family, Error(ErrorKind::DeviceMismatch, name,
                          "the device of " + std::string(first) + " (" + device->str() + ")", tensor->device().str()));
    }
  }
  if (!device) return c10::Device(c10::DeviceType::CPU);
  if (!device->is_cpu() && !device->is_cuda())
    raise(family, Error(ErrorKind::Unsupported, first, "a CPU or CUDA tensor", device->str()));
  if (device->is_cuda() && !device->has_index())
    return c10::Device(c10::DeviceType::CUDA, c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getDevice().index());
  return *device;
}

// torch's current stream on a GPU (the legacy default stream's handle is null).
void* stream_of(const c10::Device& device) {
  if (device.is_cpu()) return nullptr;
  return c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(device).native_handle();
}

// The host device's default queue, or `stream` on the tensors' GPU (Queue::wrap takes null as the
// legacy default stream).
Queue queue_of(const char* family, const c10::Device& device, void* stream) {
  if (device.is_cpu()) return Queue::default_queue(Device::host());
  auto gpu = Device::cuda(device.index());
  if (!gpu) raise(family, Error(gpu.error()));
  auto queue = Queue::wrap(*gpu, stream);
  if (!queue) raise(family, Error(queue.error()));
  return std::move(queue.value());
}

}  // namespace

void raise(const char* family, const Error& error) {
  // Under the GIL: the exception object from the family's class, set as Python's current error and
  // carried by python_error through torch's dispatcher (and autograd engine) to the caller.
  pybind11::gil_scoped_acquire gil;
  PyObject* type = error_class(family);
  const std::string kind(error_kind_name(error.kind()));
  PyObject* value =
      PyObject_CallFunction(type, "ssssss", kind.c_str(), error.argument().c_str(), error.expected().c_str(),
                            error.actual().c_str(), error.detail().c_str(), error.message().c_str());
  if (value) {
    PyErr_SetObject(type, value);
    Py_DECREF(value);
  }
  python_error raised;
  raised.persist();
  throw raised;
}

// rudnn's dtype of a torch dtype (bool is stored as bytes: a mask); nullopt when rudnn has none.
static std::optional<DType> dtype_of(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float: return DType::F32;
    case c10::ScalarType::Half: return DType::F16;
    case c10::ScalarType::BFloat16: return DType::BF16;
    case c10::ScalarType::Int: return DType::I32;
    case c10::ScalarType::Long: return DType::I64;
    case c10::ScalarType::Byte:
    case c10::ScalarType::Bool: return DType::U8;
    case c10::ScalarType::Float8_e4m3fn: return DType::FP8E4M3;
    case c10::ScalarType::UInt32: return DType::U32;
    default: return std::nullopt;
  }
}

Call::Call(const char* family, std::initializer_list<Named> tensors)
    : family_(family),
      device_(device_of(family, tensors)),
      stream_(stream_of(device_)),
      queue_(queue_of(family, device_, stream_)) {}

DType Call::dtype_for(const at::Tensor& tensor, const char* argument, std::optional<DType> as) const {
  if (as) {
    // An integer tensor of the same width read as another integer dtype (int32 holding u32 indices).
    if (!c10::isIntegralType(tensor.scalar_type(), /*includeBool=*/false) ||
        static_cast<std::size_t>(tensor.element_size()) != dtype_size(*as))
      fail(Error(ErrorKind::UnsupportedDType, argument,
                 "a " + std::to_string(8 * dtype_size(*as)) + "-bit integer tensor (read as " +
                     std::string(dtype_name(*as)) + ")",
                 torch_dtype_name(tensor.scalar_type())));
    return *as;
  }
  std::optional<DType> dtype = dtype_of(tensor.scalar_type());
  if (!dtype)
    fail(Error(ErrorKind::UnsupportedDType, argument, "a rudnn dtype (float32, float16, bfloat16, ...)",
               torch_dtype_name(tensor.scalar_type())));
  return *dtype;
}

Tensor Call::in(const at::Tensor& tensor, const char* argument, std::optional<DType> as) {
  const DType dtype = dtype_for(tensor, argument, as);  // before any copy
  const at::Tensor* prepared = &tensor;
  if (!tensor.is_contiguous() || reinterpret_cast<std::uintptr_t>(tensor.data_ptr()) % Tensor::kViewAlignment) {
    kept_.push_back(tensor.clone(at::MemoryFormat::Contiguous));
    prepared = &kept_.back();
  }
  return view(*prepared, argument, dtype);
}

std::optional<Tensor> Call::in(const std::optional<at::Tensor>& tensor, const char* argument) {
  if (!tensor || !tensor->defined()) return std::nullopt;
  return in(*tensor, argument);
}

at::Tensor Call::empty(at::IntArrayRef shape, c10::ScalarType dtype) const {
  at::Tensor out = at::empty(shape, at::TensorOptions().dtype(dtype).device(device_));
  if (kPoison && out.numel() > 0) out.view(-1).view(c10::ScalarType::Byte).fill_(0xFF);
  return out;
}

Tensor Call::out(const at::Tensor& tensor, const char* argument, std::optional<DType> as) {
  return view(tensor, argument, dtype_for(tensor, argument, as));
}

Tensor Call::view(const at::Tensor& tensor, const char* argument, DType dtype) {
  Shape shape(tensor.sizes().begin(), tensor.sizes().end());
  auto made = Tensor::view(tensor.data_ptr(), shape, {}, dtype, queue_);
  if (!made) {
    const Error& e = made.error();
    // The view's own argument ("data", "shape") is this call's tensor `argument`.
    fail(Error(e.kind(), argument, e.expected(), e.actual(), e.argument() + ": " + e.detail()));
  }
  return std::move(made.value());
}

void Call::finish() const {
  if (device_.is_cpu()) check(queue_.synchronize());
}

}  // namespace rudnn::python
