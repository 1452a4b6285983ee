// Serving integration (SPEC §13, issue 16) on a real GPU: the engine's own CUstream wrapped as a
// queue (never destroyed by rudnn), views of its device memory, and a real CUDA graph capture on
// that stream: a cold call fails with CaptureViolation and leaves the capture valid; after a warm-up
// a norm → attention → MoE layer step (routing, dispatch, experts and combine all on the device) is
// captured and its replay equals the eager run bit for bit. Prints SKIP without a CUDA device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <optional>
#include <random>
#include <vector>

#include "../ops/op_test_util.h"
#include "gpu_test_util.h"
#include "graph_api.h"
#include "rudnn/attention.h"
#include "rudnn/moe.h"
#include "rudnn/normalization.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using testing::fresh_seed;
using testing::graph_api;
using testing::GraphApi;

class ServingOnGpu : public testing::GpuTest {};

std::vector<std::byte> host_bytes(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->bytes : std::vector<std::byte>{};
}

TEST_F(ServingOnGpu, WrappedStreamViewsAndCapture) {
  if (device_.kind() != DeviceKind::Cuda) GTEST_SKIP() << "SKIP: a CUstream needs a CUDA device";
  std::string why;
  const GraphApi* api = graph_api(why);
  ASSERT_NE(api, nullptr) << why;
  GraphApi::Stream stream = nullptr;
  ASSERT_EQ(api->stream_create(&stream, 1 /* CU_STREAM_NON_BLOCKING */), 0);
  {
    auto wrapped = Queue::wrap(device_, stream);
    ASSERT_TRUE(wrapped.ok()) << wrapped.error().message();
    const Queue q = *wrapped;
    EXPECT_FALSE(q.owns_stream());
    EXPECT_EQ(q.native_handle(), stream);
    auto again = Queue::wrap(device_, stream);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(*again == q) << "one stream, one queue";

    std::mt19937_64 rng(fresh_seed());
    const DType dtype = DType::BF16;
    const std::int64_t tokens = 16, heads = 8, d = 128, h = heads * d;
    auto upload = [&](const Shape& s) {
      auto t = Tensor::upload(
          HostData::from_f64(s, dtype, testing::random_values(static_cast<std::size_t>(element_count(s)), dtype, rng)),
          q);
      EXPECT_TRUE(t.ok());
      return std::move(t.value());
    };
    const Tensor x = upload({tokens, h}), gamma = upload({h}), k = upload({1, heads, tokens, d}),
                 v = upload({1, heads, tokens, d});
    const std::int64_t experts_count = 8, inter = 256;
    auto experts = moe::SwiGluExperts::create(upload({experts_count, inter, h}), upload({experts_count, inter, h}),
                                              upload({experts_count, h, inter}));
    ASSERT_TRUE(experts.ok()) << experts.error().message();
    const Tensor logits = upload({tokens, experts_count});
    // A view of the engine's device memory (here: memory rudnn allocated, seen through a pointer).
    auto xv = Tensor::view(x.data(), x.shape(), {}, dtype, q);
    ASSERT_TRUE(xv.ok()) << xv.error().message();

    auto step = [&]() -> Result<Tensor, Error> {
      auto n = normalization::rms_norm(*xv, gamma, 1e-6f);
      if (!n.ok()) return Error(n.error());
      // The norm's output storage [tokens, H·D] seen as [1, heads, tokens, D] queries.
      auto qv = Tensor::view(n->data(), {1, heads, tokens, d}, {}, dtype, q);
      if (!qv.ok()) return Error(qv.error());
      auto o = attention::attention(*qv, k, v, std::nullopt, std::nullopt);
      if (!o.ok()) return Error(o.error());
      // The attention output's storage as [tokens, H·D] rows into the MoE layer (top 2 of 8).
      auto rows = Tensor::view(o->data(), {tokens, h}, {}, dtype, q);
      if (!rows.ok()) return Error(rows.error());
      auto m = experts->forward(*rows, logits, {2, true});
      if (!m.ok()) return Error(m.error());
      return std::move(m.value());
    };

    // Cold inside a capture: CaptureViolation, and the capture is still valid to end.
    int r = api->begin_capture(stream, GraphApi::kCaptureModeGlobal);
    ASSERT_EQ(r, 0) << api->describe(r);
    EXPECT_TRUE(q.is_capturing().value());
    auto cold = step();
    GraphApi::Graph graph = nullptr;
    r = api->end_capture(stream, &graph);
    ASSERT_FALSE(cold.ok());
    EXPECT_EQ(cold.error().kind(), ErrorKind::CaptureViolation) << cold.error().message();
    ASSERT_EQ(r, 0) << "the refused call invalidated the capture: " << api->describe(r);
    if (graph) api->graph_destroy(graph);

    // Warm-up, then capture and replay.
    auto eager = step();
    ASSERT_TRUE(eager.ok()) << eager.error().message();
    const auto eager_bytes = host_bytes(*eager);
    const Stats before = stats();
    r = api->begin_capture(stream, GraphApi::kCaptureModeGlobal);
    ASSERT_EQ(r, 0) << api->describe(r);
    auto captured = step();
    graph = nullptr;
    r = api->end_capture(stream, &graph);
    ASSERT_TRUE(captured.ok()) << captured.error().message();
    ASSERT_EQ(r, 0) << api->describe(r);
    EXPECT_EQ(stats().jit_compiles, before.jit_compiles);
    EXPECT_EQ(stats().module_loads, before.module_loads);
    GraphApi::GraphExec exec = nullptr;
    ASSERT_EQ(api->instantiate(&exec, graph, GraphApi::kAutoFreeOnLaunch), 0);
    ASSERT_EQ(api->launch(exec, stream), 0);
    ASSERT_EQ(api->synchronize(stream), 0);
    EXPECT_EQ(host_bytes(*captured), eager_bytes) << "the replay differs from the eager step";
    api->exec_destroy(exec);
    api->graph_destroy(graph);
  }
  // Every rudnn handle of the stream is gone; the stream is still the engine's to destroy.
  EXPECT_EQ(api->synchronize(stream), 0);
  EXPECT_EQ(api->stream_destroy(stream), 0);
}

}  // namespace
}  // namespace rudnn
