// rudnn-autotune: tunes every tunable rudnn op of each file's @main, keyed as the runtime keys it,
// for each --rows value on one device, and writes the winners to an autotune cache (DESIGN §6);
// --merge combines caches.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <random>

#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/IR/MLIRContext.h>

#include "common/host_data.h"
#include "common/numbers.h"
#include "common/progress.h"
#include "family.h"
#include "jit.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/tuner.h"
#include "rudnn/autotune/tuning_cache.h"
#include "rudnn/compiler/kernel_op_models.h"
#include "rudnn/compiler/main_function.h"
#include "rudnn/device.h"
#include "rudnn/graph.h"

namespace {

using namespace rudnn;

constexpr const char* kUsage = R"(usage: rudnn-autotune FILE.mlir... --device cuda:N|host --rows R1,R2,... -o CACHE
       rudnn-autotune --merge A.sqlite B.sqlite... -o OUT.sqlite

Tunes every tunable rudnn op of each file's func.func @main on one device (normalization, the MoE
experts, attention with strategy "autotune"), once for each --rows value, and writes the winners to
an autotune cache (SQLite). For each value the graph runs once on the device with every dynamic
(`?`) dim of @main's arguments set to it and random inputs; every key the runtime asks the cache
for (dynamic extents anchored to power-of-two buckets: 300 rows are tuned as 512) is then tuned.
Ship the cache with an application and point RUDNN_AUTOTUNE_CACHE at it.

options:
  --device cuda:N|host   the device to tune on (default: cuda:0)
  --rows R1,R2,...       extents of the `?` dims to tune for (default 1,16,512,4096): tokens for
                         a [?, H] graph; --shapes is the same option
  --jobs N               candidates lowered, NVRTC-checked and built at once (default: cores)
  --repeats N            timed samples per candidate (default: 30 on a GPU, 5 on the host)
  -o PATH                the cache to write (created, or merged into: the faster record of a key
                         is kept). Host tunings (--device host) only go to a host cache, whose name
                         must contain ".host." (e.g. tune.host.sqlite); a GPU never reads one.
  --merge A B...         merge caches of one kind into -o (conflicts keep the faster record)
  --quiet                no progress bar and no table

example (on the deployment GPU):
  rudnn-autotune examples/normalization.mlir --device cuda:0 --rows 1,16,512,4096 --jobs 8 \
      -o build/autotune.sqlite
  RUDNN_AUTOTUNE_CACHE=build/autotune.sqlite RUDNN_AUTOTUNE=cached ./my_inference_server
)";

struct Options {
  std::vector<std::string> files;
  std::string device = "cuda:0";
  std::vector<std::int64_t> rows = {1, 16, 512, 4096};
  int jobs = 0;
  int repeats = 0;
  std::string output;
  bool merge = false;
  bool quiet = false;
};

int fail(const std::string& text) {
  std::fprintf(stderr, "rudnn-autotune: error: %s\n", text.c_str());
  return 1;
}

// The tools' one strict parser (tools/common/numbers.h), in the shape the option loop uses.
std::optional<std::string> parse_int(const std::string& flag, const std::string& text, std::int64_t min,
                                     std::int64_t max, std::int64_t& out) {
  auto v = tools::parse_int(flag, text, min, max);
  if (!v.ok()) return v.error().message();
  out = v.value();
  return std::nullopt;
}

std::optional<std::string> parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--device") {
      auto v = value();
      if (!v) return "--device: expected cuda:N or host, got nothing";
      o.device = *v;
    } else if (a == "--rows" || a == "--shapes") {  // --shapes: the issue's name for the same list
      auto v = value();
      if (!v) return "--rows: expected a comma-separated list of row counts, got nothing";
      o.rows.clear();
      std::size_t start = 0;
      while (start <= v->size()) {
        const std::size_t comma = v->find(',', start);
        std::int64_t r = 0;
        if (auto e = parse_int("--rows", v->substr(start, comma - start), 1, INT64_MAX, r)) return e;
        o.rows.push_back(r);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (a == "--jobs" || a == "--repeats") {
      auto v = value();
      std::int64_t n = 0;
      if (!v) return a + ": expected an integer >= 1, got nothing";
      if (auto e = parse_int(a, *v, 1, INT32_MAX, n)) return e;
      (a == "--jobs" ? o.jobs : o.repeats) = static_cast<int>(n);
    } else if (a == "-o" || a == "--output") {
      auto v = value();
      if (!v) return "-o: expected the output cache path, got nothing";
      o.output = *v;
    } else if (a == "--merge") {
      o.merge = true;
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      return fmt::format("unknown option \"{}\" (see --help)", a);
    } else {
      o.files.push_back(a);
    }
  }
  if (o.files.empty()) return o.merge ? "--merge: expected input caches, got none" : "expected FILE.mlir..., got none";
  if (o.output.empty()) return "-o: expected the output cache path, got none";
  // The cache's directory must exist (SQLite would report a missing one as "read-only").
  std::error_code ec;
  if (std::filesystem::is_directory(o.output, ec))
    return fmt::format("-o: expected a cache file path, got \"{}\" (a directory)", o.output);
  const std::filesystem::path dir = std::filesystem::path(o.output).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    return fmt::format("-o: expected a path in an existing directory, got \"{}\" (no directory {})", o.output,
                       dir.string());
  return std::nullopt;
}

