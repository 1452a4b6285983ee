// The Autotune strategy: modes, the process-wide store in front of the SQLite cache, the
// ConfigProvider handed to rudnn-resolve-strategy, and the public queries of rudnn/autotune.h.
#include "rudnn/autotune/provider.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "cache/kernel_cache.h"
#include "contracts/arch.h"
#include "log.h"

namespace rudnn::autotune {

namespace {

std::atomic<int>& mode_slot() {
  static std::atomic<int> slot = [] {
    const char* v = std::getenv("RUDNN_AUTOTUNE");
    if (!v || !*v) return static_cast<int>(Mode::Cached);
    auto parsed = parse_mode(v);
    if (!parsed.ok()) {
      runtime::log_info("{}; using cached", parsed.error().message());
      return static_cast<int>(Mode::Cached);
    }
    return static_cast<int>(parsed.value());
  }();
  return slot;
}

bool env_read_only() {
  const char* v = std::getenv("RUDNN_AUTOTUNE_CACHE_READONLY");
  return v && std::strcmp(v, "1") == 0;
}

std::string memory_id(const TuningKey& key, const DeviceFingerprint& device) {
  return key.to_string() + " | " + device.to_string();
}

thread_local std::shared_ptr<const Choice> t_last_choice;

// One tuning at a time in a process: two threads missing the same key would otherwise both tune,
// and timings of two tunings at once disturb each other.
std::mutex& tuning_mutex() {
  static std::mutex m;
  return m;
}

struct KeyObserver {
  std::mutex mutex;
  std::function<void(const TuningKey&)> observer;
};

KeyObserver& key_observer() {
  static KeyObserver o;
  return o;
}

}  // namespace

void set_key_observer(std::function<void(const TuningKey&)> observer) {
  auto& o = key_observer();
  std::lock_guard lock(o.mutex);
  o.observer = std::move(observer);
}

// ---- the store -------------------------------------------------------------------------------

TuningStore& TuningStore::instance() {
  static TuningStore store;
  return store;
}

std::string TuningStore::path() {
  std::lock_guard lock(mutex_);
  if (!override_path_.empty()) return override_path_;
  if (const char* p = std::getenv("RUDNN_AUTOTUNE_CACHE"); p && *p) return p;
  return runtime::KernelCache::default_directory() + "/autotune.sqlite";
}

void TuningStore::set_path(std::string path) {
  std::lock_guard lock(mutex_);
  override_path_ = std::move(path);
  file_.reset();
  file_class_.reset();
  failure_.reset();
  read_only_warned_ = false;
  skipped_class_.reset();
}

void TuningStore::forget() {
  std::lock_guard lock(mutex_);
  memory_.clear();
  file_.reset();
  file_class_.reset();
  failure_.reset();
  read_only_warned_ = false;
  skipped_class_.reset();
}

Status<RuntimeError> TuningStore::status() {
  std::lock_guard lock(mutex_);
  if (failure_) return *failure_;
  return {};
}

void TuningStore::bypass(const RuntimeError& error) {
  if (!failure_)
    runtime::log_info("autotune cache bypassed (heuristics and in-memory results only): {}", error.message());
  failure_ = error;
  file_.reset();
}

// The open file of class `cls` (mutex_ held). A missing file is no failure: nothing is cached
// yet; a writer creates it. A file of the other class is skipped quietly (a GPU machine's cache
// seen by a host-device run, or the reverse).
std::shared_ptr<TuningCache> TuningStore::file_for(CacheClass cls, bool for_writing) {
  if (failure_) return nullptr;
  if (file_ && file_class_ == cls) return file_;  // a read-only one too: remember() says so
  if (skipped_class_ == cls) return nullptr;
  std::string p = override_path_;
  if (p.empty()) {
    const char* env = std::getenv("RUDNN_AUTOTUNE_CACHE");
    p = env && *env ? env : runtime::KernelCache::default_directory() + "/autotune.sqlite";
  }
  TuningCache::Options options{
      .read_only = env_read_only(), .create = for_writing && !env_read_only(), .expected = cls};
  auto opened = TuningCache::open(p, options);
  if (!opened.ok()) {
    const RuntimeError& e = opened.error();
    if (e.kind() == ErrorKind::Unsupported) {
      runtime::log_debug("autotune cache {} skipped: {}", p, e.message());
      skipped_class_ = cls;
    } else if (e.kind() == ErrorKind::IoFailure && (e.actual() == "no such file" || e.actual() == "an empty file"))
      runtime::log_debug("no autotune cache at {} yet", p);
    else
      bypass(e);
    return nullptr;
  }
  file_ = std::move(opened.value());
  file_class_ = cls;
  return file_;
}

std::optional<CacheRecord> TuningStore::find(const TuningKey& key, const DeviceFingerprint& device) {
  std::lock_guard lock(mutex_);
  const std::string id = memory_id(key, device);
  if (auto it = memory_.find(id); it != memory_.end()) return it->second;
  auto file = file_for(device.host_emulation ? CacheClass::Host : CacheClass::Gpu, false);
  if (!file) return std::nullopt;
  auto found = file->lookup(key, device);
  if (!found.ok()) {
    if (found.error().kind() == ErrorKind::CacheFailure && found.error().actual().find("parse") != std::string::npos) {
      runtime::log_info("autotune cache: {}", found.error().message());  // one bad record: ignore it only
      return std::nullopt;
    }
    bypass(found.error());
    return std::nullopt;
  }
  if (found.value()) memory_[id] = *found.value();
  return found.value();
}

void TuningStore::remember(const CacheRecord& record) {
  std::lock_guard lock(mutex_);
  memory_[memory_id(record.key, record.device)] = record;
  if (record.device.host_emulation) return;  // host timings never reach a file
  auto file = file_for(CacheClass::Gpu, true);
  if (!file) return;
  if (file->read_only()) {
    if (!read_only_warned_)
      runtime::log_info("autotune cache {} is read-only: tuned results stay in memory", file->path());
    read_only_warned_ = true;
    return;
  }
  if (auto s = file->store(record); !s.ok()) bypass(s.error());
}

// ---- the provider ----------------------------------------------------------------------------

AutotuneProvider::AutotuneProvider(Device device, Mode mode, std::optional<TuneOptions> options)
    : device_(std::move(device)), mode_(mode) {
  if (options) {
    options_ = std::move(*options);
  } else {
    options_.policy = default_policy(device_);
    options_.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
}

std::optional<compiler::ProvidedConfig> AutotuneProvider::provide(const compiler::ConfigQuery& query) {
  answer_.reset();
  key_.reset();
  if (mode_ == Mode::Off) return std::nullopt;
  auto space = search_space_for(query.op_name);
  if (!space) return std::nullopt;
  key_ = space->key(query);
  if (!key_) return std::nullopt;
  {
    auto& o = key_observer();
    std::lock_guard lock(o.mutex);
    if (o.observer) o.observer(*key_);
  }
  const std::vector<compiler::KernelConfig> candidates = space->candidates(*key_);
  auto in_space = [&](const compiler::KernelConfig& c) {
    const std::string s = c.to_string();
    return std::any_of(candidates.begin(), candidates.end(), [&](const auto& x) { return x.to_string() == s; });
  };
  const DeviceFingerprint device = fingerprint_of(device_);
  auto& store = TuningStore::instance();
  auto cached = [&]() -> std::optional<compiler::ProvidedConfig> {
    auto record = store.find(*key_, device);
    if (!record) return std::nullopt;
    if (!in_space(record->config)) {
      runtime::log_info("autotune cache entry for {} ({}) is not in the search space; ignored", key_->to_string(),
                        record->config.to_string());
      return std::nullopt;
    }
    if (!config_runs_here(record->config, device_.info().arch, device_.kind() == DeviceKind::Host)) {
      runtime::log_info("autotune cache entry for {} ({}) needs {}; ignored", key_->to_string(),
                        record->config.to_string(), contracts::kWgmmaRequirement);
      return std::nullopt;
    }
    return compiler::ProvidedConfig{record->config, compiler::ConfigSource::Cache};
  };
  if ((answer_ = cached())) return answer_;
  if (mode_ != Mode::Full) return std::nullopt;

  std::lock_guard tuning(tuning_mutex());
  if ((answer_ = cached())) return answer_;  // another thread tuned it while this one waited
  // Tuned on a thread of its own: this thread is inside a pass run on its MLIR context, and
  // tuning lowers every candidate.
  std::optional<Result<TuneReport, RuntimeError>> report;
  std::thread([&] { report.emplace(tune(device_, *key_, options_)); }).join();
  if (!report->ok()) {
    runtime::log_info("autotuning {} on {} failed, using the heuristic: {}", key_->to_string(), device_.to_string(),
                      report->error().message());
    return std::nullopt;
  }
  const TuneReport& r = report->value();
  runtime::log_info("autotuned {} on {} in {:.2f} s: {} ({:.4f} ms, runner-up x{:.3f}; {} timed, {} pruned, {} failed)",
                    key_->to_string(), device_.to_string(), r.seconds, r.winner.to_string(), r.time_ms,
                    r.runner_up_ratio, r.timed, r.pruned, r.failed);
  store.remember(r.record());
  answer_ = compiler::ProvidedConfig{r.winner, compiler::ConfigSource::Tuned};
  return answer_;
}

bool config_runs_here(const compiler::KernelConfig& config, const std::string& arch, bool host_emulation) {
  return config.get(contracts::kWgmmaConfigKey) == 0 || contracts::has_wgmma(arch, host_emulation);
}

Source to_source(compiler::ConfigSource source) {
  switch (source) {
    case compiler::ConfigSource::Heuristic: return Source::Heuristic;
    case compiler::ConfigSource::Cache: return Source::Cache;
    case compiler::ConfigSource::Tuned: return Source::Tuned;
    case compiler::ConfigSource::Forced: return Source::Forced;
  }
  return Source::Heuristic;
}

void note_choice(const std::shared_ptr<const Choice>& choice) {
  if (t_last_choice != choice) t_last_choice = choice;
}

// ---- public API (rudnn/autotune.h) -----------------------------------------------------------

Mode mode() { return static_cast<Mode>(mode_slot().load(std::memory_order_relaxed)); }
void set_mode(Mode m) { mode_slot().store(static_cast<int>(m), std::memory_order_relaxed); }

std::string_view mode_name(Mode m) {
  switch (m) {
    case Mode::Off: return "off";
    case Mode::Cached: return "cached";
    case Mode::Full: return "full";
  }
  return "?";
}

Result<Mode, RuntimeError> parse_mode(std::string_view text) {
  for (Mode m : {Mode::Off, Mode::Cached, Mode::Full})
    if (text == mode_name(m)) return m;
  return RuntimeError(ErrorKind::InvalidValue, "RUDNN_AUTOTUNE", "off, cached or full", std::string(text));
}

std::string_view source_name(Source s) {
  switch (s) {
    case Source::Heuristic: return "heuristic";
    case Source::Cache: return "cache";
    case Source::Tuned: return "tuned";
    case Source::Forced: return "forced";
  }
  return "?";
}

std::optional<Choice> last_choice() {
  if (!t_last_choice) return std::nullopt;
  return *t_last_choice;
}

std::string cache_path() { return TuningStore::instance().path(); }
void set_cache_path(const std::string& path) { TuningStore::instance().set_path(path); }
Status<RuntimeError> cache_status() { return TuningStore::instance().status(); }

}  // namespace rudnn::autotune
