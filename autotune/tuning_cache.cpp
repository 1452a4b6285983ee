// The SQLite autotune cache. Every write is one statement (an upsert that keeps the preferred
// record), so concurrent writers need no transaction of their own; WAL lets readers run while a
// writer writes, and the busy timeout makes writers queue instead of failing.
#include "rudnn/autotune/tuning_cache.h"

#include <sqlite3.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "templates/embedded.h"

namespace rudnn::autotune {

namespace fs = std::filesystem;

namespace {

constexpr int kSchemaVersion = 1;
constexpr int kBusyTimeoutMs = 30000;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS winners(
  op TEXT NOT NULL, dtypes TEXT NOT NULL, static_dims TEXT NOT NULL, buckets TEXT NOT NULL,
  device_model TEXT NOT NULL, compute_capability INTEGER NOT NULL, driver_version INTEGER NOT NULL,
  library_version TEXT NOT NULL,
  config TEXT NOT NULL, time_ms REAL NOT NULL, runner_up_ratio REAL NOT NULL, candidates INTEGER NOT NULL,
  tuned_unix INTEGER NOT NULL,
  PRIMARY KEY(op, dtypes, static_dims, buckets, device_model, compute_capability, driver_version, library_version));
)sql";

constexpr const char* kColumns =
    "op, dtypes, static_dims, buckets, device_model, compute_capability, driver_version, library_version, config, "
    "time_ms, runner_up_ratio, candidates, tuned_unix";

// The upsert: the new record replaces an existing one only when it is preferred() over it.
constexpr const char* kUpsert = R"sql(
INSERT INTO winners VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
ON CONFLICT DO UPDATE SET config = excluded.config, time_ms = excluded.time_ms,
  runner_up_ratio = excluded.runner_up_ratio, candidates = excluded.candidates, tuned_unix = excluded.tuned_unix
WHERE excluded.time_ms < winners.time_ms OR (excluded.time_ms = winners.time_ms AND excluded.config < winners.config)
)sql";

RuntimeError sql_error(sqlite3* db, const std::string& path, const std::string& doing, int rc) {
  const char* msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  const bool corrupt = primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
  return RuntimeError(corrupt ? ErrorKind::CacheFailure : ErrorKind::IoFailure, path,
                      corrupt ? "an intact SQLite autotune cache" : "a usable SQLite autotune cache",
                      fmt::format("{} while {}", msg ? msg : sqlite3_errstr(rc), doing),
                      corrupt ? "corrupt: the file is bypassed; delete or replace it" : "");
}

// RAII statement.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  int prepared() const { return rc_; }
  sqlite3_stmt* get() const { return stmt_; }
  void text(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void integer(int i, std::int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void real(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  std::string column_text(int i) const {
    const auto* p = sqlite3_column_text(stmt_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)))
             : std::string();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

// Runs SQL that returns no rows, retrying while another process holds the lock past the busy
// handler (schema creation and journal-mode changes can return BUSY without waiting).
int exec(sqlite3* db, const char* sql) {
  int rc = SQLITE_OK;
  for (int attempt = 0; attempt < 100; ++attempt) {
    rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) return rc;
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);  // start over
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return rc;
}

std::string join_dims(const std::vector<std::int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); }

std::string join_dtypes(const std::vector<DType>& v) {
  std::vector<std::string_view> names;
  for (DType t : v) names.push_back(dtype_name(t));
  return fmt::format("{}", fmt::join(names, ","));
}

std::optional<std::vector<std::int64_t>> split_dims(std::string_view s) {
  std::vector<std::int64_t> out;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || ptr != item.data() + item.size()) return std::nullopt;
    out.push_back(v);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
  }
  return out;
}

std::optional<std::vector<DType>> split_dtypes(std::string_view s) {
  std::vector<DType> out;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    auto t = parse_dtype(s.substr(0, comma));
    if (!t) return std::nullopt;
    out.push_back(*t);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
  }
  return out;
}

// SQLite URIs: percent-encode what would end or change the path.
std::string uri_path(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#')
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out;
}

bool writable(const std::string& path, bool exists) {
  if (exists) return ::access(path.c_str(), W_OK) == 0;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  return ::access(dir.c_str(), W_OK) == 0;
}

void bind_record(Statement& s, const CacheRecord& r) {
  s.text(1, r.key.op);
  s.text(2, join_dtypes(r.key.dtypes));
  s.text(3, join_dims(r.key.static_dims));
  s.text(4, join_dims(r.key.buckets));
  s.text(5, r.device.model);
  s.integer(6, r.device.compute_capability);
  s.integer(7, r.device.driver_version);
  s.text(8, r.device.library_version);
  s.text(9, r.config.to_string());
  s.real(10, r.time_ms);
  s.real(11, r.runner_up_ratio);
  s.integer(12, r.candidates);
  s.integer(13, r.tuned_unix);
}