// One key to tune, and where it came from.
struct Work {
  std::string where;  // "examples/attention.mlir (rows 16)"
  autotune::TuningKey key;
};

// Every op of `path` has a registered family, and the dims its kernels are specialized on are
// static (as rudnn-precompile demands): a `?` there would tune one extent per --rows value.
Status<RuntimeError> check_ops(const std::string& path, const Device& device) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  compiler::load_rudnn_dialects(context);
  auto loaded = compiler::read_main_function(path, context);
  if (!loaded.ok()) return loaded.error();
  std::size_t count = 0;
  for (mlir::Operation& op : loaded->main.getBody().front()) {
    if (llvm::isa<mlir::func::ReturnOp>(op)) continue;
    const std::string name = op.getName().getStringRef().str();
    const std::string where = fmt::format("{}: {} #{}", path, name, ++count);
    const ops::OpFamily* family = ops::family_for(name);
    if (!family) return RuntimeError(ErrorKind::Unsupported, where, "an op with a registered family", name);
    auto lowered = family->kernels(op, ops::target_for(device), false, where);
    if (!lowered.ok()) return lowered.error();
  }
  return {};
}

// Adds the keys the runtime asks the autotune cache for when it runs `path` on `device` with every
// dynamic (`?`) extent of @main's arguments equal to `rows`. The graph runs once (random inputs, the
// `cached` mode, heuristic kernels where nothing is cached) with a key observer installed, so every
// tunable family is covered and keyed exactly as the runtime keys it — no family is named here.
Status<RuntimeError> observe_keys(const std::string& path, const Device& device, std::int64_t rows,
                                  std::vector<Work>& work) {
  if (auto s = check_ops(path, device); !s.ok()) return s.error();
  auto graph = graph::Graph::parse_file(path);
  if (!graph.ok()) return graph.error();
  std::mt19937_64 rng(0x5eed);  // values do not change which keys a run asks for
  std::vector<Tensor> inputs;
  for (const auto& arg : graph->inputs()) {
    Shape shape = arg.shape;
    for (auto& d : shape)
      if (d < 0) d = rows;
    auto data = tools::random_host_data(arg.name, shape, arg.dtype, std::nullopt, rng);
    if (!data.ok()) return data.error();
    auto t = Tensor::upload(data.value(), device);
    if (!t.ok()) return t.error();
    inputs.push_back(std::move(t.value()));
  }
  std::vector<autotune::TuningKey> seen;
  autotune::set_key_observer([&](const autotune::TuningKey& k) { seen.push_back(k); });
  const autotune::Mode mode = autotune::mode();
  autotune::set_mode(autotune::Mode::Cached);
  auto ran = graph->run(inputs);
  autotune::set_mode(mode);
  autotune::set_key_observer({});
  const std::string where = fmt::format("{} (rows {})", path, rows);
  if (!ran.ok())
    return RuntimeError(ran.error().kind(), where + ": " + ran.error().argument(), ran.error().expected(),
                        ran.error().actual(), ran.error().detail());
  for (auto& key : seen)
    if (std::none_of(work.begin(), work.end(), [&](const Work& w) { return w.key == key; }))
      work.push_back({where, std::move(key)});
  return {};
}

bool is_host_cache_name(const std::string& path) {
  return std::filesystem::path(path).filename().string().find(".host.") != std::string::npos;
}

int merge(const Options& o) {
  auto merged = autotune::merge_caches(o.files, o.output);
  if (!merged.ok()) return fail(merged.error().message());
  std::printf("merged %zu caches into %s: %zu records\n", o.files.size(), o.output.c_str(), merged.value());
  return 0;
}

