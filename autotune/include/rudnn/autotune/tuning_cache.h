#pragma once
// The persistent autotune cache: one SQLite file of winners, keyed by the op part (TuningKey) and
// the device part (model, compute capability, driver version, library version + templates hash).
// Many processes may read and write it at once (WAL journal, a busy timeout, single-statement
// upserts that keep the faster record); a shipped copy opens read-only; two files merge into
// one. A file is either a GPU cache or a host cache (a row in its `meta` table, fixed when it is
// created): host timings only ever go to host caches, and a GPU never reads one.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rudnn/autotune/search_space.h"
#include "rudnn/device.h"

struct sqlite3;

namespace rudnn::autotune {

struct DeviceFingerprint {
  std::string model;  // DeviceInfo::name
  int compute_capability = 0;
  int driver_version = 0;
  std::string library_version;  // library_version()
  bool host_emulation = false;
  std::string to_string() const;  // "NVIDIA H200 cc90 driver 13000 rudnn 0.1.0 templates ab12..."
  bool operator==(const DeviceFingerprint&) const = default;
};

// rudnn's version and the embedded templates' content hash: a new build never reads an old
// build's winners (its kernels may differ).
std::string library_version();
DeviceFingerprint fingerprint_of(const Device& device);

enum class CacheClass { Gpu, Host };
std::string_view cache_class_name(CacheClass c);  // "gpu", "host"

struct CacheRecord {
  TuningKey key;
  DeviceFingerprint device;
  compiler::KernelConfig config;
  double time_ms = 0.0;          // the winner's median
  double runner_up_ratio = 1.0;  // the next best's median / the winner's
  int candidates = 0;            // how many were timed
  std::int64_t tuned_unix = 0;   // when (seconds since the epoch)
};

// Which of two records for one key a store or merge keeps: the faster; equal times, the smaller
// config string (so merging is order-independent).
bool preferred(const CacheRecord& a, const CacheRecord& b);

class TuningCache {
 public:
  struct Options {
    bool read_only = false;                 // also forced when the file is not writable
    bool create = false;                    // create a missing file (writers); else a missing file is IoFailure
    CacheClass expected = CacheClass::Gpu;  // a file of the other class is refused (Unsupported)
  };
  // Errors: IoFailure (missing, unreadable), CacheFailure (corrupt, not an autotune cache, another
  // schema version), Unsupported (the other class). The argument names the path.
  static Result<std::unique_ptr<TuningCache>, RuntimeError> open(const std::string& path, const Options& options);
  ~TuningCache();
  TuningCache(const TuningCache&) = delete;
  TuningCache& operator=(const TuningCache&) = delete;

  const std::string& path() const { return path_; }
  CacheClass cache_class() const { return class_; }
  bool read_only() const { return read_only_; }

  // The record for (key, device), if any. A record whose config does not parse is CacheFailure.
  Result<std::optional<CacheRecord>, RuntimeError> lookup(const TuningKey& key, const DeviceFingerprint& device) const;
  // Inserts, or replaces an existing record of the same key when `record` is preferred().
  Status<RuntimeError> store(const CacheRecord& record);
  Result<std::vector<CacheRecord>, RuntimeError> records() const;
  // Folds the WAL into the main file and switches it to a rollback journal, so the file alone is
  // the cache and opens read-only anywhere (what a tool does before the file ships). Best effort
  // while other processes have it open: then the WAL mode stays.
  Status<RuntimeError> compact_for_shipping();

 private:
  TuningCache(std::string path, sqlite3* db, CacheClass c, bool read_only)
      : path_(std::move(path)), db_(db), class_(c), read_only_(read_only) {}
  std::string path_;
  sqlite3* db_;
  CacheClass class_;
  bool read_only_;
};

// Merges the records of `inputs` into `output` (created if missing; an existing output's records
// take part). All files must be of one class. Returns the number of records in the output.
Result<std::size_t, RuntimeError> merge_caches(const std::vector<std::string>& inputs, const std::string& output);

// What a file is, without opening it for use: its class, or an error saying why it is no cache.
Result<CacheClass, RuntimeError> probe_cache_class(const std::string& path);

}  // namespace rudnn::autotune
