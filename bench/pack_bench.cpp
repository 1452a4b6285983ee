// Loading a kernel pack (issue 3 target: a pack of 100 kernels loads in ≤ 50 ms, excluding the
// driver's module load). The pack holds 100 kernels of the size NVRTC makes for the normalization
// family (about 55 KiB of cubin and 61 KiB of PTX each, measured with rudnn-precompile for sm_90a),
// so the whole-file SHA-256 runs over a realistic ~11 MiB. Three measures: open (read, verify,
// index), open + look up every kernel (each payload's own SHA-256 checked and copied out, as the
// runtime does on first use), and one lookup on an open pack.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>

#include "cache/kernel_cache.h"
#include "cache/kernel_pack.h"

namespace {

namespace fs = std::filesystem;
using namespace rudnn::runtime;

constexpr int kKernels = 100;
constexpr std::size_t kCubinBytes = 55 * 1024, kPtxBytes = 61 * 1024;

struct BenchPack {
  std::string path;
  std::vector<std::string> digests;
  BenchPack() {
    path = (fs::temp_directory_path() / ("rudnn-pack-bench-" + std::to_string(::getpid()) + ".pack")).string();
    std::mt19937_64 rng(42);
    KernelPackWriter writer("rudnn bench");
    (void)writer.add_arch("sm_90a", "nvrtc 13.0");
    for (int i = 0; i < kKernels; ++i) {
      KernelCacheKey key{"kernel source " + std::to_string(i), "-arch=sm_90a", "nvrtc 13.0", "sm_90a", "rudnn bench"};
      KernelBinary b;
      b.image.resize(kCubinBytes);
      b.ptx.resize(kPtxBytes);
      for (auto& c : b.image) c = static_cast<char>(rng());
      for (auto& c : b.ptx) c = static_cast<char>('a' + rng() % 26);
      KernelPackEntry e;
      e.digest = key.digest();
      e.arch = "sm_90a";
      e.entry = "rudnn_kernel_" + std::to_string(i);
      e.op_name = "rudnn.rms_norm";
      e.config = "threads_per_row=256,rows_per_block=1,vector_width=8";
      digests.push_back(e.digest);
      (void)writer.add(e, b);
    }
    if (!writer.write(path).ok()) std::abort();
  }
  ~BenchPack() { fs::remove(path); }
};

const BenchPack& pack_file() {
  static BenchPack p;
  return p;
}

void BM_PackOpen100(benchmark::State& state) {
  const auto& p = pack_file();
  for (auto _ : state) {
    auto pack = KernelPack::open(p.path);
    if (!pack.ok()) state.SkipWithError(pack.error().message().c_str());
    benchmark::DoNotOptimize(pack);
  }
  state.counters["MiB"] = static_cast<double>(fs::file_size(p.path)) / (1024.0 * 1024.0);
}
BENCHMARK(BM_PackOpen100)->Unit(benchmark::kMillisecond)->Repetitions(9)->ReportAggregatesOnly(true);

void BM_PackOpenAndLoadAll100(benchmark::State& state) {
  const auto& p = pack_file();
  for (auto _ : state) {
    auto pack = KernelPack::open(p.path);
    if (!pack.ok()) state.SkipWithError(pack.error().message().c_str());
    for (const auto& d : p.digests) {
      auto b = pack.value()->binary(*pack.value()->find(d));
      benchmark::DoNotOptimize(b);
    }
  }
}
BENCHMARK(BM_PackOpenAndLoadAll100)->Unit(benchmark::kMillisecond)->Repetitions(9)->ReportAggregatesOnly(true);

void BM_PackFind(benchmark::State& state) {
  const auto& p = pack_file();
  auto pack = KernelPack::open(p.path).value();
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pack->find(p.digests[i++ % p.digests.size()]));
  }
}
BENCHMARK(BM_PackFind);

}  // namespace

BENCHMARK_MAIN();
