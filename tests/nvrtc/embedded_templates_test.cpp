// The embedded copy of templates/rudnn/** matches the source tree and hashes stably.
#include "templates/embedded.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(EmbeddedTemplates, MatchTheSourceTree) {
  const fs::path root = RUDNN_TEMPLATE_SOURCE_DIR;
  std::set<std::string> on_disk;
  for (const auto& e : fs::recursive_directory_iterator(root / "rudnn"))
    if (e.is_regular_file()) on_disk.insert(fs::relative(e.path(), root).generic_string());
  std::set<std::string> embedded;
  for (const auto& f : rudnn::templates::embedded_files()) {
    embedded.insert(f.path);
    EXPECT_EQ(f.text, read_file(root / f.path)) << f.path << " is stale: rebuild regenerates it";
  }
  EXPECT_EQ(embedded, on_disk);
  EXPECT_TRUE(embedded.count("rudnn/prelude.cuh"));
  EXPECT_TRUE(embedded.count("rudnn/prelude/cuda.cuh"));
  EXPECT_TRUE(embedded.count("rudnn/norm/row_norm.cuh"));
}

TEST(EmbeddedTemplates, FindsByPath) {
  const auto* f = rudnn::templates::find_embedded("rudnn/numeric.cuh");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(std::string(f->text).find("struct bf16"), std::string::npos);
  EXPECT_EQ(rudnn::templates::find_embedded("rudnn/none.cuh"), nullptr);
}

TEST(EmbeddedTemplates, ContentHashIsStableFnv1a) {
  const std::string a(rudnn::templates::content_hash());
  const std::string b(rudnn::templates::content_hash());
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  // Recomputed independently: FNV-1a 64 over path, NUL, text, NUL of every file in order.
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&](const char* s) {
    for (const char* p = s;; ++p) {
      h ^= static_cast<unsigned char>(*p);
      h *= 1099511628211ull;
      if (*p == '\0') break;
    }
  };
  for (const auto& f : rudnn::templates::embedded_files()) {
    mix(f.path);
    mix(f.text);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  EXPECT_EQ(a, hex);
}

}  // namespace
