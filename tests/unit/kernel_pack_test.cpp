// Kernel packs (runtime/cache/kernel_pack.h): round trip, lookup by KernelCacheKey digest,
// deduplication, atomic writes, and every kind of bad file rejected with a CacheFailure that names it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "cache/sha256.h"
#include "cache/kernel_cache.h"
#include "cache/kernel_pack.h"

namespace rudnn::runtime {
namespace {

namespace fs = std::filesystem;

class KernelPackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rudnn-pack-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "k.pack") const { return (dir_ / name).string(); }
  fs::path dir_;
};

KernelCacheKey key(int i, const std::string& arch = "sm_90a") {
  return {"extern \"C\" void k" + std::to_string(i) + "() {}", "-arch=" + arch, "nvrtc 13.0", arch, "rudnn test"};
}

KernelBinary binary(int i, std::size_t bytes = 100) {
  KernelBinary b;
  b.image.assign(bytes, static_cast<char>('A' + i % 26));
  b.image += "cubin " + std::to_string(i);
  b.ptx = "ptx " + std::to_string(i);
  return b;
}

KernelPackEntry entry(const KernelCacheKey& k, int i) {
  KernelPackEntry e;
  e.digest = k.digest();
  e.arch = k.arch;
  e.entry = "rudnn_kernel_" + std::to_string(i);
  e.op_name = "rudnn.rms_norm";
  e.config = "threads_per_row=256,rows_per_block=1,vector_width=8";
  return e;
}

// A pack of `n` kernels for sm_80 and sm_90a (alternating), written to `file`.
void write_pack(const std::string& file, int n) {
  KernelPackWriter w("rudnn test");
  ASSERT_TRUE(w.add_arch("sm_80", "nvrtc 13.0").ok());
  ASSERT_TRUE(w.add_arch("sm_90a", "nvrtc 13.0").ok());
  for (int i = 0; i < n; ++i) {
    const auto k = key(i, i % 2 ? "sm_80" : "sm_90a");
    auto added = w.add(entry(k, i), binary(i));
    ASSERT_TRUE(added.ok()) << added.error().message();
    EXPECT_TRUE(added.value());
  }
  auto s = w.write(file);
  ASSERT_TRUE(s.ok()) << s.error().message();
}