std::optional<CacheRecord> read_record(const Statement& s, bool host) {
  CacheRecord r;
  r.key.op = s.column_text(0);
  auto dtypes = split_dtypes(s.column_text(1));
  auto dims = split_dims(s.column_text(2));
  auto buckets = split_dims(s.column_text(3));
  auto config = parse_config(s.column_text(8));
  if (!dtypes || !dims || !buckets || !config) return std::nullopt;
  r.key.dtypes = *dtypes;
  r.key.static_dims = *dims;
  r.key.buckets = *buckets;
  r.device.model = s.column_text(4);
  r.device.compute_capability = sqlite3_column_int(s.get(), 5);
  r.device.driver_version = sqlite3_column_int(s.get(), 6);
  r.device.library_version = s.column_text(7);
  r.device.host_emulation = host;
  r.config = *config;
  r.time_ms = sqlite3_column_double(s.get(), 9);
  r.runner_up_ratio = sqlite3_column_double(s.get(), 10);
  r.candidates = sqlite3_column_int(s.get(), 11);
  r.tuned_unix = sqlite3_column_int64(s.get(), 12);
  return r;
}

// Reads meta's `name`; nothing when absent.
Result<std::optional<std::string>, RuntimeError> read_meta(sqlite3* db, const std::string& path, const char* name) {
  Statement s(db, "SELECT value FROM meta WHERE name = ?1");
  if (s.prepared() != SQLITE_OK) {
    const int primary = s.prepared() & 0xff;
    if (primary == SQLITE_ERROR)  // no meta table: an SQLite file, but not ours
      return RuntimeError(ErrorKind::CacheFailure, path, "an autotune cache (a `meta` table)", sqlite3_errmsg(db));
    return sql_error(db, path, "reading its schema", s.prepared());
  }
  s.text(1, name);
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return std::optional<std::string>(s.column_text(0));
  if (rc == SQLITE_DONE) return std::optional<std::string>();
  return sql_error(db, path, "reading its schema", rc);
}

}  // namespace

std::string DeviceFingerprint::to_string() const {
  return fmt::format("{} cc{} driver {} {}{}", model, compute_capability, driver_version, library_version,
                     host_emulation ? " (host emulation)" : "");
}

std::string library_version() {
  return fmt::format("rudnn {} templates {}", RUDNN_LIBRARY_VERSION, templates::content_hash());
}

DeviceFingerprint fingerprint_of(const Device& device) {
  const DeviceInfo& info = device.info();
  return DeviceFingerprint{info.name, info.compute_capability, info.driver_version, library_version(),
                           device.kind() == DeviceKind::Host};
}

std::string_view cache_class_name(CacheClass c) { return c == CacheClass::Host ? "host" : "gpu"; }

bool preferred(const CacheRecord& a, const CacheRecord& b) {
  if (a.time_ms != b.time_ms) return a.time_ms < b.time_ms;
  return a.config.to_string() < b.config.to_string();
}

