// rudnn-precompile: the rudnn ops of .mlir files × GPU archs → a kernel pack (SPEC §11, DESIGN §6).
// Every op is lowered exactly as the runtime lowers it on that arch (compiler::target_for_arch has
// the arch's real limits), every kernel is keyed exactly as the runtime keys it (ops::kernel_cache_key),
// and compiled by the same backends, so a process with RUDNN_KERNEL_PACK=<pack> RUDNN_DISABLE_JIT=1
// finds every kernel it needs without a compiler.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <llvm/Support/MemoryBuffer.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/MLIRContext.h>

#include "cache/kernel_pack.h"
#include "common/numbers.h"
#include "common/progress.h"
#include "family.h"
#include "jit.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/compiler/kernel_op_models.h"
#include "rudnn/compiler/pipeline.h"
#include "rudnn/compiler/main_function.h"
#include "rudnn/device.h"
#include "device_backend.h"

namespace {

namespace fs = std::filesystem;
using namespace rudnn;

constexpr const char* kUsage = R"(usage: rudnn-precompile FILE.mlir... --arch ARCH[,ARCH...] -o PACK [options]

Compiles the kernels of every rudnn op in each file's func.func @main for each arch into one kernel
pack (each FILE.mlir a regular file of at most 64 MiB nested at most 64 deep: docs/input-limits.md).
Leading dims may be dynamic (`?`); the last dim must be static. At run time,
RUDNN_KERNEL_PACK=PACK makes the library load kernels from the pack before its disk cache, and with
RUDNN_DISABLE_JIT=1 a kernel missing from both is an error instead of a compile.

options:
  --arch LIST                    comma-separated: sm_80, sm_86, sm_89, sm_90, sm_90a (the runtime uses
                                 sm_90a on Hopper), host (the host emulation device: host shared
                                 objects, for CI); may be repeated
  -o, --output PACK              the pack to write (atomically; nothing is written on any error)
  --with-autotune-candidates     also every config of the op's autotune search space, so that any
                                 variant an autotune cache picks is in the pack (those within the
                                 arch's shared memory; a heuristic kernel beyond it is an error)
  -j, --jobs N                   parallel compiles (default: the number of hardware threads)
  --quiet                        no progress line
  -h, --help                     this text

example:
  rudnn-precompile examples/normalization.mlir examples/odd_sizes.mlir \
      --arch sm_80,sm_90a --with-autotune-candidates --jobs 8 -o model.rudnnpack
  RUDNN_KERNEL_PACK=model.rudnnpack RUDNN_DISABLE_JIT=1 rudnn-run examples/normalization.mlir \
      --device cuda:0 --random-inputs
)";

struct Options {
  std::vector<std::string> files, archs;
  std::string output;
  bool with_candidates = false;
  bool quiet = false;
  unsigned jobs = 0;
};

int fail(const std::string& text) {
  std::fprintf(stderr, "rudnn-precompile: error: %s\n", text.c_str());
  return 1;
}

std::optional<std::string> parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::optional<std::string> inline_value;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      inline_value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
    }
    auto value = [&]() -> std::optional<std::string> {
      if (inline_value) return inline_value;
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--arch") {
      auto v = value();
      if (!v || v->empty()) return "--arch: expected a comma-separated arch list, got nothing";
      std::size_t start = 0;
      while (start <= v->size()) {
        std::size_t end = std::min(v->find(',', start), v->size());
        std::string arch = v->substr(start, end - start);
        if (arch.empty()) return fmt::format("--arch: expected arch names separated by ',', got \"{}\"", *v);
        if (std::find(o.archs.begin(), o.archs.end(), arch) == o.archs.end()) o.archs.push_back(arch);
        start = end + 1;
      }
    } else if (a == "-o" || a == "--output") {
      auto v = value();
      if (!v || v->empty()) return a + ": expected a file name, got nothing";
      o.output = *v;
    } else if (a == "--with-autotune-candidates") {
      if (inline_value) return "--with-autotune-candidates: expected no value, got " + *inline_value;
      o.with_candidates = true;
    } else if (a == "-j" || a == "--jobs") {
      auto v = value();
      if (!v) return a + ": expected a positive count, got nothing";
      auto n = tools::parse_int(a, *v, 1, 1024);  // the tools' one strict parser
      if (!n.ok()) return n.error().message();
      o.jobs = static_cast<unsigned>(n.value());
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      return "unknown option " + a + " (see --help)";
    } else {
      o.files.push_back(a);
    }
  }
  if (o.files.empty()) return "no input file: expected FILE.mlir... (see --help)";
  if (o.archs.empty()) return "--arch: expected at least one arch (e.g. --arch sm_80,sm_90a), got none";
  if (o.output.empty()) return "-o: expected the pack to write, got none";
  if (o.jobs == 0) o.jobs = std::max(1u, std::thread::hardware_concurrency());
  return std::nullopt;
}

