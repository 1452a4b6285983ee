// A CUDA GPU through the Driver API: the primary context, streams as queues, cubin modules.
#include "cuda/cuda_device.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "cuda/driver_api.h"
#include "log.h"
#include "stats_counters.h"

namespace rudnn::runtime::cuda {

namespace {

RuntimeError driver_error(ErrorKind kind, const std::string& what, CUresult r) {
  return RuntimeError(kind, what, "CUDA_SUCCESS", error_string(r));
}

class CudaKernel final : public LoadedKernel {
 public:
  CudaKernel(std::string entry, CUmodule module, CUfunction fn, int max_dynamic_shared)
      : LoadedKernel(std::move(entry)), module_(module), fn_(fn), max_dynamic_shared_(max_dynamic_shared) {}
  ~CudaKernel() override {
    if (auto* d = driver()) d->cuModuleUnload(module_);
  }
  CUfunction fn() const { return fn_; }
  // Dynamic shared bytes the function is opted in for, fixed at load: a loaded kernel is shared by
  // every thread's plans, so nothing about it changes after load_kernel returns.
  int max_dynamic_shared() const { return max_dynamic_shared_; }

 private:
  CUmodule module_;
  CUfunction fn_;
  int max_dynamic_shared_;
};

class CudaDevice final : public DeviceBackend {
 public:
  CudaDevice(int ordinal, CUdevice dev, CUcontext ctx, DeviceInfo info)
      : ordinal_(ordinal), dev_(dev), ctx_(ctx), info_(std::move(info)) {}

  const DeviceInfo& info() const override { return info_; }
  std::string compile_arch() const override { return info_.arch; }

  // Stream-ordered allocation from the device's default pool, which keeps freed memory (release
  // threshold raised at open): no device synchronization, and capturable in a CUDA graph.
  Result<void*, RuntimeError> allocate(std::size_t bytes, void* stream) override {
    if (bytes == 0) return static_cast<void*>(nullptr);
    count(&StatCounters::device_allocations);
    bind_context();
    CUdeviceptr p = 0;
    if (CUresult r = d().cuMemAllocAsync(&p, bytes, static_cast<CUstream>(stream)); r != CUDA_SUCCESS)
      return driver_error(r == CUDA_ERROR_OUT_OF_MEMORY ? ErrorKind::OutOfMemory : ErrorKind::DriverFailure,
                          fmt::format("cuMemAllocAsync({} bytes)", bytes), r);
    return reinterpret_cast<void*>(p);
  }
  void release(void* ptr, void* stream) override {
    if (!ptr) return;
    bind_context();
    d().cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), static_cast<CUstream>(stream));
  }