std::string read_all(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_all(const std::string& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The open fails with a CacheFailure whose message names the file and contains `words`.
void expect_rejected(const std::string& file, const std::string& words) {
  auto pack = KernelPack::open(file);
  ASSERT_FALSE(pack.ok());
  EXPECT_EQ(pack.error().kind(), ErrorKind::CacheFailure);
  EXPECT_NE(pack.error().message().find(file), std::string::npos) << pack.error().message();
  EXPECT_NE(pack.error().message().find(words), std::string::npos) << pack.error().message();
}

TEST(Sha256, KnownVectors) {
  // FIPS 180-2 examples.
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_F(KernelPackTest, RoundTripKeepsHeaderIndexAndPayloads) {
  write_pack(path(), 5);
  auto opened = KernelPack::open(path());
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  const auto& pack = *opened.value();
  EXPECT_EQ(pack.format_version(), kKernelPackFormatVersion);
  EXPECT_EQ(pack.library_version(), "rudnn test");
  ASSERT_EQ(pack.archs().size(), 2u);
  EXPECT_EQ(pack.archs()[0].arch, "sm_80");
  ASSERT_NE(pack.compiler_version("sm_90a"), nullptr);
  EXPECT_EQ(*pack.compiler_version("sm_90a"), "nvrtc 13.0");
  EXPECT_EQ(pack.compiler_version("sm_86"), nullptr);
  ASSERT_EQ(pack.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    const auto k = key(i, i % 2 ? "sm_80" : "sm_90a");
    const KernelPackEntry* e = pack.find(k.digest());
    ASSERT_NE(e, nullptr) << i;
    EXPECT_EQ(e->entry, "rudnn_kernel_" + std::to_string(i));
    EXPECT_EQ(e->arch, k.arch);
    EXPECT_EQ(e->op_name, "rudnn.rms_norm");
    EXPECT_EQ(e->config, "threads_per_row=256,rows_per_block=1,vector_width=8");
    auto b = pack.binary(*e);
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_EQ(b->image, binary(i).image);
    EXPECT_EQ(b->ptx, binary(i).ptx);
  }
  EXPECT_NE(pack.describe().find("5 kernels"), std::string::npos);
}

TEST_F(KernelPackTest, LookupIsByTheDiskCacheDigestIncludingTheCompilerVersion) {
  write_pack(path(), 2);
  auto pack = KernelPack::open(path()).value();
  KernelCacheKey k = key(0, "sm_90a");
  EXPECT_NE(pack->find(k.digest()), nullptr);
  k.compiler_version = "nvrtc 12.8";  // another compiler's kernel is another kernel
  EXPECT_EQ(pack->find(k.digest()), nullptr);
  EXPECT_EQ(pack->find(key(99).digest()), nullptr);
  EXPECT_EQ(pack->find("not a digest"), nullptr);
}

TEST_F(KernelPackTest, WriterMergesIdenticalKeysAndRejectsBadEntries) {
  KernelPackWriter w("rudnn test");
  ASSERT_TRUE(w.add_arch("sm_90a", "nvrtc 13.0").ok());
  EXPECT_TRUE(w.add_arch("sm_90a", "nvrtc 13.0").ok());  // same again: fine
  auto conflict = w.add_arch("sm_90a", "nvrtc 12.8");
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().kind(), ErrorKind::InvalidValue);
  EXPECT_NE(conflict.error().message().find("nvrtc 12.8"), std::string::npos);

  EXPECT_TRUE(w.add(entry(key(1), 1), binary(1)).value());
  EXPECT_FALSE(w.add(entry(key(1), 1), binary(2)).value());  // a duplicate digest keeps the first
  EXPECT_EQ(w.size(), 1u);

  auto bad_digest = entry(key(2), 2);
  bad_digest.digest = "xyz";
  auto r = w.add(bad_digest, binary(2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().argument(), "digest");
  EXPECT_NE(r.error().message().find("xyz"), std::string::npos);

  auto bad_arch = entry(key(3, "sm_80"), 3);
  r = w.add(bad_arch, binary(3));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("sm_80"), std::string::npos);
}

TEST_F(KernelPackTest, HundredKernelPack) {
  write_pack(path(), 100);
  auto pack = KernelPack::open(path());
  ASSERT_TRUE(pack.ok()) << pack.error().message();
  ASSERT_EQ(pack.value()->size(), 100u);
  for (int i = 0; i < 100; ++i) {
    const auto* e = pack.value()->find(key(i, i % 2 ? "sm_80" : "sm_90a").digest());
    ASSERT_NE(e, nullptr) << i;
    EXPECT_EQ(pack.value()->binary(*e).value().image, binary(i).image);
  }
}

TEST_F(KernelPackTest, EmptyPackIsValid) {
  KernelPackWriter w("rudnn test");
  ASSERT_TRUE(w.write(path()).ok());
  auto pack = KernelPack::open(path());
  ASSERT_TRUE(pack.ok()) << pack.error().message();
  EXPECT_EQ(pack.value()->size(), 0u);
}

TEST_F(KernelPackTest, AtomicWriteLeavesOnlyThePack) {
  write_pack(path(), 3);
  write_pack(path(), 4);  // replaces it
  std::vector<std::string> names;
  for (const auto& f : fs::directory_iterator(dir_)) names.push_back(f.path().filename().string());
  ASSERT_EQ(names.size(), 1u) << names.front();
  EXPECT_EQ(names.front(), "k.pack");
  EXPECT_EQ(KernelPack::open(path()).value()->size(), 4u);
}

TEST_F(KernelPackTest, UnwritableDestinationIsAnErrorAndLeavesNothing) {
  KernelPackWriter w("rudnn test");
  const std::string missing_dir = (dir_ / "no" / "such" / "dir" / "k.pack").string();
  auto s = w.write(missing_dir);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::IoFailure);
  EXPECT_NE(s.error().message().find(missing_dir), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(KernelPackTest, MissingFileIsACacheFailure) { expect_rejected(path("absent.pack"), "readable"); }

TEST_F(KernelPackTest, WrongMagicIsRejected) {
  write_all(path(), std::string("ELF\x7f not a pack at all, but long enough to have a header and more", 64));
  expect_rejected(path(), "bad magic");
  write_all(path(), "");
  expect_rejected(path(), "0-byte file");
}

TEST_F(KernelPackTest, WrongFormatVersionIsRejected) {
  write_pack(path(), 2);
  std::string bytes = read_all(path());
  const std::uint32_t v = kKernelPackFormatVersion + 1;
  std::memcpy(bytes.data() + 8, &v, 4);
  write_all(path(), bytes);
  expect_rejected(path(), "format version 2");
}

TEST_F(KernelPackTest, TruncatedPacksAreRejectedAtEveryLength) {
  write_pack(path(), 3);
  const std::string bytes = read_all(path());
  for (std::size_t n : {std::size_t{5}, std::size_t{20}, std::size_t{40}, bytes.size() / 2, bytes.size() - 1}) {
    write_all(path(), bytes.substr(0, n));
    auto pack = KernelPack::open(path());
    ASSERT_FALSE(pack.ok()) << n;
    EXPECT_EQ(pack.error().kind(), ErrorKind::CacheFailure) << n;
  }
  write_all(path(), bytes.substr(0, bytes.size() - 1));
  expect_rejected(path(), "truncated");
  write_all(path(), bytes + "x");
  expect_rejected(path(), "trailing bytes");
}

TEST_F(KernelPackTest, EveryFlippedByteIsCaught) {
  write_pack(path(), 3);
  const std::string bytes = read_all(path());
  // Every byte after the fixed header (a flip there is a magic/version/size error, tested above).
  for (std::size_t i = 24; i < bytes.size(); i += 7) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    write_all(path(), bad);
    auto pack = KernelPack::open(path());
    ASSERT_FALSE(pack.ok()) << "byte " << i;
    EXPECT_EQ(pack.error().kind(), ErrorKind::CacheFailure);
  }
  std::string bad = bytes;
  bad[bytes.size() / 2] ^= 1;
  write_all(path(), bad);
  expect_rejected(path(), "corrupt");
}

TEST_F(KernelPackTest, PayloadChecksumIsCheckedOnUseEvenWhenTheFileChecksumWasForged) {
  write_pack(path(), 2);
  std::string bytes = read_all(path());
  auto pack = KernelPack::open(path()).value();
  const KernelPackEntry e = *pack->find(key(0).digest());
  pack.reset();
  bytes[e.offset + 10] ^= 1;  // damage the payload, then re-seal the whole file
  const auto sum = sha256(std::string_view(bytes.data(), bytes.size() - 32));
  std::memcpy(bytes.data() + bytes.size() - 32, sum.data(), 32);
  write_all(path(), bytes);
  auto reopened = KernelPack::open(path());
  ASSERT_TRUE(reopened.ok()) << reopened.error().message();
  auto b = reopened.value()->binary(*reopened.value()->find(key(0).digest()));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind(), ErrorKind::CacheFailure);
  EXPECT_NE(b.error().message().find("rudnn_kernel_0"), std::string::npos);
  EXPECT_TRUE(reopened.value()->binary(*reopened.value()->find(key(1, "sm_80").digest())).ok());
}

TEST_F(KernelPackTest, PackSetOpensAListAndKeepsTheFirstError) {
  write_pack(path("a.pack"), 2);
  write_pack(path("b.pack"), 3);
  auto set = KernelPackSet::open(path("a.pack") + "::" + path("b.pack") + ":");
  EXPECT_FALSE(set.error.has_value());
  ASSERT_EQ(set.packs.size(), 2u);
  EXPECT_EQ(set.packs[1]->size(), 3u);

  auto bad = KernelPackSet::open(path("a.pack") + ":" + path("missing.pack"));
  ASSERT_TRUE(bad.error.has_value());
  EXPECT_EQ(bad.error->kind(), ErrorKind::CacheFailure);
  EXPECT_NE(bad.error->message().find("missing.pack"), std::string::npos);
  EXPECT_EQ(bad.packs.size(), 1u);
  EXPECT_TRUE(KernelPackSet::open("").packs.empty());
}

}  // namespace
}  // namespace rudnn::runtime
