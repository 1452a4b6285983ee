// rudnn-resolve-strategy through the compiler's C++ entry with a fake ConfigProvider: the
// provider's answer is what lowering instantiates, the query carries the call's dynamic sizes, no
// answer (or an answer the verifier would reject) leaves the heuristic, and misaligned buffers are
// never asked about.
#include <gtest/gtest.h>

#include "rudnn/compiler/pipeline.h"

namespace rudnn::compiler {
namespace {

class FakeProvider final : public ConfigProvider {
 public:
  std::optional<ProvidedConfig> provide(const ConfigQuery& query) override {
    queries.push_back(query);
    return answer;
  }
  std::optional<ProvidedConfig> answer;
  std::vector<ConfigQuery> queries;
};

NormRequest layer_norm_request(std::vector<std::int64_t> shape) {
  NormRequest r;
  r.signature.kind = contracts::NormKind::LayerNorm;
  const std::int64_t h = shape.back();
  r.signature.input = {shape, DType::BF16, 0};
  r.signature.gamma = contracts::NormOperand{{h}, DType::F32, 0};
  r.signature.beta = contracts::NormOperand{{h}, DType::F32, 0};
  return r;
}

KernelConfig config(std::int64_t threads, std::int64_t rows, std::int64_t width) {
  return KernelConfig{{{"threads_per_row", threads}, {"rows_per_block", rows}, {"vector_width", width}}};
}

TEST(ResolveStrategy, AttachesTheProvidersConfig) {
  FakeProvider provider;
  provider.answer = ProvidedConfig{config(64, 2, 4), ConfigSource::Cache};
  NormRequest r = layer_norm_request({3, 5, 1024});
  r.provider = &provider;
  auto lowered = lower_normalization(r, Target{});
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  EXPECT_EQ(lowered->launches.front().config.to_string(), "threads_per_row=64,rows_per_block=2,vector_width=4");
  ASSERT_EQ(provider.queries.size(), 1u);
  const ConfigQuery& q = provider.queries.front();
  EXPECT_EQ(q.op_name, "rudnn.layer_norm");
  EXPECT_EQ(q.dtypes, (std::vector<DType>{DType::BF16, DType::F32, DType::F32}));
  EXPECT_EQ(q.shapes.front(), (std::vector<std::int64_t>{-1, -1, 1024}));
  EXPECT_EQ(q.dynamic_values, (std::vector<std::int64_t>{3, 5}));
}

TEST(ResolveStrategy, NoAnswerLeavesTheHeuristic) {
  FakeProvider provider;
  NormRequest r = layer_norm_request({16, 4096});
  auto heuristic = lower_normalization(r, Target{});
  r.provider = &provider;
  auto lowered = lower_normalization(r, Target{});
  ASSERT_TRUE(lowered.ok() && heuristic.ok());
  EXPECT_EQ(lowered->launches.front().config.to_string(), heuristic->launches.front().config.to_string());
  EXPECT_EQ(provider.queries.size(), 1u);
}

TEST(ResolveStrategy, AnAnswerTheVerifierWouldRejectIsDropped) {
  FakeProvider provider;
  provider.answer = ProvidedConfig{config(64, 1, 3), ConfigSource::Cache};  // width 3 never divides
  NormRequest r = layer_norm_request({16, 4096});
  auto heuristic = lower_normalization(r, Target{});
  r.provider = &provider;
  auto lowered = lower_normalization(r, Target{});
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  EXPECT_EQ(lowered->launches.front().config.to_string(), heuristic->launches.front().config.to_string());
}

TEST(ResolveStrategy, ForcedConfigsAndMisalignedBuffersAreNotAsked) {
  FakeProvider provider;
  provider.answer = ProvidedConfig{config(64, 2, 4), ConfigSource::Cache};
  NormRequest forced = layer_norm_request({16, 4096});
  forced.config = config(128, 1, 8);
  forced.provider = &provider;
  auto a = lower_normalization(forced, Target{});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->launches.front().config.get("threads_per_row"), 128);
  NormRequest misaligned = layer_norm_request({16, 4096});
  misaligned.aligned16 = false;
  misaligned.provider = &provider;
  auto b = lower_normalization(misaligned, Target{});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->launches.front().config.get("vector_width"), 1);
  EXPECT_TRUE(provider.queries.empty());
  EXPECT_EQ(config_source_name(ConfigSource::Tuned), "tuned");
}

}  // namespace
}  // namespace rudnn::compiler
