// How an inference engine embeds rudnn (docs/serving.md): its own stream as a queue, its own memory
// as views, a warm-up that makes every plan before serving, capture safety, and the counters that
// prove a serving step compiled nothing. Public headers only; the test suite builds and runs it
// (tests/tools: serving_example) on the default device.
//
//   rudnn_serving_example            exit 0 and "serving ok" when every check holds
#include <cstdio>
#include <vector>

#include "rudnn/device.h"
#include "rudnn/normalization.h"
#include "rudnn/paged_attention.h"
#include "rudnn/stats.h"
#include "rudnn/tensor.h"

namespace {

int fail(const char* what, const rudnn::Error& e) {
  std::fprintf(stderr, "serving example: %s: %s\n", what, e.message().c_str());
  return 1;
}

}  // namespace

int main() {
  using namespace rudnn;
  auto device = Device::default_device();
  if (!device.ok()) return fail("device", device.error());

  // 1. The engine's stream. An engine passes its own CUstream (on the host device: a host queue's
  //    native_handle()); rudnn never destroys a wrapped stream. Here the "engine" stream is a queue
  //    made for the purpose.
  auto engine_queue = Queue::create(*device);
  if (!engine_queue.ok()) return fail("engine queue", engine_queue.error());
  auto queue = Queue::wrap(*device, engine_queue->native_handle());
  if (!queue.ok()) return fail("wrap", queue.error());

  // 2. The engine's memory. A real engine has its own allocations; here they are tensors whose
  //    device pointers are viewed, as an engine would view its own.
  const std::int64_t tokens = 4, heads = 4, head_dim = 32, hidden = heads * head_dim;
  const std::int64_t page_size = 16, pages = 8;
  auto gamma = Tensor::upload(HostData::from_f64({hidden}, DType::F32, std::vector<double>(hidden, 1.0)), *queue);
  auto keys = Tensor::upload(
      HostData::from_f64({pages, page_size, heads, head_dim}, DType::F16,
                         std::vector<double>(static_cast<std::size_t>(pages * page_size * hidden), 0.01)),
      *queue);
  auto values =
      Tensor::upload(HostData::from_f64({pages, page_size, heads, head_dim}, DType::F16,
                                        std::vector<double>(static_cast<std::size_t>(pages * page_size * hidden), 0.5)),
                     *queue);
  if (!gamma.ok()) return fail("gamma", gamma.error());
  if (!keys.ok()) return fail("key cache", keys.error());
  if (!values.ok()) return fail("value cache", values.error());
  // The hidden states are the first `hidden` columns of a fused [tokens, 3·hidden] buffer (as a
  // fused QKV projection leaves them): a row-strided view, which normalization reads in place.
  std::vector<double> x(static_cast<std::size_t>(tokens * 3 * hidden));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.001 * static_cast<double>(i % 97);
  auto fused = Tensor::upload(HostData::from_f64({tokens, 3 * hidden}, DType::F16, x), *queue);
  if (!fused.ok()) return fail("input", fused.error());
  auto input = Tensor::view(fused->data(), {tokens, hidden}, {3 * hidden, 1}, DType::F16, *queue);
  if (!input.ok()) return fail("view", input.error());
  // The engine's buffers for the step's results: the normed rows (the queries) and the output.
  auto normed_memory = Tensor::empty({tokens, hidden}, DType::F16, *queue);
  auto out_memory = Tensor::empty({tokens, heads, head_dim}, DType::F16, *queue);
  if (!normed_memory.ok()) return fail("engine buffer", normed_memory.error());
  if (!out_memory.ok()) return fail("engine buffer", out_memory.error());
  auto normed = Tensor::view(normed_memory->data(), {tokens, hidden}, {}, DType::F16, *queue);
  auto q = Tensor::view(normed_memory->data(), {tokens, heads, head_dim}, {}, DType::F16, *queue);
  auto out = Tensor::view(out_memory->data(), {tokens, heads, head_dim}, {}, DType::F16, *queue);
  if (!normed.ok()) return fail("view", normed.error());
  if (!q.ok()) return fail("view", q.error());
  if (!out.ok()) return fail("view", out.error());

  // The schedule: four decode sequences, one query row each, pages 0-1, 2-3, 4-5, 6-7.
  std::vector<std::vector<std::int32_t>> tables = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  auto host_plan =
      paged_attention::HostPlan::create(page_size, pages, tables, {20, 17, 32, 5}, {0, 1, 2, 3}, {19, 16, 31, 4});
  if (!host_plan.ok()) return fail("schedule", host_plan.error());
  // Uploaded once per schedule, before serving (an upload waits for the queue).
  auto plan = paged_attention::DevicePlan::upload(*host_plan, *input);
  if (!plan.ok()) return fail("plan", plan.error());

  // One decode step into the engine's buffers: norm, then paged attention over the cache (the
  // norm's rows as the queries).
  auto step = [&]() -> Status<Error> {
    if (auto s = normalization::rms_norm_into(*input, *gamma, 1e-6f, *normed); !s.ok()) return Error(s.error());
    if (auto s = plan->attention_into(*q, *keys, *values, 0.17f, true, *out); !s.ok()) return Error(s.error());
    return {};
  };

  // 3. Warm-up before serving (and before any CUDA graph capture): the first call of each shape
  //    lowers and compiles (or loads from a kernel pack) its plan.
  auto warm = step();
  if (!warm.ok()) return fail("warm-up", warm.error());

  // 4. Serving: warm calls compile nothing, load nothing. A call that would (a new shape) while the
  //    stream is being captured fails with ErrorKind::CaptureViolation instead of breaking the
  //    capture.
  const Stats before = stats();
  auto served = step();
  if (!served.ok()) return fail("serving step", served.error());
  auto capturing = queue->is_capturing();
  if (!capturing.ok()) return fail("is_capturing", capturing.error());
  auto result = to_host(*out);
  if (!result.ok()) return fail("readback", result.error());
  const Stats after = stats();
  if (after.jit_compiles != before.jit_compiles || after.module_loads != before.module_loads) {
    std::fprintf(stderr, "serving example: a warm step compiled or loaded a module\n");
    return 1;
  }
  // Every value of the output is a value row (0.5): the attention weights sum to one.
  for (double v : result->to_f64())
    if (v < 0.49 || v > 0.51) {
      std::fprintf(stderr, "serving example: output %f, expected 0.5\n", v);
      return 1;
    }
  std::printf(
      "serving ok on %s: %llu launches, 0 compiles in the warm step, capturing=%d\n", device->to_string().c_str(),
      static_cast<unsigned long long>(after.kernel_launches - before.kernel_launches), capturing.value() ? 1 : 0);
  return 0;
}
