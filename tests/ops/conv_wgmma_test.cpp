// Every warpgroup-MMA implicit-GEMM tile (kernel_config wgmma = 1: autotune candidates on the host
// emulator, and on sm_90a with RUDNN_WGMMA=1), lowered with its config, built into a plan and run in
// every direction against the FP64 oracles — on the host emulation device, and on CUDA device 0 when
// it is sm_90a (ConvWgmmaTiles.*OnGpu, run by scripts/gpu-check: the autotuner times these tiles but
// does not check their answers, which is why they are opt-in on GPUs until this test passes there).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <random>
#include <string>

#include "contracts/arch.h"
#include "entry.h"
#include "jit.h"
#include "op_test_util.h"
#include "reference/conv.h"
#include "rudnn/compiler/conv.h"
#include "wgmma_opt_in.h"

namespace rudnn {
namespace {

using contracts::ConvDirection;
using testing::fresh_seed;
using testing::host_values;
using testing::relative_l2;
using testing::tolerance;

struct Layer {
  const char* name;
  std::int64_t n, c, o, h, w, k, stride, pad;
};

// A ResNet-like 3×3 (partial M and N tiles: 2·10·9 pixels, 72 output channels), a strided 3×3
// (the data backward's stride phases) and a 1×1 with wide channels (K of several 64-blocks).
const Layer kLayers[] = {
    {"3x3", 2, 64, 72, 10, 9, 3, 1, 1},
    {"3x3 s2", 2, 32, 64, 11, 12, 3, 2, 1},
    {"1x1", 3, 192, 136, 6, 7, 1, 1, 0},
};

reference::ConvShape shape_of(const Layer& l) {
  reference::ConvShape s;
  s.batch = l.n;
  s.channels = l.c;
  s.out_channels = l.o;
  s.groups = 1;
  s.input = {1, l.h, l.w};
  s.kernel = {1, l.k, l.k};
  s.stride = {1, l.stride, l.stride};
  s.padding = {0, l.pad, l.pad};
  return s;
}

contracts::ConvSignature signature_of(const Layer& l, ConvDirection direction, DType dtype) {
  const auto s = shape_of(l);
  const auto out = s.output();
  contracts::ConvSignature sig;
  sig.direction = direction;
  sig.channels_last = true;
  sig.input = {{l.n, l.h, l.w, l.c}, dtype, 0};
  sig.weight = {{l.o, l.k, l.k, l.c}, dtype, 0};
  sig.params = {{l.stride, l.stride}, {l.pad, l.pad}, {1, 1}, 1};
  if (direction != ConvDirection::Forward) sig.grad_output = {{l.n, out[1], out[2], l.o}, dtype, 0};
  return sig;
}

bool uses_wgmma(const compiler::KernelConfig& config) {
  for (const auto& [key, value] : config.values)
    if (key == contracts::kWgmmaConfigKey && value != 0) return true;
  return false;
}

// Lowers `request` for `device`, builds the plan and runs it on `slots` (the operand slots, then the
// results; the forward has a slot for the bias, null here).
void run(const compiler::ConvRequest& request, const Device& device, std::initializer_list<const Tensor*> slots) {
  auto lowered = compiler::lower_conv(request, ops::target_for(device));
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  auto plan = ops::build_plan(device, *lowered);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  std::vector<ops::OperandView> views;
  for (const Tensor* t : slots)
    views.push_back(t != nullptr ? ops::OperandView{t->data(), &t->shape(), &t->strides()} : ops::OperandView{});
  auto st = ops::run_plan(**plan, Queue::default_queue(device), views);
  ASSERT_TRUE(st.ok()) << st.error().message();
}

void check_every_tile(const Device& device, DType dtype) {
  ops::set_poison_outputs(true);
  for (const Layer& l : kLayers) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("{} {} seed {}", l.name, dtype_name(dtype), seed));
    std::mt19937_64 rng(seed);
    const auto s = shape_of(l);
    const auto x = testing::random_values(static_cast<std::size_t>(s.input_elements()), dtype, rng, -1, 1);
    const auto w = testing::random_values(static_cast<std::size_t>(s.weight_elements()), dtype, rng, -0.5, 0.5);
    const auto dy = testing::random_values(static_cast<std::size_t>(s.output_elements()), dtype, rng, -1, 1);
    const auto fwd = signature_of(l, ConvDirection::Forward, dtype);
    const auto bwd = signature_of(l, ConvDirection::DataBackward, dtype);
    const Tensor xt = testing::upload(fwd.input.shape, dtype, x, device);
    const Tensor wt = testing::upload(fwd.weight.shape, dtype, w, device);
    const Tensor dyt = testing::upload(bwd.grad_output->shape, dtype, dy, device);
    const double tol = 2 * tolerance(dtype);
    for (ConvDirection direction :
         {ConvDirection::Forward, ConvDirection::DataBackward, ConvDirection::WeightBackward}) {
      const auto sig = signature_of(l, direction, dtype);
      int tiles = 0;
      for (const auto& config : compiler::conv_variants(sig, true)) {
        if (!uses_wgmma(config)) continue;
        ++tiles;
        SCOPED_TRACE(config.to_string());
        const compiler::ConvRequest request{sig, "implicit_gemm", false, config, nullptr};
        if (direction == ConvDirection::Forward) {
          const Tensor y = *Tensor::empty(bwd.grad_output->shape, dtype, device);
          run(request, device, {&xt, &wt, nullptr, &y});
          EXPECT_LE(relative_l2(host_values(y), reference::conv_forward(x, w, {}, s)), tol);
        } else if (direction == ConvDirection::DataBackward) {
          const Tensor dx = *Tensor::empty(fwd.input.shape, dtype, device);
          run(request, device, {&dyt, &wt, &dx});
          EXPECT_LE(relative_l2(host_values(dx), reference::conv_data_backward(dy, w, s)), tol);
        } else {
          const Tensor dw = *Tensor::empty(fwd.weight.shape, dtype, device);
          run(request, device, {&xt, &dyt, &dw});
          EXPECT_LE(relative_l2(host_values(dw), reference::conv_weight_backward(x, dy, s)), tol);
        }
      }
      EXPECT_EQ(tiles, 4) << "every registered warpgroup tile serves direction " << static_cast<int>(direction);
    }
  }
}

