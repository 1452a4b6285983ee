// NVRTC backend (see nvrtc_backend.h). NVRTC's types come from the toolkit's nvrtc.h; its functions
// are looked up with dlsym from a libnvrtc found at run time.
#include "backends/nvrtc/nvrtc_backend.h"

#include <dlfcn.h>
#include <glob.h>
#include <nvrtc.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "templates/embedded.h"

#ifndef RUDNN_CUDA_HOME
#define RUDNN_CUDA_HOME ""
#endif

namespace rudnn::compiler::nvrtc {
namespace {

// The NVRTC entry points rudnn uses, resolved once.
struct Api {
  void* handle = nullptr;
  std::string loaded_from;
  std::string failure;  // why loading failed: every path tried, with dlerror
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
};

// libnvrtc.so* in `dir`, newest-looking name first (libnvrtc.so.13.0.88 before libnvrtc.so).
std::vector<std::string> libraries_in(const std::string& dir) {
  std::vector<std::string> found;
  if (dir.empty()) return found;
  glob_t g{};
  const std::string pattern = dir + "/lib64/libnvrtc.so*";
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  std::sort(found.rbegin(), found.rend());
  if (found.empty()) found.push_back(dir + "/lib64/libnvrtc.so");  // named in the error message
  return found;
}

template <class F>
bool resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  return out != nullptr;
}

Api load_api() {
  Api api;
  std::vector<std::string> candidates;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) {
    for (auto& p : libraries_in(home)) candidates.push_back(p);
  }
  for (auto& p : libraries_in(RUDNN_CUDA_HOME)) candidates.push_back(p);
  for (const char* soname : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) candidates.emplace_back(soname);

  std::string tried;
  for (const std::string& path : candidates) {
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = ::dlerror();
      tried += (tried.empty() ? "" : "; ") + path + (why ? std::string(" (") + why + ")" : "");
      continue;
    }
    Api a;
    a.handle = h;
    a.loaded_from = path;
    const bool ok = resolve(h, "nvrtcVersion", a.version) && resolve(h, "nvrtcGetErrorString", a.error_string) &&
                    resolve(h, "nvrtcCreateProgram", a.create) && resolve(h, "nvrtcDestroyProgram", a.destroy) &&
                    resolve(h, "nvrtcCompileProgram", a.compile) && resolve(h, "nvrtcGetProgramLogSize", a.log_size) &&
                    resolve(h, "nvrtcGetProgramLog", a.log) && resolve(h, "nvrtcGetPTXSize", a.ptx_size) &&
                    resolve(h, "nvrtcGetPTX", a.ptx) && resolve(h, "nvrtcGetCUBINSize", a.cubin_size) &&
                    resolve(h, "nvrtcGetCUBIN", a.cubin);
    if (ok) return a;
    tried += (tried.empty() ? "" : "; ") + path + " (missing NVRTC symbols)";
    ::dlclose(h);
  }
  api.failure = "NVRTC not found: tried " + tried;
  return api;
}

const Api& api() {
  static const Api instance = load_api();  // thread-safe, once per process
  return instance;
}

RuntimeError not_found() {
  return RuntimeError(ErrorKind::NoDevice, "libnvrtc", "a loadable NVRTC library", api().failure,
                      "set CUDA_HOME to a CUDA toolkit");
}

// The embedded templates as NVRTC headers (names as kernels include them).
struct Headers {
  std::vector<const char*> names;
  std::vector<const char*> texts;
};
const Headers& headers() {
  static const Headers h = [] {
    Headers out;
    for (const auto& f : templates::embedded_files()) {
      out.names.push_back(f.path);
      out.texts.push_back(f.text);
    }
    return out;
  }();
  return h;
}

bool is_virtual_arch(const std::string& arch) { return arch.rfind("compute_", 0) == 0; }

