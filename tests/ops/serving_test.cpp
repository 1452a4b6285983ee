// Serving integration (SPEC §13, issue 16), the parts built so far, on the host emulation device:
// the engine's own queues (Queue::wrap, one identity per stream), views of caller memory
// (Tensor::view: never freed by rudnn, contiguous ones run like rudnn's own tensors, strided ones
// read back element by element and rejected by ops that take no strides, naming the argument), and
// capture safety (a simulated capture: a cold call, a synchronization and a readback fail with
// CaptureViolation and launch nothing; a warm call runs), the per-family counters, and the
// into-variants (normalization, attention, gated delta, paged attention, convolution, MoE) writing the allocating
// calls' bits into caller buffers.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "entry.h"
#include "op_test_util.h"
#include "queue_impl.h"
#include "paged_test_util.h"
#include "rudnn/attention.h"
#include "rudnn/convolution.h"
#include "rudnn/gated_delta.h"
#include "rudnn/graph.h"
#include "rudnn/moe.h"
#include "rudnn/normalization.h"
#include "rudnn/stats.h"
#include "simulated_capture.h"
#include "normalization.h"

namespace rudnn {
namespace {

using normalization::rms_norm;
using paged_test::Layout;
using paged_test::Rows;
using paged_test::Seq;
using testing::fresh_seed;

// Random values of `dtype` (in [lo, hi)) on the host device.
Tensor random_tensor(const Shape& shape, DType dtype, std::mt19937_64& rng, double lo = -1.0, double hi = 1.0) {
  return testing::upload(shape, dtype,
                         testing::random_values(static_cast<std::size_t>(element_count(shape)), dtype, rng, lo, hi),
                         Device::host());
}

// The same on `queue` (a queue of the test's own).
Tensor random_tensor_on(const Queue& queue, const Shape& shape, DType dtype, std::mt19937_64& rng) {
  auto data = HostData::from_f64(shape, dtype,
                                 testing::random_values(static_cast<std::size_t>(element_count(shape)), dtype, rng));
  return std::move(Tensor::upload(data, queue).value());
}

std::vector<std::byte> bytes(const Tensor& t) { return to_host(t)->bytes; }

TEST(Serving, WrappedQueuesAreTheQueuesTheyWrap) {
  const Device host = Device::host();
  auto q = Queue::create(host);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->owns_stream());
  auto again = Queue::wrap(host, q->native_handle());
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_TRUE(*again == *q) << "wrapping a queue's handle gives that queue";
  auto other = Queue::create(host);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(*other == *q);
  EXPECT_NE(other->native_handle(), q->native_handle());
  // A host handle that is no live queue's.
  int not_a_queue = 0;
  auto bad = Queue::wrap(host, &not_a_queue);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::InvalidValue);
  EXPECT_EQ(bad.error().argument(), "native_handle");
  EXPECT_TRUE(Queue::wrap(host, Queue::default_queue(host).native_handle()).ok());
}

// rms_norm of rows in caller memory (a view) against the same rows uploaded: the same bits; the
// view's memory is the caller's after the view is gone (ASan would see a free of it).
TEST(Serving, ContiguousViewsRunLikeOwnTensors) {
  std::mt19937_64 rng(fresh_seed());
  const std::int64_t rows = 5, h = 48;
  const auto x = testing::random_values(static_cast<std::size_t>(rows * h), DType::F32, rng);
  const auto g = testing::random_values(static_cast<std::size_t>(h), DType::F32, rng);
  std::vector<float> memory(x.begin(), x.end());
  const Tensor gamma = testing::upload({h}, DType::F32, g, Device::host());
  const Tensor owned = testing::upload({rows, h}, DType::F32, x, Device::host());
  std::vector<std::byte> from_view;
  {
    auto view = Tensor::view(memory.data(), {rows, h}, {}, DType::F32, Queue::default_queue(Device::host()));
    ASSERT_TRUE(view.ok()) << view.error().message();
    EXPECT_TRUE(view->is_contiguous());
    EXPECT_EQ(view->data(), memory.data());
    auto out = rms_norm(*view, gamma, 1e-5f);
    ASSERT_TRUE(out.ok()) << out.error().message();
    from_view = to_host(*out)->bytes;
  }
  auto want = rms_norm(owned, gamma, 1e-5f);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(from_view, to_host(*want)->bytes);
  EXPECT_EQ(memory[0], static_cast<float>(x[0])) << "the caller's memory outlives the view, untouched";
}

// A row-padded view: read back element by element; where an op takes no strides it names the
// argument and its strides.
TEST(Serving, StridedViews) {
  const std::int64_t rows = 3, h = 4, pitch = 6;
  std::vector<float> memory(static_cast<std::size_t>(rows * pitch));
  for (std::size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<float>(i);
  auto view = Tensor::view(memory.data(), {rows, h}, {pitch, 1}, DType::F32, Queue::default_queue(Device::host()));
  ASSERT_TRUE(view.ok()) << view.error().message();
  EXPECT_FALSE(view->is_contiguous());
  EXPECT_EQ(view->span_bytes(), static_cast<std::size_t>(((rows - 1) * pitch + h) * 4));
  auto back = to_host(*view);
  ASSERT_TRUE(back.ok()) << back.error().message();
  const std::vector<double> values = back->to_f64();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < h; ++c)
      EXPECT_EQ(values[static_cast<std::size_t>(r * h + c)], static_cast<double>(r * pitch + c));
  // gamma must be dense: every other element of the padded memory is refused, naming it.
  const Tensor x = testing::upload({rows, h}, DType::F32, std::vector<double>(rows * h, 1.0), Device::host());
  auto gamma = Tensor::view(memory.data(), {h}, {2}, DType::F32, Queue::default_queue(Device::host()));
  ASSERT_TRUE(gamma.ok());
  auto rejected = rms_norm(x, *gamma, 1e-5f);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error().argument(), "gamma");
  EXPECT_NE(rejected.error().message().find("[2]"), std::string::npos) << rejected.error().message();
  EXPECT_FALSE(view->poison().ok()) << "its gaps are not rudnn's to write";

  // Bad views: strides of another rank, negative strides, a null pointer with elements.
  const Queue q = Queue::default_queue(Device::host());
  auto rank = Tensor::view(memory.data(), {rows, h}, {1}, DType::F32, q);
  ASSERT_FALSE(rank.ok());
  EXPECT_EQ(rank.error().argument(), "strides");
  auto negative = Tensor::view(memory.data(), {rows, h}, {-4, 1}, DType::F32, q);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().argument(), "strides");
  auto null = Tensor::view(nullptr, {rows, h}, {}, DType::F32, q);
  ASSERT_FALSE(null.ok());
  EXPECT_EQ(null.error().argument(), "data");
  EXPECT_TRUE(Tensor::view(nullptr, {0, h}, {}, DType::F32, q).ok()) << "an empty view holds no bytes";
  // Not on a 16-byte boundary (the kernels' vector loads and stores): named.
  auto unaligned = Tensor::view(memory.data() + 1, {2, h}, {}, DType::F32, q);
  ASSERT_FALSE(unaligned.ok());
  EXPECT_EQ(unaligned.error().argument(), "data");
  // A span past 63 bits.
  auto huge = Tensor::view(memory.data(), {2}, {std::numeric_limits<std::int64_t>::max()}, DType::U8, q);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().argument(), "strides");
  // Dense with any stride on an extent-1 dim (as frameworks pass them): contiguous, and accepted.
  auto dense = Tensor::view(memory.data(), {1, 2, h}, {999, h, 1}, DType::F32, q);
  ASSERT_TRUE(dense.ok());
  EXPECT_TRUE(dense->is_contiguous());
}

// rudnn::row_stride: which layouts are rows with one stride.
TEST(Serving, RowStrideOfLayouts) {
  EXPECT_EQ(row_stride({4, 8}, {8, 1}), 8);
  EXPECT_EQ(row_stride({4, 8}, {24, 1}), 24);
  EXPECT_EQ(row_stride({2, 3, 8}, {60, 20, 1}), 20) << "outer dims collapse over whole runs of rows";
  EXPECT_EQ(row_stride({2, 1, 3, 8}, {60, 7, 20, 1}), 20) << "an extent-1 dim's stride does not count";
  EXPECT_EQ(row_stride({1, 8}, {5, 1}), 8) << "one row: nothing stepped over";
  EXPECT_EQ(row_stride({8}, {1}), 8);
  EXPECT_EQ(row_stride({0, 8}, {3, 1}), 8) << "no element";
  EXPECT_EQ(row_stride({2, 3, 8}, {100, 20, 1}), std::nullopt) << "the outer dim does not collapse";
  EXPECT_EQ(row_stride({4, 8}, {4, 1}), std::nullopt) << "rows would overlap";
  EXPECT_EQ(row_stride({4, 8}, {16, 2}), std::nullopt) << "the last dim is not dense";
  EXPECT_EQ(row_stride({}, {}), std::nullopt) << "rank 0";
}