// One arch to compile for: how lowering sees it and how the runtime keys its kernels.
struct ArchPlan {
  std::string name;          // as given: "sm_90a", "host"
  std::string compile_arch;  // as keyed: "sm_90a", "host-x86_64"
  std::string compiler_version;
  compiler::Target target;
};

Result<ArchPlan, RuntimeError> plan_arch(const std::string& name) {
  ArchPlan p;
  p.name = name;
  if (name == "host") {
    // Lowered for the host emulation device exactly as the runtime does (ops::target_for).
    const Device host = Device::host();
    p.compile_arch = host.backend().compile_arch();
    p.target = ops::target_for(host);
  } else {
    auto t = compiler::target_for_arch(name);
    if (!t.ok()) return t.error();  // names were checked before: not reached
    p.compile_arch = name;
    p.target = t.value();
  }
  auto v = ops::local_compiler_version(p.compile_arch);
  if (!v.ok())
    return RuntimeError(v.error().kind(), "compiler for " + name, v.error().expected(), v.error().actual(),
                        v.error().detail());
  p.compiler_version = v.value();
  return p;
}

// One kernel op of an input file (its module stays alive in `Inputs`).
struct OpCall {
  std::string where;  // "file.mlir: rudnn.rms_norm #2"
  mlir::Operation* op = nullptr;
  const ops::OpFamily* family = nullptr;
};

struct Inputs {
  std::vector<compiler::MainFunction> files;
  std::vector<OpCall> calls;
};

Status<RuntimeError> read_ops(const std::string& path, mlir::MLIRContext& context, Inputs& inputs) {
  auto loaded = compiler::read_main_function(path, context);
  if (!loaded.ok()) return loaded.error();
  mlir::func::FuncOp main = loaded->main;
  inputs.files.push_back(std::move(loaded.value()));
  std::size_t count = 0;
  for (mlir::Operation& op : main.getBody().front()) {
    if (llvm::isa<mlir::func::ReturnOp>(op)) continue;
    const std::string name = op.getName().getStringRef().str();
    const ops::OpFamily* family = ops::family_for(name);
    if (!family)
      return RuntimeError(ErrorKind::Unsupported, path + ": " + name,
                          "rudnn ops rudnn-precompile can lower (" + ops::registered_op_list() + ")", name);
    inputs.calls.push_back({fmt::format("{}: {} #{}", path, name, ++count), &op, family});
  }
  if (count == 0) return RuntimeError(ErrorKind::InvalidValue, path, "at least one rudnn op in @main", "none");
  return {};
}

// One kernel to compile (after deduplication by digest).
struct Work {
  const ArchPlan* arch = nullptr;
  compiler::KernelLaunch launch;
  runtime::KernelPackEntry entry;
  runtime::KernelBinary binary;
  std::optional<RuntimeError> error;
  double seconds = 0;
};

