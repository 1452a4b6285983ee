// KernelOpInterface and its registration: every operator op of the dialect has a model once
// registerKernelOpInterfaceModels ran; without the models each pass is an error naming the op
// (never a silent skip); rudnn-resolve-strategy asks every family whose model gives a tuning query,
// with the query the model defines, and keeps or drops the answer by the family's config check.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "Transforms/ResolveStrategy.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"
#include "rudnn/compiler/kernel_op_models.h"

namespace rudnn::compiler {
namespace {

// A routing, dispatch, combine and gated delta op (the families rudnn-resolve-strategy did not ask
// before the interface) in one function.
constexpr const char* kMoeAndGatedDelta = R"mlir(
func.func @main(%logits: tensor<?x64xbf16>, %bias: tensor<64xf32>, %x: tensor<?x128xbf16>,
                %q: tensor<1x2x8x128xbf16>, %b: tensor<1x2x8xbf16>) -> (tensor<?x128xbf16>, tensor<1x2x8x128xbf16>) {
  %i, %w = rudnn.route_sigmoid_grouped %logits, %bias {top_k = 4 : i64, groups = 8 : i64,
             selected_groups = 2 : i64, group_top_two = true, renormalize = true, scale = 1.0 : f32}
           : tensor<?x64xbf16>, tensor<64xf32> -> tensor<?x4xui32>, tensor<?x4xbf16>
  %rows, %offsets, %slots = rudnn.dispatch %x, %i {experts = 64 : i64}
           : tensor<?x128xbf16>, tensor<?x4xui32> -> tensor<?x128xbf16>, tensor<65xui32>, tensor<?x4xui32>
  %out = rudnn.combine %rows, %slots, %w
           : tensor<?x128xbf16>, tensor<?x4xui32>, tensor<?x4xbf16> -> tensor<?x128xbf16>
  %o, %s = rudnn.gated_delta %q, %q, %q, %b, %b {query_scale = 1.0 : f32, chunk_size = 0 : i64}
           : tensor<1x2x8x128xbf16>, tensor<1x2x8x128xbf16>, tensor<1x2x8x128xbf16>, tensor<1x2x8xbf16>,
             tensor<1x2x8xbf16> -> tensor<1x2x8x128xbf16>, tensor<1x2x128x128xf32>
  return %out, %o : tensor<?x128xbf16>, tensor<1x2x8x128xbf16>
}
)mlir";

constexpr const char* kRmsNorm = R"mlir(
func.func @main(%x: tensor<?x4096xbf16>, %g: tensor<4096xf32>) -> tensor<?x4096xbf16> {
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16>, tensor<4096xf32>
  return %0 : tensor<?x4096xbf16>
}
)mlir";

