#pragma once
// The interface every device implements: memory, queues, module load and launch. The CUDA device
// (runtime/cuda) drives the Driver API; the host device (runtime/host) runs kernels on the emulator.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rudnn/device.h"
#include "rudnn/error.h"

namespace rudnn::runtime {

// A compiled kernel as the caches store it: a cubin (+ PTX for newer GPUs) or a host shared object.
struct KernelBinary {
  std::string image;  // cubin bytes, or the ELF of a host .so
  std::string ptx;    // empty for the host
  std::string serialize() const;
  static bool deserialize(std::string_view bytes, KernelBinary& out);
};

// A kernel loaded on one device, ready to launch.
class LoadedKernel {
 public:
  virtual ~LoadedKernel() = default;
  const std::string& entry() const { return entry_; }

 protected:
  explicit LoadedKernel(std::string entry) : entry_(std::move(entry)) {}
  std::string entry_;
};

struct LaunchGeometry {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t dynamic_shared_bytes = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual const DeviceInfo& info() const = 0;
  // The arch string kernels are compiled for: "sm_90a" on an H200, "host-<cpu>-<compiler>" on the host.
  virtual std::string compile_arch() const = 0;

  // Stream-ordered: the memory is usable by work queued on `stream` after this call, and is
  // returned after the work queued on `stream` before release.
  virtual Result<void*, RuntimeError> allocate(std::size_t bytes, void* stream) = 0;
  virtual void release(void* ptr, void* stream) = 0;

  // Queues: an opaque per-queue handle (a CUstream) made by the backend.
  virtual Result<void*, RuntimeError> create_stream() = 0;
  virtual void destroy_stream(void* stream) = 0;
  virtual Status<RuntimeError> synchronize(void* stream) = 0;
  // Whether work queued on `stream` is being captured into a graph (cuStreamIsCapturing). A backend
  // without capture (the host device) says no; its queues can simulate one (QueueImpl).
  virtual Result<bool, RuntimeError> is_capturing(void* /*stream*/) { return false; }

  virtual Status<RuntimeError> copy_to_device(void* stream, void* dst, const void* src, std::size_t n) = 0;
  virtual Status<RuntimeError> copy_to_host(void* stream, void* dst, const void* src, std::size_t n) = 0;
  virtual Status<RuntimeError> fill_bytes(void* stream, void* dst, std::uint8_t value, std::size_t n) = 0;

  virtual Result<std::shared_ptr<LoadedKernel>, RuntimeError> load_kernel(const KernelBinary& binary,
                                                                          const std::string& entry) = 0;
  virtual Status<RuntimeError> launch(void* stream, const LoadedKernel& kernel, const LaunchGeometry& geometry,
                                      void** args) = 0;

  // Timing events (autotune): an opaque handle recorded into a stream's order. elapsed_ms waits for
  // `end` to complete and returns the time between the two records. Defaults say Unsupported, so a
  // backend without events (a test fake) still builds.
  virtual Result<void*, RuntimeError> create_event() { return no_events(); }
  virtual Status<RuntimeError> record_event(void* /*event*/, void* /*stream*/) { return no_events(); }
  virtual Result<float, RuntimeError> elapsed_ms(void* /*start*/, void* /*end*/) { return no_events(); }
  virtual void destroy_event(void* /*event*/) {}
  // Waits on the host until the work queued before `event`'s last record has completed (a host
  // synchronization in the stats).
  virtual Status<RuntimeError> wait_event(void* /*event*/) { return no_events(); }
  // Whether that work has completed, without waiting (not a synchronization); false when the
  // backend cannot tell (then wait_event is the way to know).
  virtual bool event_done(void* /*event*/) { return false; }

  // Page-locked host memory (cuMemHostAlloc; ordinary memory on the host device): a source the
  // device copies from asynchronously while the host goes on. Release it only after those copies
  // completed (wait_event). Defaults say Unsupported, like the events'.
  virtual Result<void*, RuntimeError> allocate_pinned(std::size_t /*bytes*/) {
    return RuntimeError(ErrorKind::Unsupported, "page-locked host memory", "a device backend with it", info().name);
  }
  virtual void release_pinned(void* /*ptr*/) {}

 private:
  RuntimeError no_events() const {
    return RuntimeError(ErrorKind::Unsupported, "timing events", "a device backend with events", info().name);
  }
};

}  // namespace rudnn::runtime