TEST(ConvWgmmaTiles, MatchTheOracleOnHost) { check_every_tile(Device::host(), DType::BF16); }

TEST(ConvWgmmaTiles, F16MatchesTheOracleOnHost) {
  ops::set_poison_outputs(true);
  // One layer is enough for the other 16-bit type (the engine's only type-dependent part is the
  // instruction's input type).
  const Device host = Device::host();
  const Layer l = kLayers[0];
  std::mt19937_64 rng(fresh_seed());
  const auto s = shape_of(l);
  const auto x = testing::random_values(static_cast<std::size_t>(s.input_elements()), DType::F16, rng, -1, 1);
  const auto w = testing::random_values(static_cast<std::size_t>(s.weight_elements()), DType::F16, rng, -0.5, 0.5);
  const auto sig = signature_of(l, ConvDirection::Forward, DType::F16);
  const Tensor xt = testing::upload(sig.input.shape, DType::F16, x, host);
  const Tensor wt = testing::upload(sig.weight.shape, DType::F16, w, host);
  const auto want = reference::conv_forward(x, w, {}, s);
  for (const auto& config : compiler::conv_variants(sig, true)) {
    if (!uses_wgmma(config)) continue;
    SCOPED_TRACE(config.to_string());
    const Tensor y = *Tensor::empty({l.n, l.h, l.w, l.o}, DType::F16, host);
    run({sig, "implicit_gemm", false, config, nullptr}, host, {&xt, &wt, nullptr, &y});
    EXPECT_LE(relative_l2(host_values(y), want), 2 * tolerance(DType::F16));
  }
}

TEST(ConvWgmmaTiles, MatchTheOracleOnGpu) {
  std::string why;
  const auto device = testing::wgmma_gpu(why);
  if (!device) GTEST_SKIP() << "SKIP: " << why;
  const testing::WgmmaOptIn opt_in;  // this test is the check the opt-in waits for
  check_every_tile(*device, DType::BF16);
}

// A wgmma config on a target without it is refused at lowering, naming the requirement (the
// autotuner lists these configs for every device and drops the ones the device refuses).
TEST(ConvWgmmaTiles, RefusedWithoutWgmma) {
  const char* saved = std::getenv("RUDNN_WGMMA");
  const std::string saved_value = saved != nullptr ? saved : "";
  unsetenv("RUDNN_WGMMA");
  const auto sig = signature_of(kLayers[0], ConvDirection::Forward, DType::BF16);
  std::optional<compiler::KernelConfig> wgmma;
  for (const auto& config : compiler::conv_variants(sig, true))
    if (uses_wgmma(config)) wgmma = config;
  ASSERT_TRUE(wgmma.has_value());
  auto lower_for = [&](const char* arch) {
    compiler::Target target;
    target.arch = arch;
    return compiler::lower_conv({sig, "implicit_gemm", false, wgmma, nullptr}, target);
  };
  for (const char* arch : {"sm_80", "sm_90", "sm_89", "sm_90a"}) {
    auto lowered = lower_for(arch);
    ASSERT_FALSE(lowered.ok()) << arch;
    EXPECT_NE(lowered.error().message().find(contracts::kWgmmaRequirement), std::string::npos)
        << lowered.error().message();
  }
  setenv("RUDNN_WGMMA", "1", 1);
  EXPECT_TRUE(lower_for("sm_90a").ok()) << "sm_90a with the opt-in";
  EXPECT_FALSE(lower_for("sm_90").ok()) << "the opt-in does not give sm_90 wgmma";
  if (saved != nullptr)
    setenv("RUDNN_WGMMA", saved_value.c_str(), 1);
  else
    unsetenv("RUDNN_WGMMA");
  // And the variants listed for such a target leave them out.
  for (const auto& config : compiler::conv_variants(sig, true, contracts::kLargestSharedBytes, false))
    EXPECT_FALSE(uses_wgmma(config)) << config.to_string();
}

}  // namespace
}  // namespace rudnn