struct Harness {
  explicit Harness(bool withModels) : context(mlir::MLIRContext::Threading::DISABLED) {
    mlir::DialectRegistry registry;
    registry.insert<mlir::func::FuncDialect, dialect::RudnnDialect>();
    if (withModels) registerKernelOpInterfaceModels(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  mlir::OwningOpRef<mlir::ModuleOp> parse(const char* source) {
    return mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  }
  // Runs `pass` and returns every diagnostic, "severity: message" each.
  bool run(mlir::ModuleOp module, std::unique_ptr<mlir::Pass> pass) {
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic& d) {
      diagnostics.push_back(std::string(d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error: " : "warning: ") +
                            d.str());
      return mlir::success();
    });
    mlir::PassManager pm(&context);
    pm.addPass(std::move(pass));
    return mlir::succeeded(pm.run(module));
  }
  mlir::MLIRContext context;
  std::vector<std::string> diagnostics;
};

class FakeProvider final : public ConfigProvider {
 public:
  std::optional<ProvidedConfig> provide(const ConfigQuery& query) override {
    queries.push_back(query);
    auto it = answers.find(query.op_name);
    if (it == answers.end()) return std::nullopt;
    return ProvidedConfig{it->second, ConfigSource::Cache};
  }
  std::map<std::string, KernelConfig> answers;
  std::vector<ConfigQuery> queries;
};

std::string configOf(mlir::ModuleOp module, llvm::StringRef opName) {
  std::string out = "none";
  module.walk([&](mlir::Operation* op) {
    if (op->getName().getStringRef() != opName) return;
    if (auto config = op->getAttrOfType<mlir::DictionaryAttr>(dialect::kKernelConfigAttrName)) {
      out.clear();
      llvm::raw_string_ostream(out) << config;
    }
  });
  return out;
}

TEST(KernelOpInterface, EveryOperatorOpHasAModel) {
  Harness h(/*withModels=*/true);
  int operatorOps = 0;
  for (mlir::RegisteredOperationName name : h.context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "rudnn" || name.getStringRef() == "rudnn.launch") continue;
    ++operatorOps;
    EXPECT_TRUE(name.hasInterface<dialect::KernelOpInterface>()) << name.getStringRef().str();
  }
  // At least the ops that existed when this was written (3 normalization, 2 routing, dispatch, experts,
  // combine, gated delta, attention, 3 convolution): a new family adds ops without editing this test.
  EXPECT_GE(operatorOps, 13);
}

TEST(KernelOpInterface, EachPassRejectsAnOpWithoutAModel) {
  dialect::SelectKernelConfigPassOptions select;
  FakeProvider provider;
  for (int pass = 0; pass < 3; ++pass) {
    Harness h(/*withModels=*/false);
    auto module = h.parse(kRmsNorm);
    ASSERT_TRUE(module);
    std::unique_ptr<mlir::Pass> p = pass == 0   ? createResolveStrategyPass(&provider, {})
                                    : pass == 1 ? dialect::createSelectKernelConfigPass(select)
                                                : dialect::createLowerToLaunchPass();
    EXPECT_FALSE(h.run(*module, std::move(p))) << pass;
    ASSERT_EQ(h.diagnostics.size(), 1u) << pass;
    EXPECT_NE(h.diagnostics[0].find("error: 'rudnn.rms_norm' op has no KernelOpInterface model"), std::string::npos)
        << h.diagnostics[0];
  }
  EXPECT_TRUE(provider.queries.empty());
}

TEST(KernelOpInterface, UnregisteredOpsAreLeftAlone) {
  Harness h(/*withModels=*/true);
  h.context.allowUnregisteredDialects();
  auto module = h.parse(R"mlir(
func.func @main(%x: tensor<?x4096xbf16>, %g: tensor<4096xf32>) -> tensor<?x4096xbf16> {
  "other.op"() : () -> ()
  %0 = rudnn.rms_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<?x4096xbf16>, tensor<4096xf32>
  return %0 : tensor<?x4096xbf16>
}
)mlir");
  ASSERT_TRUE(module);
  dialect::SelectKernelConfigPassOptions select;
  EXPECT_TRUE(h.run(*module, dialect::createSelectKernelConfigPass(select)));
  EXPECT_TRUE(h.run(*module, dialect::createLowerToLaunchPass()));
  int launches = 0;
  module->walk([&](dialect::LaunchOp) { ++launches; });
  EXPECT_EQ(launches, 1);
  EXPECT_TRUE(h.diagnostics.empty());
}