// Normalization of row-strided views (SPEC §13): the q rows of a fused [rows, 3h] buffer in, every
// other row of an engine's buffer out. The rows' results against the FP64 oracle; with strides of
// whole 16-byte units the same bits as the dense call; the gaps of the output untouched. A layout
// that is no rows, or an output sharing the input's buffer, is refused naming the argument.
TEST(Serving, NormRowStridedViews) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  const Queue q = Queue::default_queue(host);
  const std::int64_t rows = 7, h = 24;
  const auto g = testing::random_values(h, DType::F32, rng);
  const auto bt = testing::random_values(h, DType::F32, rng);
  const Tensor gamma = testing::upload({h}, DType::F32, g, host);
  const Tensor beta = testing::upload({h}, DType::F32, bt, host);
  for (DType dtype : {DType::F32, DType::BF16}) {
    // in_pitch 3h: whole 16-byte units (same kernel as dense); 3h + 1: not (vector width 1).
    for (std::int64_t in_pitch : {3 * h, 3 * h + 1}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " input pitch " + std::to_string(in_pitch));
      const std::size_t esize = dtype_size(dtype);
      const auto values = testing::random_values(static_cast<std::size_t>(rows * in_pitch), dtype, rng);
      const HostData fused = HostData::from_f64({rows, in_pitch}, dtype, values);
      std::vector<std::uint64_t> in_memory(fused.bytes.size() / 8 + 2);
      std::memcpy(in_memory.data(), fused.bytes.data(), fused.bytes.size());
      auto x = Tensor::view(in_memory.data(), {rows, h}, {in_pitch, 1}, dtype, q);  // the first h columns
      ASSERT_TRUE(x.ok()) << x.error().message();
      std::vector<double> xd(static_cast<std::size_t>(rows * h));
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < h; ++j)
          xd[static_cast<std::size_t>(r * h + j)] = values[static_cast<std::size_t>(r * in_pitch + j)];
      const Tensor dense = testing::upload({rows, h}, dtype, xd, host);
      const auto xr = HostData::from_f64({rows, h}, dtype, xd).to_f64();  // the rounded input the oracle sees

      // Out: rows of a [rows, 2, h] buffer (every other h-run), 3-D to exercise collapsing.
      const std::int64_t out_pitch = 2 * h;
      std::vector<std::uint64_t> out_memory(static_cast<std::size_t>(rows * out_pitch) * esize / 8 + 2);
      auto out = Tensor::view(out_memory.data(), {rows, 1, h}, {out_pitch, out_pitch, 1}, dtype, q);
      ASSERT_TRUE(out.ok()) << out.error().message();
      auto flat_out = Tensor::view(out_memory.data(), {rows, h}, {out_pitch, 1}, dtype, q);
      ASSERT_TRUE(flat_out.ok());
      auto x3 = Tensor::view(in_memory.data(), {rows, 1, h}, {in_pitch, 7, 1}, dtype, q);
      ASSERT_TRUE(x3.ok());

      struct Op {
        const char* name;
        std::function<Status<NormalizationError>()> into;
        std::function<Result<Tensor, NormalizationError>()> strided, dense;
        std::vector<double> expected;
      };
      const std::vector<Op> ops = {
          {"rms_norm", [&] { return normalization::rms_norm_into(*x3, gamma, 1e-5f, *out); },
           [&] { return rms_norm(*x, gamma, 1e-5f); }, [&] { return rms_norm(dense, gamma, 1e-5f); },
           reference::rms_norm(xr, rows, h, g, 1e-5)},
          {"layer_norm", [&] { return normalization::layer_norm_into(*x3, gamma, beta, 1e-5f, *out); },
           [&] { return normalization::layer_norm(*x, gamma, beta, 1e-5f); },
           [&] { return normalization::layer_norm(dense, gamma, beta, 1e-5f); },
           reference::layer_norm(xr, rows, h, g, bt, 1e-5)},
          {"softmax", [&] { return normalization::softmax_last_axis_into(*x3, *out); },
           [&] { return normalization::softmax_last_axis(*x); },
           [&] { return normalization::softmax_last_axis(dense); }, reference::softmax(xr, rows, h)},
      };
      const double tol = dtype == DType::F32 ? 1e-5 : 1e-2;
      for (const Op& op : ops) {
        SCOPED_TRACE(op.name);
        std::memset(out_memory.data(), 0xAB, out_memory.size() * 8);
        auto st = op.into();
        ASSERT_TRUE(st.ok()) << st.error().message();
        const std::vector<double> got = to_host(*flat_out)->to_f64();
        EXPECT_LE(testing::relative_l2(got, op.expected), tol);
        // The gaps between the output rows: untouched.
        const auto* raw = reinterpret_cast<const unsigned char*>(out_memory.data());
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::size_t byte = static_cast<std::size_t>(h) * esize;
               byte < static_cast<std::size_t>(out_pitch) * esize; ++byte)
            ASSERT_EQ(raw[static_cast<std::size_t>(r * out_pitch) * esize + byte], 0xAB) << "row " << r;
        auto strided = op.strided();
        ASSERT_TRUE(strided.ok()) << strided.error().message();
        EXPECT_EQ(bytes(*strided), to_host(*flat_out)->bytes) << "strided in, dense out: the same bits";
        if (in_pitch * static_cast<std::int64_t>(esize) % 16 == 0)
          EXPECT_EQ(bytes(*strided), bytes(*op.dense())) << "16-byte rows: the dense call's kernel and bits";
      }
    }
  }
  // Refused, naming the argument: rows that do not collapse into one stride, an output in the
  // input's buffer (overlap counts whole spans), a non-dense gamma.
  std::vector<float> memory(static_cast<std::size_t>(4 * 3 * 2 * h));
  auto scattered = Tensor::view(memory.data(), {2, 3, h}, {5 * h, h, 1}, DType::F32, q);
  ASSERT_TRUE(scattered.ok());
  auto st = rms_norm(*scattered, gamma, 1e-5f);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().argument(), "input");
  EXPECT_EQ(st.error().kind(), ErrorKind::ShapeMismatch);
  EXPECT_NE(st.error().message().find("[120, 24, 1]"), std::string::npos) << st.error().message();
  auto left = Tensor::view(memory.data(), {4, h}, {2 * h, 1}, DType::F32, q);
  auto right = Tensor::view(memory.data() + h, {4, h}, {2 * h, 1}, DType::F32, q);
  ASSERT_TRUE(left.ok() && right.ok());
  auto shared = normalization::rms_norm_into(*left, gamma, 1e-5f, *right);
  ASSERT_FALSE(shared.ok());
  EXPECT_EQ(shared.error().argument(), "out");
  EXPECT_EQ(shared.error().kind(), ErrorKind::InvalidValue);
  std::vector<float> other(static_cast<std::size_t>(4 * h));
  auto overlapping_rows = Tensor::view(other.data(), {4, h}, {h / 2, 1}, DType::F32, q);
  ASSERT_TRUE(overlapping_rows.ok());
  auto bad_out = normalization::rms_norm_into(*left, gamma, 1e-5f, *overlapping_rows);
  ASSERT_FALSE(bad_out.ok());
  EXPECT_EQ(bad_out.error().argument(), "out");
  EXPECT_EQ(bad_out.error().kind(), ErrorKind::ShapeMismatch);
  // A row stride of 2^31 elements or more (the kernel's strides are 32-bit): named, nothing read.
  auto far = Tensor::view(memory.data(), {2, h}, {std::int64_t{1} << 31, 1}, DType::F32, q);
  ASSERT_TRUE(far.ok()) << far.error().message();
  auto too_far = rms_norm(*far, gamma, 1e-5f);
  ASSERT_FALSE(too_far.ok());
  EXPECT_EQ(too_far.error().argument(), "input");
  EXPECT_EQ(too_far.error().kind(), ErrorKind::InvalidValue);
}

using testing::SimulatedCapture;

// Graph::prepare (SPEC §13 warm-up): every plan of a norm → attention step made for two buckets
// of the token count; then runs of those shapes on real inputs miss no plan and compile nothing,
// also inside a (simulated) capture, while an unprepared shape is refused there. Bad buckets are
// named.
TEST(Serving, GraphPrepareMakesEveryPlanOfTheBuckets) {
  const char* kStep = R"(
func.func @main(%q: tensor<1x6x?x24xbf16> {rudnn.name = "query"}, %k: tensor<1x3x?x24xbf16> {rudnn.name = "key"},
                %v: tensor<1x3x?x24xbf16> {rudnn.name = "value"}, %g: tensor<24xf32> {rudnn.name = "q_norm"})
    -> (tensor<1x6x?x24xbf16> {rudnn.name = "out"}) {
  %qn = rudnn.rms_norm %q, %g {epsilon = 1.0e-06 : f32} : tensor<1x6x?x24xbf16>, tensor<24xf32>
  %o = rudnn.attention %qn, %k, %v {scale = 0.2 : f32, causal = true, strategy = "flash_unit"}
      : tensor<1x6x?x24xbf16>, tensor<1x3x?x24xbf16>, tensor<1x3x?x24xbf16> -> tensor<1x6x?x24xbf16>
  return %o : tensor<1x6x?x24xbf16>
})";
  auto graph = graph::Graph::parse(kStep);
  ASSERT_TRUE(graph.ok()) << graph.error().message();
  auto queue = Queue::create(Device::host());
  ASSERT_TRUE(queue.ok());
  // Head counts and a head dim no other test of this binary uses: the plans start cold.
  const std::int64_t buckets[] = {37, 41};
  auto shapes = [](std::int64_t t) { return std::vector<Shape>{{1, 6, t, 24}, {1, 3, t, 24}, {1, 3, t, 24}, {24}}; };
  auto report = graph->prepare({shapes(buckets[0]), shapes(buckets[1])}, *queue);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->runs, 2);
  EXPECT_GE(report->plans_made, 2) << "at least the attention plan of each bucket";

  std::mt19937_64 rng(fresh_seed());
  auto inputs = [&](std::int64_t t) {
    auto up = [&](const Shape& s, DType d) {
      const auto values = testing::random_values(static_cast<std::size_t>(element_count(s)), d, rng);
      return Tensor::upload(HostData::from_f64(s, d, values), *queue).value();
    };
    return std::vector<Tensor>{up({1, 6, t, 24}, DType::BF16), up({1, 3, t, 24}, DType::BF16),
                               up({1, 3, t, 24}, DType::BF16), up({24}, DType::F32)};
  };
  const auto warm37 = inputs(37), warm41 = inputs(41), cold = inputs(300);
  const Stats before = stats();
  for (const auto* in : {&warm37, &warm41}) {
    auto out = graph->run(*in);
    ASSERT_TRUE(out.ok()) << out.error().message();
  }
  {
    const SimulatedCapture capture(*queue);
    auto captured = graph->run(warm41);
    EXPECT_TRUE(captured.ok()) << captured.error().message();
    const Stats after = stats();
    EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses) << "every plan was made by prepare";
    EXPECT_EQ(after.jit_compiles, before.jit_compiles);
    auto refused = graph->run(cold);  // a shape no bucket prepared
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind(), ErrorKind::CaptureViolation) << refused.error().message();
  }

  // A bucket with another number of shapes, or a shape @main does not take: named.
  auto count = graph->prepare({{{1, 6, 8, 24}}}, *queue);
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().argument(), "buckets[0]");
  auto wrong = graph->prepare({shapes(8), {{1, 6, 8, 24}, {1, 3, 8, 24}, {1, 3, 8, 8}, {24}}}, *queue);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().argument(), "value") << wrong.error().message();
  EXPECT_NE(wrong.error().message().find("buckets[1]"), std::string::npos) << wrong.error().message();
  auto negative = graph->prepare({{{1, 6, -2, 24}, {1, 3, 8, 24}, {1, 3, 8, 24}, {24}}}, *queue);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().argument(), "buckets[0][0]");
}

TEST(Serving, CaptureRejectsColdCallsAndSynchronizations) {
  std::mt19937_64 rng(fresh_seed());
  auto made = Queue::create(Device::host());
  ASSERT_TRUE(made.ok());
  const Queue& q = *made;
  // A width no other test uses, so the plan is cold here.
  const std::int64_t h = 52;
  auto upload = [&](const Shape& s) {
    auto data = HostData::from_f64(s, DType::F32,
                                   testing::random_values(static_cast<std::size_t>(element_count(s)), DType::F32, rng));
    auto t = Tensor::upload(data, q);
    EXPECT_TRUE(t.ok());
    return std::move(t.value());
  };
  const Tensor x = upload({3, h}), gamma = upload({h});
  std::vector<std::byte> warm_bits;
  {
    SimulatedCapture capture(q);
    ASSERT_TRUE(q.is_capturing().value());
    const Stats before = stats();
    auto cold = rms_norm(x, gamma, 1e-6f);
    ASSERT_FALSE(cold.ok());
    EXPECT_EQ(cold.error().kind(), ErrorKind::CaptureViolation) << cold.error().message();
    EXPECT_NE(cold.error().message().find("not made yet"), std::string::npos) << cold.error().message();
    EXPECT_EQ(stats().jit_compiles, before.jit_compiles);
    EXPECT_EQ(stats().kernel_launches, before.kernel_launches);
    EXPECT_EQ(stats().module_loads, before.module_loads);
    auto sync = q.synchronize();
    ASSERT_FALSE(sync.ok());
    EXPECT_EQ(sync.error().kind(), ErrorKind::CaptureViolation);
    EXPECT_EQ(stats().host_synchronizations, before.host_synchronizations);
    auto read = to_host(x);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind(), ErrorKind::CaptureViolation);
  }
  // Warm the plan outside the capture; inside, the warm call runs (and a readback after it).
  auto warm = rms_norm(x, gamma, 1e-6f);
  ASSERT_TRUE(warm.ok()) << warm.error().message();
  warm_bits = to_host(*warm)->bytes;
  std::optional<Tensor> captured;
  {
    SimulatedCapture capture(q);
    auto again = rms_norm(x, gamma, 1e-6f);
    ASSERT_TRUE(again.ok()) << again.error().message();
    captured = std::move(again.value());
  }
  EXPECT_FALSE(q.is_capturing().value());
  EXPECT_EQ(to_host(*captured)->bytes, warm_bits);
  // Another queue is not captured.
  EXPECT_FALSE(Queue::default_queue(Device::host()).is_capturing().value());
}

