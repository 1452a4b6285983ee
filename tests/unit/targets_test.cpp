// compiler::target_for_arch: the offline targets rudnn-precompile lowers for must lower exactly as
// the runtime lowers for a device of that arch (whose Target comes from the driver's attributes).
#include <gtest/gtest.h>

#include "jit.h"
#include "rudnn/compiler/pipeline.h"

namespace rudnn::compiler {
namespace {

TEST(TargetForArch, KnownArchsHaveTheirPartsLimits) {
  auto a100 = target_for_arch("sm_80");
  ASSERT_TRUE(a100.ok());
  EXPECT_EQ(a100->arch, "sm_80");
  EXPECT_FALSE(a100->host_emulation);
  EXPECT_EQ(a100->limits.compute_capability, 80);
  EXPECT_EQ(a100->limits.max_threads_per_block, 1024);
  EXPECT_EQ(a100->limits.shared_memory_per_block, 48u * 1024);
  EXPECT_EQ(a100->limits.shared_memory_per_block_optin, 163u * 1024);
  EXPECT_EQ(a100->limits.multiprocessors, 108);
  auto h100 = target_for_arch("sm_90a");
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(h100->limits.arch, "sm_90a");
  EXPECT_EQ(h100->limits.shared_memory_per_block_optin, 227u * 1024);
  EXPECT_EQ(h100->limits.multiprocessors, 132);
  EXPECT_EQ(h100->limits.registers_per_sm, 65536);
  for (const auto& arch : known_archs()) EXPECT_TRUE(target_for_arch(arch).ok()) << arch;
  EXPECT_EQ(known_archs().size(), 5u);
}

TEST(TargetForArch, UnknownArchNamesTheArgumentAndTheKnownOnes) {
  for (const std::string bad : {"sm_75", "", "SM_90A", "compute_90"}) {
    auto t = target_for_arch(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().kind(), ErrorKind::InvalidValue);
    EXPECT_EQ(t.error().argument(), "arch");
    EXPECT_NE(t.error().expected().find("sm_80"), std::string::npos);
    EXPECT_NE(t.error().expected().find("sm_90a"), std::string::npos);
  }
}

// Lowers rms_norm/layer_norm/softmax over a few dtypes and H for `target`: every kernel's source,
// config and launch geometry.
std::vector<std::string> lowering_fingerprint(const Target& target) {
  std::vector<std::string> out;
  for (auto kind : {contracts::NormKind::LayerNorm, contracts::NormKind::RmsNorm, contracts::NormKind::Softmax})
    for (DType dtype : {DType::F32, DType::BF16})
      for (std::int64_t h : {1, 96, 4096, 4097, 16384})
        for (bool aligned : {true, false}) {
          NormRequest r;
          r.signature.kind = kind;
          r.signature.input = {{7, h}, dtype, 0};
          if (kind != contracts::NormKind::Softmax) r.signature.gamma = {{h}, DType::F32, 0};
          r.aligned16 = aligned;
          auto lowered = lower_normalization(r, target);
          EXPECT_TRUE(lowered.ok()) << (lowered.ok() ? "" : lowered.error().message());
          if (!lowered.ok()) continue;
          for (const auto& l : lowered->launches)
            out.push_back(l.source + "|" + l.config.to_string() + "|" + std::to_string(l.block[0]) + "|" +
                          std::to_string(l.dynamic_shared_bytes));
        }
  return out;
}

TEST(TargetForArch, LowersLikeTheRuntimeOnADeviceOfThatArch) {
  // What ops::target_for makes of a device: its reported arch and limits. A device of the same arch
  // with other SM counts, L2 or shared memory (another part, another driver) must lower the same.
  for (const auto& arch : known_archs()) {
    const Target offline = target_for_arch(arch).value();
    Target device;
    device.arch = arch;
    device.limits.arch = arch;
    device.limits.max_threads_per_block = 1024;  // every CUDA GPU since sm_20
    device.limits.multiprocessors = 7;
    device.limits.l2_bytes = 1 << 20;
    device.limits.shared_memory_per_block_optin = 64 * 1024;
    EXPECT_EQ(lowering_fingerprint(offline), lowering_fingerprint(device)) << arch;
  }
  // The host emulation device reports sm_90a: a host pack lowers like an sm_90a one.
  EXPECT_EQ(lowering_fingerprint(ops::target_for(Device::host())),
            lowering_fingerprint(target_for_arch("sm_90a").value()));
}

}  // namespace
}  // namespace rudnn::compiler