int tune_all(const Options& o) {
  auto device = Device::parse(o.device);
  if (!device.ok()) return fail(device.error().message());
  const bool host = device->kind() == DeviceKind::Host;
  const autotune::CacheClass cls = host ? autotune::CacheClass::Host : autotune::CacheClass::Gpu;
  // Host timings only go where a GPU never reads: a host-class file with a name saying so.
  if (host && !is_host_cache_name(o.output))
    return fail(
        fmt::format("-o: expected a host cache name containing \".host.\" for --device host, got \"{}\" "
                    "(host timings are never written to a cache a GPU would read)",
                    o.output));
  if (std::filesystem::exists(o.output)) {
    auto existing = autotune::probe_cache_class(o.output);
    if (!existing.ok()) return fail(existing.error().message());
    if (existing.value() != cls)
      return fail(fmt::format("-o: expected a {} cache for --device {}, got an existing {} cache {}",
                              autotune::cache_class_name(cls), o.device, autotune::cache_class_name(existing.value()),
                              o.output));
  }
  // Every key once, in file and row order.
  std::vector<Work> work;
  for (const std::string& file : o.files)
    for (std::int64_t rows : o.rows)
      if (auto s = observe_keys(file, device.value(), rows, work); !s.ok()) return fail(s.error().message());
  if (work.empty())
    return fail("expected a rudnn op with an autotune search space and a static last dim in the given files, got none");

  std::size_t units = 0;
  for (const auto& w : work) units += autotune::progress_units(w.key);
  std::optional<rudnn::tools::Progress> progress;
  if (!o.quiet) progress.emplace(units, fmt::format("tuning {} keys on {}", work.size(), device->to_string()));
  autotune::TuneOptions options;
  options.policy = autotune::default_policy(device.value());
  if (o.repeats) options.policy.repeats = o.repeats;
  options.jobs = o.jobs ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (progress) options.on_progress = [&](const std::string& item) { progress->advance(1, item); };

  // The cache is opened (and created) at the first record to store, so a run that fails before any
  // tuning succeeds (no tunable op, a dynamic last dim, every tuning failing) leaves no empty file.
  std::unique_ptr<autotune::TuningCache> cache;
  std::vector<autotune::TuneReport> reports;
  int failures = 0;
  for (const auto& [where, key] : work) {
    auto report = autotune::tune(device.value(), key, options);
    if (!report.ok()) {
      std::fprintf(stderr, "\nrudnn-autotune: %s (%s): %s\n", where.c_str(), key.to_string().c_str(),
                   report.error().message().c_str());
      failures++;
      continue;
    }
    if (!cache) {
      auto opened = autotune::TuningCache::open(o.output, {.read_only = false, .create = true, .expected = cls});
      if (!opened.ok()) return fail(opened.error().message());
      cache = std::move(opened.value());
    }
    if (auto s = cache->store(report->record()); !s.ok()) return fail(s.error().message());
    reports.push_back(std::move(report.value()));
  }
  if (progress) progress->finish();
  if (cache)
    if (auto s = cache->compact_for_shipping(); !s.ok())
      std::fprintf(stderr, "rudnn-autotune: note: %s\n", s.error().message().c_str());

  if (!o.quiet) {
    std::printf("%-24s %-14s %-8s %-8s %-54s %12s %9s\n", "op", "dtypes", "H", "rows<=", "winner", "time (us)",
                "runner-up");
    for (const auto& r : reports) {
      std::vector<std::string_view> names;
      for (DType t : r.key.dtypes) names.push_back(dtype_name(t));
      std::printf("%-24s %-14s %-8s %-8s %-54s %12.3f %8.3fx\n", r.key.op.c_str(),
                  fmt::format("{}", fmt::join(names, ",")).c_str(),
                  fmt::format("{}", fmt::join(r.key.static_dims, ",")).c_str(),
                  fmt::format("{}", fmt::join(r.key.buckets, ",")).c_str(), r.winner.to_string().c_str(),
                  r.time_ms * 1000.0, r.runner_up_ratio);
    }
    if (cache)
      std::printf("%zu keys tuned, %d failed; %s cache %s\n", reports.size(), failures,
                  std::string(autotune::cache_class_name(cls)).c_str(), o.output.c_str());
    else
      std::printf("0 keys tuned, %d failed; no cache written\n", failures);
  }
  return failures ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The last guard: a failure is an error line and a non-zero exit, never an uncaught exception.
  try {
    Options o;
    if (auto e = parse_args(argc, argv, o)) return fail(*e);
    return o.merge ? merge(o) : tune_all(o);
  } catch (const std::bad_alloc&) {
    return fail("rudnn-autotune: expected enough host memory, got an allocation failure");
  } catch (const std::exception& e) {
    return fail(fmt::format("rudnn-autotune: expected no exception, got {}", e.what()));
  }
}
