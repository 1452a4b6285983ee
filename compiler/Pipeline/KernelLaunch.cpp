#include "rudnn/compiler/kernel_launch.h"

namespace rudnn::compiler {

std::string KernelConfig::to_string() const {
  std::string out;
  for (const auto& [key, value] : values) {
    if (!out.empty()) out += ',';
    out += key;
    out += '=';
    out += std::to_string(value);
  }
  return out;
}

}  // namespace rudnn::compiler
