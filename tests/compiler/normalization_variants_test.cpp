// normalization_variants: the registered search space, and that every entry lowers.
#include <gtest/gtest.h>

#include <set>

#include "rudnn/compiler/pipeline.h"

namespace rudnn::compiler {
namespace {

using contracts::NormKind;

TEST(NormalizationVariants, Bf16SpaceShape) {
  auto variants = normalization_variants(NormKind::LayerNorm, DType::BF16, 4096);
  // threads 32/64/128 × rows 1/2/4 + threads 256/512/1024 × rows 1 = 12, × widths 8/4/2/1.
  EXPECT_EQ(variants.size(), 48u);
  std::set<std::string> unique;
  for (const KernelConfig& c : variants) {
    unique.insert(c.to_string());
    ASSERT_EQ(c.values.size(), 3u);
    EXPECT_EQ(c.values[0].first, "threads_per_row");
    EXPECT_EQ(c.values[1].first, "rows_per_block");
    EXPECT_EQ(c.values[2].first, "vector_width");
    if (c.get("rows_per_block") > 1) EXPECT_LE(c.get("threads_per_row"), 128);
  }
  EXPECT_EQ(unique.size(), variants.size());
}

TEST(NormalizationVariants, WidthsFollowH) {
  for (const KernelConfig& c : normalization_variants(NormKind::RmsNorm, DType::F32, 1021))
    EXPECT_EQ(c.get("vector_width"), 1);
  EXPECT_EQ(normalization_variants(NormKind::RmsNorm, DType::F32, 1021).size(), 12u);
  std::set<std::int64_t> widths;
  for (const KernelConfig& c : normalization_variants(NormKind::Softmax, DType::F32, 4096))
    widths.insert(c.get("vector_width"));
  EXPECT_EQ(widths, (std::set<std::int64_t>{1, 2, 4}));  // at most 16-byte vectors of f32
  widths.clear();
  for (const KernelConfig& c : normalization_variants(NormKind::Softmax, DType::F16, 4098))
    widths.insert(c.get("vector_width"));
  EXPECT_EQ(widths, (std::set<std::int64_t>{1, 2}));
}

TEST(NormalizationVariants, NothingForUnsupportedInput) {
  EXPECT_TRUE(normalization_variants(NormKind::LayerNorm, DType::I32, 4096).empty());
  EXPECT_TRUE(normalization_variants(NormKind::LayerNorm, DType::FP8E4M3, 4096).empty());
  EXPECT_TRUE(normalization_variants(NormKind::LayerNorm, DType::F32, 0).empty());
}

TEST(NormalizationVariants, EveryVariantLowers) {
  for (NormKind kind : {NormKind::LayerNorm, NormKind::RmsNorm, NormKind::Softmax}) {
    std::set<std::string> entries;
    auto variants = normalization_variants(kind, DType::BF16, 768);
    for (const KernelConfig& config : variants) {
      NormRequest r;
      r.signature.kind = kind;
      r.signature.input = {{4, 768}, DType::BF16, 0};
      if (kind != NormKind::Softmax) r.signature.gamma = contracts::NormOperand{{768}, DType::F32, 0};
      r.config = config;
      auto lowered = lower_normalization(r, Target{});
      ASSERT_TRUE(lowered.ok()) << config.to_string() << ": " << lowered.error().message();
      EXPECT_EQ(lowered->launches[0].config.to_string(), config.to_string());
      entries.insert(lowered->launches[0].entry);
    }
    EXPECT_EQ(entries.size(), variants.size());  // one distinct kernel symbol per variant
  }
}

TEST(KernelConfig, ToString) {
  EXPECT_EQ((KernelConfig{{{"threads_per_row", 256}, {"rows_per_block", 1}, {"vector_width", 8}}}).to_string(),
            "threads_per_row=256,rows_per_block=1,vector_width=8");
  EXPECT_EQ(KernelConfig{}.to_string(), "");
}

}  // namespace
}  // namespace rudnn::compiler