// Every kernel of `call` on `arch`: what its family says the runtime may lower (the heuristic
// configs of every variant the entry picks per call and, when asked, the whole autotune search space).
Status<RuntimeError> collect(const OpCall& call, const ArchPlan& arch, bool with_candidates, std::vector<Work>& work,
                             std::map<std::string, std::size_t>& by_digest, std::size_t& duplicates) {
  auto all = call.family->kernels(*call.op, arch.target, with_candidates, call.where);
  if (!all.ok()) {
    const auto& e = all.error();
    return RuntimeError(e.kind(),
                        e.argument().rfind(call.where, 0) == 0 ? e.argument() : call.where + " " + e.argument(),
                        e.expected(), e.actual(), e.detail());
  }
  for (auto& lowered : all.value()) {
    // A kernel the arch could never launch: the runtime refuses such a call on that GPU (or picks
    // another kernel), so a pack holding it would only hide the problem until deployment.
    const std::size_t limit = arch.target.limits.shared_memory_per_block_optin;
    if (const compiler::KernelLaunch* over = ops::launch_over_shared_memory(lowered, limit))
      return RuntimeError(
          ErrorKind::Unsupported, call.where + " " + over->entry,
          fmt::format("at most {} bytes of dynamic shared memory per block ({}'s opt-in limit)", limit, arch.name),
          fmt::format("{} bytes", over->dynamic_shared_bytes));
    for (auto& launch : lowered.launches) {
      const std::string digest = ops::kernel_cache_key(launch, arch.compile_arch, arch.compiler_version).digest();
      if (by_digest.count(digest)) {
        ++duplicates;
        continue;
      }
      by_digest.emplace(digest, work.size());
      Work w;
      w.arch = &arch;
      w.entry = {digest, arch.compile_arch, launch.entry, lowered.op_name, launch.config.to_string()};
      w.launch = std::move(launch);
      work.push_back(std::move(w));
    }
  }
  return {};
}

// The directory of `output` must take a new file: checked before minutes of compiling.
std::optional<std::string> check_output(const std::string& output) {
  const fs::path p(output);
  std::error_code ec;
  if (fs::is_directory(p, ec)) return fmt::format("-o {}: expected a file name, got a directory", output);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    return fmt::format("-o {}: expected an existing directory {}, got none", output, dir.string());
  if (::access(dir.c_str(), W_OK) != 0)
    return fmt::format("-o {}: expected a writable directory {}, got a read-only one", output, dir.string());
  return std::nullopt;
}

std::string human_bytes(std::uint64_t n) {
  if (n >= 10u * 1024 * 1024) return fmt::format("{:.1f} MiB", n / 1048576.0);
  if (n >= 10u * 1024) return fmt::format("{:.1f} KiB", n / 1024.0);
  return fmt::format("{} B", n);
}

