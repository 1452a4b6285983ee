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

namespace {
// Every live queue by (device, native handle), so that wrapping a stream rudnn already knows (its
// own, or one wrapped before) gives that very queue: one ordered queue, one identity.
struct QueueRegistry {
  std::mutex mutex;
  std::vector<std::pair<const QueueImpl*, std::weak_ptr<QueueImpl>>> queues;

  void add(const std::shared_ptr<QueueImpl>& q) {
    std::lock_guard lock(mutex);
    std::erase_if(queues, [](const auto& e) { return e.second.expired(); });
    queues.emplace_back(q.get(), q);
  }
  // The live queue on `device` whose handle is `handle`, else the one `make()` returns (null: none),
  // registered — under one lock, so two threads wrapping one stream get one queue.
  template <class Make>
  std::shared_ptr<QueueImpl> find_or_add(const Device& device, void* handle, Make make) {
    std::lock_guard lock(mutex);
    for (auto& [raw, weak] : queues)
      if (auto q = weak.lock(); q && q->device() == device && native_handle_of(*q) == handle) return q;
    std::shared_ptr<QueueImpl> q = make();
    if (q) queues.emplace_back(q.get(), q);
    return q;
  }
  // A CUDA queue's handle is its CUstream; a host queue's (whose streams are all null) its own address.
  static void* native_handle_of(const QueueImpl& q) {
    return q.device().kind() == DeviceKind::Host ? const_cast<QueueImpl*>(&q) : q.stream();
  }
};
QueueRegistry& registry() {
  static auto* r = new QueueRegistry;  // leaked: queues may die during static destruction
  return *r;
}

std::shared_ptr<QueueImpl> registered(std::shared_ptr<QueueImpl> q) {
  registry().add(q);
  return q;
}
}  // namespace

QueueImpl::QueueImpl(Device device, void* stream, bool owns_stream)
    : device_(device), stream_(stream), id_(next_queue_id++), owns_stream_(owns_stream) {}
QueueImpl::~QueueImpl() {
  if (stream_ && owns_stream_) device_.backend().destroy_stream(stream_);
}

Result<bool, RuntimeError> QueueImpl::capturing() const {
  if (simulated_capture_) return true;
  return device_.backend().is_capturing(stream_);
}

std::optional<RuntimeError> check_not_capturing(const Queue& queue, const std::string& what) {
  auto capturing = queue.impl().capturing();
  if (!capturing.ok()) return capturing.error();
  if (!capturing.value()) return std::nullopt;
  return RuntimeError(ErrorKind::CaptureViolation, what, "no stream capture in progress on the queue",
                      "the queue's stream is being captured",
                      "make every plan before the capture (rudnn::prepare or one warm-up call per shape)");
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
  auto impl = runtime::registered(std::make_shared<QueueImpl>(device, stream.ok() ? stream.value() : nullptr));
  queues.emplace_back(device, impl);
  return Queue(impl);
}

Result<Queue, RuntimeError> Queue::create(const Device& device) {
  auto stream = device.backend().create_stream();
  if (!stream.ok()) return stream.error();
  return Queue(runtime::registered(std::make_shared<QueueImpl>(device, stream.value())));
}

Result<Queue, RuntimeError> Queue::wrap(const Device& device, void* native_handle) {
  // A host handle names a live host queue; a CUDA one is the caller's CUstream (null: the legacy
  // default stream), never destroyed by rudnn.
  auto q = runtime::registry().find_or_add(device, native_handle, [&]() -> std::shared_ptr<QueueImpl> {
    if (device.kind() == DeviceKind::Host) return nullptr;
    return std::make_shared<QueueImpl>(device, native_handle, false);
  });
  if (!q)
    return RuntimeError(ErrorKind::InvalidValue, "native_handle", "the native_handle() of a live host queue",
                        fmt::format("{} (no such queue)", native_handle));
  return Queue(q);
}

void* Queue::native_handle() const { return runtime::QueueRegistry::native_handle_of(*impl_); }
bool Queue::owns_stream() const { return impl_->owns_stream(); }

Result<bool, RuntimeError> Queue::is_capturing() const { return impl_->capturing(); }

const Device& Queue::device() const { return impl_->device(); }
std::uint64_t Queue::id() const { return impl_->id(); }
Status<RuntimeError> Queue::synchronize() const {
  if (auto e = runtime::check_not_capturing(*this, "a host synchronization (Queue::synchronize, to_host)")) return *e;
  return impl_->device().backend().synchronize(impl_->stream());
}

}  // namespace rudnn