  Result<void*, RuntimeError> create_stream() override {
    bind_context();
    CUstream s = nullptr;
    if (CUresult r = d().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuStreamCreate", r);
    return static_cast<void*>(s);
  }
  void destroy_stream(void* s) override {
    bind_context();
    d().cuStreamDestroy(static_cast<CUstream>(s));
  }
  Status<RuntimeError> synchronize(void* s) override {
    count(&StatCounters::host_synchronizations);
    bind_context();
    if (CUresult r = d().cuStreamSynchronize(static_cast<CUstream>(s)); r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuStreamSynchronize", r);
    return {};
  }
  Result<bool, RuntimeError> is_capturing(void* s) override {
    bind_context();
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (CUresult r = d().cuStreamIsCapturing(static_cast<CUstream>(s), &status); r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuStreamIsCapturing", r);
    return status != CU_STREAM_CAPTURE_STATUS_NONE;  // active, or invalidated (still not to be touched)
  }

  Status<RuntimeError> copy_to_device(void* s, void* dst, const void* src, std::size_t n) override {
    bind_context();
    if (CUresult r = d().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, n, static_cast<CUstream>(s));
        r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuMemcpyHtoDAsync", r);
    return {};
  }
  Status<RuntimeError> copy_to_host(void* s, void* dst, const void* src, std::size_t n) override {
    bind_context();
    if (CUresult r = d().cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), n, static_cast<CUstream>(s));
        r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuMemcpyDtoHAsync", r);
    return {};
  }
  Status<RuntimeError> fill_bytes(void* s, void* dst, std::uint8_t v, std::size_t n) override {
    bind_context();
    if (CUresult r = d().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), v, n, static_cast<CUstream>(s));
        r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuMemsetD8Async", r);
    return {};
  }

  Result<std::shared_ptr<LoadedKernel>, RuntimeError> load_kernel(const KernelBinary& binary,
                                                                  const std::string& entry) override {
    count(&StatCounters::module_loads);
    bind_context();
    CUmodule module = nullptr;
    CUresult r = d().cuModuleLoadData(&module, binary.image.data());
    if (r != CUDA_SUCCESS && !binary.ptx.empty()) {
      // A cubin for another arch: let the driver JIT the PTX instead.
      log_info("cubin of {} did not load ({}); loading its PTX", entry, error_string(r));
      r = d().cuModuleLoadData(&module, binary.ptx.c_str());
    }
    if (r != CUDA_SUCCESS) return driver_error(ErrorKind::LaunchFailure, "cuModuleLoadData(" + entry + ")", r);
    CUfunction fn = nullptr;
    if (r = d().cuModuleGetFunction(&fn, module, entry.c_str()); r != CUDA_SUCCESS) {
      d().cuModuleUnload(module);
      return driver_error(ErrorKind::LaunchFailure, "cuModuleGetFunction(" + entry + ")", r);
    }
    // Above 48 KiB a function must opt in to more dynamic shared memory. Done once here, for the
    // device's whole opt-in limit less the function's static shared memory (templates declare
    // none today), so launches from many threads only read the kernel.
    int static_shared = 0;
    if (r = d().cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn); r != CUDA_SUCCESS) {
      d().cuModuleUnload(module);
      return driver_error(ErrorKind::LaunchFailure, "cuFuncGetAttribute(" + entry + ")", r);
    }
    int max_dynamic = 48 * 1024 - static_shared;
    const int optin = static_cast<int>(info_.shared_memory_per_block_optin) - static_shared;
    if (optin > max_dynamic) {
      if (r = d().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin); r != CUDA_SUCCESS) {
        d().cuModuleUnload(module);
        return driver_error(ErrorKind::LaunchFailure, "cuFuncSetAttribute(" + entry + ")", r);
      }
      max_dynamic = optin;
    }
    return std::shared_ptr<LoadedKernel>(std::make_shared<CudaKernel>(entry, module, fn, max_dynamic));
  }

  Status<RuntimeError> launch(void* s, const LoadedKernel& kernel, const LaunchGeometry& g, void** args) override {
    bind_context();
    const auto& k = static_cast<const CudaKernel&>(kernel);
    if (g.dynamic_shared_bytes > static_cast<std::uint32_t>(k.max_dynamic_shared()))
      return RuntimeError(ErrorKind::LaunchFailure, "dynamic shared memory of " + k.entry(),
                          fmt::format("<= {} bytes (the device's opt-in limit)", k.max_dynamic_shared()),
                          fmt::format("{} bytes", g.dynamic_shared_bytes));
    CUresult r = d().cuLaunchKernel(k.fn(), g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
                                    g.dynamic_shared_bytes, static_cast<CUstream>(s), args, nullptr);
    if (r != CUDA_SUCCESS) return driver_error(ErrorKind::LaunchFailure, "cuLaunchKernel(" + k.entry() + ")", r);
    return {};
  }

  // Timing events for autotune (default flags: timing enabled; blocking sync is not needed since
  // elapsed_ms synchronizes on the end event only).
  Result<void*, RuntimeError> create_event() override {
    if (!d().has_events)
      return RuntimeError(ErrorKind::Unsupported, "timing events", "cuEvent* entries in libcuda.so.1", "missing");
    bind_context();
    CUevent e = nullptr;
    if (CUresult r = d().cuEventCreate(&e, CU_EVENT_DEFAULT); r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuEventCreate", r);
    return static_cast<void*>(e);
  }
  Status<RuntimeError> record_event(void* event, void* s) override {
    bind_context();
    if (CUresult r = d().cuEventRecord(static_cast<CUevent>(event), static_cast<CUstream>(s)); r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuEventRecord", r);
    return {};
  }
  Result<float, RuntimeError> elapsed_ms(void* start, void* end) override {
    bind_context();
    if (CUresult r = d().cuEventSynchronize(static_cast<CUevent>(end)); r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuEventSynchronize", r);
    float ms = 0;
    if (CUresult r = d().cuEventElapsedTime(&ms, static_cast<CUevent>(start), static_cast<CUevent>(end));
        r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuEventElapsedTime", r);
    return ms;
  }
  void destroy_event(void* event) override {
    if (!event) return;
    bind_context();
    d().cuEventDestroy(static_cast<CUevent>(event));
  }
  bool event_done(void* event) override {
    if (!d().cuEventQuery) return false;
    bind_context();
    return d().cuEventQuery(static_cast<CUevent>(event)) == CUDA_SUCCESS;  // CUDA_ERROR_NOT_READY: not yet
  }
  Status<RuntimeError> wait_event(void* event) override {
    count(&StatCounters::host_synchronizations);  // the host waits for part of a queue's work
    bind_context();
    if (CUresult r = d().cuEventSynchronize(static_cast<CUevent>(event)); r != CUDA_SUCCESS)
      return driver_error(ErrorKind::DriverFailure, "cuEventSynchronize", r);
    return {};
  }

  // Portable: usable from every context (the memory outlives a plan's queue's context binding).
  Result<void*, RuntimeError> allocate_pinned(std::size_t bytes) override {
    bind_context();
    void* p = nullptr;
    if (CUresult r = d().cuMemHostAlloc(&p, std::max<std::size_t>(bytes, 1), CU_MEMHOSTALLOC_PORTABLE);
        r != CUDA_SUCCESS)
      return driver_error(r == CUDA_ERROR_OUT_OF_MEMORY ? ErrorKind::OutOfMemory : ErrorKind::DriverFailure,
                          "cuMemHostAlloc", r);
    return p;
  }
  void release_pinned(void* ptr) override {
    if (!ptr) return;
    bind_context();
    d().cuMemFreeHost(ptr);
  }

 private:
  const DriverApi& d() const { return *driver(); }
  void bind_context() const { d().cuCtxSetCurrent(ctx_); }

  int ordinal_;
  CUdevice dev_;
  CUcontext ctx_;
  DeviceInfo info_;
};

int attribute(CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  driver()->cuDeviceGetAttribute(&v, a, dev);
  return v;
}

Result<std::unique_ptr<CudaDevice>, RuntimeError> open_device(int ordinal) {
  const DriverApi& d = *driver();
  CUdevice dev = 0;
  if (CUresult r = d.cuDeviceGet(&dev, ordinal); r != CUDA_SUCCESS)
    return driver_error(ErrorKind::NoDevice, fmt::format("cuda:{}", ordinal), r);
  CUcontext ctx = nullptr;
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&ctx, dev); r != CUDA_SUCCESS)
    return driver_error(ErrorKind::DriverFailure, "cuDevicePrimaryCtxRetain", r);
  DeviceInfo info;
  char name[256] = {};
  d.cuDeviceGetName(name, sizeof(name) - 1, dev);
  info.name = name;
  const int major = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.compute_capability = major * 10 + minor;
  // Hopper's wgmma/TMA need the arch-specific target; everything else the plain one.
  info.arch = fmt::format("sm_{}{}{}", major, minor, major == 9 ? "a" : "");
  info.warp_size = attribute(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  info.max_threads_per_block = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_grid_x = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  info.max_grid_yz = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  info.shared_memory_per_block =
      static_cast<std::size_t>(attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  info.shared_memory_per_block_optin =
      static_cast<std::size_t>(attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  info.registers_per_sm = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.multiprocessors = attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = static_cast<std::size_t>(attribute(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  d.cuDriverGetVersion(&info.driver_version);
  d.cuCtxSetCurrent(ctx);
  CUmemoryPool pool = nullptr;
  if (d.cuDeviceGetDefaultMemPool(&pool, dev) == CUDA_SUCCESS) {
    cuuint64_t keep = ~cuuint64_t{0};
    d.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
  }
  log_info("cuda:{} is {} ({}, {} SMs, driver {})", ordinal, info.name, info.arch, info.multiprocessors,
           info.driver_version);
  return std::make_unique<CudaDevice>(ordinal, dev, ctx, std::move(info));
}

}  // namespace

int device_count() {
  const DriverApi* d = driver();
  if (!d) return 0;
  int n = 0;
  if (d->cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

Result<DeviceBackend*, RuntimeError> device_backend(int ordinal) {
  if (!driver())
    return RuntimeError(ErrorKind::NoDevice, fmt::format("cuda:{}", ordinal), "a CUDA driver",
                        driver_unavailable_reason());
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    return RuntimeError(ErrorKind::NoDevice, "ordinal", fmt::format("0 <= ordinal < {}", count),
                        std::to_string(ordinal));
  static std::mutex mutex;
  static std::vector<std::unique_ptr<CudaDevice>> devices;
  std::lock_guard lock(mutex);
  if (devices.empty()) devices.resize(static_cast<std::size_t>(count));
  auto& slot = devices[static_cast<std::size_t>(ordinal)];
  if (!slot) {
    auto opened = open_device(ordinal);
    if (!opened.ok()) return opened.error();
    slot = std::move(opened.value());
  }
  return static_cast<DeviceBackend*>(slot.get());
}

}  // namespace rudnn::runtime::cuda
