// The SQLite autotune cache: round trip, the faster record kept, version mismatch ignored, merge,
// read-only use, host/GPU separation, corrupt files reported (typed error, store bypassed, never a
// crash), and two processes writing one file at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/tuning_cache.h"

namespace rudnn::autotune {
namespace {

namespace fs = std::filesystem;

class TuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rudnn-autotune-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

DeviceFingerprint gpu() { return {"NVIDIA H200", 90, 13000, library_version(), false}; }
DeviceFingerprint host() { return {"rudnn host emulation device", 90, 0, library_version(), true}; }

CacheRecord record(std::int64_t rows, std::int64_t threads, double ms, DeviceFingerprint device = gpu()) {
  CacheRecord r;
  r.key = TuningKey{"rudnn.rms_norm", {DType::BF16, DType::F32}, {4096}, {rows}};
  r.device = std::move(device);
  r.config = compiler::KernelConfig{{{"threads_per_row", threads}, {"rows_per_block", 1}, {"vector_width", 8}}};
  r.time_ms = ms;
  r.runner_up_ratio = 1.25;
  r.candidates = 30;
  r.tuned_unix = 1700000000;
  return r;
}

std::unique_ptr<TuningCache> open_rw(const std::string& p, CacheClass c = CacheClass::Gpu) {
  auto cache = TuningCache::open(p, {.read_only = false, .create = true, .expected = c});
  EXPECT_TRUE(cache.ok()) << cache.error().message();
  return cache.ok() ? std::move(cache.value()) : nullptr;
}

TEST_F(TuningCacheTest, RoundTripAcrossOpens) {
  const std::string p = path("a.sqlite");
  {
    auto cache = open_rw(p);
    ASSERT_TRUE(cache);
    ASSERT_TRUE(cache->store(record(512, 128, 0.010)).ok());
    ASSERT_TRUE(cache->store(record(4096, 256, 0.050)).ok());
  }
  auto cache = TuningCache::open(p, {.read_only = true});
  ASSERT_TRUE(cache.ok()) << cache.error().message();
  auto hit = cache.value()->lookup(record(512, 0, 0).key, gpu());
  ASSERT_TRUE(hit.ok()) << hit.error().message();
  ASSERT_TRUE(hit.value());
  EXPECT_EQ(hit.value()->config.to_string(), "threads_per_row=128,rows_per_block=1,vector_width=8");
  EXPECT_DOUBLE_EQ(hit.value()->time_ms, 0.010);
  EXPECT_DOUBLE_EQ(hit.value()->runner_up_ratio, 1.25);
  EXPECT_EQ(hit.value()->candidates, 30);
  EXPECT_EQ(hit.value()->key, record(512, 0, 0).key);
  auto miss = cache.value()->lookup(record(1024, 0, 0).key, gpu());
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss.value());
  EXPECT_EQ(cache.value()->records()->size(), 2u);
}

TEST_F(TuningCacheTest, KeepsTheFasterRecordOfAKey) {
  auto cache = open_rw(path("a.sqlite"));
  ASSERT_TRUE(cache->store(record(512, 128, 0.010)).ok());
  ASSERT_TRUE(cache->store(record(512, 256, 0.020)).ok());  // slower: ignored
  EXPECT_EQ(cache->lookup(record(512, 0, 0).key, gpu()).value()->config.get("threads_per_row"), 128);
  ASSERT_TRUE(cache->store(record(512, 64, 0.005)).ok());  // faster: replaces
  EXPECT_EQ(cache->lookup(record(512, 0, 0).key, gpu()).value()->config.get("threads_per_row"), 64);
}

TEST_F(TuningCacheTest, OtherLibraryDriverOrDeviceVersionsAreIgnored) {
  auto cache = open_rw(path("a.sqlite"));
  ASSERT_TRUE(cache->store(record(512, 128, 0.010)).ok());
  for (auto change : std::vector<std::function<void(DeviceFingerprint&)>>{
           [](DeviceFingerprint& d) { d.library_version = "rudnn 0.0.9 templates 0000"; },
           [](DeviceFingerprint& d) { d.driver_version = 12080; },
           [](DeviceFingerprint& d) { d.compute_capability = 80; },
           [](DeviceFingerprint& d) { d.model = "NVIDIA A100-SXM4-80GB"; }}) {
    DeviceFingerprint other = gpu();
    change(other);
    auto found = cache->lookup(record(512, 0, 0).key, other);
    ASSERT_TRUE(found.ok());
    EXPECT_FALSE(found.value()) << other.to_string();
  }
}

TEST_F(TuningCacheTest, MergeUnionsAndKeepsTheFasterOnConflict) {
  {
    auto a = open_rw(path("a.sqlite"));
    ASSERT_TRUE(a->store(record(1, 32, 0.002)).ok());
    ASSERT_TRUE(a->store(record(512, 128, 0.010)).ok());
    auto b = open_rw(path("b.sqlite"));
    ASSERT_TRUE(b->store(record(512, 64, 0.008)).ok());
    ASSERT_TRUE(b->store(record(4096, 256, 0.05)).ok());
  }
  auto merged = merge_caches({path("a.sqlite"), path("b.sqlite")}, path("out.sqlite"));
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(merged.value(), 3u);
  auto out = TuningCache::open(path("out.sqlite"), {.read_only = true});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.value()->lookup(record(512, 0, 0).key, gpu()).value()->config.get("threads_per_row"), 64);
  // Order does not matter.
  auto again = merge_caches({path("b.sqlite"), path("a.sqlite")}, path("out2.sqlite"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(TuningCache::open(path("out2.sqlite"), {.read_only = true})
                .value()
                ->lookup(record(512, 0, 0).key, gpu())
                .value()
                ->config.get("threads_per_row"),
            64);
  // The shipped output is a plain rollback-journal file: no -wal next to it.
  EXPECT_FALSE(fs::exists(path("out.sqlite-wal")));
}

TEST_F(TuningCacheTest, HostAndGpuRecordsNeverShareAFile) {
  auto gpu_cache = open_rw(path("gpu.sqlite"));
  auto refused = gpu_cache->store(record(4, 32, 1.0, host()));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::Unsupported);
  auto as_host = TuningCache::open(path("gpu.sqlite"), {.expected = CacheClass::Host});
  ASSERT_FALSE(as_host.ok());
  EXPECT_EQ(as_host.error().kind(), ErrorKind::Unsupported);
  auto host_cache = open_rw(path("x.host.sqlite"), CacheClass::Host);
  ASSERT_TRUE(host_cache->store(record(4, 32, 1.0, host())).ok());
  EXPECT_FALSE(host_cache->store(record(4, 32, 1.0, gpu())).ok());
  EXPECT_EQ(probe_cache_class(path("x.host.sqlite")).value(), CacheClass::Host);
  auto mixed = merge_caches({path("gpu.sqlite"), path("x.host.sqlite")}, path("out.sqlite"));
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.error().kind(), ErrorKind::Unsupported);
}

