// Paged attention on Hopper's warpgroup MMA (paged/wgmma.cuh; PagedAttentionConfig.cpp registers it
// as the tensor-core tile with wgmma = 1 for f16/bf16 attention at D = Dv ∈ {64, 128, 256}) through
// the public entry: the heuristic's kernel where the target has wgmma (sm_90a with the
// RUDNN_WGMMA=1 opt-in). The host emulation device reports sm_90a and emulates wgmma; on a GPU the
// same check runs as *OnGpu (scripts/gpu-check's wgmma step). Mixed batches (decode rows of a GQA
// group, which leave three of the warpgroup's four warps idle, chunked prefill over several 64-row
// chunks and key tiles, random rows; shuffled pages, page size 16 and 5), causal and not, unsplit
// and split: against the FP64 oracle, against the mma.sync kernel the same call runs without the
// opt-in, and batch invariance (each sequence's rows bit for bit the same alone). Poisoned outputs,
// fresh seeds.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "op_test_util.h"
#include "paged_test_util.h"
#include "reference/paged_attention.h"
#include "rudnn/compiler/paged_attention.h"
#include "rudnn/paged_attention.h"
#include "wgmma_opt_in.h"

namespace rudnn {
namespace {

using paged_attention::DevicePlan;
using paged_attention::SplitWorkspace;
using paged_test::Layout;
using paged_test::make_layout;
using paged_test::Rows;
using paged_test::sz;
using testing::fresh_seed;
using testing::host_values;

struct WgmmaCase {
  std::int64_t hq, hkv, d, page_size;
  bool causal;
};

// D = 64 (GQA 4), 128 (GQA 8: 8 rows per 64-row chunk) and 256 (32-key tiles), page sizes 16 and 5.
const WgmmaCase kCases[] = {{8, 2, 64, 16, true}, {16, 2, 128, 5, true}, {4, 2, 256, 16, false}};

struct Inputs {
  Layout layout;
  Tensor q, k, v;
};

// The call's output bytes (splits 1: unsplit), and the paged kernel the plan must have launched
// ("attention_wgmma" / "attention_mma").
std::vector<std::byte> run(const Inputs& in, const WgmmaCase& c, std::int64_t splits, const char* kernel) {
  ops::PlanCache::instance().clear();  // kernel_entries below then names this call's kernels alone
  auto plan = paged_test::device_plan(in.layout, in.q);
  if (!plan) return {};
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d)));
  Result<Tensor, PagedAttentionError> out = [&]() -> Result<Tensor, PagedAttentionError> {
    if (splits == 1) return plan->attention(in.q, in.k, in.v, scale, c.causal);
    auto ws = SplitWorkspace::create(in.q, in.layout.queries(), c.hq, c.d, splits);
    if (!ws.ok()) return ws.error();
    return plan->attention_with_workspace(in.q, in.k, in.v, scale, c.causal, *ws);
  }();
  EXPECT_TRUE(out.ok()) << out.error().message();
  if (!out.ok()) return {};
  std::string entries;
  for (const std::string& e : ops::PlanCache::instance().kernel_entries("rudnn.paged_attention")) entries += e + " ";
  const std::string other = std::string(kernel) == "attention_wgmma" ? "_attention_mma_" : "_attention_wgmma_";
  EXPECT_NE(entries.find(fmt::format("rudnn_paged_{}_", kernel)), std::string::npos) << entries;
  EXPECT_EQ(entries.find(other), std::string::npos) << entries;
  auto bytes = to_host(*out);
  EXPECT_TRUE(bytes.ok()) << bytes.error().message();
  return bytes.ok() ? bytes->bytes : std::vector<std::byte>{};
}

std::vector<double> values_of(const std::vector<std::byte>& bytes, DType dtype) {
  Tensor t = *Tensor::empty({static_cast<std::int64_t>(bytes.size() / dtype_size(dtype))}, dtype, Device::host());
  std::memcpy(t.data(), bytes.data(), bytes.size());
  return host_values(t);
}