Result<std::unique_ptr<TuningCache>, RuntimeError> TuningCache::open(const std::string& path, const Options& options) {
  if (path.empty()) return RuntimeError(ErrorKind::InvalidValue, "autotune cache path", "a file path", "\"\"");
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (!exists && !options.create)
    return RuntimeError(ErrorKind::IoFailure, path, "an existing autotune cache", "no such file");
  if (exists && !fs::is_regular_file(path, ec))
    return RuntimeError(ErrorKind::IoFailure, path, "a regular file", "another kind of file");
  const bool read_only = options.read_only || !writable(path, exists);
  if (!exists && read_only)
    return RuntimeError(ErrorKind::IoFailure, path, "a writable directory to create the cache in", "read-only");
  if (!exists) fs::create_directories(fs::path(path).parent_path(), ec);

  // A file nobody may write (shipped with an application) is immutable: no locks, no -shm file,
  // so it opens from read-only media too. A writable file opened read-only (by request) still
  // sees other processes' writes.
  std::string uri = "file:" + uri_path(path);
  if (read_only) uri += ::access(path.c_str(), W_OK) == 0 ? "?mode=ro" : "?immutable=1";
  const int flags = SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX |
                    (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  sqlite3* db = nullptr;
  if (int rc = sqlite3_open_v2(uri.c_str(), &db, flags, nullptr); rc != SQLITE_OK) {
    RuntimeError e = sql_error(db, path, "opening", rc);
    sqlite3_close(db);
    return e;
  }
  auto fail = [&](RuntimeError e) -> Result<std::unique_ptr<TuningCache>, RuntimeError> {
    sqlite3_close(db);
    return e;
  };
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  sqlite3_extended_result_codes(db, 1);

  // Someone else's SQLite file must not get our tables: only an empty database (a new file) is
  // initialized; anything else must already be an autotune cache (checked below).
  std::int64_t tables = 0;
  auto count_tables = [&]() -> int {
    Statement count(db, "SELECT count(*) FROM sqlite_master");
    const int rc = count.prepared() == SQLITE_OK ? sqlite3_step(count.get()) : count.prepared();
    if (rc == SQLITE_ROW) tables = sqlite3_column_int64(count.get(), 0);
    return rc;
  };
  if (int rc = count_tables(); rc != SQLITE_ROW) return fail(sql_error(db, path, "reading its schema", rc));
  // A reader can meet a file that another process has just created and is initializing (the file
  // exists before its first transaction commits): give that writer up to two seconds to finish.
  for (int waited_ms = 0; tables == 0 && read_only && exists && waited_ms < 2000; waited_ms += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (int rc = count_tables(); rc != SQLITE_ROW) return fail(sql_error(db, path, "reading its schema", rc));
  }
  if (tables == 0) {
    if (read_only)  // not initialized yet (a writer may be about to): as good as missing
      return fail(RuntimeError(ErrorKind::IoFailure, path, "an existing autotune cache", "an empty file"));
    // Two processes may initialize one new file at once: the statements are idempotent and run
    // in one IMMEDIATE transaction each. WAL (stored in the file): readers never block a writer.
    const std::string init = fmt::format(
        "BEGIN IMMEDIATE; {} INSERT OR IGNORE INTO meta VALUES('schema_version', '{}'); "
        "INSERT OR IGNORE INTO meta VALUES('class', '{}'); COMMIT;",
        kSchema, kSchemaVersion, cache_class_name(options.expected));
    if (int rc = exec(db, init.c_str()); rc != SQLITE_OK) {
      if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return fail(sql_error(db, path, "creating its tables", rc));
    }
    if (int rc = exec(db, "PRAGMA journal_mode=WAL"); rc != SQLITE_OK)
      return fail(sql_error(db, path, "setting the WAL journal", rc));
  }
  if (!read_only) exec(db, "PRAGMA synchronous=NORMAL");  // per connection; durable enough for a cache
  // A corrupt page anywhere (a truncated copy, a bad disk) is found now, not in the middle of a
  // lookup; the tables are small, so the check is cheap.
  {
    Statement check(db, "PRAGMA quick_check");
    if (check.prepared() != SQLITE_OK) return fail(sql_error(db, path, "checking its integrity", check.prepared()));
    const int rc = sqlite3_step(check.get());
    if (rc != SQLITE_ROW) return fail(sql_error(db, path, "checking its integrity", rc));
    if (const std::string verdict = check.column_text(0); verdict != "ok")
      return fail(RuntimeError(ErrorKind::CacheFailure, path, "an intact SQLite autotune cache", verdict,
                               "corrupt: the file is bypassed; delete or replace it"));
  }
  auto version = read_meta(db, path, "schema_version");
  if (!version.ok()) return fail(version.error());
  if (version.value() != std::to_string(kSchemaVersion))
    return fail(RuntimeError(ErrorKind::CacheFailure, path, fmt::format("autotune cache schema {}", kSchemaVersion),
                             version.value() ? "schema " + *version.value() : "no schema version"));
  auto cls = read_meta(db, path, "class");
  if (!cls.ok()) return fail(cls.error());
  const std::string want(cache_class_name(options.expected));
  if (cls.value() != want)
    return fail(RuntimeError(ErrorKind::Unsupported, path, "a " + want + " autotune cache",
                             "a " + cls.value().value_or("classless") + " cache",
                             "host timings and GPU timings never share a file"));
  return std::unique_ptr<TuningCache>(new TuningCache(path, db, options.expected, read_only));
}

TuningCache::~TuningCache() { sqlite3_close(db_); }

Result<std::optional<CacheRecord>, RuntimeError> TuningCache::lookup(const TuningKey& key,
                                                                     const DeviceFingerprint& device) const {
  const std::string sql = fmt::format(
      "SELECT {} FROM winners WHERE op = ?1 AND dtypes = ?2 AND static_dims = ?3 AND buckets = ?4 AND "
      "device_model = ?5 AND compute_capability = ?6 AND driver_version = ?7 AND library_version = ?8",
      kColumns);
  Statement s(db_, sql.c_str());
  if (s.prepared() != SQLITE_OK) return sql_error(db_, path_, "preparing a lookup", s.prepared());
  CacheRecord probe;
  probe.key = key;
  probe.device = device;
  bind_record(s, probe);  // binds 1..8 as the key; 9..13 are unused by this statement
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return std::optional<CacheRecord>();
  if (rc != SQLITE_ROW) return sql_error(db_, path_, "looking up " + key.to_string(), rc);
  auto record = read_record(s, class_ == CacheClass::Host);
  if (!record)
    return RuntimeError(ErrorKind::CacheFailure, path_, "a well-formed record for " + key.to_string(),
                        "a record whose dtypes, dims or config do not parse", "the record is ignored");
  return record;
}

Status<RuntimeError> TuningCache::store(const CacheRecord& record) {
  if (read_only_) return RuntimeError(ErrorKind::Unsupported, path_, "a writable autotune cache", "a read-only one");
  if ((record.device.host_emulation ? CacheClass::Host : CacheClass::Gpu) != class_)
    return RuntimeError(ErrorKind::Unsupported, path_, fmt::format("a {} record", cache_class_name(class_)),
                        fmt::format("a record tuned on {}", record.device.model),
                        "host timings are never written to a cache a GPU reads");
  Statement s(db_, kUpsert);
  if (s.prepared() != SQLITE_OK) return sql_error(db_, path_, "preparing a store", s.prepared());
  bind_record(s, record);
  int rc = SQLITE_BUSY;
  for (int attempt = 0; attempt < 10 && (rc & 0xff) == SQLITE_BUSY; ++attempt) {
    rc = sqlite3_step(s.get());
    sqlite3_reset(s.get());
  }
  if (rc != SQLITE_DONE) return sql_error(db_, path_, "storing " + record.key.to_string(), rc);
  return {};
}

Result<std::vector<CacheRecord>, RuntimeError> TuningCache::records() const {
  const std::string sql = fmt::format("SELECT {} FROM winners ORDER BY op, dtypes, static_dims, buckets", kColumns);
  Statement s(db_, sql.c_str());
  if (s.prepared() != SQLITE_OK) return sql_error(db_, path_, "listing records", s.prepared());
  std::vector<CacheRecord> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    auto r = read_record(s, class_ == CacheClass::Host);
    if (!r)
      return RuntimeError(ErrorKind::CacheFailure, path_, "well-formed records",
                          "a record whose dtypes, dims or config do not parse");
    out.push_back(std::move(*r));
  }
  if (rc != SQLITE_DONE) return sql_error(db_, path_, "listing records", rc);
  return out;
}

