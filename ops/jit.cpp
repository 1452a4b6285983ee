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
        runtime::counters().pack_hits++;
        runtime::log_debug("kernel pack hit {} ({}) in {}", entry, digest.substr(0, 12), pack->path());
      }
      return binary;
    }
  }
  return std::nullopt;
}

}  // namespace

namespace {
std::atomic<bool>& poison_flag() {
  static std::atomic<bool> flag = [] {
    const char* v = std::getenv("RUDNN_POISON_OUTPUTS");
    return v && std::strcmp(v, "1") == 0;
  }();
  return flag;
}
}  // namespace

bool poison_outputs() { return poison_flag().load(std::memory_order_relaxed); }
void set_poison_outputs(bool on) { poison_flag() = on; }

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

Result<runtime::KernelBinary, RuntimeError> compile_kernel(const compiler::KernelLaunch& launch, const std::string& arch,
                                                           const std::string& work_dir) {
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
  auto& stats = runtime::counters();
  auto disabled_error = [&](const std::string& why) {
    // The shapes go in `actual`, so wrappers that replace the detail still show them.
    std::string sources = describe_sources(runtime::KernelPackSet::from_environment(), arch);
    return RuntimeError(ErrorKind::JitDisabled, op_name,
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
      stats.disk_cache_hits++;
      runtime::log_debug("disk cache hit {} ({})", launch.entry, digest.substr(0, 12));
      return binary;
    }
  }
  stats.disk_cache_misses++;
  if (jit_disabled()) return disabled_error("");
  runtime::log_info("compiling {} for {} ({})", launch.entry, arch, launch.config.to_string());
  auto binary = compile_kernel(launch, arch, cache.directory());
  if (!binary.ok()) return binary.error();
  stats.jit_compiles++;
  if (auto s = cache.store(digest, binary->serialize()); !s.ok())
    runtime::log_info("kernel cache not written: {}", s.error().message());  // still usable this run
  return binary;
}

Result<std::shared_ptr<const Plan>, RuntimeError> build_plan(const Device& device, const compiler::LoweredOp& lowered) {
  // The first plan a process builds is the switches' first use: an undocumented value is an error.
  if (auto env = runtime::check_environment(); !env.ok()) return env.error();
  // Loaded kernels are shared between plans that instantiate the same source (e.g. two epsilons).
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::shared_ptr<runtime::LoadedKernel>> loaded;
  auto plan = std::make_shared<Plan>();
  plan->op_name = lowered.op_name;
  plan->temporaries = lowered.temporaries;
  plan->first_temporary_slot = lowered.first_temporary_slot;
  for (const auto& launch : lowered.launches) {
    std::shared_ptr<runtime::LoadedKernel> kernel;
    const auto module_key = std::make_pair(device.to_string(), launch.source);
    {
      std::lock_guard lock(mutex);
      if (auto it = loaded.find(module_key); it != loaded.end()) kernel = it->second;
    }
    if (!kernel) {
      auto binary = kernel_binary(device, launch, lowered.op_name, lowered.call);
      if (!binary.ok()) return binary.error();
      auto k = device.backend().load_kernel(binary.value(), launch.entry);
      if (!k.ok()) return k.error();
      kernel = k.value();
      std::lock_guard lock(mutex);
      loaded.emplace(module_key, kernel);
    }
    PreparedKernel prepared{kernel, launch};
    prepared.launch.source.clear();
    plan->kernels.push_back(std::move(prepared));
  }
  return std::shared_ptr<const Plan>(std::move(plan));
}

namespace {

// Sizes of a launch (grid, size params, temporaries) are products of the call's extents: each is
// computed with overflow checks, and an overflow is an error naming the kernel rather than a
// wrapped grid or a tiny workspace for a huge problem.
std::optional<std::int64_t> size_value(const compiler::SizeRef& ref, std::span<const OperandView> operands) {
  using K = compiler::SizeRef::Kind;
  switch (ref.kind) {
    case K::Const: return ref.value;
    case K::Rows: {
      const Shape& s = *operands[static_cast<std::size_t>(ref.operand)].shape;
      return checked_element_count(Shape(s.begin(), s.end() - (s.empty() ? 0 : 1)));
    }
    case K::Dim: return (*operands[static_cast<std::size_t>(ref.operand)].shape)[static_cast<std::size_t>(ref.dim)];
  }
  return std::nullopt;
}

std::optional<std::int64_t> evaluate(const compiler::SizeExpr& e, std::span<const OperandView> operands) {
  std::int64_t n = 1;
  for (const auto& f : e.factors) {
    auto v = size_value(f, operands);
    if (!v) return std::nullopt;
    auto product = checked_mul(n, *v);
    if (!product) return std::nullopt;
    n = *product;
  }
  if (e.divisor <= 0) return std::nullopt;
  return n / e.divisor + (n % e.divisor != 0 ? 1 : 0);  // ceil, without n + divisor - 1 overflowing
}

RuntimeError size_overflow(const std::string& what, const std::string& op) {
  return RuntimeError(ErrorKind::InvalidValue, what, "a size that fits in 64 bits",
                      "an overflowing product of the call's extents", "in " + op);
}

}  // namespace

