// The MLIR input limits (issue 10 item 6): compiler::check_source_limits counts what MLIR's parser
// recurses on, read_source_file reads only regular files and never more than the limit, and
// parse_main_function (rudnn-run, rudnn-precompile, rudnn-autotune) applies both.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <mlir/IR/MLIRContext.h>

#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/compiler/kernel_op_models.h"
#include "rudnn/compiler/main_function.h"

namespace {

using namespace rudnn;
using compiler::check_source_limits;
using compiler::kMaxNestingDepth;

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

bool within(const std::string& text) { return check_source_limits(text, "t.mlir").ok(); }

TEST(SourceLimits, NestingUpToTheLimitPassesOneMoreFails) {
  for (const char* open_close : {"()", "[]", "{}", "<>"}) {
    const std::string o(1, open_close[0]), c(1, open_close[1]);
    EXPECT_TRUE(within(repeat(o, kMaxNestingDepth) + repeat(c, kMaxNestingDepth))) << open_close;
    EXPECT_FALSE(within(repeat(o, kMaxNestingDepth + 1) + repeat(c, kMaxNestingDepth + 1))) << open_close;
  }
  // Siblings do not add up: depth, not count.
  EXPECT_TRUE(within(repeat("module {}\n", 10000)));
}

TEST(SourceLimits, TheIssuesReproducerIsAnErrorNamingFileLimitAndPlace) {
  auto s = check_source_limits(repeat("module {", 4000) + repeat("}", 4000), "deep.mlir");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::InvalidValue);
  EXPECT_EQ(s.error().message(),
            "deep.mlir: expected MLIR nested at most 64 deep (regions, brackets, affine operators), got deeper "
            "nesting at line 1, column 520");
}

TEST(SourceLimits, StringsCommentsAndArrowsAreNotNesting) {
  const std::string deep = repeat("{", kMaxNestingDepth + 1);
  EXPECT_TRUE(within("%0 = \"" + deep + "\" // " + deep + "\n"));
  EXPECT_TRUE(within("\"\\\"" + deep + "\""));  // an escaped quote does not end the string
  // An unterminated string ends at its line: the next line's nesting counts, on its own line.
  auto s = check_source_limits("\"open\n" + deep, "t.mlir");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("line 2, column 65"), std::string::npos) << s.error().message();
  // '->' and '>=' close nothing, so they cannot hide real depth...
  EXPECT_FALSE(within(repeat("(", kMaxNestingDepth) + "->" + "(" + repeat(")", kMaxNestingDepth + 1)));
  EXPECT_FALSE(within(repeat("<", kMaxNestingDepth) + ">=" + "<"));
  // ...and a function type nests no deeper than its parentheses.
  EXPECT_TRUE(within(repeat("(i32) -> (i32)\n", 1000)));
  // Stray closers never go below zero (the parser reports them).
  EXPECT_FALSE(within(repeat(")", 100) + repeat("(", kMaxNestingDepth + 1)));
}

TEST(SourceLimits, AffineOperatorChainsCount) {
  // MLIR parses "d0 + d0 + ..." and prints "d0 floordiv 2 floordiv 2 ..." recursively.
  auto map = [](const std::string& expr) { return "#m = affine_map<(d0) -> (" + expr + ")>\n"; };
  EXPECT_TRUE(within(map("d0 * 4 + d0 floordiv 2 - d0 mod 3 + d0 ceildiv 5")));
  EXPECT_FALSE(within(map(repeat("d0 + ", kMaxNestingDepth) + "d0")));
  EXPECT_FALSE(within(map("d0" + repeat(" floordiv 2", kMaxNestingDepth))));
  EXPECT_FALSE(within(map(repeat("-", kMaxNestingDepth) + "d0")));
  EXPECT_FALSE(within("#s = affine_set<(d0) : (d0" + repeat(" + 1", kMaxNestingDepth) + " >= 0)>"));
  // Operators count per list element, and only inside the affine body.
  EXPECT_TRUE(within("#m = affine_map<(d0) -> (" + repeat("d0 + d0, ", 1000) + "d0)>"));
  EXPECT_TRUE(within(repeat("%0 = a + b - c * d\n", 1000)));
  EXPECT_TRUE(within(map("d0 + 1") + repeat(" + ", 1000)));
}

TEST(SourceLimits, SizeLimit) {
  const std::string big(compiler::kMaxSourceBytes + 1, ' ');
  auto s = check_source_limits(big, "big.mlir");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("at most 67108864 bytes"), std::string::npos) << s.error().message();
  EXPECT_TRUE(within(std::string(compiler::kMaxSourceBytes, ' ')));
}

class SourceFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("rudnn_source_limits_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(SourceFileTest, OnlyRegularFilesUnderTheLimit) {
  for (const auto& [path, what] :
       {std::pair<std::string, std::string>{dir_.string(), "a directory"}, {"/dev/zero", "a character device"}}) {
    auto r = compiler::read_source_file(path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.error().kind(), ErrorKind::IoFailure);
    EXPECT_EQ(r.error().message(), path + ": expected a regular .mlir file, got " + what);
  }
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto p = compiler::read_source_file(fifo);  // must not block waiting for a writer
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("a pipe"), std::string::npos);

  // A sparse file one byte over the limit: rejected from its size, before reading.
  const std::string big = (dir_ / "big.mlir").string();
  { std::ofstream create(big); }
  std::filesystem::resize_file(big, compiler::kMaxSourceBytes + 1);
  auto b = compiler::read_source_file(big);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind(), ErrorKind::InvalidValue);
  EXPECT_NE(b.error().message().find("67108865 bytes"), std::string::npos) << b.error().message();

  const std::string good = (dir_ / "good.mlir").string();
  std::ofstream(good) << "module {}\n";
  auto g = compiler::read_source_file(good);
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(g.value(), "module {}\n");
  EXPECT_FALSE(compiler::read_source_file((dir_ / "missing.mlir").string()).ok());
}

TEST_F(SourceFileTest, ParseMainFunctionAppliesTheLimits) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, dialect::RudnnDialect>();
  compiler::registerKernelOpInterfaceModels(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  // Deep enough to overflow the parser's stack without the limit.
  auto deep = compiler::parse_main_function(repeat("module {", 100000) + repeat("}", 100000), "deep.mlir", context);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message().find("nested at most 64"), std::string::npos) << deep.error().message();
  auto chain = compiler::parse_main_function(
      "#m = affine_map<(d0) -> (" + repeat("d0 + ", 1000000) + "d0)>\nmodule attributes {x = #m} {}", "c.mlir",
      context);
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.error().message().find("nested at most 64"), std::string::npos) << chain.error().message();
  auto file = compiler::read_main_function("/dev/zero", context);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().kind(), ErrorKind::IoFailure);
  // A real module still parses.
  auto ok = compiler::parse_main_function(
      "func.func @main(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {\n"
      "  %0 = rudnn.softmax_last_axis %x : tensor<?x8xf32>\n  return %0 : tensor<?x8xf32>\n}\n",
      "ok.mlir", context);
  EXPECT_TRUE(ok.ok()) << ok.error().message();
}

}  // namespace
