#include "contracts/arch.h"

#include <cstdlib>

namespace rudnn::contracts {

bool has_mma_m16n8k16(const std::string& arch) {
  if (arch.empty() || arch.rfind("host", 0) == 0) return true;
  // "sm_90a", "sm_80", "compute_90": the major.minor digits after the prefix.
  const auto underscore = arch.find('_');
  if (underscore == std::string::npos) return false;
  int number = 0, digits = 0;
  for (std::size_t i = underscore + 1; i < arch.size() && arch[i] >= '0' && arch[i] <= '9' && digits < 4; ++i, ++digits)
    number = number * 10 + (arch[i] - '0');
  return digits > 0 && number >= 80;
}

bool has_wgmma(const std::string& arch, bool host_emulation) {
  if (arch.empty() || arch.rfind("host", 0) == 0) return true;
  if (arch != "sm_90a") return false;
  if (host_emulation) return true;  // before the environment: callers on a warm path ask this way
  const char* opt_in = std::getenv("RUDNN_WGMMA");
  return opt_in != nullptr && std::string(opt_in) == "1";
}

bool heuristics_take_wgmma(const std::string& arch) { return !arch.empty() && has_wgmma(arch); }

}  // namespace rudnn::contracts
