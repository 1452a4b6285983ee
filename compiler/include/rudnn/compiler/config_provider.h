#pragma once
// What the strategy pass (rudnn-resolve-strategy) asks for each operator op that has no
// kernel_config yet: "which config should this op use on this target for this call?". The
// autotune component answers from its cache (or by tuning); the compiler only knows this
// interface, never the runtime or autotune. No provider = the heuristic of
// rudnn-select-kernel-config decides.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rudnn/compiler/kernel_launch.h"
#include "rudnn/dtype.h"

namespace rudnn::compiler {

// Where a kernel config came from (visible through rudnn::autotune::last_choice()).
enum class ConfigSource {
  Heuristic,  // rudnn-select-kernel-config
  Cache,      // the autotune cache (persistent, or this process's in-memory results)
  Tuned,      // timed just now (RUDNN_AUTOTUNE=full and a cache miss)
  Forced,     // the caller attached it (tests, tools)
};
std::string_view config_source_name(ConfigSource source);  // "heuristic", "cache", "tuned", "forced"

// One op as the pass sees it. Dynamic extents are -1 in `shapes`; `dynamic_values` holds this
// call's values of those extents in order (operand by operand, dim by dim) when the caller knows
// them (the ops layer always does; rudnn-opt does not, then it is empty).
struct ConfigQuery {
  std::string op_name;                            // "rudnn.rms_norm"
  std::vector<DType> dtypes;                      // of the op's present operands, in order
  std::vector<std::vector<std::int64_t>> shapes;  // of the op's present operands, in order
  std::vector<std::int64_t> dynamic_values;
  // Op choices that select a different search space, in the op's own order (rudnn.swiglu_experts:
  // {tensor_core 0/1}); empty for ops without any.
  std::vector<std::int64_t> options;
};

struct ProvidedConfig {
  KernelConfig config;
  ConfigSource source = ConfigSource::Cache;
};

class ConfigProvider {
 public:
  virtual ~ConfigProvider() = default;
  // A config for `query`, or nothing to let the heuristic decide. Not const: a provider may tune
  // (and remember what it answered). The config must be one the op's verifier accepts; the pass
  // pipeline verifies the op after attaching it.
  virtual std::optional<ProvidedConfig> provide(const ConfigQuery& query) = 0;
};

}  // namespace rudnn::compiler