// The counters of `family`, zeros when it has none yet.
Stats family(const std::string& name) {
  for (const auto& [n, s] : family_stats())
    if (n == name) return s;
  return {};
}

// family_stats(): a cold call's plan miss and launches count for its family; a warm
// call's hit and launches too, and nothing else; other families see none of it.
TEST(Serving, FamilyCounters) {
  std::mt19937_64 rng(fresh_seed());
  const std::int64_t h = 76;  // a width no other test uses: a cold plan
  const Tensor x = testing::upload({2, h}, DType::F32, testing::random_values(2 * h, DType::F32, rng), Device::host());
  const Tensor gamma = testing::upload({h}, DType::F32, testing::random_values(h, DType::F32, rng), Device::host());
  const Stats norm0 = family("normalization"), paged0 = family("paged attention");
  ASSERT_TRUE(rms_norm(x, gamma, 1e-5f).ok());
  const Stats norm1 = family("normalization");
  EXPECT_EQ(norm1.plan_cache_misses, norm0.plan_cache_misses + 1);
  // (Its kernel may be a module an earlier plan of another width loaded: no load is promised.)
  EXPECT_GE(norm1.kernel_launches, norm0.kernel_launches + 1);
  ASSERT_TRUE(rms_norm(x, gamma, 1e-5f).ok());
  const Stats norm2 = family("normalization");
  EXPECT_EQ(norm2.plan_cache_hits, norm1.plan_cache_hits + 1);
  EXPECT_EQ(norm2.plan_cache_misses, norm1.plan_cache_misses);
  EXPECT_EQ(norm2.jit_compiles, norm1.jit_compiles);
  EXPECT_EQ(norm2.module_loads, norm1.module_loads);
  EXPECT_EQ(norm2.kernel_launches - norm1.kernel_launches, norm1.kernel_launches - norm0.kernel_launches);
  const Stats paged1 = family("paged attention");
  EXPECT_EQ(paged1.kernel_launches, paged0.kernel_launches);
  EXPECT_EQ(paged1.plan_cache_misses, paged0.plan_cache_misses);
  // The families' counters add up to no more than the process's.
  Stats sum;
  for (const auto& [name, s] : family_stats()) {
    sum.kernel_launches += s.kernel_launches;
    sum.module_loads += s.module_loads;
    sum.jit_compiles += s.jit_compiles;
    sum.plan_cache_misses += s.plan_cache_misses;
  }
  const Stats all = stats();
  EXPECT_LE(sum.kernel_launches, all.kernel_launches);
  EXPECT_LE(sum.module_loads, all.module_loads);
  EXPECT_LE(sum.jit_compiles, all.jit_compiles);
  EXPECT_LE(sum.plan_cache_misses, all.plan_cache_misses);
  EXPECT_GT(sum.module_loads, 0u) << "the cold paths' loads were counted for their families";
}

// The *_into entries write the allocating call's bits into a caller buffer (a view of caller
// memory here) and reject a wrong buffer naming `out`, writing nothing.
TEST(Serving, IntoVariantsMatchTheAllocatingCalls) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  const std::int64_t rows = 6, h = 40;
  const Tensor x = testing::upload({rows, h}, DType::BF16, testing::random_values(rows * h, DType::BF16, rng), host);
  const Tensor gamma = testing::upload({h}, DType::F32, testing::random_values(h, DType::F32, rng), host);
  const Tensor beta = testing::upload({h}, DType::F32, testing::random_values(h, DType::F32, rng), host);
  std::vector<std::uint16_t> memory(static_cast<std::size_t>(rows * h), 0x7777);
  auto out = Tensor::view(memory.data(), {rows, h}, {}, DType::BF16, Queue::default_queue(host));
  ASSERT_TRUE(out.ok());

  ASSERT_TRUE(normalization::rms_norm_into(x, gamma, 1e-5f, *out).ok());
  EXPECT_EQ(bytes(*out), bytes(*rms_norm(x, gamma, 1e-5f)));
  ASSERT_TRUE(normalization::layer_norm_into(x, gamma, beta, 1e-5f, *out).ok());
  EXPECT_EQ(bytes(*out), bytes(*normalization::layer_norm(x, gamma, beta, 1e-5f)));
  ASSERT_TRUE(normalization::softmax_last_axis_into(x, *out).ok());
  EXPECT_EQ(bytes(*out), bytes(*normalization::softmax_last_axis(x)));

  // Rejected: shape, dtype, queue, in place (overlapping the input); nothing written.
  const auto before = bytes(*out);
  auto q2 = Queue::create(host);
  ASSERT_TRUE(q2.ok());
  auto wrong_shape = Tensor::empty({rows, h + 1}, DType::BF16, host);
  auto wrong_dtype = Tensor::empty({rows, h}, DType::F16, host);
  auto other_queue = Tensor::empty({rows, h}, DType::BF16, *q2);
  const Tensor in_place = x;
  // Not rows of dense elements (every other element): no layout a norm takes.
  auto strided = Tensor::view(memory.data(), {rows, h / 2}, {h, 2}, DType::BF16, Queue::default_queue(host));
  struct Case {
    const Tensor* out;
    ErrorKind kind;
  };
  for (const Case& c : {Case{&*wrong_shape, ErrorKind::ShapeMismatch}, Case{&*wrong_dtype, ErrorKind::UnsupportedDType},
                        Case{&*other_queue, ErrorKind::QueueMismatch}, Case{&in_place, ErrorKind::InvalidValue}}) {
    auto st = normalization::rms_norm_into(x, gamma, 1e-5f, *c.out);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind(), c.kind) << st.error().message();
    EXPECT_EQ(st.error().argument(), "out") << st.error().message();
  }
  auto st = normalization::rms_norm_into(
      testing::upload({rows, h / 2}, DType::BF16, testing::random_values(rows * h / 2, DType::BF16, rng), host),
      testing::upload({h / 2}, DType::F32, std::vector<double>(h / 2, 1.0), host), 1e-5f, *strided);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().argument(), "out");
  EXPECT_EQ(bytes(*out), before) << "a rejected call writes nothing";

  // Attention into a buffer: the allocating call's bits; a wrong shape names `out`.
  const std::int64_t b = 1, hq = 4, hkv = 2, t = 9, d = 16;
  auto up = [&](const Shape& s) { return random_tensor(s, DType::F16, rng); };
  const Tensor q = up({b, hq, t, d}), k = up({b, hkv, t, d}), v = up({b, hkv, t, d});
  auto ao = Tensor::empty({b, hq, t, d}, DType::F16, host);
  ASSERT_TRUE(ao.ok());
  const attention::AttentionModuleOptions causal{std::nullopt, true};
  auto into = attention::attention_into(q, k, v, std::nullopt, std::nullopt, *ao, causal,
                                        attention::AttentionStrategy::FlashUnit);
  ASSERT_TRUE(into.ok()) << into.error().message();
  EXPECT_EQ(bytes(*ao), bytes(*attention::attention(q, k, v, std::nullopt, std::nullopt, causal,
                                                    attention::AttentionStrategy::FlashUnit)));
  auto bad = attention::attention_into(q, k, v, std::nullopt, std::nullopt, *wrong_dtype, causal,
                                       attention::AttentionStrategy::FlashUnit);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().argument(), "out");
  const Tensor q_alias = q;
  auto aliased = attention::attention_into(q, k, v, std::nullopt, std::nullopt, q_alias, causal,
                                           attention::AttentionStrategy::FlashUnit);
  ASSERT_FALSE(aliased.ok());
  EXPECT_EQ(aliased.error().kind(), ErrorKind::InvalidValue);
}

// Attention's temporaries in a caller's workspace (SPEC §13): the size query, then a call into the
// caller's out and workspace that allocates nothing and writes the allocating call's bits. The
// fused kernels need none; a workspace too small, overlapping an input or out, or on another queue
// is named, and nothing is written.
TEST(Serving, AttentionWorkspaceFromTheCaller) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  const std::int64_t b = 1, hq = 4, hkv = 2, t = 9, d = 16;
  auto up = [&](const Shape& s) { return random_tensor(s, DType::F16, rng); };
  const Tensor q = up({b, hq, t, d}), k = up({b, hkv, t, d}), v = up({b, hkv, t, d});
  const attention::AttentionModuleOptions causal{std::nullopt, true};
  using attention::AttentionStrategy;
  auto none =
      attention::attention_workspace_bytes(q, k, v, std::nullopt, std::nullopt, causal, AttentionStrategy::FlashUnit);
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_EQ(*none, 0u) << "one fused kernel: no temporaries";
  auto need =
      attention::attention_workspace_bytes(q, k, v, std::nullopt, std::nullopt, causal, AttentionStrategy::Fallback);
  ASSERT_TRUE(need.ok()) << need.error().message();
  EXPECT_GE(*need, static_cast<std::size_t>(b * hq * t * t * 4)) << "Fallback's FP32 scores";

  const Queue queue = Queue::default_queue(host);
  std::vector<std::uint64_t> ws_memory(*need / 8 + 1, 0x5555555555555555ull);
  auto workspace = Tensor::view(ws_memory.data(), {static_cast<std::int64_t>(*need)}, {}, DType::U8, queue);
  ASSERT_TRUE(workspace.ok()) << workspace.error().message();
  std::vector<std::uint16_t> out_memory(static_cast<std::size_t>(b * hq * t * d), 0x7777);
  auto out = Tensor::view(out_memory.data(), {b, hq, t, d}, {}, DType::F16, queue);
  ASSERT_TRUE(out.ok());
  const auto want =
      bytes(*attention::attention(q, k, v, std::nullopt, std::nullopt, causal, AttentionStrategy::Fallback));
  const Stats before = stats();
  auto st = attention::attention_into(q, k, v, std::nullopt, std::nullopt, *out, *workspace, causal,
                                      AttentionStrategy::Fallback);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(stats().device_allocations, before.device_allocations) << "the temporaries came from the workspace";
  EXPECT_EQ(bytes(*out), want);
  EXPECT_NE(ws_memory[0], 0x5555555555555555ull) << "the scores went into the caller's workspace";
  // The fused kernels take a workspace of any size (they need none).
  auto fused = attention::attention_into(q, k, v, std::nullopt, std::nullopt, *out, *workspace, causal,
                                         AttentionStrategy::FlashUnit);
  EXPECT_TRUE(fused.ok()) << fused.error().message();

  // Rejected, naming `workspace`: too small, overlapping out or an input, on another queue.
  std::fill(out_memory.begin(), out_memory.end(), 0x7777);
  const auto before_bytes = bytes(*out);
  auto small = Tensor::view(ws_memory.data(), {static_cast<std::int64_t>(*need) - 1}, {}, DType::U8, queue);
  auto q2 = Queue::create(host);
  ASSERT_TRUE(q2.ok());
  auto elsewhere = Tensor::empty({static_cast<std::int64_t>(*need)}, DType::U8, *q2);
  auto over_out = Tensor::view(out_memory.data(), {8}, {}, DType::U8, queue);
  const Tensor over_query = q;
  struct Case {
    const Tensor* workspace;
    ErrorKind kind;
  };
  for (const Case& c : {Case{&*small, ErrorKind::InvalidValue}, Case{&*elsewhere, ErrorKind::QueueMismatch},
                        Case{&*over_out, ErrorKind::InvalidValue}, Case{&over_query, ErrorKind::InvalidValue}}) {
    auto bad = attention::attention_into(q, k, v, std::nullopt, std::nullopt, *out, *c.workspace, causal,
                                         AttentionStrategy::Fallback);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind(), c.kind) << bad.error().message();
    EXPECT_EQ(bad.error().argument(), "workspace") << bad.error().message();
  }
  EXPECT_EQ(bytes(*out), before_bytes) << "a rejected call writes nothing";
}

