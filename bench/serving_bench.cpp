// Warm host cost of the serving path (issue 16 target: ≤ 1 µs per call through a wrapped queue
// into caller buffers). Each pair runs the allocating call (rudnn's queue, rudnn's tensors: the
// peer) and the engine's way (a wrapped queue, views of the engine's memory, the *_into entry) on
// the same shapes, so the ratio is what serving adds. Zero rows (zero batch) make the launch a
// no-op: what is timed is the contract, the layout and overlap checks, the plan lookup, the
// output and the launch geometry and arguments.
#include <benchmark/benchmark.h>

#include <vector>

#include "rudnn/attention.h"
#include "rudnn/normalization.h"

namespace {

using namespace rudnn;

constexpr std::int64_t kHidden = 4096;

// The engine's side: its own queue (wrapped) and memory (views). Zero rows: no byte is read.
struct Engine {
  Queue queue;
  std::vector<std::uint64_t> memory = std::vector<std::uint64_t>(kHidden);  // gamma's bytes
  static Engine make() {
    const Device host = Device::host();
    auto own = Queue::create(host).value();
    return Engine{Queue::wrap(host, own.native_handle()).value()};
  }
  Tensor view(const Shape& shape, const Shape& strides, DType dtype, void* data = nullptr) {
    return Tensor::view(data, shape, strides, dtype, queue).value();
  }
};

void BM_RmsNormAllocating(benchmark::State& state) {
  const Device host = Device::host();
  auto x = Tensor::empty({0, kHidden}, DType::BF16, host).value();
  auto g = Tensor::empty({kHidden}, DType::F32, host).value();
  if (auto y = normalization::rms_norm(x, g, 1e-5f); !y.ok()) return state.SkipWithError(y.error().message().c_str());
  for (auto _ : state) {
    auto y = normalization::rms_norm(x, g, 1e-5f);
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(BM_RmsNormAllocating)->Unit(benchmark::kMicrosecond);

// Dense rows (a contiguous view) and row-strided ones (the first h columns of a [rows, 3h] buffer).
void BM_RmsNormIntoWrappedView(benchmark::State& state) {
  Engine engine = Engine::make();
  const bool strided = state.range(0) != 0;
  const Shape strides = strided ? Shape{3 * kHidden, 1} : Shape{};
  Tensor x = engine.view({0, kHidden}, strides, DType::BF16);
  Tensor out = engine.view({0, kHidden}, strides, DType::BF16);
  Tensor g = engine.view({kHidden}, {}, DType::F32, engine.memory.data());
  if (auto s = normalization::rms_norm_into(x, g, 1e-5f, out); !s.ok())
    return state.SkipWithError(s.error().message().c_str());
  for (auto _ : state) {
    auto s = normalization::rms_norm_into(x, g, 1e-5f, out);
    benchmark::DoNotOptimize(s);
  }
  state.SetLabel(strided ? "row-strided views" : "dense views");
}
BENCHMARK(BM_RmsNormIntoWrappedView)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

constexpr std::int64_t kHeads = 32, kKvHeads = 8, kDim = 128;

void BM_AttentionAllocating(benchmark::State& state) {
  const Device host = Device::host();
  auto q = Tensor::empty({1, kHeads, 0, kDim}, DType::BF16, host).value();
  auto k = Tensor::empty({1, kKvHeads, 0, kDim}, DType::BF16, host).value();
  const auto strategy = attention::AttentionStrategy::FlashUnit;
  if (auto y = attention::attention(q, k, k, std::nullopt, std::nullopt, {}, strategy); !y.ok())
    return state.SkipWithError(y.error().message().c_str());
  for (auto _ : state) {
    auto y = attention::attention(q, k, k, std::nullopt, std::nullopt, {}, strategy);
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(BM_AttentionAllocating)->Unit(benchmark::kMicrosecond);

// Dense views, and token-major ones ([B, T, H, D] memory read as [B, H, T, D]: the strided path's
// layout checks and stride parameters).
void BM_AttentionIntoWrappedView(benchmark::State& state) {
  Engine engine = Engine::make();
  const bool token_major = state.range(0) != 0;
  auto strides = [&](std::int64_t heads) {  // of an empty sequence: only the layout class matters
    return token_major ? Shape{0, kDim, heads * kDim, 1} : Shape{};
  };
  Tensor q = engine.view({1, kHeads, 0, kDim}, strides(kHeads), DType::BF16);
  Tensor k = engine.view({1, kKvHeads, 0, kDim}, strides(kKvHeads), DType::BF16);
  Tensor out = engine.view({1, kHeads, 0, kDim}, strides(kHeads), DType::BF16);
  const auto strategy = attention::AttentionStrategy::FlashUnit;
  if (auto s = attention::attention_into(q, k, k, std::nullopt, std::nullopt, out, {}, strategy); !s.ok())
    return state.SkipWithError(s.error().message().c_str());
  for (auto _ : state) {
    auto s = attention::attention_into(q, k, k, std::nullopt, std::nullopt, out, {}, strategy);
    benchmark::DoNotOptimize(s);
  }
  state.SetLabel(token_major ? "token-major views" : "dense views");
}
BENCHMARK(BM_AttentionIntoWrappedView)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
