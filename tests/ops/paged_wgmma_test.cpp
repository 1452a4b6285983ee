// Paged attention and MLA on Hopper's warpgroup MMA (paged/wgmma.cuh, paged/mla_wgmma.cuh;
// PagedAttentionConfig.cpp registers them as the tensor-core tile with wgmma = 1: f16/bf16 attention
// at D = Dv ∈ {64, 128, 256}, MLA at R ∈ {128, 256, 512} with R + Pr whole 64-column panels) through
// the public entries: the heuristic's kernel where the target has wgmma (sm_90a with the
// RUDNN_WGMMA=1 opt-in). The host emulation device reports sm_90a and emulates wgmma; on a GPU the
// same check runs as *OnGpu (scripts/gpu-check's wgmma step; two of the cases). Mixed batches
// (decode rows of a GQA group, which leave three of the warpgroup's four warps idle; a 70-row chunked
// prefill cut into query tiles of 64 / group rows, over several key tiles; random rows; shuffled
// pages, page size 16 and 5; rows in order or shuffled into one-row tiles; groups wider than 64,
// whose rows take two 64-row chunks), causal and not, unsplit and split: against the FP64 oracle, against the mma.sync
// kernel the same call runs without the opt-in, and batch invariance (each sequence's rows bit for bit the same alone).
// Poisoned outputs, fresh seeds.
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

// Attention: Hq/Hkv query/kv heads of D; MLA (hkv = 0): Hq heads, latent R = d, rope Pr = rope.
struct WgmmaCase {
  std::int64_t hq, hkv, d, page_size;
  bool causal;
  std::int64_t rope = 0;
  bool shuffle = false;  // rows shuffled: one-row query tiles (decode-like), else runs of rows
  bool on_gpu = false;   // also in the GPU twin (a few, for the step's time cap)
  bool mla() const { return hkv == 0; }
  std::int64_t q_width() const { return d + rope; }  // the scale's width: D, or R + Pr
};

// Attention at D = 64 (GQA 4), 128 (GQA 8, page size 5, rows shuffled) and 256 (32-key tiles), and
// GQA 72 (a query row's 72 panel rows are two 64-row chunks); MLA at R = 128 / Pr = 64 with 8 heads
// (8 rows per chunk) and 72 (two chunks per row), and DeepSeek's R = 512 / Pr = 64 with 16 heads.
const WgmmaCase kCases[] = {
    {8, 2, 64, 16, true},
    {16, 2, 128, 5, true, 0, true, true},
    {4, 2, 256, 16, false},
    {72, 1, 64, 16, true},
    {8, 0, 128, 16, true, 64},
    {72, 0, 128, 16, false, 64},
    {16, 0, 512, 5, false, 64, false, true},
};

// One call's inputs: the schedule, Q (and MLA's rope part), the caches (MLA: latent and rope; the
// slots a kind does not use hold q).
struct Inputs {
  Layout layout;
  Tensor q, qp, k, kp, v;
};

const char* op_of(const WgmmaCase& c) { return c.mla() ? "rudnn.paged_mla" : "rudnn.paged_attention"; }

// The call's output bytes (splits 1: unsplit); `kernel` is the paged kernel the plan must have
// launched: "wgmma" or "mma".
std::vector<std::byte> run(const Inputs& in, const WgmmaCase& c, std::int64_t splits, const std::string& kernel) {
  ops::PlanCache::instance().clear();  // kernel_entries below then names this call's kernels alone
  auto plan = paged_test::device_plan(in.layout, in.q);
  if (!plan) return {};
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.q_width())));
  Result<Tensor, PagedAttentionError> out = [&]() -> Result<Tensor, PagedAttentionError> {
    if (splits == 1)
      return c.mla() ? plan->mla(in.q, in.qp, in.k, in.kp, scale, c.causal)
                     : plan->attention(in.q, in.k, in.v, scale, c.causal);
    auto ws = SplitWorkspace::create(in.q, in.layout.queries(), c.hq, c.d, splits);
    if (!ws.ok()) return ws.error();
    return c.mla() ? plan->mla_with_workspace(in.q, in.qp, in.k, in.kp, scale, c.causal, *ws)
                   : plan->attention_with_workspace(in.q, in.k, in.v, scale, c.causal, *ws);
  }();
  EXPECT_TRUE(out.ok()) << out.error().message();
  if (!out.ok()) return {};
  std::string entries;
  for (const std::string& e : ops::PlanCache::instance().kernel_entries(op_of(c))) entries += e + " ";
  const std::string family = c.mla() ? "rudnn_paged_mla_" : "rudnn_paged_attention_";
  EXPECT_NE(entries.find(family + kernel + "_"), std::string::npos) << entries;
  EXPECT_EQ(entries.find(family + (kernel == "wgmma" ? "mma_" : "wgmma_")), std::string::npos) << entries;
  auto bytes = to_host(*out);
  EXPECT_TRUE(bytes.ok()) << bytes.error().message();
  return bytes.ok() ? bytes->bytes : std::vector<std::byte>{};
}