TEST_F(TuningCacheTest, ReadOnlyOpenNeverWrites) {
  {
    auto cache = open_rw(path("a.sqlite"));
    ASSERT_TRUE(cache->store(record(512, 128, 0.010)).ok());
    ASSERT_TRUE(cache->compact_for_shipping().ok());
  }
  auto ro = TuningCache::open(path("a.sqlite"), {.read_only = true});
  ASSERT_TRUE(ro.ok()) << ro.error().message();
  EXPECT_TRUE(ro.value()->read_only());
  EXPECT_TRUE(ro.value()->lookup(record(512, 0, 0).key, gpu()).value());
  auto s = ro.value()->store(record(1, 32, 0.001));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::Unsupported);
  // A missing file opened read-only is an IoFailure naming the path, not a new file.
  auto missing = TuningCache::open(path("none.sqlite"), {.read_only = true});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::IoFailure);
  EXPECT_EQ(missing.error().argument(), path("none.sqlite"));
  EXPECT_FALSE(fs::exists(path("none.sqlite")));
}

TEST_F(TuningCacheTest, CorruptFilesAreTypedErrors) {
  std::ofstream(path("garbage.sqlite"), std::ios::binary) << std::string(8192, '\x5a');
  auto garbage = TuningCache::open(path("garbage.sqlite"), {});
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().kind(), ErrorKind::CacheFailure) << garbage.error().message();
  EXPECT_EQ(garbage.error().argument(), path("garbage.sqlite"));

  // A real cache cut short (a truncated copy).
  {
    auto cache = open_rw(path("cut.sqlite"));
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(cache->store(record(std::int64_t{1} << (i % 40), 32 + i, 1.0 + i)).ok());
    ASSERT_TRUE(cache->compact_for_shipping().ok());
  }
  fs::resize_file(path("cut.sqlite"), fs::file_size(path("cut.sqlite")) / 2 + 100);
  auto cut = TuningCache::open(path("cut.sqlite"), {.read_only = true});
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().kind(), ErrorKind::CacheFailure) << cut.error().message();

  // An SQLite file that is not an autotune cache, and one of another schema version (made with
  // the sqlite3 shell when it is installed).
  if (std::system("command -v sqlite3 > /dev/null 2>&1") != 0) GTEST_SKIP() << "no sqlite3 shell for the last cases";
  ASSERT_EQ(std::system(("sqlite3 '" + path("other.sqlite") + "' 'CREATE TABLE t(x)'").c_str()), 0);
  auto other = TuningCache::open(path("other.sqlite"), {.read_only = true});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind(), ErrorKind::CacheFailure) << other.error().message();
  open_rw(path("v0.sqlite"));
  ASSERT_EQ(
      std::system(
          ("sqlite3 '" + path("v0.sqlite") + "' \"UPDATE meta SET value='0' WHERE name='schema_version'\"").c_str()),
      0);
  auto v0 = TuningCache::open(path("v0.sqlite"), {});
  ASSERT_FALSE(v0.ok());
  EXPECT_EQ(v0.error().kind(), ErrorKind::CacheFailure);
  EXPECT_NE(v0.error().actual().find("schema 0"), std::string::npos) << v0.error().message();
}

