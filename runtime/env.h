#pragma once
// The RUDNN_* switches and the one rule they follow (the guide's): each takes only its documented
// values, unset or empty means its default, and anything else is an InvalidValue error naming the
// variable, the values it takes and what it holds — returned by the first call that needs the
// library's cold path (building a plan, choosing the default device), never silently replaced.
// Paths (RUDNN_CACHE_DIR, RUDNN_KERNEL_PACK, RUDNN_AUTOTUNE_CACHE, RUDNN_HOST_CXX) are not switches.
#include <string>
#include <vector>

#include "rudnn/error.h"

namespace rudnn::runtime {

struct EnvSwitch {
  const char* name;
  const char* values;  // as the error and docs/deployment.md state them
};

// Every switch the library reads, with its documented values.
const std::vector<EnvSwitch>& env_switches();

// The first switch holding an undocumented value, or success. Cheap (a few getenv); called on the
// cold paths only.
Status<RuntimeError> check_environment();

// The value of a switch checked by check_environment: false when unset, empty or "0".
bool env_flag(const char* name);

}  // namespace rudnn::runtime
