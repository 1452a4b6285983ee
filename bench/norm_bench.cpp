// Host-side costs of the normalization path (issue targets): cold NVRTC compile of one kernel,
// cold MLIR lowering, warm call up to the launch (plan cached), disk-cache hit.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "backends/nvrtc/nvrtc_backend.h"
#include "cache/kernel_cache.h"
#include "contracts/normalization.h"
#include "jit.h"
#include "rudnn/compiler/pipeline.h"
#include "rudnn/normalization.h"

namespace {

using namespace rudnn;
using contracts::NormKind;

compiler::NormRequest request(NormKind kind, DType dtype, std::int64_t h) {
  compiler::NormRequest r;
  r.signature.kind = kind;
  r.signature.input = {{16, h}, dtype, 0};
  if (kind != NormKind::Softmax) r.signature.gamma = contracts::NormOperand{{h}, DType::F32, 0};
  r.signature.epsilon = 1e-5;
  return r;
}

compiler::Target sm90() {
  compiler::Target t;
  t.arch = "sm_90a";
  return t;
}

void BM_ColdLowering(benchmark::State& state) {
  const auto kind = static_cast<NormKind>(state.range(0));
  for (auto _ : state) {
    auto lowered = compiler::lower_normalization(request(kind, DType::BF16, 4096), sm90());
    if (!lowered.ok()) state.SkipWithError(lowered.error().message().c_str());
    benchmark::DoNotOptimize(lowered);
  }
  state.SetLabel(std::string(contracts::norm_op_name(kind)));
}
BENCHMARK(BM_ColdLowering)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

void BM_ColdNvrtcCompile(benchmark::State& state) {
  const auto kind = static_cast<NormKind>(state.range(0));
  if (!compiler::nvrtc::available()) {
    state.SkipWithError("NVRTC not available");
    return;
  }
  auto lowered = compiler::lower_normalization(request(kind, DType::BF16, 4096), sm90());
  const auto& launch = lowered->launches.front();
  for (auto _ : state) {
    auto out = compiler::nvrtc::compile(launch.source, launch.entry, "sm_90a", {});
    if (!out.ok()) state.SkipWithError(out.error().message().c_str());
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(std::string(contracts::norm_op_name(kind)) + " bf16 h=4096 sm_90a");
}
BENCHMARK(BM_ColdNvrtcCompile)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(5);

// Everything a warm call does before its launch: contract, plan lookup, output allocation,
// launch geometry and arguments. Zero rows make the launch itself a no-op.
void BM_WarmCallUpToLaunch(benchmark::State& state) {
  Device host = Device::host();
  auto x = Tensor::empty({0, 4096}, DType::BF16, host).value();
  auto g = Tensor::empty({4096}, DType::F32, host).value();
  if (auto y = normalization::rms_norm(x, g, 1e-5f); !y.ok()) {
    state.SkipWithError(y.error().message().c_str());
    return;
  }
  for (auto _ : state) {
    auto y = normalization::rms_norm(x, g, 1e-5f);
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(BM_WarmCallUpToLaunch)->Unit(benchmark::kMicrosecond);

void BM_DiskCacheHit(benchmark::State& state) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("rudnn-bench-cache-" + std::to_string(std::random_device{}()));
  runtime::KernelCache cache(dir.string());
  runtime::KernelBinary binary{std::string(static_cast<std::size_t>(state.range(0)), 'c'), std::string(20000, 'p')};
  const std::string digest = runtime::sha256_hex("bench");
  (void)cache.store(digest, binary.serialize());
  for (auto _ : state) {
    auto payload = cache.load(digest);
    runtime::KernelBinary out;
    if (!payload || !runtime::KernelBinary::deserialize(*payload, out)) state.SkipWithError("load failed");
    benchmark::DoNotOptimize(out);
  }
  fs::remove_all(dir);
  state.SetLabel("cubin bytes " + std::to_string(state.range(0)));
}
BENCHMARK(BM_DiskCacheHit)->Arg(16 << 10)->Arg(256 << 10)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