TEST_F(TuningCacheTest, TheRuntimeStoreBypassesACorruptFileAndSaysWhy) {
  std::ofstream(path("corrupt.sqlite"), std::ios::binary) << std::string(4096, '\x01');
  auto& store = TuningStore::instance();
  store.set_path(path("corrupt.sqlite"));
  EXPECT_FALSE(store.find(record(512, 0, 0).key, gpu()));  // no crash, no answer
  auto status = cache_status();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind(), ErrorKind::CacheFailure);
  store.remember(record(512, 128, 0.01));  // kept in memory, the file left alone
  EXPECT_TRUE(store.find(record(512, 0, 0).key, gpu()));
  EXPECT_EQ(fs::file_size(path("corrupt.sqlite")), 4096u);
  store.set_path("");
  store.forget();
  EXPECT_TRUE(cache_status().ok());
}

TEST_F(TuningCacheTest, TheRuntimeStoreWritesGpuRecordsButKeepsHostOnesInMemory) {
  auto& store = TuningStore::instance();
  store.set_path(path("runtime.sqlite"));
  store.remember(record(8, 64, 0.5, host()));
  EXPECT_TRUE(store.find(record(8, 0, 0).key, host()));
  EXPECT_FALSE(fs::exists(path("runtime.sqlite")));  // a host tuning created no file
  store.remember(record(8, 64, 0.5));
  store.forget();  // drop memory: the GPU record must come back from the file
  store.set_path(path("runtime.sqlite"));
  EXPECT_TRUE(store.find(record(8, 0, 0).key, gpu()));
  EXPECT_FALSE(store.find(record(8, 0, 0).key, host()));
  store.set_path("");
  store.forget();
}

TEST_F(TuningCacheTest, TwoProcessesWritingAtOnce) {
  const std::string p = path("shared.sqlite");
  constexpr int kPerProcess = 150;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  const int who = child == 0 ? 1 : 0;
  bool ok = true;
  {
    auto cache = TuningCache::open(p, {.read_only = false, .create = true, .expected = CacheClass::Gpu});
    ok = cache.ok();
    for (int i = 0; ok && i < kPerProcess; ++i) {
      // Both write every key (contended rows) with their own times; process 1 is always faster.
      CacheRecord r = record(std::int64_t{1} << (i % 20), 32 * (1 + who), 1.0 + (i % 20) - 0.5 * who);
      r.key.static_dims = {4096 + i / 20};
      ok = cache.value()->store(r).ok();
    }
  }
  if (child == 0) std::_Exit(ok ? 0 : 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(ok);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto cache = TuningCache::open(p, {.read_only = true});
  ASSERT_TRUE(cache.ok()) << cache.error().message();
  auto all = cache.value()->records();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all.value().size(), static_cast<std::size_t>(kPerProcess));  // every key once
  for (const auto& r : all.value()) EXPECT_EQ(r.config.get("threads_per_row"), 64) << r.key.to_string();
}

}  // namespace
}  // namespace rudnn::autotune