Status<RuntimeError> TuningCache::compact_for_shipping() {
  if (read_only_) return {};
  if (int rc = exec(db_, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;"); rc != SQLITE_OK)
    return sql_error(db_, path_, "switching to a rollback journal", rc);
  return {};
}

Result<CacheClass, RuntimeError> probe_cache_class(const std::string& path) {
  for (CacheClass c : {CacheClass::Gpu, CacheClass::Host}) {
    auto cache = TuningCache::open(path, {.read_only = true, .create = false, .expected = c});
    if (cache.ok()) return c;
    if (cache.error().kind() != ErrorKind::Unsupported) return cache.error();
  }
  return RuntimeError(ErrorKind::CacheFailure, path, "a gpu or host autotune cache", "neither");
}

Result<std::size_t, RuntimeError> merge_caches(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) return RuntimeError(ErrorKind::InvalidValue, "inputs", "at least one cache to merge", "none");
  auto cls = probe_cache_class(inputs.front());
  if (!cls.ok()) return cls.error();
  auto out = TuningCache::open(output, {.read_only = false, .create = true, .expected = cls.value()});
  if (!out.ok()) return out.error();
  for (const std::string& path : inputs) {
    auto in = TuningCache::open(path, {.read_only = true, .create = false, .expected = cls.value()});
    if (!in.ok()) return in.error();
    auto records = in.value()->records();
    if (!records.ok()) return records.error();
    for (const CacheRecord& r : records.value())
      if (auto s = out.value()->store(r); !s.ok()) return s.error();
  }
  auto all = out.value()->records();
  if (!all.ok()) return all.error();
  if (auto s = out.value()->compact_for_shipping(); !s.ok()) return s.error();
  return all.value().size();
}

}  // namespace rudnn::autotune
