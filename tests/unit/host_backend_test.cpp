// The host backend: a generated unit → a shared object; a rejected unit → CompileFailure carrying
// the compiler log and the path of the kept source.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "backends/host/host_backend.h"

namespace rudnn::compiler {
namespace {

namespace fs = std::filesystem;

fs::path scratch() {
  return fs::temp_directory_path() / ("rudnn-host-backend-" + std::to_string(std::random_device{}()));
}

TEST(HostBackend, CompilesAModuleAgainstTheEmbeddedPrelude) {
  const fs::path dir = scratch();
  const std::string source = R"(#include "rudnn/prelude.cuh"
RUDNN_KERNEL void k(float* out) { out[threadIdx.x] = 1.0f; }
extern "C" __attribute__((visibility("default"))) void k_host(void** a) { k(*static_cast<float**>(a[0])); }
RUDNN_EMU_MODULE();
)";
  auto so = host_cc::compile(source, "k", dir.string());
  ASSERT_TRUE(so.ok()) << so.error().message();
  EXPECT_EQ(so->substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_TRUE(fs::exists(dir / "src" / "k.cpp"));
  fs::remove_all(dir);
}

TEST(HostBackend, CompileFailureCarriesLogAndSourcePath) {
  const fs::path dir = scratch();
  auto so = host_cc::compile("this is not C++;\n", "broken", dir.string());
  ASSERT_FALSE(so.ok());
  EXPECT_EQ(so.error().kind(), ErrorKind::CompileFailure);
  const std::string m = so.error().message();
  EXPECT_NE(m.find((dir / "src" / "broken.cpp").string()), std::string::npos) << m;
  EXPECT_NE(m.find("error"), std::string::npos) << "the compiler log is in the message: " << m;
  fs::remove_all(dir);
}

// The extracted templates live in a cache directory: a truncated or deleted header is repaired on
// the next compile rather than failing every host compile from then on.
TEST(HostBackend, DamagedTemplatesInTheCacheAreRepaired) {
  const fs::path dir = scratch();
  const std::string source = R"(#include "rudnn/prelude.cuh"
RUDNN_KERNEL void k(float* out) { out[threadIdx.x] = 2.0f; }
extern "C" __attribute__((visibility("default"))) void k_host(void** a) { k(*static_cast<float**>(a[0])); }
RUDNN_EMU_MODULE();
)";
  ASSERT_TRUE(host_cc::compile(source, "k", dir.string()).ok());
  std::vector<fs::path> headers;
  for (const auto& e : fs::recursive_directory_iterator(dir / "templates"))
    if (e.is_regular_file() && e.path().extension() != ".complete" && e.path().filename() != ".complete")
      headers.push_back(e.path());
  ASSERT_FALSE(headers.empty());
  // Truncate every header, delete one: the next compile must still succeed.
  for (const auto& h : headers) std::ofstream(h, std::ios::trunc) << "";
  fs::remove(headers.front());
  auto again = host_cc::compile(source, "k", dir.string());
  ASSERT_TRUE(again.ok()) << again.error().message();
  for (const auto& h : headers) EXPECT_GT(fs::file_size(h), 0u) << h;
  // The tree's completion marker deleted (with a header damaged): repaired in place, not an error.
  const fs::path tree = headers.front().parent_path();
  fs::path marker;
  for (const auto& e : fs::recursive_directory_iterator(dir / "templates"))
    if (e.path().filename() == ".complete") marker = e.path();
  ASSERT_FALSE(marker.empty());
  fs::remove(marker);
  std::ofstream(headers.back(), std::ios::trunc) << "garbage";
  auto third = host_cc::compile(source, "k", dir.string());
  ASSERT_TRUE(third.ok()) << third.error().message();
  EXPECT_TRUE(fs::exists(marker));
  fs::remove_all(dir);
}

TEST(HostBackend, VersionAndOptionsAreStable) {
  auto v = host_cc::compiler_version();
  ASSERT_TRUE(v.ok()) << v.error().message();
  EXPECT_FALSE(v->empty());
  EXPECT_EQ(host_cc::compiler_version().value(), v.value());
  EXPECT_FALSE(host_cc::options().empty());
}

}  // namespace
}  // namespace rudnn::compiler