TEST(KernelOpInterface, ResolveStrategyAsksRoutingDispatchCombineAndGatedDelta) {
  Harness h(/*withModels=*/true);
  auto module = h.parse(kMoeAndGatedDelta);
  ASSERT_TRUE(module);
  FakeProvider provider;
  ASSERT_TRUE(h.run(*module, createResolveStrategyPass(&provider, {7, 5})));
  ASSERT_EQ(provider.queries.size(), 4u);
  const ConfigQuery& route = provider.queries[0];
  EXPECT_EQ(route.op_name, "rudnn.route_sigmoid_grouped");
  EXPECT_EQ(route.dtypes, (std::vector<DType>{DType::BF16, DType::F32}));
  EXPECT_EQ(route.shapes, (std::vector<std::vector<std::int64_t>>{{-1, 64}, {64}}));
  EXPECT_EQ(route.dynamic_values, (std::vector<std::int64_t>{7}));
  // What a tuning problem needs to rebuild the call: top_k, renormalize, groups, selected, top-two.
  EXPECT_EQ(route.options, (std::vector<std::int64_t>{4, 1, 8, 2, 1}));
  const ConfigQuery& dispatch = provider.queries[1];
  EXPECT_EQ(dispatch.op_name, "rudnn.dispatch");
  EXPECT_EQ(dispatch.dtypes, (std::vector<DType>{DType::BF16, DType::U32}));
  EXPECT_TRUE(dispatch.dynamic_values.empty());                  // %i's rows are not an argument of @main: unknown
  EXPECT_EQ(dispatch.options, (std::vector<std::int64_t>{64}));  // experts
  const ConfigQuery& combine = provider.queries[2];
  EXPECT_EQ(combine.op_name, "rudnn.combine");
  EXPECT_EQ(combine.shapes.size(), 3u);
  const ConfigQuery& gatedDelta = provider.queries[3];
  EXPECT_EQ(gatedDelta.op_name, "rudnn.gated_delta");
  EXPECT_EQ(gatedDelta.shapes.size(), 5u);
  EXPECT_EQ(gatedDelta.dynamic_values, (std::vector<std::int64_t>{}));  // all static
  EXPECT_EQ(gatedDelta.options, (std::vector<std::int64_t>{0}));        // chunk_size
  // No answers: nothing attached, the heuristic decides later.
  EXPECT_EQ(configOf(*module, "rudnn.dispatch"), "none");
  EXPECT_TRUE(h.diagnostics.empty());
}

TEST(KernelOpInterface, ProvidedConfigsAreCheckedByTheFamilysRules) {
  Harness h(/*withModels=*/true);
  auto module = h.parse(kMoeAndGatedDelta);
  ASSERT_TRUE(module);
  FakeProvider provider;
  provider.answers["rudnn.route_sigmoid_grouped"] = KernelConfig{{{"rows_per_block", 2}}};
  provider.answers["rudnn.dispatch"] = KernelConfig{{{"rank_threads", 300}, {"threads", 64}, {"vector_width", 8}}};
  provider.answers["rudnn.combine"] = KernelConfig{{{"threads", 128}, {"vector_width", 4}}};
  provider.answers["rudnn.gated_delta"] = KernelConfig{{{"warps", 4}, {"rows_per_thread", 4}}};  // K ≤ 64
  ASSERT_TRUE(h.run(*module, createResolveStrategyPass(&provider, {})));
  EXPECT_EQ(configOf(*module, "rudnn.route_sigmoid_grouped"), "{rows_per_block = 2 : i64}");
  EXPECT_EQ(configOf(*module, "rudnn.combine"), "{threads = 128 : i64, vector_width = 4 : i64}");
  EXPECT_EQ(configOf(*module, "rudnn.dispatch"), "none");
  EXPECT_EQ(configOf(*module, "rudnn.gated_delta"), "none");
  ASSERT_EQ(h.diagnostics.size(), 2u);
  EXPECT_NE(h.diagnostics[0].find("warning: rudnn-resolve-strategy: provided config "
                                  "rank_threads=300,threads=64,vector_width=8 ignored: rank_threads must be 256, "
                                  "512 or 1024, got 300"),
            std::string::npos)
      << h.diagnostics[0];
  EXPECT_NE(h.diagnostics[1].find("ignored: warps = 4, rows_per_thread = 4 holds key_dim <= 64, got 128"),
            std::string::npos)
      << h.diagnostics[1];
}

}  // namespace
}  // namespace rudnn::compiler