// Attention on an engine's views (SPEC §13): Q, K and V are slices of one token-major fused QKV
// projection [B, T, Hq + 2·Hkv, D], and out rows of a token-major [B, T, Hq·D + pad] buffer. Every
// strategy writes the dense call's bits into the view and leaves the padding alone; the allocating
// call reads the views too. Strides the tensor-core kernel cannot copy (rows not whole 16-byte units)
// are Unsupported naming the tensor for FlashBlackboxAccelerated, and Autotune then runs a plain-core
// kernel. Layouts no kernel takes are named: a strided last dim, an out whose rows overlap, a strided
// mask. Nothing is written by a rejected call. Prefill (Tq = 9: the tensor-core kernel takes one head
// per panel) and decode (Tq = 1: the group's heads share a panel).
void attention_on_views(std::int64_t t) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  const Queue queue = Queue::default_queue(host);
  const std::int64_t b = 2, hq = 4, hkv = 2, d = 64, width = (hq + 2 * hkv) * d, pad = 8;
  using attention::AttentionStrategy;
  const attention::AttentionModuleOptions causal{std::nullopt, true};
  const auto fused_values = testing::random_values(static_cast<std::size_t>(b * t * width), DType::F16, rng);
  const HostData fused = HostData::from_f64({b * t * width}, DType::F16, fused_values);
  std::vector<std::uint64_t> qkv_memory(fused.bytes.size() / 8 + 1);
  std::memcpy(qkv_memory.data(), fused.bytes.data(), fused.bytes.size());
  auto* qkv = reinterpret_cast<std::uint16_t*>(qkv_memory.data());
  // Head h of the slice starting at column `first` as [B, H, T, D] (strided) and as a dense copy.
  auto slice = [&](std::int64_t first, std::int64_t heads, std::int64_t row_pitch) {
    auto view = Tensor::view(qkv + first * d, {b, heads, t, d}, {t * row_pitch, d, row_pitch, 1}, DType::F16, queue);
    std::vector<double> dense(static_cast<std::size_t>(b * heads * t * d));
    for (std::int64_t bi = 0; bi < b; ++bi)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t i = 0; i < t; ++i)
          for (std::int64_t c = 0; c < d; ++c)
            dense[static_cast<std::size_t>(((bi * heads + h) * t + i) * d + c)] =
                fused_values[static_cast<std::size_t>(bi * t * row_pitch + i * row_pitch + (first + h) * d + c)];
    return std::pair{*view, testing::upload({b, heads, t, d}, DType::F16, dense, host)};
  };
  const auto [q, q_dense] = slice(0, hq, width);
  const auto [k, k_dense] = slice(hq, hkv, width);
  const auto [v, v_dense] = slice(hq + hkv, hkv, width);

  const std::int64_t out_pitch = hq * d + pad;
  std::vector<std::uint16_t> out_memory(static_cast<std::size_t>(b * t * out_pitch), 0x7777);
  auto out = Tensor::view(out_memory.data(), {b, hq, t, d}, {t * out_pitch, d, out_pitch, 1}, DType::F16, queue);
  ASSERT_TRUE(out.ok()) << out.error().message();
  auto padding_untouched = [&] {
    for (std::int64_t r = 0; r < b * t; ++r)
      for (std::int64_t c = hq * d; c < out_pitch; ++c)
        if (out_memory[static_cast<std::size_t>(r * out_pitch + c)] != 0x7777) return false;
    return true;
  };
  for (AttentionStrategy s :
       {AttentionStrategy::FlashBlackboxAccelerated, AttentionStrategy::FlashUnit, AttentionStrategy::Fallback}) {
    SCOPED_TRACE(static_cast<int>(s));
    const auto want = bytes(*attention::attention(q_dense, k_dense, v_dense, std::nullopt, std::nullopt, causal, s));
    std::fill(out_memory.begin(), out_memory.end(), 0x7777);
    auto st = attention::attention_into(q, k, v, std::nullopt, std::nullopt, *out, causal, s);
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(bytes(*out), want) << "the views give the dense call's bits";
    EXPECT_TRUE(padding_untouched()) << "wrote into the engine's padding";
    auto allocated = attention::attention(q, k, v, std::nullopt, std::nullopt, causal, s);
    ASSERT_TRUE(allocated.ok()) << allocated.error().message();
    EXPECT_EQ(bytes(*allocated), want) << "the allocating call reads the views too";
  }

  // K rows 4 elements (8 bytes) apart from whole 16-byte units: the tensor-core kernel cannot copy
  // them. Its own strategy names the key; Autotune runs FlashUnit instead.
  std::vector<std::uint16_t> k_memory(static_cast<std::size_t>(b * hkv * t * (d + 4)));
  const auto k_host = to_host(k_dense)->bytes;
  for (std::int64_t r = 0; r < b * hkv * t; ++r)
    std::memcpy(&k_memory[static_cast<std::size_t>(r * (d + 4))], k_host.data() + r * d * 2, d * 2);
  auto k_odd =
      Tensor::view(k_memory.data(), {b, hkv, t, d}, {hkv * t * (d + 4), t * (d + 4), d + 4, 1}, DType::F16, queue);
  ASSERT_TRUE(k_odd.ok()) << k_odd.error().message();
  std::fill(out_memory.begin(), out_memory.end(), 0x7777);
  const auto untouched = bytes(*out);
  auto mma = attention::attention_into(q, *k_odd, v, std::nullopt, std::nullopt, *out, causal,
                                       AttentionStrategy::FlashBlackboxAccelerated);
  ASSERT_FALSE(mma.ok());
  EXPECT_EQ(mma.error().kind(), ErrorKind::Unsupported);
  EXPECT_EQ(mma.error().argument(), "key") << mma.error().message();
  EXPECT_EQ(bytes(*out), untouched);
  const auto unit = bytes(*attention::attention(q_dense, k_dense, v_dense, std::nullopt, std::nullopt, causal,
                                                AttentionStrategy::FlashUnit));
  auto tuned =
      attention::attention_into(q, *k_odd, v, std::nullopt, std::nullopt, *out, causal, AttentionStrategy::Autotune);
  ASSERT_TRUE(tuned.ok()) << tuned.error().message();
  EXPECT_EQ(bytes(*out), unit) << "Autotune on unaligned rows runs the plain-core kernel";

  // Layouts no attention kernel takes, each named; nothing written.
  std::fill(out_memory.begin(), out_memory.end(), 0x7777);
  auto strided_last = Tensor::view(qkv, {b, hq, t, d}, {t * width, d, width, 2}, DType::F16, queue);
  auto overlapping =
      Tensor::view(out_memory.data(), {b, hq, t, d}, {t * out_pitch, 0, out_pitch, 1}, DType::F16, queue);
  std::vector<std::uint8_t> mask_memory(static_cast<std::size_t>(2 * t * t), 0);
  auto strided_mask =
      Tensor::view(mask_memory.data(), {1, 1, t, t}, {2 * t * t, 2 * t * t, 2 * t, 1}, DType::U8, queue);
  ASSERT_TRUE(strided_last.ok() && overlapping.ok() && strided_mask.ok());
  auto last =
      attention::attention(*strided_last, k, v, std::nullopt, std::nullopt, causal, AttentionStrategy::FlashUnit);
  ASSERT_FALSE(last.ok());
  EXPECT_EQ(last.error().argument(), "query") << last.error().message();
  auto overlap = attention::attention_into(q, k, v, std::nullopt, std::nullopt, *overlapping, causal,
                                           AttentionStrategy::FlashUnit);
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.error().kind(), ErrorKind::InvalidValue);
  EXPECT_EQ(overlap.error().argument(), "out") << overlap.error().message();
  if (t > 1) {  // a [1, 1, 1, 1] mask is dense whatever its strides
    auto masked =
        attention::attention_into(q, k, v, *strided_mask, std::nullopt, *out, causal, AttentionStrategy::FlashUnit);
    ASSERT_FALSE(masked.ok());
    EXPECT_EQ(masked.error().argument(), "mask") << masked.error().message();
  }
  EXPECT_EQ(bytes(*out), untouched) << "a rejected call writes nothing";
}

TEST(Serving, AttentionStridedViews) {
  for (std::int64_t t : {9, 1}) {
    SCOPED_TRACE("q_len " + std::to_string(t));
    attention_on_views(t);
    if (::testing::Test::HasFailure()) return;
  }
}

// Layouts at the edges of the tensor-core kernel's rules, through FlashBlackboxAccelerated: a key
// whose extent-1 batch dim carries an odd stride (frameworks pass any; the value is dense) runs,
// and a dense query with a token-major out (one head per panel, chosen by out alone) gives the
// dense call's bits.
TEST(Serving, AttentionViewsAtTheKernelsEdges) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  const Queue queue = Queue::default_queue(host);
  const std::int64_t hq = 4, hkv = 2, t = 9, d = 64;
  using attention::AttentionStrategy;
  const attention::AttentionModuleOptions causal{std::nullopt, true};
  const Tensor q = random_tensor({1, hq, t, d}, DType::BF16, rng), k = random_tensor({1, hkv, t, d}, DType::BF16, rng),
               v = random_tensor({1, hkv, t, d}, DType::BF16, rng);
  const auto want = bytes(
      *attention::attention(q, k, v, std::nullopt, std::nullopt, causal, AttentionStrategy::FlashBlackboxAccelerated));

  auto k_odd_batch = Tensor::view(k.data(), {1, hkv, t, d}, {12345, t * d, d, 1}, DType::BF16, queue);
  ASSERT_TRUE(k_odd_batch.ok()) << k_odd_batch.error().message();
  auto odd = attention::attention(q, *k_odd_batch, v, std::nullopt, std::nullopt, causal,
                                  AttentionStrategy::FlashBlackboxAccelerated);
  ASSERT_TRUE(odd.ok()) << odd.error().message();
  EXPECT_EQ(bytes(*odd), want);

  std::vector<std::uint16_t> out_memory(static_cast<std::size_t>(t * hq * d), 0x7777);
  auto token_major = Tensor::view(out_memory.data(), {1, hq, t, d}, {t * hq * d, d, hq * d, 1}, DType::BF16, queue);
  ASSERT_TRUE(token_major.ok()) << token_major.error().message();
  auto st = attention::attention_into(q, k, v, std::nullopt, std::nullopt, *token_major, causal,
                                      AttentionStrategy::FlashBlackboxAccelerated);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(bytes(*token_major), want);
}

