#pragma once
// The NVRTC backend: a generated CUDA C++ translation unit → cubin (and PTX) for one GPU arch.
// libnvrtc is opened with dlopen on first use, never linked, so librudnn.so loads on machines
// without the CUDA toolkit; there every call returns a RuntimeError saying where it looked.
// The embedded templates (templates/embedded.h) are passed as in-memory headers; NVRTC sees no
// include path and no host header. All functions are thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "rudnn/error.h"

namespace rudnn::compiler::nvrtc {

// What ptxas reported for one entry function (`-v`).
struct PtxasReport {
  int registers = 0;
  int spill_stores_bytes = 0;
  int spill_loads_bytes = 0;
  int shared_bytes = 0;  // static shared memory (dynamic shared memory is a launch parameter)
  int stack_bytes = 0;   // stack frame
  bool found = false;    // false when the log had no report for the entry (e.g. PTX-only compile)
};

struct CompiledKernel {
  std::string cubin;  // empty when `arch` is a virtual architecture (compute_XX)
  std::string ptx;
  std::string log;  // the compiler log, ptxas report included
  PtxasReport report;
};

// True when libnvrtc could be loaded (the first call tries).
bool available();

// "13.0"; NoDevice when NVRTC is missing.
Result<std::string, RuntimeError> version();

// The options every compile uses, before `extra_options` (part of kernel cache keys).
std::vector<std::string> base_options(const std::string& arch);

// Compiles `source` for `arch` ("sm_90a", "sm_80": cubin + PTX; "compute_90": PTX only).
// `entry` is the extern "C" kernel whose ptxas report is parsed. A rejected source returns
// CompileFailure whose message carries the whole compiler log (the caller adds the path where it
// saved the source); a missing NVRTC returns NoDevice.
Result<CompiledKernel, RuntimeError> compile(const std::string& source, const std::string& entry,
                                             const std::string& arch,
                                             const std::vector<std::string>& extra_options = {});

// Parses the ptxas `-v` lines that belong to `entry` out of a compiler log (exposed for tests).
PtxasReport parse_ptxas_report(std::string_view log, std::string_view entry);

}  // namespace rudnn::compiler::nvrtc
