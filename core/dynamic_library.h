#pragma once
// A shared library opened with dlopen and its entry points bound by name. librudnn.so
// (runtime/cuda/driver_api.cpp), rudnn-bench's device copy and the GPU tests' graph capture open the
// CUDA driver this way rather than linking libcuda.so.1, so each loads where there is no driver and
// can say why it cannot use one. Header-only: the tools and tests link librudnn.so, whose own
// symbols are hidden.
#include <dlfcn.h>

#include <string>

namespace rudnn {

class DynamicLibrary {
 public:
  // Opens `name` (RTLD_NOW | RTLD_LOCAL) for the life of the process, so bound entries stay valid.
  explicit DynamicLibrary(const char* name) : name_(name), handle_(dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
    if (!handle_) {
      const char* e = dlerror();
      open_error_ = name_ + " could not be opened (" + (e ? e : "unknown") + ")";
    }
  }

  // `fn` = the entry `symbol`, or null; a missing required entry makes the library unavailable.
  template <class Fn>
  bool bind(Fn& fn, const char* symbol) {
    if (bind_optional(fn, symbol)) return true;
    missing_ += (missing_.empty() ? "" : ", ") + std::string(symbol);
    return false;
  }
  // The same for an entry the caller can do without (it checks the result itself).
  template <class Fn>
  bool bind_optional(Fn& fn, const char* symbol) {
    fn = handle_ ? reinterpret_cast<Fn>(dlsym(handle_, symbol)) : nullptr;
    return fn != nullptr;
  }

  // Why the library cannot serve — it did not open, or required entries are missing — or empty.
  std::string unavailable() const {
    if (!handle_) return open_error_;
    if (!missing_.empty()) return name_ + " lacks " + missing_;
    return {};
  }

 private:
  std::string name_;
  void* handle_;
  std::string open_error_, missing_;
};

}  // namespace rudnn