// The gated delta rule and paged attention into caller buffers: the allocating calls' bits; the
// buffers' own lines (the state not in place, the split workspace not overlapped).
TEST(Serving, IntoVariantsOfGatedDeltaAndPagedAttention) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  auto up = [&](const Shape& s, DType dtype) { return random_tensor(s, dtype, rng, -0.5, 0.5); };
  const std::int64_t b = 1, h = 2, t = 10, k = 16, v = 16;
  gated_delta::GatedDeltaInput in{up({b, h, t, k}, DType::F32),
                                  up({b, h, t, k}, DType::F32),
                                  up({b, h, t, v}, DType::F32),
                                  up({b, h, t}, DType::F32),
                                  up({b, h, t}, DType::F32),
                                  up({b, h, k, v}, DType::F32),
                                  0.25f};
  auto want = gated_delta::chunk_gated_delta_rule(in, 4);
  ASSERT_TRUE(want.ok()) << want.error().message();
  const gated_delta::GatedDeltaOutput out{*Tensor::empty({b, h, t, v}, DType::F32, host),
                                          *Tensor::empty({b, h, k, v}, DType::F32, host)};
  auto st = gated_delta::chunk_gated_delta_rule_into(in, 4, out);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(bytes(out.output), bytes(want->output));
  EXPECT_EQ(bytes(out.final_state), bytes(want->final_state));
  ASSERT_TRUE(gated_delta::gated_delta_rule_into(in, out).ok());
  EXPECT_EQ(bytes(out.output), bytes(gated_delta::gated_delta_rule(in)->output));
  // The state in place, a state of another dtype, the output over the query: rejected, named.
  auto in_place = gated_delta::chunk_gated_delta_rule_into(in, 4, {out.output, *in.initial_state});
  ASSERT_FALSE(in_place.ok());
  EXPECT_EQ(in_place.error().argument(), "final_state");
  EXPECT_EQ(in_place.error().kind(), ErrorKind::InvalidValue);
  auto bf16_state =
      gated_delta::chunk_gated_delta_rule_into(in, 4, {out.output, *Tensor::empty({b, h, k, v}, DType::BF16, host)});
  ASSERT_FALSE(bf16_state.ok());
  EXPECT_EQ(bf16_state.error().argument(), "final_state");
  auto over_query = gated_delta::chunk_gated_delta_rule_into(
      in, 4, {*Tensor::view(in.query.data(), {b, h, t, v}, {}, DType::F32, in.query.queue()), out.final_state});
  ASSERT_FALSE(over_query.ok());
  EXPECT_EQ(over_query.error().argument(), "output");
  auto same = gated_delta::chunk_gated_delta_rule_into(
      in, 4, {out.output, *Tensor::view(out.output.data(), {b, h, k, v}, {}, DType::F32, out.output.queue())});
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.error().argument(), "final_state") << "the two outputs overlap";

  // Paged attention, unsplit and split.
  Layout l = paged_test::make_layout(rng, 8, {Seq{19, Rows::Chunk, 3}, Seq{9, Rows::Decode}}, true);
  const std::int64_t n = l.queries();
  const Tensor q = up({n, 4, 16}, DType::BF16), kc = up({l.pages, 8, 2, 16}, DType::BF16),
               vc = up({l.pages, 8, 2, 16}, DType::BF16);
  auto plan = paged_test::device_plan(l, q);
  ASSERT_TRUE(plan.has_value());
  const Tensor po = *Tensor::empty({n, 4, 16}, DType::BF16, host);
  ASSERT_TRUE(plan->attention_into(q, kc, vc, 0.25f, true, po).ok());
  EXPECT_EQ(bytes(po), bytes(*plan->attention(q, kc, vc, 0.25f, true)));
  auto ws = paged_attention::SplitWorkspace::create(q, n, 4, 16, 2);
  ASSERT_TRUE(ws.ok());
  ASSERT_TRUE(plan->attention_into(q, kc, vc, 0.25f, true, po, &*ws).ok());
  EXPECT_EQ(bytes(po), bytes(*plan->attention_with_workspace(q, kc, vc, 0.25f, true, *ws)));
  auto over_ws = plan->attention_into(
      q, kc, vc, 0.25f, true, *Tensor::view(ws->storage().data(), {n, 4, 16}, {}, DType::BF16, q.queue()), &*ws);
  ASSERT_FALSE(over_ws.ok());
  EXPECT_EQ(over_ws.error().argument(), "out");
  auto wrong = plan->attention_into(q, kc, vc, 0.25f, true, *Tensor::empty({n, 4, 8}, DType::BF16, host));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().kind(), ErrorKind::ShapeMismatch);
  EXPECT_EQ(wrong.error().argument(), "out");
}

// Convolution into caller buffers: forward (both layouts), data and weight gradients (with the
// bias gradient) — the allocating calls' bits; a bias-gradient buffer not asked for, or an output
// over an input, is rejected by name.
TEST(Serving, IntoVariantsOfConvolution) {
  using namespace convolution;
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  auto up = [&](const Shape& s) { return random_tensor(s, DType::F32, rng); };
  const ConvOptions opt{{1, 2}, {1, 0}, {}, 1};
  const Tensor x = up({2, 3, 7, 9}), w = up({4, 3, 3, 3}), bias = up({4});
  auto want = conv_forward(x, w, bias, opt, ConvStrategy::Direct);
  ASSERT_TRUE(want.ok()) << want.error().message();
  const Tensor out = *Tensor::empty(want->shape(), DType::F32, host);
  ASSERT_TRUE(conv_forward_into(x, w, bias, opt, out, ConvStrategy::Direct).ok());
  EXPECT_EQ(bytes(out), bytes(*want));
  const Tensor xl = up({2, 7, 9, 3}), wl = up({4, 3, 3, 3});
  auto want_l = conv_forward_nhwc(xl, wl, std::nullopt, opt, ConvStrategy::ImplicitGemm);
  ASSERT_TRUE(want_l.ok()) << want_l.error().message();
  const Tensor out_l = *Tensor::empty(want_l->shape(), DType::F32, host);
  ASSERT_TRUE(conv_forward_nhwc_into(xl, wl, std::nullopt, opt, out_l, ConvStrategy::ImplicitGemm).ok());
  EXPECT_EQ(bytes(out_l), bytes(*want_l));

  const Tensor gy = up(want->shape());
  const Tensor gx = *Tensor::empty(x.shape(), DType::F32, host);
  ASSERT_TRUE(conv_data_backward_into(gy, w, x.shape(), opt, gx, ConvStrategy::Direct).ok());
  EXPECT_EQ(bytes(gx), bytes(*conv_data_backward(gy, w, x.shape(), opt, ConvStrategy::Direct)));
  const ConvWeightGrads grads{*Tensor::empty(w.shape(), DType::F32, host), *Tensor::empty({4}, DType::F32, host)};
  ASSERT_TRUE(conv_weight_backward_into(x, gy, w.shape(), opt, grads, ConvStrategy::Direct).ok());
  auto wg = conv_weight_backward(x, gy, w.shape(), opt, true, ConvStrategy::Direct);
  ASSERT_TRUE(wg.ok());
  EXPECT_EQ(bytes(grads.grad_weight), bytes(wg->grad_weight));
  EXPECT_EQ(bytes(*grads.grad_bias), bytes(*wg->grad_bias));

  auto over_input = conv_forward_into(
      x, w, bias, opt, *Tensor::view(x.data(), want->shape(), {}, DType::F32, x.queue()), ConvStrategy::Direct);
  ASSERT_FALSE(over_input.ok());
  EXPECT_EQ(over_input.error().argument(), "out");
  // A wrong buffer on a cold call (a stride never planned) is named before any plan work.
  const Stats before = stats();
  const ConvOptions cold{{2, 1}, {0, 1}, {}, 1};
  auto cold_bad = conv_forward_into(x, w, bias, cold, *Tensor::empty({1, 1}, DType::F32, host), ConvStrategy::Direct);
  ASSERT_FALSE(cold_bad.ok());
  EXPECT_EQ(cold_bad.error().argument(), "out");
  EXPECT_EQ(stats().module_loads, before.module_loads);
  EXPECT_EQ(stats().jit_compiles, before.jit_compiles);
  auto wrong = conv_data_backward_into(gy, w, x.shape(), opt, *Tensor::empty({2, 3, 7, 8}, DType::F32, host),
                                       ConvStrategy::Direct);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().argument(), "grad_input");
  const ConvWeightGrads shared{grads.grad_weight,
                               *Tensor::view(grads.grad_weight.data(), {4}, {}, DType::F32, grads.grad_weight.queue())};
  auto overlap = conv_weight_backward_into(x, gy, w.shape(), opt, shared, ConvStrategy::Direct);
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.error().argument(), "grad_bias");
  // An empty weight shape with a bias gradient: the contract's error, not a read past the shape.
  auto no_shape = conv_weight_backward_into(x, gy, Shape{}, opt, grads, ConvStrategy::Direct);
  ASSERT_FALSE(no_shape.ok());
  EXPECT_EQ(no_shape.error().kind(), ErrorKind::ShapeMismatch);
}

