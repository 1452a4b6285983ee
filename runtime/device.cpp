// Device selection and queues.
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "cuda/cuda_device.h"
#include "host/host_device.h"
#include "env.h"
#include "log.h"
#include "queue_impl.h"

namespace rudnn {

using runtime::QueueImpl;

Device Device::host() { return Device(DeviceKind::Host, 0, &runtime::host_device_backend()); }

int Device::cuda_device_count() { return runtime::cuda::device_count(); }

Result<Device, RuntimeError> Device::cuda(int ordinal) {
  auto backend = runtime::cuda::device_backend(ordinal);
  if (!backend.ok()) return backend.error();
  return Device(DeviceKind::Cuda, ordinal, backend.value());
}

Result<Device, RuntimeError> Device::parse(const std::string& spec) {
  if (spec == "host") return host();
  if (spec.rfind("cuda", 0) == 0) {
    int ordinal = 0;
    if (spec.size() > 4) {
      if (spec[4] != ':' || spec.size() == 5)
        return RuntimeError(ErrorKind::InvalidValue, "device", "host or cuda:N", spec);
      // Digits only (no sign, no space): the same spelling RUDNN_DEVICE takes (runtime/env.cpp).
      const std::string digits = spec.substr(5);
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
      if (ec != std::errc() || end != digits.data() + digits.size() || digits[0] < '0' || digits[0] > '9')
        return RuntimeError(ErrorKind::InvalidValue, "device", "host or cuda:N", spec);
    }
    return cuda(ordinal);
  }
  return RuntimeError(ErrorKind::InvalidValue, "device", "host or cuda:N", spec);
}

Result<Device, RuntimeError> Device::default_device() {
  if (auto env = runtime::check_environment(); !env.ok()) return env.error();
  if (const char* env = std::getenv("RUDNN_DEVICE"); env && *env) {
    auto d = parse(env);
    if (!d.ok()) {
      const RuntimeError& e = d.error();
      return RuntimeError(e.kind(), "RUDNN_DEVICE", "a device this machine has (" + e.expected() + ")",
                          "\"" + std::string(env) + "\"", e.message());
    }
    return d.value();
  }
  if (cuda_device_count() > 0) {
    auto d = cuda(0);
    if (d.ok()) return d.value();
  }
  return host();
}

std::string Device::to_string() const {
  return kind_ == DeviceKind::Host ? std::string("host") : "cuda:" + std::to_string(ordinal_);
}

const DeviceInfo& Device::info() const { return backend_->info(); }

// --- queues ---------------------------------------------------------------------------------

namespace runtime {
static std::atomic<std::uint64_t> next_queue_id{1};

QueueImpl::QueueImpl(Device device, void* stream) : device_(device), stream_(stream), id_(next_queue_id++) {}
QueueImpl::~QueueImpl() {
  if (stream_) device_.backend().destroy_stream(stream_);
}
}  // namespace runtime

Queue Queue::default_queue(const Device& device) {
  // One default queue per device for the life of the process.
  static std::mutex mutex;
  static std::vector<std::pair<Device, std::shared_ptr<QueueImpl>>> queues;
  std::lock_guard lock(mutex);
  for (auto& [d, q] : queues)
    if (d == device) return Queue(q);
  auto stream = device.backend().create_stream();
  // A device whose stream cannot be made still gets a queue on its null stream.
  auto impl = std::make_shared<QueueImpl>(device, stream.ok() ? stream.value() : nullptr);
  queues.emplace_back(device, impl);
  return Queue(impl);
}

Result<Queue, RuntimeError> Queue::create(const Device& device) {
  auto stream = device.backend().create_stream();
  if (!stream.ok()) return stream.error();
  return Queue(std::make_shared<QueueImpl>(device, stream.value()));
}

const Device& Queue::device() const { return impl_->device(); }
std::uint64_t Queue::id() const { return impl_->id(); }
Status<RuntimeError> Queue::synchronize() const { return impl_->device().backend().synchronize(impl_->stream()); }

}  // namespace rudnn