void check_wgmma_paged(const Device& device, DType dtype) {
  for (const WgmmaCase& c : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("Hq={} Hkv={} D={} page_size={} causal={} {} seed={}", c.hq, c.hkv, c.d, c.page_size,
                             c.causal, dtype_name(dtype), seed));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(
        rng, c.page_size, {{150, Rows::Chunk, 70}, {41, Rows::Decode}, {97, Rows::Random, 3}, {1, Rows::Decode}}, true);
    const std::int64_t rows = l.pages * l.page_size;
    const auto q = testing::random_values(sz(l.queries() * c.hq * c.d), dtype, rng);
    const auto k = testing::random_values(sz(rows * c.hkv * c.d), dtype, rng);
    const auto v = testing::random_values(sz(rows * c.hkv * c.d), dtype, rng);
    const Inputs in{l, testing::upload({l.queries(), c.hq, c.d}, dtype, q, device),
                    testing::upload({l.pages, l.page_size, c.hkv, c.d}, dtype, k, device),
                    testing::upload({l.pages, l.page_size, c.hkv, c.d}, dtype, v, device)};
    const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d)));
    const auto want = reference::paged_attention(q, k, v, l.ref(), {c.hq, c.hkv, c.d, c.d}, scale, c.causal);
    for (std::int64_t splits : {1, 3}) {
      SCOPED_TRACE(fmt::format("splits={}", splits));
      std::vector<std::byte> wgmma;
      {
        const testing::WgmmaOptIn opt_in;
        wgmma = run(in, c, splits, "attention_wgmma");
      }
      const auto mma = run(in, c, splits, "attention_mma");
      if (wgmma.empty() || mma.empty()) continue;
      const auto got = values_of(wgmma, dtype);
      EXPECT_LE(testing::relative_l2(got, want), 2 * testing::tolerance(dtype));
      EXPECT_LE(testing::relative_l2(got, values_of(mma, dtype)), 2 * testing::tolerance(dtype));

      // Batch invariance on the wgmma kernel: each sequence's rows alone, bit for bit.
      const testing::WgmmaOptIn opt_in;
      const std::size_t row_bytes = sz(c.hq * c.d) * dtype_size(dtype);
      for (std::int64_t s = 0; s < std::ssize(l.lengths); ++s) {
        SCOPED_TRACE(fmt::format("sequence {} alone", s));
        Layout one = paged_test::one_sequence(l, s);
        std::vector<double> q_one;
        std::vector<std::int64_t> batch_rows;
        for (std::int64_t r = 0; r < l.queries(); ++r)
          if (l.sequence_ids[sz(r)] == s) {
            batch_rows.push_back(r);
            one.sequence_ids.push_back(0);
            one.positions.push_back(l.positions[sz(r)]);
            q_one.insert(q_one.end(), q.begin() + r * c.hq * c.d, q.begin() + (r + 1) * c.hq * c.d);
          }
        const Inputs alone{one, testing::upload({one.queries(), c.hq, c.d}, dtype, q_one, device), in.k, in.v};
        const auto bytes = run(alone, c, splits, "attention_wgmma");
        ASSERT_EQ(bytes.size(), batch_rows.size() * row_bytes);
        for (std::size_t i = 0; i < batch_rows.size(); ++i)
          EXPECT_EQ(std::memcmp(bytes.data() + i * row_bytes, wgmma.data() + sz(batch_rows[i]) * row_bytes, row_bytes),
                    0)
              << "row " << batch_rows[i] << " differs alone";
      }
    }
  }
}

TEST(PagedWgmma, OptInRunsTheWgmmaKernelOnHost) {
  if (testing::wgmma_opted_in()) GTEST_SKIP() << "SKIP: RUDNN_WGMMA=1 in the environment (no mma.sync peer)";
  ops::set_poison_outputs(true);
  check_wgmma_paged(Device::host(), DType::BF16);
  check_wgmma_paged(Device::host(), DType::F16);
}

TEST(PagedWgmma, OptInRunsTheWgmmaKernelOnGpu) {
  if (testing::wgmma_opted_in()) GTEST_SKIP() << "SKIP: RUDNN_WGMMA=1 in the environment (no mma.sync peer)";
  std::string why;
  const auto device = testing::wgmma_gpu(why);
  if (!device) GTEST_SKIP() << "SKIP: " << why;
  check_wgmma_paged(*device, DType::BF16);
}

// Without the opt-in the heuristic keeps the mma.sync kernel, on the host emulation device too; D = 96
// and MLA have no wgmma tile and keep theirs under the opt-in.
TEST(PagedWgmma, WithoutTheOptInOrTileTheMmaKernel) {
  auto entries = [](std::int64_t d) {
    contracts::PagedAttentionSignature sig;
    sig.kind = contracts::PagedKind::Attention;
    sig.query = {{8, 8, d}, DType::BF16, 0};
    sig.key = {{16, 16, 2, d}, DType::BF16, 0};
    sig.value = {{16, 16, 2, d}, DType::BF16, 0};
    sig.metadata = {{{2, 8}, DType::I32, 0}, {{2}, DType::I32, 0}, {{8}, DType::I32, 0}, {{8}, DType::I32, 0}};
    sig.scale = 0.125;
    sig.causal = true;
    auto lowered = compiler::lower_paged_attention({sig, std::nullopt}, ops::target_for(Device::host()));
    EXPECT_TRUE(lowered.ok()) << lowered.error().message();
    std::string out;
    if (lowered.ok())
      for (const auto& launch : lowered->launches) out += launch.entry + " ";
    return out;
  };
  if (!testing::wgmma_opted_in())
    for (std::int64_t d : {64, 128, 256}) {
      const std::string e = entries(d);
      EXPECT_NE(e.find("_attention_mma_"), std::string::npos) << e;
    }
  const testing::WgmmaOptIn opt_in;
  for (std::int64_t d : {64, 128, 256}) {
    const std::string e = entries(d);
    EXPECT_NE(e.find(fmt::format("_attention_wgmma_bf16_d{}_64x{}", d, d == 256 ? 32 : 64)), std::string::npos) << e;
  }
  const std::string e96 = entries(96);
  EXPECT_NE(e96.find("_attention_mma_"), std::string::npos) << e96;
}

}  // namespace
}  // namespace rudnn
