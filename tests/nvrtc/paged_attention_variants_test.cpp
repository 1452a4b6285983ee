// Every registered paged attention variant (compiler::paged_variants with tensor cores: the
// heuristic tile, the tensor-core tiles where they serve the call and each registered paged_unit
// tile) lowered by the compiler and compiled with NVRTC for sm_80 and sm_90a: no spills, no stack,
// no static shared memory. The plain kernels take the head counts and dims at run time, so one
// kernel per (dtype, tile, MLA or not) serves every shape; a sample of signatures reaches every
// tile: decode GQA 32/8 at D = 128 (bf16, f16, f32), G = 1 and G = 8, D ≠ Dv, the tensor-core head
// dims 64, 96 and 256, MLA at R = 512 / P = 64 with H = 16 and H = 128 (the tensor-core MLA tile and
// the plain ones), and D = Dv = 1024; the backward's plain and tensor-core kernels. The warpgroup-MMA
// tiles (paged_attention_wgmma at D = 64, 128, 256; paged_mla_wgmma at R = 512 / Pr = 64, 128 / 64
// and 256 / 128) for sm_90a alone, under the opt-in. Each is
// also lowered split 4 ways with its heuristic tile (the split kernel and paged_merge), and the
// append (paged_copy, paged_append) for every dtype. Each entry is compiled once.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"
#include "variant_check.h"

#if RUDNN_TEST_USE_COMPILER
#include "rudnn/compiler/paged_attention.h"

namespace nv = rudnn::compiler::nvrtc;
namespace compiler = rudnn::compiler;
namespace contracts = rudnn::contracts;
using rudnn::DType;

