#include "host/host_device.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "host/emulator.h"
#include "log.h"
#include "stats_counters.h"

namespace rudnn::runtime {

namespace {

using BindFn = void (*)(const rudnn_emu_api*);

class HostKernel final : public LoadedKernel {
 public:
  HostKernel(std::string entry, void* handle, int fd, host::ThreadEntry fn)
      : LoadedKernel(std::move(entry)), handle_(handle), fd_(fd), fn_(fn) {}
  ~HostKernel() override {
    dlclose(handle_);
    ::close(fd_);
  }
  host::ThreadEntry fn() const { return fn_; }

 private:
  void* handle_;
  int fd_;  // open while loaded: dlopen knows the module by its /proc/self/fd path, which must stay unique
  host::ThreadEntry fn_;
};

class HostDevice final : public DeviceBackend {
 public:
  const DeviceInfo& info() const override { return host_device_info(); }

  std::string compile_arch() const override {
    // Host objects depend on the CPU architecture and the compiler that built them.
#if defined(__x86_64__)
    return "host-x86_64";
#elif defined(__aarch64__)
    return "host-aarch64";
#else
    return "host";
#endif
  }

  Result<void*, RuntimeError> allocate(std::size_t bytes, void*) override {
    count(&StatCounters::device_allocations);
    // 256-byte alignment like cudaMalloc, so vectorized kernels see the same alignment facts.
    // The rounding must not wrap: a request near SIZE_MAX is simply more than the host has.
    void* p = bytes > (std::size_t(1) << 62) ? nullptr : std::aligned_alloc(256, ((bytes + 255) / 256) * 256 + 256);
    if (!p)
      return RuntimeError(ErrorKind::OutOfMemory, "allocation", fmt::format("{} bytes of host memory", bytes),
                          "allocation failure");
    return p;
  }
  void release(void* ptr, void*) override { std::free(ptr); }

  Result<void*, RuntimeError> create_stream() override { return static_cast<void*>(nullptr); }
  void destroy_stream(void*) override {}
  Status<RuntimeError> synchronize(void*) override {
    count(&StatCounters::host_synchronizations);
    return {};
  }

  Status<RuntimeError> copy_to_device(void*, void* dst, const void* src, std::size_t n) override {
    std::memcpy(dst, src, n);
    return {};
  }
  Status<RuntimeError> copy_to_host(void*, void* dst, const void* src, std::size_t n) override {
    std::memcpy(dst, src, n);
    return {};
  }
  Status<RuntimeError> fill_bytes(void*, void* dst, std::uint8_t value, std::size_t n) override {
    std::memset(dst, value, n);
    return {};
  }

  Result<std::shared_ptr<LoadedKernel>, RuntimeError> load_kernel(const KernelBinary& binary,
                                                                  const std::string& entry) override {
    count(&StatCounters::module_loads);
    // The shared object comes from the cache as bytes: load it from an anonymous memory file, so
    // no second copy on disk can go stale.
    int fd = memfd_create(entry.c_str(), MFD_CLOEXEC);
    if (fd < 0) return RuntimeError(ErrorKind::IoFailure, "kernel", "an in-memory file", std::strerror(errno));
    std::size_t off = 0;
    while (off < binary.image.size()) {
      ssize_t w = ::write(fd, binary.image.data() + off, binary.image.size() - off);
      if (w <= 0) {
        ::close(fd);
        return RuntimeError(ErrorKind::IoFailure, "kernel", "a writable in-memory file", std::strerror(errno));
      }
      off += static_cast<std::size_t>(w);
    }
    const std::string path = fmt::format("/proc/self/fd/{}", fd);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      ::close(fd);
      const char* why = dlerror();
      return RuntimeError(ErrorKind::LaunchFailure, "kernel " + entry, "a loadable host shared object",
                          why ? why : "dlopen failed");
    }
    auto bind = reinterpret_cast<BindFn>(dlsym(handle, RUDNN_EMU_BIND_SYMBOL));
    auto abi = reinterpret_cast<rudnn_emu_module_abi_version_fn>(dlsym(handle, RUDNN_EMU_MODULE_ABI_VERSION_SYMBOL));
    auto fn = reinterpret_cast<host::ThreadEntry>(dlsym(handle, (entry + "_host").c_str()));
    if (!bind || !fn || !abi) {
      dlclose(handle);
      ::close(fd);
      return RuntimeError(ErrorKind::LaunchFailure, "kernel " + entry,
                          "symbols rudnn_emu_bind, rudnn_emu_module_abi_version and " + entry + "_host", "missing");
    }
    // A module built against another emulator ABI would call the wrong slots: refuse it.
    if (abi() != RUDNN_EMU_ABI_VERSION) {
      dlclose(handle);
      ::close(fd);
      return RuntimeError(ErrorKind::LaunchFailure, "kernel " + entry,
                          fmt::format("emulator ABI version {}", RUDNN_EMU_ABI_VERSION), fmt::format("{}", abi()));
    }
    bind(host::emulator_api());
    return std::shared_ptr<LoadedKernel>(std::make_shared<HostKernel>(entry, handle, fd, fn));
  }

