#pragma once
// The host backend: a generated translation unit → a shared object for the host emulation device,
// built by the host C++ compiler against the emulator prelude (DESIGN §4).
#include <string>
#include <vector>

#include "rudnn/error.h"

namespace rudnn::compiler::host_cc {

// RUDNN_HOST_CXX, else the compiler that built rudnn.
std::string compiler_path();
// First line of `<compiler> --version`; part of every cache key.
Result<std::string, RuntimeError> compiler_version();
// The flags every host kernel is built with (the library's sanitizer included).
const std::vector<std::string>& options();

// Compiles `source` into a shared object and returns its bytes. `work_dir` receives the source
// file (kept, so a failure can name it) and the embedded templates.
Result<std::string, RuntimeError> compile(const std::string& source, const std::string& entry,
                                          const std::string& work_dir);

}  // namespace rudnn::compiler::host_cc