// Owns an nvrtcProgram.
class Program {
 public:
  explicit Program(const Api& a) : api_(a) {}
  ~Program() {
    if (program_) api_.destroy(&program_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram* out() { return &program_; }
  nvrtcProgram get() const { return program_; }

 private:
  const Api& api_;
  nvrtcProgram program_ = nullptr;
};

std::string program_log(const Api& a, nvrtcProgram p) {
  std::size_t size = 0;
  if (a.log_size(p, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (a.log(p, log.data()) != NVRTC_SUCCESS) return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// Reads a blob through NVRTC's size/get pair; the trailing NUL of PTX is dropped.
template <class SizeFn, class GetFn>
bool read_blob(nvrtcProgram p, SizeFn size_fn, GetFn get_fn, std::string& out, bool text) {
  std::size_t size = 0;
  if (size_fn(p, &size) != NVRTC_SUCCESS) return false;
  out.assign(size, '\0');
  if (size > 0 && get_fn(p, out.data()) != NVRTC_SUCCESS) return false;
  if (text)
    while (!out.empty() && out.back() == '\0') out.pop_back();
  return true;
}

// The integer written just before `phrase` in `line` ("64 bytes spill stores" → 64), or -1.
int number_before(std::string_view line, std::string_view phrase) {
  const std::size_t at = line.find(phrase);
  if (at == std::string_view::npos) return -1;
  std::size_t end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  int value = -1;
  std::from_chars(line.data() + begin, line.data() + end, value);
  return begin == end ? -1 : value;
}

// The integer written just after `phrase` ("Used 64 registers" with phrase "Used " → 64), or -1.
int number_after(std::string_view line, std::string_view phrase) {
  const std::size_t at = line.find(phrase);
  if (at == std::string_view::npos) return -1;
  int value = -1;
  const char* first = line.data() + at + phrase.size();
  auto [ptr, ec] = std::from_chars(first, line.data() + line.size(), value);
  return ec == std::errc() && ptr != first ? value : -1;
}

}  // namespace

bool available() { return api().handle != nullptr; }

Result<std::string, RuntimeError> version() {
  const Api& a = api();
  if (!a.handle) return not_found();
  int major = 0, minor = 0;
  if (a.version(&major, &minor) != NVRTC_SUCCESS)
    return RuntimeError(ErrorKind::CompileFailure, "nvrtcVersion", "NVRTC_SUCCESS", "an error");
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> base_options(const std::string& arch) {
  // -arch=sm_XX makes NVRTC run ptxas and produce a cubin (PTX is kept too, for newer GPUs);
  // ptxas -v writes the register/spill report into the program log. No --use_fast_math: the
  // numerics contracts (SPEC §2) assume IEEE division, sqrt and expf.
  std::vector<std::string> opts = {"-arch=" + arch, "-std=c++20", "-lineinfo"};
  if (!is_virtual_arch(arch)) opts.emplace_back("--ptxas-options=-v");
  return opts;
}

Result<CompiledKernel, RuntimeError> compile(const std::string& source, const std::string& entry,
                                             const std::string& arch, const std::vector<std::string>& extra_options) {
  const Api& a = api();
  if (!a.handle) return not_found();
  const Headers& h = headers();

  Program program(a);
  const std::string name = entry + ".cu";  // how the log names the source
  nvrtcResult rc = a.create(program.out(), source.c_str(), name.c_str(), static_cast<int>(h.names.size()),
                            h.texts.data(), h.names.data());
  if (rc != NVRTC_SUCCESS)
    return RuntimeError(ErrorKind::CompileFailure, "nvrtcCreateProgram", "NVRTC_SUCCESS", a.error_string(rc));

  std::vector<std::string> options = base_options(arch);
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  rc = a.compile(program.get(), static_cast<int>(argv.size()), argv.data());

  CompiledKernel out;
  out.log = program_log(a, program.get());
  if (rc != NVRTC_SUCCESS) {
    std::string opts;
    for (const auto& o : options) opts += (opts.empty() ? "" : " ") + o;
    return RuntimeError(ErrorKind::CompileFailure, "kernel " + entry, "a translation unit NVRTC accepts for " + arch,
                        a.error_string(rc), "options: " + opts + "\ncompiler log:\n" + out.log);
  }
  if (!read_blob(program.get(), a.ptx_size, a.ptx, out.ptx, true))
    return RuntimeError(ErrorKind::CompileFailure, "kernel " + entry, "PTX", "none");
  if (!is_virtual_arch(arch) && !read_blob(program.get(), a.cubin_size, a.cubin, out.cubin, false))
    return RuntimeError(ErrorKind::CompileFailure, "kernel " + entry, "a cubin for " + arch, "none");
  out.report = parse_ptxas_report(out.log, entry);
  return out;
}

PtxasReport parse_ptxas_report(std::string_view log, std::string_view entry) {
  // ptxas -v prints, per entry:
  //   ptxas info    : Compiling entry function 'NAME' for 'sm_90a'
  //   ptxas info    : Function properties for NAME
  //   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 64 registers, used 1 barriers, 1200 bytes smem
  // (non-inlined callees get their own "Function properties" block inside the entry's section).
  PtxasReport report;
  const std::string start = "Compiling entry function '" + std::string(entry) + "'";
  const std::string props = "Function properties for " + std::string(entry);
  bool in_entry = false, in_props = false;
  std::size_t pos = 0;
  while (pos < log.size()) {
    std::size_t eol = log.find('\n', pos);
    if (eol == std::string_view::npos) eol = log.size();
    const std::string_view line = log.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.find("Compiling entry function") != std::string_view::npos) {
      in_entry = line.find(start) != std::string_view::npos;
      in_props = false;
      continue;
    }
    if (!in_entry) continue;
    if (line.find("Function properties for ") != std::string_view::npos) {
      const std::size_t at = line.find(props);
      in_props = at != std::string_view::npos && at + props.size() == line.size();
      continue;
    }
    if (in_props && line.find("bytes stack frame") != std::string_view::npos) {
      report.stack_bytes = std::max(0, number_before(line, "bytes stack frame"));
      report.spill_stores_bytes = std::max(0, number_before(line, "bytes spill stores"));
      report.spill_loads_bytes = std::max(0, number_before(line, "bytes spill loads"));
      in_props = false;
      continue;
    }
    if (const int regs = number_after(line, "Used "); regs >= 0 && line.find(" registers") != std::string_view::npos) {
      report.registers = regs;
      report.shared_bytes = std::max(0, number_before(line, "bytes smem"));
      report.found = true;
      in_entry = false;  // the "Used" line closes the entry's report
    }
  }
  return report;
}

}  // namespace rudnn::compiler::nvrtc