namespace {

using Variant = rudnn::testing::KernelVariant;

constexpr std::int64_t kQueries = 8, kPages = 64, kPageSize = 16, kSequences = 4, kTablePages = 16;

contracts::PagedMetadata metadata() {
  return {{{kSequences, kTablePages}, DType::I32, 0},
          {{kSequences}, DType::I32, 0},
          {{kQueries}, DType::I32, 0},
          {{kQueries}, DType::I32, 0}};
}

// q [Q, hq, d], k [pages, page_size, hkv, d], v [.., dv].
contracts::PagedAttentionSignature attention(DType t, std::int64_t hq, std::int64_t hkv, std::int64_t d,
                                             std::int64_t dv) {
  contracts::PagedAttentionSignature sig;
  sig.kind = contracts::PagedKind::Attention;
  sig.query = {{kQueries, hq, d}, t, 0};
  sig.key = {{kPages, kPageSize, hkv, d}, t, 0};
  sig.value = {{kPages, kPageSize, hkv, dv}, t, 0};
  sig.metadata = metadata();
  sig.scale = 0.125;
  sig.causal = true;
  return sig;
}

// q [Q, h, r], qp [Q, h, p], latent [pages, page_size, 1, r], kp [.., p].
contracts::PagedAttentionSignature mla(DType t, std::int64_t h, std::int64_t r, std::int64_t p) {
  contracts::PagedAttentionSignature sig;
  sig.kind = contracts::PagedKind::Mla;
  sig.query = {{kQueries, h, r}, t, 0};
  sig.query_rope = {{kQueries, h, p}, t, 0};
  sig.key = {{kPages, kPageSize, 1, r}, t, 0};
  sig.key_rope = {{kPages, kPageSize, 1, p}, t, 0};
  sig.metadata = metadata();
  sig.scale = 0.0721687824;
  sig.causal = true;
  return sig;
}

std::vector<Variant> paged_attention_variants() {
  // The wgmma tile lowers on sm_90a under the opt-in; the heuristic takes it for the split calls too.
  const rudnn::testing::ScopedEnv opt_in("RUDNN_WGMMA", "1");
  std::vector<Variant> out;
  std::set<std::string> seen;
  auto collect = [&](const rudnn::Result<compiler::LoweredOp, rudnn::RuntimeError>& lowered) {
    EXPECT_TRUE(lowered.ok()) << (lowered.ok() ? "" : lowered.error().message());
    if (!lowered.ok()) return;
    for (const auto& l : lowered->launches)
      if (seen.insert(l.entry).second) out.push_back({l.entry, l.source, l.entry.find("_wgmma_") != std::string::npos});
  };
  auto add = [&](contracts::PagedAttentionSignature sig) {
    ASSERT_FALSE(contracts::check_paged_attention(sig).has_value()) << contracts::describe_call(sig);
    // Every registered tile, unsplit; the heuristic one split 4 ways (the split unit + the merge).
    for (const auto& config : compiler::paged_variants(sig, true, rudnn::contracts::kLargestSharedBytes, true))
      collect(compiler::lower_paged_attention({sig, config}, compiler::Target{}));
    sig.splits = 4;
    collect(compiler::lower_paged_attention({sig, std::nullopt}, compiler::Target{}));
  };
  for (DType t : {DType::BF16, DType::F16, DType::F32}) add(attention(t, 32, 8, 128, 128));  // decode GQA 32/8
  add(attention(DType::BF16, 16, 16, 128, 128));                                             // G = 1
  add(attention(DType::BF16, 64, 8, 128, 128));                                              // G = 8
  add(attention(DType::BF16, 32, 8, 192, 128));                                              // D ≠ Dv
  add(attention(DType::F16, 8, 2, 64, 32));                                                  // D ≠ Dv, small
  add(attention(DType::BF16, 16, 4, 64, 64));                                                // D = 64
  add(attention(DType::F16, 16, 4, 96, 96));                                                 // D = 96
  add(attention(DType::F16, 8, 2, 256, 256));                                                // D = 256
  add(mla(DType::BF16, 16, 512, 64));                                                        // MLA H = 16
  add(mla(DType::BF16, 128, 512, 64));                                                       // MLA H = 128
  add(mla(DType::F16, 8, 128, 64));              // MLA on wgmma at R = 128 (and mma.sync, plain)
  add(mla(DType::BF16, 16, 256, 128));           // and at R = 256 with Pr = 128
  add(attention(DType::F32, 8, 2, 1024, 1024));  // D = Dv = 1024
  add(attention(DType::BF16, 8, 2, 1024, 1024));
  // The backward (atomic path): every dtype, every warps config at one shape, and every column
  // width per lane (D + Pr, Dv from 32 to 1280), MLA at R = 512 / P = 64.
  auto backward = [&](contracts::PagedAttentionSignature sig, std::optional<compiler::KernelConfig> config,
                      compiler::PagedBackwardMode mode = {}) {
    const std::int64_t dv = sig.kind == contracts::PagedKind::Mla ? sig.query.shape[2] : sig.value.shape[3];
    contracts::PagedBackwardSignature b{sig, {{kQueries, sig.query.shape[1], dv}, sig.query.dtype, 0}};
    ASSERT_FALSE(contracts::check_paged_backward(b).has_value()) << contracts::describe_call(sig);
    collect(compiler::lower_paged_backward({b, config, mode}, compiler::Target{}));
  };
  // The ordered path's history kernel: on plain cores each switch combination at one shape, each
  // dtype with row caching (its shared-memory stage), the widest rows of attention and MLA; on
  // tensor cores (the heuristic for f16/bf16 attention at D = Dv ∈ {64, 96, 128}) with and without
  // compaction.
  const compiler::KernelConfig plain{{{"warps", 4}}};
  for (bool rows : {false, true})
    for (bool compact : {false, true}) {
      backward(attention(DType::BF16, 32, 8, 128, 128), plain, {true, rows, compact});
      backward(attention(DType::BF16, 32, 8, 128, 128), std::nullopt, {true, rows, compact});
    }
  for (DType t : {DType::F16, DType::F32}) backward(attention(t, 32, 8, 128, 128), plain, {true, true, false});
  backward(attention(DType::F16, 32, 8, 128, 128), std::nullopt, {true, false, false});
  backward(attention(DType::F16, 16, 4, 64, 64), std::nullopt, {true, false, true});
  backward(attention(DType::BF16, 16, 4, 96, 96), std::nullopt, {true, false, false});
  backward(attention(DType::BF16, 8, 2, 1024, 1024), std::nullopt, {true, true, false});
  backward(mla(DType::BF16, 16, 512, 64), std::nullopt, {true, false, false});  // on tensor cores
  backward(mla(DType::BF16, 16, 512, 64), std::nullopt, {true, true, true});
  backward(mla(DType::BF16, 16, 512, 64), plain, {true, true, true});  // MLA history on plain cores
  backward(mla(DType::F32, 8, 1024, 256), std::nullopt, {true, true, false});
  for (DType t : {DType::BF16, DType::F16, DType::F32})
    for (std::int64_t warps : {2, 4, 8})
      backward(attention(t, 32, 8, 128, 128), compiler::KernelConfig{{{"warps", warps}}});
  for (std::int64_t d : {32, 256, 512, 768, 1024}) backward(attention(DType::BF16, 8, 2, d, d), std::nullopt);
  backward(mla(DType::BF16, 16, 512, 64), plain);         // MLA on plain cores
  backward(mla(DType::F32, 8, 1024, 256), std::nullopt);  // 40 columns per lane
  // MLA on tensor cores (the heuristic for f16/bf16 MLA the kernel serves): R = 512 / P = 64 bf16
  // (from the calls above), and a small f16 one whose column groups end past the last column.
  backward(mla(DType::F16, 16, 128, 16), std::nullopt);
  // The tensor-core backward (the heuristic for f16/bf16 attention at D = Dv ∈ {64, 96, 128}; D = 128
  // bf16 and f16 come from the calls above).
  backward(attention(DType::F16, 16, 4, 64, 64), std::nullopt);
  backward(attention(DType::BF16, 16, 4, 96, 96), std::nullopt);
  // The append's paged_copy and paged_append for every dtype.
  for (DType t : {DType::BF16, DType::F16, DType::F32}) {
    contracts::PagedAppendSignature sig{{{kQueries, 8, 128}, t, 0},
                                        {{kQueries, 8, 64}, t, 0},
                                        {{kPages, kPageSize, 8, 128}, t, 0},
                                        {{kPages, kPageSize, 8, 64}, t, 0},
                                        metadata()};
    EXPECT_FALSE(contracts::check_paged_append(sig).has_value());
    collect(compiler::lower_paged_append(sig, compiler::Target{}));
  }
  return out;
}

TEST(PagedAttentionVariants, EveryRegisteredConfigLowers) {
  const auto variants = paged_attention_variants();
  std::set<std::string> entries;
  for (const auto& v : variants) {
    EXPECT_NE(v.source.find(v.entry + "("), std::string::npos) << v.entry;
    entries.insert(v.entry);
  }
  // Each kind of kernel is there for each dtype.
  for (const char* dtype : {"bf16", "f16", "f32"}) {
    for (const char* prefix : {"rudnn_paged_attention_", "rudnn_paged_merge_", "rudnn_paged_copy_",
                               "rudnn_paged_append_", "rudnn_paged_attention_backward_", "rudnn_paged_round_gradients_",
                               "rudnn_paged_attention_backward_history_"}) {
      const std::string want = std::string(prefix) + dtype;
      bool found = false;
      for (const auto& e : entries) found = found || e.rfind(want, 0) == 0;
      EXPECT_TRUE(found) << want;
    }
  }
  for (const char* prefix :
       {"rudnn_paged_mla_bf16_", "rudnn_paged_mla_mma_bf16_r512_", "rudnn_paged_attention_mma_bf16_d128_",
        "rudnn_paged_attention_mma_f16_d256_", "rudnn_paged_attention_backward_mma_bf16_d128",
        "rudnn_paged_attention_backward_mma_f16_d64", "rudnn_paged_attention_backward_mma_bf16_d96",
        "rudnn_paged_attention_backward_history_mma_bf16_d128_compact",
        "rudnn_paged_attention_backward_history_mma_f16_d128", "rudnn_paged_attention_backward_history_mma_f16_d64",
        "rudnn_paged_attention_backward_history_mma_bf16_d96", "rudnn_paged_mla_backward_bf16_", "rudnn_paged_zero",
        "rudnn_paged_mla_backward_history_bf16_", "rudnn_paged_mla_backward_mma_bf16_r512_p64",
        "rudnn_paged_mla_backward_mma_f16_r128_p16", "rudnn_paged_mla_backward_history_mma_bf16_r512_p64",
        "rudnn_paged_mla_backward_history_mma_bf16_r512_p64_compact"}) {
    bool found = false;
    for (const auto& e : entries) found = found || e.rfind(prefix, 0) == 0;
    EXPECT_TRUE(found) << prefix;
  }
  EXPECT_GE(variants.size(), 25u);
  std::set<std::string> wgmma;
  for (const auto& v : variants)
    if (v.sm90a_only) wgmma.insert(v.entry);
  // Attention: f16 and bf16 at D = 128, bf16 at D = 64, f16 at D = 256, unsplit and split; MLA at
  // R = 512 / Pr = 64 (DeepSeek's), unsplit and split, R = 128 / Pr = 64 and R = 256 / Pr = 128.
  for (const char* entry :
       {"rudnn_paged_attention_wgmma_bf16_d128_64x64", "rudnn_paged_attention_wgmma_bf16_d128_64x64_split",
        "rudnn_paged_attention_wgmma_f16_d128_64x64", "rudnn_paged_attention_wgmma_bf16_d64_64x64",
        "rudnn_paged_attention_wgmma_f16_d256_64x32", "rudnn_paged_attention_wgmma_f16_d256_64x32_split",
        "rudnn_paged_mla_wgmma_bf16_r512_p64_64x64", "rudnn_paged_mla_wgmma_bf16_r512_p64_64x64_split",
        "rudnn_paged_mla_wgmma_f16_r128_p64_64x64", "rudnn_paged_mla_wgmma_bf16_r256_p128_64x64"})
    EXPECT_EQ(wgmma.count(entry), 1u) << entry;
}

TEST(PagedAttentionVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  rudnn::testing::expect_spill_free_on_sm80_and_sm90a(paged_attention_variants(), "paged attention");
}

}  // namespace
#endif