namespace {

Status<RuntimeError> launch_kernels(const Plan& plan, const Queue& queue, std::span<const OperandView> operands);

// The call's operands plus its temporaries, allocated on the queue for the duration of the launches.
Status<RuntimeError> run_with_temporaries(const Plan& plan, const Queue& queue, std::span<const OperandView> operands) {
  constexpr std::size_t kMaxSlots = 24;
  const std::size_t first = static_cast<std::size_t>(plan.first_temporary_slot);
  const std::size_t total = first + plan.temporaries.size();
  if (operands.size() != first || total > kMaxSlots)
    return RuntimeError(ErrorKind::Internal, plan.op_name, fmt::format("{} operand slots (at most {} in all)", first, kMaxSlots),
                        std::to_string(operands.size()));
  std::array<OperandView, kMaxSlots> views{};
  std::array<Shape, kMaxSlots> shapes{};
  std::copy(operands.begin(), operands.end(), views.begin());
  auto& backend = queue.device().backend();
  void* stream = queue.impl().stream();
  std::size_t allocated = first;
  Status<RuntimeError> status;
  for (std::size_t i = first; i < total && status.ok(); ++i) {
    const compiler::Temporary& t = plan.temporaries[i - first];
    const auto elements = evaluate(t.elements, std::span<const OperandView>(views.data(), i));
    const auto byte_count = elements ? checked_mul(std::max<std::int64_t>(*elements, 1), t.element_bytes) : std::nullopt;
    if (!byte_count) {
      status = size_overflow(fmt::format("temporary {}", i - first), plan.op_name);
      break;
    }
    shapes[i] = t.shape;
    std::int64_t known = 1;
    for (std::int64_t d : t.shape) known *= d < 0 ? 1 : d;  // static extents of the IR: small
    for (std::int64_t& d : shapes[i])
      if (d < 0) d = known > 0 ? *elements / known : 0;
    const std::size_t bytes = static_cast<std::size_t>(*byte_count);
    auto memory = backend.allocate(bytes, stream);
    if (!memory.ok()) {
      const RuntimeError& e = memory.error();
      status = RuntimeError(e.kind(), fmt::format("temporary {} of {}", i - first, plan.op_name), e.expected(),
                            e.actual(), e.detail());
      break;
    }
    views[i] = {memory.value(), &shapes[i]};
    allocated = i + 1;
    if (poison_outputs()) status = backend.fill_bytes(stream, memory.value(), 0xff, bytes);
  }
  if (status.ok()) status = launch_kernels(plan, queue, std::span<const OperandView>(views.data(), total));
  for (std::size_t i = first; i < allocated; ++i) backend.release(views[i].data, stream);
  return status;
}

}  // namespace

Status<RuntimeError> run_plan(const Plan& plan, const Queue& queue, std::span<const OperandView> operands) {
  if (!plan.temporaries.empty()) return run_with_temporaries(plan, queue, operands);
  return launch_kernels(plan, queue, operands);
}

namespace {

Status<RuntimeError> launch_kernels(const Plan& plan, const Queue& queue, std::span<const OperandView> operands) {
  const Device& device = queue.device();
  const DeviceInfo& info = device.info();
  for (const auto& pk : plan.kernels) {
    const auto& l = pk.launch;
    runtime::LaunchGeometry g;
    bool empty = false;
    for (int i = 0; i < 3; ++i) {
      const auto grid = evaluate(l.grid[i], operands);
      if (!grid) return size_overflow(fmt::format("grid dimension {} of kernel {}", i, l.entry), plan.op_name);
      const std::int64_t n = *grid;
      if (n <= 0) empty = true;
      // Templates stride over the grid, so a grid larger than the device allows is clamped.
      const std::int64_t limit = i == 0 ? info.max_grid_x : info.max_grid_yz;
      g.grid[i] = static_cast<std::uint32_t>(std::min(n, limit));
      g.block[i] = static_cast<std::uint32_t>(l.block[i]);
    }
    if (empty) continue;  // nothing to do (e.g. zero rows)
    g.dynamic_shared_bytes = static_cast<std::uint32_t>(l.dynamic_shared_bytes);

    // Argument storage without heap allocation: one 8-byte slot per parameter.
    constexpr std::size_t kMaxParams = 32;
    if (l.params.size() > kMaxParams)
      return RuntimeError(ErrorKind::Internal, "kernel " + l.entry, "at most 32 parameters",
                          std::to_string(l.params.size()));
    alignas(8) std::array<std::uint64_t, kMaxParams> slots{};
    std::array<void*, kMaxParams> args{};
    for (std::size_t i = 0; i < l.params.size(); ++i) {
      const auto& p = l.params[i];
      using K = compiler::KernelParam::Kind;
      switch (p.kind) {
        case K::Buffer: {
          void* ptr = operands[static_cast<std::size_t>(p.operand)].data;
          std::memcpy(&slots[i], &ptr, sizeof(ptr));
          break;
        }
        case K::NullBuffer: slots[i] = 0; break;
        case K::Size: {
          const auto size = evaluate(p.size, operands);
          if (!size) return size_overflow(fmt::format("parameter {} of kernel {}", p.name, l.entry), plan.op_name);
          const long long v = *size;
          std::memcpy(&slots[i], &v, sizeof(v));
          break;
        }
        case K::F32: std::memcpy(&slots[i], &p.f32, sizeof(float)); break;
      }
      args[i] = &slots[i];
    }
    runtime::counters().kernel_launches++;
    if (auto s = device.backend().launch(queue.impl().stream(), *pk.kernel, g, args.data()); !s.ok()) return s;
  }
  return {};
}

}  // namespace

}  // namespace rudnn::ops
