#pragma once
// The Driver API entries the GPU tests' CUDA graph captures need (begin / end capture, instantiate,
// replay) and a stream of the test's own (an engine's stream for Queue::wrap), opened from
// libcuda.so.1 with dlopen: the tests do not link the driver, as librudnn.so does not.
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <type_traits>

namespace rudnn::testing {

// The Driver API entries the capture needs, from libcuda.so.1 (the test does not link the driver,
// as librudnn.so does not). CUresult 0 is CUDA_SUCCESS.
struct GraphApi {
  using Stream = void*;
  using Graph = void*;
  using GraphExec = void*;
  int (*begin_capture)(Stream, int mode);  // cuStreamBeginCapture_v2
  int (*end_capture)(Stream, Graph*);
  int (*instantiate)(GraphExec*, Graph, unsigned long long flags);  // cuGraphInstantiateWithFlags
  int (*launch)(GraphExec, Stream);
  int (*exec_destroy)(GraphExec);
  int (*graph_destroy)(Graph);
  int (*synchronize)(Stream);
  int (*stream_create)(Stream*, unsigned flags);                                              // cuStreamCreate
  int (*stream_destroy)(Stream);                                                              // cuStreamDestroy_v2
  int (*copy_to_device)(unsigned long long dst, const void* src, std::size_t bytes, Stream);  // cuMemcpyHtoDAsync_v2
  int (*error_string)(int, const char**);

  static constexpr int kCaptureModeGlobal = 0;                // CU_STREAM_CAPTURE_MODE_GLOBAL
  static constexpr unsigned long long kAutoFreeOnLaunch = 1;  // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH

  std::string describe(int r) const {
    const char* s = nullptr;
    if (error_string) error_string(r, &s);
    return fmt::format("CUresult {} ({})", r, s ? s : "?");
  }
};

// nullptr (with `why`) when libcuda.so.1 or an entry is missing.
inline const GraphApi* graph_api(std::string& why) {
  static std::string reason;
  static const GraphApi* api = []() -> const GraphApi* {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      reason = dlerror();
      return nullptr;
    }
    static GraphApi a{};
    bool ok = true;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) {
        ok = false;
        reason += std::string(name) + " missing; ";
      }
    };
    get(a.begin_capture, "cuStreamBeginCapture_v2");
    get(a.end_capture, "cuStreamEndCapture");
    get(a.instantiate, "cuGraphInstantiateWithFlags");
    get(a.launch, "cuGraphLaunch");
    get(a.exec_destroy, "cuGraphExecDestroy");
    get(a.graph_destroy, "cuGraphDestroy");
    get(a.synchronize, "cuStreamSynchronize");
    get(a.stream_create, "cuStreamCreate");
    get(a.stream_destroy, "cuStreamDestroy_v2");
    get(a.copy_to_device, "cuMemcpyHtoDAsync_v2");
    get(a.error_string, "cuGetErrorString");
    return ok ? &a : nullptr;
  }();
  why = reason;
  return api;
}

}  // namespace rudnn::testing
