#pragma once
// The Autotune strategy as the compiler sees it: a compiler::ConfigProvider that answers from the
// process's tuned results and the persistent cache, and tunes on a miss in `full` mode. The ops
// layer makes one per cold call and hands it to rudnn-resolve-strategy through NormRequest.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "rudnn/autotune.h"
#include "rudnn/autotune/tuner.h"
#include "rudnn/autotune/tuning_cache.h"
#include "rudnn/compiler/config_provider.h"
#include "rudnn/device.h"

namespace rudnn::autotune {

// The process-wide results: an in-memory table (everything tuned or read in this process) in
// front of the persistent cache. Host records stay in memory (never written anywhere a GPU
// could read); GPU records are also written to the file unless it is read-only. A file that
// fails (corrupt, unknown schema, I/O) is reported once (log + cache_status()) and bypassed.
class TuningStore {
 public:
  static TuningStore& instance();
  std::optional<CacheRecord> find(const TuningKey& key, const DeviceFingerprint& device);
  void remember(const CacheRecord& record);
  std::string path();
  void set_path(std::string path);  // "" = RUDNN_AUTOTUNE_CACHE, else the default
  Status<RuntimeError> status();
  void forget();  // tests: drop the in-memory results and close the file (re-read the environment)

 private:
  std::shared_ptr<TuningCache> file_for(CacheClass cls, bool for_writing);
  void bypass(const RuntimeError& error);
  std::mutex mutex_;
  std::string override_path_;
  std::map<std::string, CacheRecord> memory_;  // by key + device
  std::shared_ptr<TuningCache> file_;
  std::optional<CacheClass> file_class_;
  std::optional<CacheClass> skipped_class_;  // the file is of the other class: not retried
  std::optional<RuntimeError> failure_;
  bool read_only_warned_ = false;
};

class AutotuneProvider final : public compiler::ConfigProvider {
 public:
  // Without `options`: default_policy(device), and as many parallel builds as the machine has cores.
  AutotuneProvider(Device device, Mode mode, std::optional<TuneOptions> options = std::nullopt);
  std::optional<compiler::ProvidedConfig> provide(const compiler::ConfigQuery& query) override;
  // What the last provide() answered (nothing: the heuristic decided) and under which key.
  const std::optional<compiler::ProvidedConfig>& answer() const { return answer_; }
  const std::optional<TuningKey>& key() const { return key_; }

 private:
  Device device_;
  Mode mode_;
  TuneOptions options_;
  std::optional<compiler::ProvidedConfig> answer_;
  std::optional<TuningKey> key_;
};

Source to_source(compiler::ConfigSource source);

// Whether `config` may run on a device of `arch` (host_emulation: the host device) in this process:
// a warpgroup-MMA config (the "wgmma" key, every family alike) only where contracts::has_wgmma
// holds. A cache tuned under RUDNN_WGMMA=1 may hold one that a process without the opt-in must not
// take (its lowering would refuse it): the provider then lets the heuristic decide.
bool config_runs_here(const compiler::KernelConfig& config, const std::string& arch, bool host_emulation);

// Tools: `observer` sees every key a provider computes, before it looks anything up, so that
// rudnn-autotune learns the exact keys the runtime asks for by running a graph. Process-wide; an
// empty function removes it.
void set_key_observer(std::function<void(const TuningKey&)> observer);
// The ops layer: the plan a call ran (kept per thread for last_choice(); cheap when unchanged).
void note_choice(const std::shared_ptr<const Choice>& choice);

}  // namespace rudnn::autotune