int run(const Options& o) {
  // Every arch name first, so a typo is reported before anything else (e.g. a missing NVRTC).
  for (const auto& name : o.archs)
    if (auto t = compiler::target_for_arch(name); name != "host" && !t.ok())
      return fail(
          RuntimeError(t.error().kind(), "--arch", t.error().expected() + ", or host", t.error().actual()).message());
  std::vector<ArchPlan> archs;
  archs.reserve(o.archs.size());
  for (const auto& name : o.archs) {
    auto p = plan_arch(name);
    if (!p.ok()) return fail(p.error().message());
    if (name == "sm_90")
      std::fprintf(stderr,
                   "rudnn-precompile: note: the runtime on a Hopper GPU looks up sm_90a; sm_90 kernels serve "
                   "only code that asks for sm_90\n");
    archs.push_back(std::move(p.value()));
  }
  if (auto e = check_output(o.output)) return fail(*e);

  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  compiler::load_rudnn_dialects(context);
  Inputs inputs;
  for (const auto& file : o.files)
    if (auto s = read_ops(file, context, inputs); !s.ok()) return fail(s.error().message());
  const std::vector<OpCall>& calls = inputs.calls;

  // Lower everything up front (milliseconds per op): the total is known before the long part.
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Work> work;
  std::map<std::string, std::size_t> by_digest;
  std::size_t duplicates = 0;
  for (const auto& arch : archs)
    for (const auto& call : calls)
      if (auto s = collect(call, arch, o.with_candidates, work, by_digest, duplicates); !s.ok())
        return fail(s.error().message());
  const double lower_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr,
               "rudnn-precompile: %zu ops x %zu archs -> %zu kernels (%zu duplicates merged), lowered in %.2f s; "
               "compiling on %u threads\n",
               calls.size(), archs.size(), work.size(), duplicates, lower_seconds, o.jobs);

  const std::string work_dir = runtime::KernelCache::instance().directory();
  std::optional<tools::Progress> progress;
  if (!o.quiet) progress.emplace(work.size(), "compiling");
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (std::size_t i = next++; i < work.size() && !failed; i = next++) {
      Work& w = work[i];
      const auto start = std::chrono::steady_clock::now();
      auto binary = ops::compile_kernel(w.launch, w.arch->compile_arch, work_dir);
      w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!binary.ok()) {
        w.error = binary.error();
        failed = true;  // the pack would be incomplete: stop early
      } else {
        w.binary = std::move(binary.value());
      }
      if (progress) progress->advance(1, w.entry.entry + " " + w.arch->name);
    }
  };
  const auto compile_start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::min<std::size_t>(o.jobs, std::max<std::size_t>(1, work.size())); ++t)
    threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  const double compile_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  if (progress) progress->finish();
  for (const auto& w : work)
    if (w.error) return fail(fmt::format("{} for {}: {}", w.entry.entry, w.arch->name, w.error->message()));

  runtime::KernelPackWriter writer(ops::library_version());
  for (const auto& arch : archs)
    if (auto s = writer.add_arch(arch.compile_arch, arch.compiler_version); !s.ok()) return fail(s.error().message());
  for (auto& w : work)
    if (auto added = writer.add(w.entry, w.binary); !added.ok()) return fail(added.error().message());
  if (auto s = writer.write(o.output); !s.ok()) return fail(s.error().message());
  std::error_code ec;
  const std::uint64_t pack_bytes = fs::file_size(o.output, ec);

  // Summary: per arch, then the total.
  std::printf("%-12s %-44s %8s %12s %12s %12s\n", "arch", "compiler", "kernels", "image", "ptx", "compile s");
  for (const auto& arch : archs) {
    std::size_t n = 0;
    std::uint64_t image = 0, ptx = 0;
    double seconds = 0;
    for (const auto& w : work)
      if (w.arch == &arch) {
        ++n;
        image += w.binary.image.size();
        ptx += w.binary.ptx.size();
        seconds += w.seconds;
      }
    std::printf("%-12s %-44.44s %8zu %12s %12s %12.1f\n", arch.compile_arch.c_str(), arch.compiler_version.c_str(), n,
                human_bytes(image).c_str(), human_bytes(ptx).c_str(), seconds);
  }
  std::printf("total: %zu kernels, pack %s (%s), compiled in %.1f s wall on %u threads = %.2f kernels/s\n", work.size(),
              o.output.c_str(), human_bytes(pack_bytes).c_str(), compile_wall, o.jobs,
              compile_wall > 0 ? static_cast<double>(work.size()) / compile_wall : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The last guard: a failure is an error line and a non-zero exit, never an uncaught exception.
  try {
    Options o;
    if (auto e = parse_args(argc, argv, o)) return fail(*e);
    return run(o);
  } catch (const std::bad_alloc&) {
    return fail("rudnn-precompile: expected enough host memory, got an allocation failure");
  } catch (const std::exception& e) {
    return fail(fmt::format("rudnn-precompile: expected no exception, got {}", e.what()));
  }
}