// MoE into caller buffers: the experts' rows, the combine and the whole layer — the allocating
// calls' bits (the combine sums in a fixed order); a buffer over an input or of the wrong shape is
// rejected by name before routing runs.
TEST(Serving, IntoVariantsOfMoe) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  auto up = [&](const Shape& s) { return random_tensor(s, DType::F32, rng); };
  const std::int64_t e = 4, inter = 16, h = 32, tokens = 5;
  auto experts = moe::SwiGluExperts::create(up({e, inter, h}), up({e, inter, h}), up({e, h, inter}));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  const Tensor input = up({tokens, h}), logits = up({tokens, e});
  const moe::RoutingOptions options{2, true};
  auto routing = moe::route(logits, options);
  ASSERT_TRUE(routing.ok());
  auto dispatched = routing->dispatch(input);
  ASSERT_TRUE(dispatched.ok());
  auto rows = experts->forward_dispatched(*dispatched);
  ASSERT_TRUE(rows.ok());
  const Tensor rows_out = *Tensor::empty(rows->shape(), DType::F32, host);
  ASSERT_TRUE(experts->forward_dispatched_into(*dispatched, moe::GroupedStrategy::Scalar, rows_out).ok());
  EXPECT_EQ(bytes(rows_out), bytes(*rows));
  const Tensor combined = *Tensor::empty({tokens, h}, DType::F32, host);
  ASSERT_TRUE(dispatched->combine_into(*rows, combined).ok());
  EXPECT_EQ(bytes(combined), bytes(*dispatched->combine(*rows)));
  const Tensor layer = *Tensor::empty({tokens, h}, DType::F32, host);
  ASSERT_TRUE(experts->forward_into(input, logits, options, layer).ok());
  EXPECT_EQ(bytes(layer), bytes(*experts->forward(input, logits, options)));

  const Stats before = stats();
  auto over_input = experts->forward_into(input, logits, options, input);
  ASSERT_FALSE(over_input.ok());
  EXPECT_EQ(over_input.error().argument(), "out");
  EXPECT_EQ(stats().kernel_launches, before.kernel_launches) << "rejected before routing ran";
  auto wrong = dispatched->combine_into(*rows, *Tensor::empty({tokens, h + 1}, DType::F32, host));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().kind(), ErrorKind::ShapeMismatch);
  // DeepSeek-V3 routing (4 experts in 2 groups, 1 group kept, top 2) into a buffer; the bias is an
  // input the buffer must not overlap.
  const Tensor bias = up({e});
  const moe::GroupRoutingOptions grouped{2, 2, 1, true, true, 1.5f};
  const Tensor grouped_out = *Tensor::empty({tokens, h}, DType::F32, host);
  auto g =
      experts->forward_sigmoid_grouped_into(input, logits, bias, grouped, moe::GroupedStrategy::Scalar, grouped_out);
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(bytes(grouped_out),
            bytes(*experts->forward_sigmoid_grouped(input, logits, bias, grouped, moe::GroupedStrategy::Scalar)));
  auto over_bias = experts->forward_sigmoid_grouped_into(
      input, logits, bias, grouped, moe::GroupedStrategy::Scalar,
      *Tensor::view(bias.data(), {tokens, h}, {}, DType::F32, bias.queue()));  // rejected: never written
  ASSERT_FALSE(over_bias.ok());
  EXPECT_EQ(over_bias.error().argument(), "out");
  EXPECT_EQ(over_bias.error().kind(), ErrorKind::InvalidValue) << over_bias.error().message();
  auto over_rows = experts->forward_dispatched_into(*dispatched, moe::GroupedStrategy::Scalar, dispatched->rows());
  ASSERT_FALSE(over_rows.ok());
  EXPECT_EQ(over_rows.error().argument(), "out");
  // The slots are read by the combine after the experts: a workspace over them is refused.
  const Tensor& slots = dispatched->slots();
  auto over_slots = experts->forward_dispatched_into(
      *dispatched, moe::GroupedStrategy::Scalar, rows_out,
      *Tensor::view(slots.data(), {static_cast<std::int64_t>(slots.nbytes())}, {}, DType::U8, slots.queue()));
  ASSERT_FALSE(over_slots.ok());
  EXPECT_EQ(over_slots.error().argument(), "workspace");
  EXPECT_NE(over_slots.error().message().find("overlapping"), std::string::npos) << over_slots.error().message();
}

// MoE routing and dispatch into caller buffers: both routings and the dispatch write the allocating
// calls' bits into the caller's memory, and the plans they return use it (the combine of the
// caller-buffer dispatch gives the same output). A buffer of the wrong shape or dtype, on another
// queue, over an input or over another output is named; nothing is written.
TEST(Serving, RoutingAndDispatchIntoCallerBuffers) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  const Queue queue = Queue::default_queue(host);
  const std::int64_t e = 8, h = 24, tokens = 7, k = 2;
  // The input and the bias sit at the start of buffers large enough for the overlapping views the
  // rejections below make (a regressed check must fail an expectation, not write past a buffer).
  auto in_memory = [&](const Shape& s, DType d, std::vector<std::uint64_t>& memory, std::size_t bytes) {
    const HostData data = to_host(random_tensor(s, d, rng)).value();
    memory.assign(bytes / 8 + 1, 0);
    std::memcpy(memory.data(), data.bytes.data(), data.bytes.size());
    return *Tensor::view(memory.data(), s, {}, d, queue);
  };
  std::vector<std::uint64_t> input_memory, bias_memory;
  const Tensor input = in_memory({tokens, h}, DType::BF16, input_memory, tokens * k * h * 2);
  const Tensor logits = random_tensor({tokens, e}, DType::BF16, rng);
  const Tensor bias = in_memory({e}, DType::F32, bias_memory, tokens * k * 4);
  auto make = [&](const Shape& s, DType d) {
    Tensor t = *Tensor::empty(s, d, queue);
    std::fill_n(static_cast<std::byte*>(t.data()), t.nbytes(), std::byte{0x7F});  // garbage
    return t;
  };

  const moe::RoutingOptions options{k, true};
  const moe::GroupRoutingOptions grouped{k, 4, 2, true, true, 2.5f};
  for (bool sigmoid : {false, true}) {
    SCOPED_TRACE(sigmoid ? "route_sigmoid_grouped_into" : "route_into");
    auto want = sigmoid ? moe::route_sigmoid_grouped(logits, bias, grouped) : moe::route(logits, options);
    ASSERT_TRUE(want.ok()) << want.error().message();
    const Tensor indices = make({tokens, k}, DType::U32), weights = make({tokens, k}, DType::BF16);
    auto got = sigmoid ? moe::route_sigmoid_grouped_into(logits, bias, grouped, indices, weights)
                       : moe::route_into(logits, options, indices, weights);
    ASSERT_TRUE(got.ok()) << got.error().message();
    EXPECT_EQ(bytes(indices), bytes(want->expert_indices()));
    EXPECT_EQ(bytes(weights), bytes(want->weights()));
    EXPECT_EQ(got->expert_indices().data(), indices.data()) << "the plan uses the caller's buffers";
    EXPECT_EQ(got->weights().data(), weights.data());

    // Dispatch into caller buffers from the caller-buffer routing; the combine reads them.
    auto dispatched = want->dispatch(input);
    ASSERT_TRUE(dispatched.ok()) << dispatched.error().message();
    const Tensor rows = make({tokens * k, h}, DType::BF16), offsets = make({e + 1}, DType::U32),
                 slots = make({tokens, k}, DType::U32);
    auto into = got->dispatch_into(input, rows, offsets, slots);
    ASSERT_TRUE(into.ok()) << into.error().message();
    EXPECT_EQ(bytes(offsets), bytes(dispatched->expert_offsets()));
    // Rows within an expert come in no fixed order (atomic ranking): each (token, choice) slot must
    // hold that token's row.
    const auto row_bits = bytes(rows), input_bits = bytes(input);
    const auto slot_values = to_host(slots)->to_f64();
    const std::size_t row_bytes = static_cast<std::size_t>(h) * 2;
    for (std::int64_t tk = 0; tk < tokens * k; ++tk) {
      const auto slot = static_cast<std::size_t>(slot_values[static_cast<std::size_t>(tk)]);
      ASSERT_LT(slot, static_cast<std::size_t>(tokens * k));
      EXPECT_EQ(0, std::memcmp(row_bits.data() + slot * row_bytes,
                               input_bits.data() + static_cast<std::size_t>(tk / k) * row_bytes, row_bytes))
          << "slot of token " << tk / k << " choice " << tk % k;
    }
    EXPECT_EQ(bytes(*into->combine(rows)), bytes(*dispatched->combine(dispatched->rows())));
  }

  // Rejected, naming the buffer, before anything runs.
  const Tensor indices = make({tokens, k}, DType::U32), weights = make({tokens, k}, DType::BF16);
  auto q2 = Queue::create(host);
  ASSERT_TRUE(q2.ok());
  struct Bad {
    Tensor indices, weights;
    const char* argument;
    ErrorKind kind;
  };
  const Bad bad_routes[] = {
      {make({tokens, k + 1}, DType::U32), weights, "expert_indices", ErrorKind::ShapeMismatch},
      {indices, make({tokens, k}, DType::F32), "weights", ErrorKind::UnsupportedDType},
      {*Tensor::empty({tokens, k}, DType::U32, *q2), weights, "expert_indices", ErrorKind::QueueMismatch},
      {*Tensor::view(logits.data(), {tokens, k}, {}, DType::U32, queue), weights, "expert_indices",
       ErrorKind::InvalidValue},
      {indices, *Tensor::view(indices.data(), {tokens, k}, {}, DType::BF16, queue), "weights", ErrorKind::InvalidValue},
  };
  const Stats before = stats();
  for (const Bad& b : bad_routes) {
    auto r = moe::route_into(logits, options, b.indices, b.weights);
    ASSERT_FALSE(r.ok()) << b.argument;
    EXPECT_EQ(r.error().argument(), b.argument) << r.error().message();
    EXPECT_EQ(r.error().kind(), b.kind) << r.error().message();
  }
  auto over_bias = moe::route_sigmoid_grouped_into(
      logits, bias, grouped, *Tensor::view(bias.data(), {tokens, k}, {}, DType::U32, queue), weights);
  ASSERT_FALSE(over_bias.ok());
  EXPECT_EQ(over_bias.error().argument(), "expert_indices") << over_bias.error().message();
  EXPECT_EQ(stats().kernel_launches, before.kernel_launches) << "rejected routings launch nothing";

  auto routing = moe::route(logits, options);
  ASSERT_TRUE(routing.ok());
  const Tensor rows = make({tokens * k, h}, DType::BF16), offsets = make({e + 1}, DType::U32),
               slots = make({tokens, k}, DType::U32);
  const Stats routed = stats();
  struct BadDispatch {
    Tensor rows, offsets, slots;
    const char* argument;
  };
  const BadDispatch bad_dispatches[] = {
      {make({tokens * k, h}, DType::F32), offsets, slots, "rows"},
      {rows, make({e}, DType::U32), slots, "offsets"},
      {rows, offsets, make({tokens, k}, DType::I32), "slots"},
      {*Tensor::view(input.data(), {tokens * k, h}, {}, DType::BF16, queue), offsets, slots, "rows"},
      {rows, offsets, *Tensor::view(routing->expert_indices().data(), {tokens, k}, {}, DType::U32, queue), "slots"},
      {rows, *Tensor::view(slots.data(), {e + 1}, {}, DType::U32, queue), slots, "slots"},
  };
  for (const BadDispatch& b : bad_dispatches) {
    auto d = routing->dispatch_into(input, b.rows, b.offsets, b.slots);
    ASSERT_FALSE(d.ok()) << b.argument;
    EXPECT_EQ(d.error().argument(), b.argument) << d.error().message();
  }
  EXPECT_EQ(stats().kernel_launches, routed.kernel_launches) << "rejected dispatches launch nothing";
}

