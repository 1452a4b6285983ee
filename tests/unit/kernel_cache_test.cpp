#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "cache/kernel_cache.h"
#include "device_backend.h"

namespace rudnn::runtime {
namespace {

namespace fs = std::filesystem;

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rudnn-cache-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

KernelCacheKey key() {
  return {"extern \"C\" void k() {}", "-O2", "nvrtc 13.0", "sm_90a", "rudnn 0.1.0 templates abc"};
}

TEST_F(KernelCacheTest, StoreThenLoad) {
  KernelCache cache(dir_.string());
  const std::string d = key().digest();
  EXPECT_EQ(d.size(), 64u);
  EXPECT_FALSE(cache.load(d).has_value());
  ASSERT_TRUE(cache.store(d, "payload bytes").ok());
  auto got = cache.load(d);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "payload bytes");
}

TEST_F(KernelCacheTest, EveryKeyFieldChangesTheDigest) {
  const std::string base = key().digest();
  for (int field = 0; field < 5; ++field) {
    KernelCacheKey k = key();
    std::string* f[] = {&k.source, &k.options, &k.compiler_version, &k.arch, &k.library_version};
    *f[field] += "x";
    EXPECT_NE(k.digest(), base) << "field " << field;
  }
  // Field boundaries matter: moving a character between fields is a different key.
  KernelCacheKey a = key(), b = key();
  a.arch = "sm_90";
  a.library_version = "a" + a.library_version;
  b.arch = "sm_90a";
  EXPECT_NE(a.digest(), b.digest());
}

TEST_F(KernelCacheTest, TruncatedOrCorruptEntryIsRemovedAndMissed) {
  KernelCache cache(dir_.string());
  const std::string d = key().digest();
  const std::string payload(1000, 'k');
  for (int mode = 0; mode < 3; ++mode) {
    ASSERT_TRUE(cache.store(d, payload).ok());
    const std::string path = cache.entry_path(d);
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    if (mode == 0) bytes.resize(bytes.size() / 2);    // truncated
    if (mode == 1) bytes[bytes.size() - 10] ^= 0x55;  // flipped payload bit
    if (mode == 2) bytes[0] = 'X';                    // bad magic
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    EXPECT_FALSE(cache.load(d).has_value()) << "mode " << mode;
    EXPECT_FALSE(fs::exists(path)) << "a bad entry is removed so it can be rebuilt";
    ASSERT_TRUE(cache.store(d, payload).ok());
    EXPECT_EQ(cache.load(d), payload);
  }
}

// Several processes publish the same entry at once: the cache ends with one good file and no
// temporaries.
TEST_F(KernelCacheTest, ConcurrentWritersLeaveOneGoodEntry) {
  const std::string d = key().digest();
  const std::string payload(1 << 20, 'p');
  constexpr int kProcesses = 6;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      KernelCache cache(dir_.string());
      for (int round = 0; round < 20; ++round) {
        if (!cache.store(d, payload).ok()) _exit(1);
        auto got = cache.load(d);
        // A reader racing writers sees either nothing (removed by a checker) or a whole entry.
        if (got && *got != payload) _exit(2);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  KernelCache cache(dir_.string());
  EXPECT_EQ(cache.load(d), payload);
  int files = 0;
  for (auto& e : fs::recursive_directory_iterator(dir_))
    if (e.is_regular_file()) ++files;
  EXPECT_EQ(files, 1);
}

TEST(KernelBinary, SerializeRoundTrip) {
  KernelBinary b{std::string("\x7f"
                             "ELF\0\1",
                             6),
                 ".version 8.0"};
  KernelBinary out;
  ASSERT_TRUE(KernelBinary::deserialize(b.serialize(), out));
  EXPECT_EQ(out.image, b.image);
  EXPECT_EQ(out.ptx, b.ptx);
  EXPECT_FALSE(KernelBinary::deserialize(b.serialize().substr(3), out));
}

}  // namespace
}  // namespace rudnn::runtime
