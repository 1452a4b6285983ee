// Kernel lookup: a launch → its binary from the kernel packs, the disk cache or a compile (NVRTC or
// the host compiler), keyed exactly as rudnn-precompile keys a pack.
#include "jit.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "backends/host/host_backend.h"
#include "backends/nvrtc/nvrtc_backend.h"
#include "cache/kernel_cache.h"
#include "cache/kernel_pack.h"
#include "templates/embedded.h"
#include "env.h"
#include "log.h"
#include "queue_impl.h"
#include "stats_counters.h"
#include "checked_math.h"

namespace rudnn::ops {

namespace {

bool jit_disabled() {
  const char* v = std::getenv("RUDNN_DISABLE_JIT");
  return v && std::strcmp(v, "1") == 0;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += x + " ";
  return s;
}

// Where a disabled JIT's error says the kernel was looked for, and why each pack could not help.
std::string describe_sources(const runtime::KernelPackSet& packs, const std::string& arch) {
  std::string s;
  for (const auto& pack : packs.packs) {
    s += "; pack " + pack->describe();
    if (pack->library_version() != library_version())
      s += fmt::format(" built for {}, this is {}", pack->library_version(), library_version());
    else if (!pack->compiler_version(arch))
      s += " has no kernels for " + arch;
  }
  if (packs.packs.empty()) s += "; no kernel pack (RUDNN_KERNEL_PACK is unset)";
  return s + "; kernel cache " + runtime::KernelCache::instance().directory();
}

// The kernel from the first pack that has it, or nothing. A pack built by another rudnn (library
// version) cannot hold a matching digest, so it is not searched.
std::optional<Result<runtime::KernelBinary, RuntimeError>> pack_lookup(const runtime::KernelPackSet& packs,
                                                                       runtime::KernelCacheKey key,
                                                                       const std::string& entry) {
  for (const auto& pack : packs.packs) {
    const std::string* compiler = pack->compiler_version(key.arch);
    if (!compiler || pack->library_version() != key.library_version) continue;
    key.compiler_version = *compiler;
    const std::string digest = key.digest();
    if (const runtime::KernelPackEntry* e = pack->find(digest)) {
      auto binary = pack->binary(*e);
      if (binary.ok()) {
        runtime::count(&runtime::StatCounters::pack_hits);
        runtime::log_debug("kernel pack hit {} ({}) in {}", entry, digest.substr(0, 12), pack->path());
      }
      return binary;
    }
  }
  return std::nullopt;
}

}  // namespace

compiler::Target target_for(const Device& device) {
  compiler::Target t;
  t.arch = device.info().arch;
  t.host_emulation = device.kind() == DeviceKind::Host;
  t.limits = device.info();
  return t;
}

std::string library_version() {
  return fmt::format("rudnn {} templates {}", RUDNN_LIBRARY_VERSION, templates::content_hash());
}

bool is_host_arch(const std::string& arch) { return arch.rfind("host", 0) == 0; }

runtime::KernelCacheKey kernel_cache_key(const compiler::KernelLaunch& launch, const std::string& arch,
                                         const std::string& compiler_version) {
  runtime::KernelCacheKey key;
  key.source = launch.source;
  key.arch = arch;
  key.library_version = library_version();
  key.compiler_version = compiler_version;
  key.options = is_host_arch(arch) ? join(compiler::host_cc::options()) : join(compiler::nvrtc::base_options(arch));
  return key;
}

Result<std::string, RuntimeError> local_compiler_version(const std::string& arch) {
  if (is_host_arch(arch)) return compiler::host_cc::compiler_version();
  auto v = compiler::nvrtc::version();
  if (!v.ok()) return v.error();
  return "nvrtc " + v.value();
}

Result<runtime::KernelBinary, RuntimeError> compile_kernel(const compiler::KernelLaunch& launch,
                                                           const std::string& arch, const std::string& work_dir) {
  runtime::KernelBinary binary;
  if (is_host_arch(arch)) {
    auto out = compiler::host_cc::compile(launch.source, launch.entry, work_dir);
    if (!out.ok()) return out.error();
    binary.image = std::move(out.value());
    return binary;
  }
  auto out = compiler::nvrtc::compile(launch.source, launch.entry, arch, {});
  if (!out.ok()) {
    // Keep the generated source where the error can point to it.
    const std::string path = fmt::format("{}/src/{}.{}.cu", work_dir, launch.entry, arch);
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    std::ofstream(path) << launch.source;
    const auto& e = out.error();
    return RuntimeError(e.kind(), e.argument(), e.expected(), e.actual(),
                        fmt::format("generated source: {}\n{}", path, e.detail()));
  }
  binary.image = std::move(out->cubin);
  binary.ptx = std::move(out->ptx);
  return binary;
}

Result<runtime::KernelBinary, RuntimeError> kernel_binary(const Device& device, const compiler::KernelLaunch& launch,
                                                          const std::string& op_name, const std::string& call) {
  const std::string arch = device.backend().compile_arch();
  auto disabled_error = [&](const std::string& why) {
    // The shapes go in `actual`, so wrappers that replace the detail still show them.
    std::string sources = describe_sources(runtime::KernelPackSet::from_environment(), arch);
    return RuntimeError(
        ErrorKind::JitDisabled, op_name,
        fmt::format("kernel {} (config {}) for {} in a kernel pack or the kernel cache", launch.entry,
                    launch.config.to_string(), arch),
        fmt::format("a miss for {} while RUDNN_DISABLE_JIT=1{}", call.empty() ? "this call" : call, why),
        sources.substr(2));
  };

  // Packs first: their digests use the compiler version each pack recorded, so no compiler is needed.
  const auto& packs = runtime::KernelPackSet::from_environment();
  if (packs.error) return *packs.error;  // a pack was asked for and is unusable: never silently ignored
  runtime::KernelCacheKey key = kernel_cache_key(launch, arch, {});
  if (auto hit = pack_lookup(packs, key, launch.entry)) return std::move(*hit);

  auto compiler_version = local_compiler_version(arch);
  if (!compiler_version.ok()) {
    if (jit_disabled()) return disabled_error(" (and no compiler here: " + compiler_version.error().message() + ")");
    return compiler_version.error();
  }
  key.compiler_version = compiler_version.value();
  const std::string digest = key.digest();
  auto& cache = runtime::KernelCache::instance();
  if (auto payload = cache.load(digest)) {
    runtime::KernelBinary binary;
    if (runtime::KernelBinary::deserialize(*payload, binary)) {
      runtime::count(&runtime::StatCounters::disk_cache_hits);
      runtime::log_debug("disk cache hit {} ({})", launch.entry, digest.substr(0, 12));
      return binary;
    }
  }
  runtime::count(&runtime::StatCounters::disk_cache_misses);
  if (jit_disabled()) return disabled_error("");
  runtime::log_info("compiling {} for {} ({})", launch.entry, arch, launch.config.to_string());
  auto binary = compile_kernel(launch, arch, cache.directory());
  if (!binary.ok()) return binary.error();
  runtime::count(&runtime::StatCounters::jit_compiles);
  if (auto s = cache.store(digest, binary->serialize()); !s.ok())
    runtime::log_info("kernel cache not written: {}", s.error().message());  // still usable this run
  return binary;
}

}  // namespace rudnn::ops