// The MoE training entries into caller buffers (router weights and their backward, the combine,
// experts and dispatch backward): the allocating calls' bits into buffers that start as garbage. A
// buffer of the wrong shape, over an input or over another output of the call is named, and a
// rejected call launches nothing.
TEST(Serving, IntoVariantsOfMoeTraining) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  auto up = [&](const Shape& s) { return random_tensor(s, DType::F32, rng); };
  // A buffer full of garbage (0x7F bytes), so that only what the call writes can match.
  auto garbage = [&](const Shape& s, DType d) {
    Tensor t = *Tensor::empty(s, d, host);
    std::fill_n(static_cast<std::byte*>(t.data()), t.nbytes(), std::byte{0x7F});
    return t;
  };
  const std::int64_t e = 4, inter = 8, h = 16, tokens = 5, k = 2;
  auto experts = moe::SwiGluExperts::create(up({e, inter, h}), up({e, inter, h}), up({e, h, inter}));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  const Tensor input = up({tokens, h}), logits = up({tokens, e});
  auto routing = moe::route(logits, {k, true});
  ASSERT_TRUE(routing.ok());
  const Tensor& indices = routing->expert_indices();
  const moe::RouterWeightOptions ro{};

  const Tensor w = garbage({tokens, k}, DType::F32);
  ASSERT_TRUE(moe::selected_router_weights_into(logits, indices, ro, w).ok());
  EXPECT_EQ(bytes(w), bytes(*moe::selected_router_weights(logits, indices, ro)));
  const Tensor grad_w = up({tokens, k}), dlogits = garbage({tokens, e}, DType::F32);
  ASSERT_TRUE(moe::selected_router_backward_into(logits, indices, grad_w, ro, dlogits).ok());
  EXPECT_EQ(bytes(dlogits), bytes(*moe::selected_router_backward(logits, indices, grad_w, ro)));

  auto dispatched = routing->dispatch(input);
  ASSERT_TRUE(dispatched.ok());
  auto training = experts->forward_dispatched_training(*dispatched, moe::GroupedStrategy::Scalar);
  ASSERT_TRUE(training.ok()) << training.error().message();
  const Tensor grad_out = up({tokens, h});
  auto want_cb = dispatched->combine_backward(training->output, grad_out);
  ASSERT_TRUE(want_cb.ok());
  const moe::CombineGradients cb{garbage({tokens * k, h}, DType::F32), garbage({tokens, k}, DType::F32)};
  for (auto strategy : {moe::CombineGradientStrategy::Serial, moe::CombineGradientStrategy::Plane}) {
    ASSERT_TRUE(dispatched->combine_backward_into(training->output, grad_out, strategy, cb).ok());
    auto want = dispatched->combine_backward_with_strategy(training->output, grad_out, strategy);
    EXPECT_EQ(bytes(cb.dexpert), bytes(want->dexpert));
    EXPECT_EQ(bytes(cb.dweights), bytes(want->dweights));
  }
  auto want_eg = training->cache.backward(want_cb->dexpert);
  ASSERT_TRUE(want_eg.ok()) << want_eg.error().message();
  const moe::ExpertGradients eg{garbage({tokens * k, h}, DType::F32), garbage({e, inter, h}, DType::F32),
                                garbage({e, inter, h}, DType::F32), garbage({e, h, inter}, DType::F32)};
  auto st = training->cache.backward_into(want_cb->dexpert, moe::GroupedStrategy::Scalar, eg);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(bytes(eg.dinput), bytes(want_eg->dinput));
  EXPECT_EQ(bytes(eg.dgate), bytes(want_eg->dgate));
  EXPECT_EQ(bytes(eg.dup), bytes(want_eg->dup));
  EXPECT_EQ(bytes(eg.ddown), bytes(want_eg->ddown));
  const Tensor dx = garbage({tokens, h}, DType::F32);
  ASSERT_TRUE(dispatched->dispatch_backward_into(want_eg->dinput, dx).ok());
  EXPECT_EQ(bytes(dx), bytes(*dispatched->dispatch_backward(want_eg->dinput)));

  // Rejected, naming the buffer; nothing launches.
  const Stats before = stats();
  auto short_w = moe::selected_router_weights_into(logits, indices, ro, garbage({tokens, k + 1}, DType::F32));
  ASSERT_FALSE(short_w.ok());
  EXPECT_EQ(short_w.error().argument(), "out");
  EXPECT_EQ(short_w.error().kind(), ErrorKind::ShapeMismatch);
  auto over_logits = moe::selected_router_backward_into(logits, indices, grad_w, ro, logits);
  ASSERT_FALSE(over_logits.ok());
  EXPECT_EQ(over_logits.error().argument(), "out");
  // dweights over the routing weights, which the call reads.
  auto cb_bad = dispatched->combine_backward_into(training->output, grad_out, moe::CombineGradientStrategy::Serial,
                                                  {garbage({tokens * k, h}, DType::F32), routing->weights()});
  ASSERT_FALSE(cb_bad.ok());
  EXPECT_EQ(cb_bad.error().argument(), "dweights") << cb_bad.error().message();
  const moe::ExpertGradients shared{eg.dinput, eg.dgate, eg.dgate, eg.ddown};
  auto eg_bad = training->cache.backward_into(want_cb->dexpert, moe::GroupedStrategy::Scalar, shared);
  ASSERT_FALSE(eg_bad.ok());
  EXPECT_EQ(eg_bad.error().argument(), "dup") << eg_bad.error().message();
  auto db_bad = dispatched->dispatch_backward_into(want_eg->dinput, garbage({tokens, h}, DType::BF16));
  ASSERT_FALSE(db_bad.ok());
  EXPECT_EQ(db_bad.error().argument(), "out");
  EXPECT_EQ(db_bad.error().kind(), ErrorKind::UnsupportedDType);
  EXPECT_EQ(stats().kernel_launches, before.kernel_launches) << "rejected calls launch nothing";
}

// A whole MoE layer in the engine's memory (route_into → dispatch_into → the experts into a buffer
// with a workspace → combine_into), warm, then again inside a (simulated) capture: no plan is
// made, nothing reads back or allocates, and the captured step gives the warm step's bits.
TEST(Serving, MoeStepInCallerMemoryUnderCapture) {
  std::mt19937_64 rng(fresh_seed());
  auto made = Queue::create(Device::host());
  ASSERT_TRUE(made.ok());
  const Queue& q = *made;
  const std::int64_t e = 4, inter = 8, h = 16, tokens = 6, k = 2;
  auto upload = [&](const Shape& s) { return random_tensor_on(q, s, DType::F32, rng); };
  auto experts = moe::SwiGluExperts::create(upload({e, inter, h}), upload({e, inter, h}), upload({e, h, inter}));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  const Tensor input = upload({tokens, h}), logits = upload({tokens, e});
  auto buffer = [&](const Shape& s, DType d) { return *Tensor::empty(s, d, q); };
  const Tensor indices = buffer({tokens, k}, DType::U32), weights = buffer({tokens, k}, DType::F32),
               rows = buffer({tokens * k, h}, DType::F32), offsets = buffer({e + 1}, DType::U32),
               slots = buffer({tokens, k}, DType::U32), expert_out = buffer({tokens * k, h}, DType::F32),
               out = buffer({tokens, h}, DType::F32);
  std::optional<Tensor> workspace;
  auto step = [&]() -> Status<MoeError> {
    auto routing = moe::route_into(logits, {k, true}, indices, weights);
    if (!routing.ok()) return routing.error();
    auto dispatched = routing->dispatch_into(input, rows, offsets, slots);
    if (!dispatched.ok()) return dispatched.error();
    if (!workspace) {
      auto bytes = experts->workspace_bytes(*dispatched, moe::GroupedStrategy::Scalar);
      if (!bytes.ok()) return bytes.error();
      workspace = buffer({static_cast<std::int64_t>(*bytes)}, DType::U8);
    }
    if (auto s = experts->forward_dispatched_into(*dispatched, moe::GroupedStrategy::Scalar, expert_out, *workspace);
        !s.ok())
      return s;
    return dispatched->combine_into(expert_out, out);
  };
  ASSERT_TRUE(step().ok());
  const auto warm = bytes(out);
  EXPECT_EQ(warm, bytes(*experts->forward(input, logits, {k, true}))) << "the layer's bits";
  std::fill_n(static_cast<std::byte*>(out.data()), out.nbytes(), std::byte{0xFF});
  const Stats before = stats();
  {
    SimulatedCapture capture(q);
    auto captured = step();
    ASSERT_TRUE(captured.ok()) << captured.error().message();
  }
  EXPECT_EQ(stats().plan_cache_misses, before.plan_cache_misses);
  EXPECT_EQ(stats().jit_compiles, before.jit_compiles);
  EXPECT_EQ(stats().host_synchronizations, before.host_synchronizations);
  EXPECT_EQ(stats().device_allocations, before.device_allocations) << "every buffer was the engine's";
  EXPECT_EQ(bytes(out), warm);
}

// A whole MoE layer with every intermediate in one caller workspace of layer_workspace_bytes, both
// routings and both expert strategies: the allocating layer's bits, no pool allocation, and the
// same under a simulated capture; one byte short, or overlapping the input, is named and writes
// nothing.
TEST(Serving, MoeLayerInOneCallerWorkspace) {
  std::mt19937_64 rng(fresh_seed());
  auto made = Queue::create(Device::host());
  ASSERT_TRUE(made.ok());
  const Queue& q = *made;
  const std::int64_t e = 8, inter = 32, h = 64, tokens = 5, k = 2;
  auto upload = [&](const Shape& shape, DType dtype) { return random_tensor_on(q, shape, dtype, rng); };
  auto experts = moe::SwiGluExperts::create(upload({e, inter, h}, DType::BF16), upload({e, inter, h}, DType::BF16),
                                            upload({e, h, inter}, DType::BF16));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  const Tensor input = upload({tokens, h}, DType::BF16), logits = upload({tokens, e}, DType::F32);
  const Tensor bias = upload({e}, DType::F32);
  const moe::GroupRoutingOptions grouped{k, 4, 2, true, true, 1.5f};
  for (auto strategy : {moe::GroupedStrategy::Scalar, moe::GroupedStrategy::TensorCore}) {
    SCOPED_TRACE(strategy == moe::GroupedStrategy::Scalar ? "Scalar" : "TensorCore");
    auto need = experts->layer_workspace_bytes(input, logits, k, strategy);
    ASSERT_TRUE(need.ok()) << need.error().message();
    EXPECT_GE(*need, static_cast<std::size_t>(2 * tokens * k * h * 2)) << "the dispatched and the experts' rows";
    const Tensor workspace = *Tensor::empty({static_cast<std::int64_t>(*need)}, DType::U8, q);
    const Tensor out = *Tensor::empty({tokens, h}, DType::BF16, q);

    // The allocating layers with this strategy.
    auto routing = moe::route(logits, {k, true});
    ASSERT_TRUE(routing.ok());
    auto dispatched = routing->dispatch(input);
    ASSERT_TRUE(dispatched.ok());
    const auto want = bytes(*dispatched->combine(*experts->forward_dispatched_with_strategy(*dispatched, strategy)));
    auto want_grouped = experts->forward_sigmoid_grouped(input, logits, bias, grouped, strategy);
    ASSERT_TRUE(want_grouped.ok()) << want_grouped.error().message();

    const Stats before = stats();
    auto st = experts->forward_into(input, logits, {k, true}, strategy, out, workspace);
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(bytes(out), want);
    {
      SimulatedCapture capture(q);
      auto captured = experts->forward_sigmoid_grouped_into(input, logits, bias, grouped, strategy, out, workspace);
      ASSERT_TRUE(captured.ok()) << captured.error().message();
    }
    EXPECT_EQ(bytes(out), bytes(*want_grouped));
    EXPECT_EQ(stats().device_allocations, before.device_allocations) << "every intermediate in the workspace";

    ASSERT_TRUE(out.poison().ok());
    const auto poisoned = bytes(out);
    auto small = Tensor::view(workspace.data(), {static_cast<std::int64_t>(*need) - 1}, {}, DType::U8, q);
    ASSERT_TRUE(small.ok());
    auto too_small = experts->forward_into(input, logits, {k, true}, strategy, out, *small);
    ASSERT_FALSE(too_small.ok());
    EXPECT_EQ(too_small.error().argument(), "workspace");
    EXPECT_EQ(too_small.error().kind(), ErrorKind::InvalidValue);
    auto over_input = experts->forward_into(input, logits, {k, true}, strategy, out, input);
    ASSERT_FALSE(over_input.ok());
    EXPECT_EQ(over_input.error().argument(), "workspace");
    auto bad_out = experts->forward_sigmoid_grouped_into(input, logits, bias, grouped, strategy, logits, workspace);
    ASSERT_FALSE(bad_out.ok());
    EXPECT_EQ(bad_out.error().argument(), "out");
    EXPECT_EQ(bytes(out), poisoned) << "a rejected call writes nothing";
  }
  // The size query checks the routing's lines too: top_k, and the logits' rank.
  for (std::int64_t top_k : {std::int64_t{-1}, std::int64_t{0}, e + 1}) {
    auto bad_k = experts->layer_workspace_bytes(input, logits, top_k, moe::GroupedStrategy::Scalar);
    ASSERT_FALSE(bad_k.ok()) << top_k;
    EXPECT_EQ(bad_k.error().argument(), "top_k");
  }
  const Tensor flat = *Tensor::empty({tokens * e}, DType::F32, q);
  auto bad_rank = experts->layer_workspace_bytes(input, flat, k, moe::GroupedStrategy::Scalar);
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_EQ(bad_rank.error().argument(), "logits");
}