  Status<RuntimeError> launch(void*, const LoadedKernel& kernel, const LaunchGeometry& g, void** args) override {
    const auto& k = static_cast<const HostKernel&>(kernel);
    // The device's opt-in limit, as the CUDA backend refuses it (a test may shrink the host device's
    // limit to a smaller GPU's; the emulator's own bound is the largest any GPU has).
    if (g.dynamic_shared_bytes > info().shared_memory_per_block_optin)
      return RuntimeError(ErrorKind::LaunchFailure, "dynamic shared memory of " + kernel.entry(),
                          fmt::format("<= {} bytes (the device's opt-in limit)", info().shared_memory_per_block_optin),
                          fmt::format("{} bytes", g.dynamic_shared_bytes));
    host::Dim3 grid{g.grid[0], g.grid[1], g.grid[2]}, block{g.block[0], g.block[1], g.block[2]};
    auto s = host::launch(k.fn(), args, grid, block, g.dynamic_shared_bytes, host::default_schedule());
    if (!s.ok())
      return RuntimeError(s.error().kind(), "kernel " + kernel.entry(), "a clean run on the host emulation device",
                          s.error().message());
    return {};
  }

  // Host queues run work at once, inside launch(): an event is the steady-clock time at which it
  // was recorded, so the difference of two records is the host execution time between them.
  Result<void*, RuntimeError> create_event() override {
    return static_cast<void*>(new std::chrono::steady_clock::time_point());
  }
  Status<RuntimeError> record_event(void* event, void*) override {
    *static_cast<std::chrono::steady_clock::time_point*>(event) = std::chrono::steady_clock::now();
    return {};
  }
  Result<float, RuntimeError> elapsed_ms(void* start, void* end) override {
    const auto& a = *static_cast<std::chrono::steady_clock::time_point*>(start);
    const auto& b = *static_cast<std::chrono::steady_clock::time_point*>(end);
    return std::chrono::duration<float, std::milli>(b - a).count();
  }
  void destroy_event(void* event) override { delete static_cast<std::chrono::steady_clock::time_point*>(event); }
  bool event_done(void*) override { return true; }   // the work ran inside its call
  Status<RuntimeError> wait_event(void*) override {  // the work ran inside its call; counted as on a GPU
    count(&StatCounters::host_synchronizations);
    return {};
  }

  Result<void*, RuntimeError> allocate_pinned(std::size_t bytes) override {
    void* p = std::malloc(std::max<std::size_t>(bytes, 1));
    if (!p) return RuntimeError(ErrorKind::OutOfMemory, "host memory", fmt::format("{} bytes", bytes), "none left");
    return p;
  }
  void release_pinned(void* ptr) override { std::free(ptr); }
};

}  // namespace

DeviceInfo& host_device_info() {
  static DeviceInfo info = [] {
    DeviceInfo i;
    i.name = "rudnn host emulation device";
    i.arch = "sm_90a";
    i.compute_capability = 90;
    return i;
  }();
  return info;
}

DeviceBackend& host_device_backend() {
  static HostDevice device;
  return device;
}

}  // namespace rudnn::runtime
