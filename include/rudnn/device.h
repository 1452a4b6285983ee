#pragma once
// Devices and queues. A Device is a CUDA GPU or the host emulation device (which runs the very same
// kernel templates on the CPU); a Queue is an ordered execution queue on one device.
#include <cstdint>
#include <memory>
#include <string>

#include "rudnn/error.h"

namespace rudnn {

namespace runtime {
class DeviceBackend;
class QueueImpl;
}  // namespace runtime

enum class DeviceKind { Host, Cuda };

// Static facts of a device that kernel selection and contracts read.
struct DeviceInfo {
  std::string name;            // "NVIDIA H200", "rudnn host emulation device"
  std::string arch;            // "sm_90a", "sm_80"; the emulator reports a Hopper-like "sm_90a"
  int compute_capability = 0;  // 90, 80, ...
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_grid_x = 2147483647;
  int max_grid_yz = 65535;
  std::size_t shared_memory_per_block = 48 * 1024;  // without opt-in
  std::size_t shared_memory_per_block_optin = 227 * 1024;
  int registers_per_sm = 65536;
  int multiprocessors = 132;
  std::size_t l2_bytes = 50 * 1024 * 1024;
  int driver_version = 0;  // CUDA driver version, 0 on the host device
};

class RUDNN_API Device {
 public:
  // The host emulation device. Always available.
  static Device host();
  // CUDA GPU `ordinal`; NoDevice when there is no driver or no such GPU.
  static Result<Device, RuntimeError> cuda(int ordinal);
  // RUDNN_DEVICE=host|cuda:N if set, else the first CUDA GPU, else host. A RUDNN_DEVICE that is not
  // host|cuda:N (InvalidValue) or names a GPU this machine lacks (NoDevice) is an error, never a
  // silent fall back to the host.
  static Result<Device, RuntimeError> default_device();
  // Parses "host" or "cuda:N".
  static Result<Device, RuntimeError> parse(const std::string& spec);
  // Number of CUDA GPUs visible (0 without a driver).
  static int cuda_device_count();

  DeviceKind kind() const { return kind_; }
  int ordinal() const { return ordinal_; }
  std::string to_string() const;  // "host", "cuda:0"
  const DeviceInfo& info() const;
  bool operator==(const Device& o) const { return kind_ == o.kind_ && ordinal_ == o.ordinal_; }

  runtime::DeviceBackend& backend() const { return *backend_; }

 private:
  Device(DeviceKind kind, int ordinal, runtime::DeviceBackend* backend)
      : kind_(kind), ordinal_(ordinal), backend_(backend) {}
  DeviceKind kind_;
  int ordinal_;
  runtime::DeviceBackend* backend_;  // process-lifetime singleton per device
};

class RUDNN_API Queue {
 public:
  // The device's default queue (the CUDA stream rudnn creates for it; one per device).
  static Queue default_queue(const Device& device);
  // A new ordered queue on `device` (a new CUDA stream).
  static Result<Queue, RuntimeError> create(const Device& device);
  // The engine's own stream as a queue (SPEC §13): on a GPU `native_handle` is a CUstream the caller
  // owns (rudnn never destroys it; null is the legacy default stream); on the host device it is the
  // native_handle() of a live host queue. Wrapping a stream rudnn already has a queue for gives that
  // queue, so tensors made on either are on one queue.
  static Result<Queue, RuntimeError> wrap(const Device& device, void* native_handle);
  // The handle wrap() takes: the CUstream on a GPU, an opaque token on the host device.
  void* native_handle() const;
  // False for a wrapped stream (the caller's).
  bool owns_stream() const;
  // Whether the stream is being captured into a CUDA graph (cuStreamIsCapturing). While it is, a
  // call that would break the capture (a cold plan, a host synchronization) fails with
  // ErrorKind::CaptureViolation instead.
  Result<bool, RuntimeError> is_capturing() const;

  const Device& device() const;
  Status<RuntimeError> synchronize() const;
  std::uint64_t id() const;  // unique per queue in this process
  bool operator==(const Queue& o) const { return impl_ == o.impl_; }

  runtime::QueueImpl& impl() const { return *impl_; }

 private:
  explicit Queue(std::shared_ptr<runtime::QueueImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<runtime::QueueImpl> impl_;
  friend class runtime::QueueImpl;
};

}  // namespace rudnn