// Convolution's temporaries (channels-first layout copies, the weight gradient's split sums) in a
// caller's workspace of ConvInfo::workspace_bytes: the allocating calls' bits, no allocation; one
// byte short, or overlapping an input or the output, is named and writes nothing.
TEST(Serving, ConvWorkspaceFromTheCaller) {
  using namespace convolution;
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  const Queue queue = Queue::default_queue(host);
  auto up = [&](const Shape& s) { return random_tensor(s, DType::F32, rng); };
  const ConvOptions opt{{1, 1}, {1, 1}, {}, 1};
  const Tensor x = up({2, 4, 6, 5}), w = up({8, 4, 3, 3}), bias = up({8});
  const auto strategy = ConvStrategy::ImplicitGemm;
  auto workspace_of = [&](std::int64_t bytes, std::vector<std::uint64_t>& memory) {
    memory.assign(static_cast<std::size_t>(bytes) / 8 + 1, 0);
    return *Tensor::view(memory.data(), {bytes}, {}, DType::U8, queue);
  };
  std::vector<std::uint64_t> memory;

  ConvInfo info;
  auto want = conv_forward(x, w, bias, opt, strategy, &info);
  ASSERT_TRUE(want.ok()) << want.error().message();
  ASSERT_GT(info.workspace_bytes, 0) << "channels-first: the layout copies";
  const Tensor out = *Tensor::empty(want->shape(), DType::F32, host);
  Stats before = stats();
  const Tensor fwd_ws = workspace_of(info.workspace_bytes, memory);
  auto st = conv_forward_into(x, w, bias, opt, out, strategy, nullptr, &fwd_ws);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(stats().device_allocations, before.device_allocations);
  EXPECT_EQ(bytes(out), bytes(*want));
  ASSERT_TRUE(out.poison().ok());
  const auto poisoned = bytes(out);
  const Tensor short_ws = workspace_of(info.workspace_bytes - 1, memory);
  auto small = conv_forward_into(x, w, bias, opt, out, strategy, nullptr, &short_ws);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().argument(), "workspace");
  EXPECT_EQ(small.error().kind(), ErrorKind::InvalidValue);
  auto over_out = conv_forward_into(x, w, bias, opt, out, strategy, nullptr, &out);
  ASSERT_FALSE(over_out.ok());
  EXPECT_EQ(over_out.error().argument(), "workspace");
  auto over_input = conv_forward_into(x, w, bias, opt, out, strategy, nullptr, &x);
  ASSERT_FALSE(over_input.ok());
  EXPECT_EQ(over_input.error().argument(), "workspace");
  EXPECT_EQ(bytes(out), poisoned) << "a rejected call writes nothing";

  const Tensor gy = up(want->shape());
  ConvInfo data_info;
  auto gx_want = conv_data_backward(gy, w, x.shape(), opt, strategy, ConvLayout::ChannelsFirst, &data_info);
  ASSERT_TRUE(gx_want.ok()) << gx_want.error().message();
  const Tensor gx = *Tensor::empty(x.shape(), DType::F32, host);
  const Tensor data_ws = workspace_of(data_info.workspace_bytes, memory);
  before = stats();
  ASSERT_TRUE(
      conv_data_backward_into(gy, w, x.shape(), opt, gx, strategy, ConvLayout::ChannelsFirst, nullptr, &data_ws).ok());
  EXPECT_EQ(stats().device_allocations, before.device_allocations);
  EXPECT_EQ(bytes(gx), bytes(*gx_want));

  ConvInfo weight_info;
  auto wg = conv_weight_backward(x, gy, w.shape(), opt, true, strategy, ConvLayout::ChannelsFirst, &weight_info);
  ASSERT_TRUE(wg.ok()) << wg.error().message();
  const ConvWeightGrads grads{*Tensor::empty(w.shape(), DType::F32, host), *Tensor::empty({8}, DType::F32, host)};
  const Tensor weight_ws = workspace_of(weight_info.workspace_bytes, memory);
  before = stats();
  auto ws =
      conv_weight_backward_into(x, gy, w.shape(), opt, grads, strategy, ConvLayout::ChannelsFirst, nullptr, &weight_ws);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  EXPECT_EQ(stats().device_allocations, before.device_allocations);
  EXPECT_EQ(bytes(grads.grad_weight), bytes(wg->grad_weight));
  EXPECT_EQ(bytes(*grads.grad_bias), bytes(*wg->grad_bias));
  // Without the bias gradient (a plan with one slot fewer): sized, and run in the workspace.
  ConvInfo no_bias_info;
  auto wg_only = conv_weight_backward(x, gy, w.shape(), opt, false, strategy, ConvLayout::ChannelsFirst, &no_bias_info);
  ASSERT_TRUE(wg_only.ok()) << wg_only.error().message();
  ASSERT_GT(no_bias_info.workspace_bytes, 0);
  const Tensor no_bias_ws = workspace_of(no_bias_info.workspace_bytes, memory);
  const ConvWeightGrads weight_only{*Tensor::empty(w.shape(), DType::F32, host), std::nullopt};
  auto only = conv_weight_backward_into(x, gy, w.shape(), opt, weight_only, strategy, ConvLayout::ChannelsFirst,
                                        nullptr, &no_bias_ws);
  ASSERT_TRUE(only.ok()) << only.error().message();
  EXPECT_EQ(bytes(weight_only.grad_weight), bytes(wg_only->grad_weight));
  auto over_bias_grad = conv_weight_backward_into(x, gy, w.shape(), opt, grads, strategy, ConvLayout::ChannelsFirst,
                                                  nullptr, &*grads.grad_bias);
  ASSERT_FALSE(over_bias_grad.ok());
  EXPECT_EQ(over_bias_grad.error().argument(), "workspace");
}

// The experts' activations in a caller's workspace: the size query ([T·top_k, inter] at least),
// then the rows into the caller's out with no allocation and the allocating call's bits; a
// workspace too small or overlapping the dispatched rows is named, and nothing is written.
TEST(Serving, MoeExpertsWorkspaceFromTheCaller) {
  std::mt19937_64 rng(fresh_seed());
  const Device host = Device::host();
  auto up = [&](const Shape& s) { return random_tensor(s, DType::BF16, rng); };
  const std::int64_t e = 4, inter = 32, h = 64, tokens = 6, top_k = 2;
  auto experts = moe::SwiGluExperts::create(up({e, inter, h}), up({e, inter, h}), up({e, h, inter}));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  auto routing = moe::route(random_tensor({tokens, e}, DType::F32, rng), moe::RoutingOptions{top_k, true});
  ASSERT_TRUE(routing.ok());
  auto dispatched = routing->dispatch(up({tokens, h}));
  ASSERT_TRUE(dispatched.ok());
  const Queue queue = Queue::default_queue(host);
  for (auto strategy : {moe::GroupedStrategy::Scalar, moe::GroupedStrategy::TensorCore}) {
    SCOPED_TRACE(strategy == moe::GroupedStrategy::Scalar ? "Scalar" : "TensorCore");
    auto need = experts->workspace_bytes(*dispatched, strategy);
    ASSERT_TRUE(need.ok()) << need.error().message();
    EXPECT_GE(*need, static_cast<std::size_t>(tokens * top_k * inter * 2)) << "the activations";
    std::vector<std::uint64_t> ws_memory(*need / 8 + 1);
    auto workspace = Tensor::view(ws_memory.data(), {static_cast<std::int64_t>(*need)}, {}, DType::U8, queue);
    ASSERT_TRUE(workspace.ok());
    const Tensor out = *Tensor::empty({tokens * top_k, h}, DType::BF16, host);
    const auto want = bytes(*experts->forward_dispatched_with_strategy(*dispatched, strategy));
    const Stats before = stats();
    auto st = experts->forward_dispatched_into(*dispatched, strategy, out, *workspace);
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(stats().device_allocations, before.device_allocations);
    EXPECT_EQ(bytes(out), want);

    ASSERT_TRUE(out.poison().ok());
    const auto poisoned = bytes(out);
    auto small = Tensor::view(ws_memory.data(), {static_cast<std::int64_t>(*need) - 2}, {}, DType::U8, queue);
    auto too_small = experts->forward_dispatched_into(*dispatched, strategy, out, *small);
    ASSERT_FALSE(too_small.ok());
    EXPECT_EQ(too_small.error().argument(), "workspace");
    EXPECT_EQ(too_small.error().kind(), ErrorKind::InvalidValue);
    auto over_rows = experts->forward_dispatched_into(*dispatched, strategy, out, dispatched->rows());
    ASSERT_FALSE(over_rows.ok());
    EXPECT_EQ(over_rows.error().argument(), "workspace");
    EXPECT_EQ(bytes(out), poisoned) << "a rejected call writes nothing";
  }
}

}  // namespace
}  // namespace rudnn