std::vector<double> values_of(const std::vector<std::byte>& bytes, DType dtype) {
  Tensor t = *Tensor::empty({static_cast<std::int64_t>(bytes.size() / dtype_size(dtype))}, dtype, Device::host());
  std::memcpy(t.data(), bytes.data(), bytes.size());
  return host_values(t);
}

// The given rows of a [rows, heads, width] host tensor, uploaded to `device`.
Tensor rows_of(const std::vector<double>& all, const std::vector<std::int64_t>& rows, std::int64_t heads,
               std::int64_t width, DType dtype, const Device& device) {
  std::vector<double> out;
  const std::int64_t row = heads * width;
  for (std::int64_t r : rows) out.insert(out.end(), all.begin() + r * row, all.begin() + (r + 1) * row);
  return testing::upload({std::ssize(rows), heads, width}, dtype, out, device);
}

void check_wgmma_paged(const Device& device, DType dtype) {
  for (const WgmmaCase& c : kCases) {
    if (device.kind() != DeviceKind::Host && !c.on_gpu) continue;
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("{} Hq={} Hkv={} D={} Pr={} page_size={} causal={} shuffled={} {} seed={}",
                             c.mla() ? "MLA" : "attention", c.hq, c.hkv, c.d, c.rope, c.page_size, c.causal, c.shuffle,
                             dtype_name(dtype), seed));
    std::mt19937_64 rng(seed);
    Layout l =
        make_layout(rng, c.page_size,
                    {{150, Rows::Chunk, 70}, {41, Rows::Decode}, {97, Rows::Random, 3}, {1, Rows::Decode}}, c.shuffle);
    const std::int64_t rows = l.pages * l.page_size, kv_heads = c.mla() ? 1 : c.hkv;
    auto values = [&](std::int64_t n) { return testing::random_values(sz(n), dtype, rng, -1, 1); };
    const auto q = values(l.queries() * c.hq * c.d), qp = values(l.queries() * c.hq * c.rope);
    const auto k = values(rows * kv_heads * c.d), kp = values(rows * c.rope), v = values(rows * kv_heads * c.d);
    auto cache = [&](const std::vector<double>& x, std::int64_t width) {
      return testing::upload({l.pages, l.page_size, kv_heads, width}, dtype, x, device);
    };
    const Tensor tq = testing::upload({l.queries(), c.hq, c.d}, dtype, q, device);  // also the unused slots
    const Inputs in{l,
                    tq,
                    c.mla() ? testing::upload({l.queries(), c.hq, c.rope}, dtype, qp, device) : tq,
                    cache(k, c.d),
                    c.mla() ? cache(kp, c.rope) : tq,
                    c.mla() ? tq : cache(v, c.d)};
    const double scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.q_width())));
    const auto want = c.mla() ? reference::paged_mla(q, qp, k, kp, l.ref(), c.hq, c.d, c.rope, scale, c.causal)
                              : reference::paged_attention(q, k, v, l.ref(), {c.hq, c.hkv, c.d, c.d}, scale, c.causal);
    for (std::int64_t splits : {1, 3}) {
      SCOPED_TRACE(fmt::format("splits={}", splits));
      std::vector<std::byte> wgmma;
      {
        const testing::WgmmaOptIn opt_in;
        wgmma = run(in, c, splits, "wgmma");
      }
      const auto mma = run(in, c, splits, "mma");
      if (wgmma.empty() || mma.empty()) continue;
      const auto got = values_of(wgmma, dtype);
      EXPECT_LE(testing::relative_l2(got, want), 2 * testing::tolerance(dtype));
      EXPECT_LE(testing::relative_l2(got, values_of(mma, dtype)), 2 * testing::tolerance(dtype));

      // Batch invariance on the wgmma kernel: each sequence's rows alone, bit for bit.
      const testing::WgmmaOptIn opt_in;
      const std::size_t row_bytes = sz(c.hq * c.d) * dtype_size(dtype);
      for (std::int64_t s = 0; s < std::ssize(l.lengths); ++s) {
        SCOPED_TRACE(fmt::format("sequence {} alone", s));
        Inputs alone = in;
        alone.layout = paged_test::one_sequence(l, s);
        std::vector<std::int64_t> batch_rows;
        for (std::int64_t r = 0; r < l.queries(); ++r)
          if (l.sequence_ids[sz(r)] == s) {
            batch_rows.push_back(r);
            alone.layout.sequence_ids.push_back(0);
            alone.layout.positions.push_back(l.positions[sz(r)]);
          }
        alone.q = rows_of(q, batch_rows, c.hq, c.d, dtype, device);
        if (c.mla()) alone.qp = rows_of(qp, batch_rows, c.hq, c.rope, dtype, device);
        const auto bytes = run(alone, c, splits, "wgmma");
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

// Without the opt-in the heuristic keeps the mma.sync kernels, on the host emulation device too;
// attention at D = 96 and MLA whose R + Pr is not whole 64-column panels (R = 128 / Pr = 16) or whose
// R / 2 no wrapper covers (R = 384) have no wgmma tile and keep theirs under the opt-in.
TEST(PagedWgmma, WithoutTheOptInOrTileTheMmaKernel) {
  auto entries = [](std::int64_t d, std::int64_t rope = 0) {  // rope > 0: MLA with R = d
    contracts::PagedAttentionSignature sig;
    sig.kind = rope > 0 ? contracts::PagedKind::Mla : contracts::PagedKind::Attention;
    sig.query = {{8, 8, d}, DType::BF16, 0};
    sig.key = {{16, 16, rope > 0 ? 1 : 2, d}, DType::BF16, 0};
    if (rope > 0) {
      sig.query_rope = {{8, 8, rope}, DType::BF16, 0};
      sig.key_rope = {{16, 16, 1, rope}, DType::BF16, 0};
    } else {
      sig.value = {{16, 16, 2, d}, DType::BF16, 0};
    }
    sig.metadata = {{{2, 8}, DType::I32, 0}, {{2}, DType::I32, 0}, {{8}, DType::I32, 0}, {{8}, DType::I32, 0}};
    sig.scale = 0.125;
    sig.causal = true;
    EXPECT_FALSE(contracts::check_paged_attention(sig).has_value()) << contracts::describe_call(sig);
    auto lowered = compiler::lower_paged_attention({sig, std::nullopt}, ops::target_for(Device::host()));
    EXPECT_TRUE(lowered.ok()) << lowered.error().message();
    std::string out;
    if (lowered.ok())
      for (const auto& launch : lowered->launches) out += launch.entry + " ";
    return out;
  };
  if (!testing::wgmma_opted_in()) {
    for (std::int64_t d : {64, 128, 256}) {
      const std::string e = entries(d);
      EXPECT_NE(e.find("_attention_mma_"), std::string::npos) << e;
    }
    const std::string mla = entries(512, 64);
    EXPECT_NE(mla.find("_mla_mma_"), std::string::npos) << mla;
  }
  const testing::WgmmaOptIn opt_in;
  for (std::int64_t d : {64, 128, 256}) {
    const std::string e = entries(d);
    EXPECT_NE(e.find(fmt::format("_attention_wgmma_bf16_d{}_64x{}", d, d == 256 ? 32 : 64)), std::string::npos) << e;
  }
  for (const auto& [r, rope] : {std::pair<std::int64_t, std::int64_t>{512, 64}, {128, 64}, {256, 128}}) {
    const std::string e = entries(r, rope);
    EXPECT_NE(e.find(fmt::format("_mla_wgmma_bf16_r{}_p{}_64x64", r, rope)), std::string::npos) << e;
  }
  for (const std::string& e : {entries(96), entries(128, 16), entries(384, 64)})
    EXPECT_NE(e.find("_mma_"), std::string::npos) << e;
}

}  // namespace
}  // namespace rudnn
