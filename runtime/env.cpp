#include "env.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace rudnn::runtime {

namespace {

bool is_digits(std::string_view s) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool one_of(std::string_view v, std::initializer_list<std::string_view> values) {
  for (auto x : values)
    if (v == x) return true;
  return false;
}

// Whether `value` is one of the documented values of switch `name`.
bool accepted(std::string_view name, std::string_view value) {
  // The spelling only: whether cuda:N exists is Device::default_device's error (NoDevice).
  if (name == "RUDNN_DEVICE")
    return value == "host" || value == "cuda" || (value.substr(0, 5) == "cuda:" && is_digits(value.substr(5)));
  if (name == "RUDNN_AUTOTUNE") return one_of(value, {"off", "cached", "full"});
  if (name == "RUDNN_LOG") return one_of(value, {"0", "off", "info", "debug"});
  if (name == "RUDNN_EMU_SCHEDULE")
    return one_of(value, {"forward", "reverse", "random"}) ||
           (value.substr(0, 7) == "random:" && is_digits(value.substr(7)));
  if (name == "RUDNN_EMU_THREADS")
    return is_digits(value) && std::strtoull(std::string(value).c_str(), nullptr, 10) >= 1 &&
           std::strtoull(std::string(value).c_str(), nullptr, 10) <= 4096;
  if (name == "RUDNN_EMU_STACK_KIB") {
    if (!is_digits(value)) return false;
    const auto kib = std::strtoull(std::string(value).c_str(), nullptr, 10);
    return kib >= 64 && kib <= 8192;
  }
  return one_of(value, {"0", "1"});  // the on/off flags
}

}  // namespace

const std::vector<EnvSwitch>& env_switches() {
  static const std::vector<EnvSwitch> switches = {
      {"RUDNN_DEVICE", "host or cuda:N"},
      {"RUDNN_DISABLE_JIT", "0 or 1"},
      {"RUDNN_AUTOTUNE", "off, cached or full"},
      {"RUDNN_AUTOTUNE_CACHE_READONLY", "0 or 1"},
      {"RUDNN_POISON_OUTPUTS", "0 or 1"},
      {"RUDNN_LOG", "0, off, info or debug"},
      {"RUDNN_EMU_SCHEDULE", "forward, reverse, random or random:SEED"},
      {"RUDNN_EMU_THREADS", "an integer in [1, 4096]"},
      {"RUDNN_EMU_STACK_KIB", "an integer in [64, 8192]"},
  };
  return switches;
}

Status<RuntimeError> check_environment() {
  for (const EnvSwitch& s : env_switches()) {
    const char* v = std::getenv(s.name);
    if (!v || !*v || accepted(s.name, v)) continue;
    return RuntimeError(ErrorKind::InvalidValue, s.name, std::string(s.values) + " (or unset)",
                        "\"" + std::string(v) + "\"", "environment variable");
  }
  return {};
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "1") == 0;
}

}  // namespace rudnn::runtime
