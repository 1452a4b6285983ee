// Targets for GPUs that are not in this machine: what rudnn-precompile lowers for. The runtime's
// target for a real GPU comes from the device (ops::target_for), so every field that influences
// lowering must equal what the driver reports for that arch. Today lowering reads `arch`,
// `limits.max_threads_per_block` and `limits.shared_memory_per_block_optin`
// (rudnn-select-kernel-config); the other limits are the flagship part's, so later passes
// (occupancy, split counts) see real numbers.
#include <fmt/format.h>

#include "rudnn/compiler/pipeline.h"

namespace rudnn::compiler {

namespace {

struct ArchLimits {
  const char* arch;
  const char* part;  // the flagship part whose SM count and L2 are used
  int compute_capability;
  std::size_t shared_optin;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
  int multiprocessors;
  std::size_t l2_bytes;
};

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

// CUDA C Programming Guide, "Technical Specifications per Compute Capability", and the parts'
// data sheets. Every arch here: 1024 threads per block, 48 KiB of shared memory per block without
// opt-in, 64 Ki 32-bit registers per SM, grids up to 2^31-1 x 65535 x 65535.
constexpr ArchLimits kArchs[] = {
    {"sm_80", "NVIDIA A100-SXM4-80GB", 80, 163 * KiB, 108, 40 * MiB},
    {"sm_86", "NVIDIA A40", 86, 99 * KiB, 84, 6 * MiB},
    {"sm_89", "NVIDIA L40S", 89, 99 * KiB, 142, 48 * MiB},
    // Plain sm_90 is accepted for packs meant for code that asks for it; the runtime on a Hopper
    // GPU compiles for (and looks up) sm_90a.
    {"sm_90", "NVIDIA H100 80GB HBM3", 90, 227 * KiB, 132, 50 * MiB},
    {"sm_90a", "NVIDIA H100 80GB HBM3", 90, 227 * KiB, 132, 50 * MiB},
};

}  // namespace

std::vector<std::string> known_archs() {
  std::vector<std::string> out;
  for (const auto& a : kArchs) out.emplace_back(a.arch);
  return out;
}

Result<Target, RuntimeError> target_for_arch(const std::string& arch) {
  for (const auto& a : kArchs) {
    if (arch != a.arch) continue;
    Target t;
    t.arch = a.arch;
    t.host_emulation = false;
    DeviceInfo& i = t.limits;
    i.name = fmt::format("{} limits ({})", a.arch, a.part);
    i.arch = a.arch;
    i.compute_capability = a.compute_capability;
    i.warp_size = 32;
    i.max_threads_per_block = 1024;
    i.max_grid_x = 2147483647;
    i.max_grid_yz = 65535;
    i.shared_memory_per_block = 48 * KiB;
    i.shared_memory_per_block_optin = a.shared_optin;
    i.registers_per_sm = 65536;
    i.multiprocessors = a.multiprocessors;
    i.l2_bytes = a.l2_bytes;
    i.driver_version = 0;  // unknown offline; nothing in lowering reads it
    return t;
  }
  std::string known;
  for (const auto& a : kArchs) known += (known.empty() ? "" : ", ") + std::string(a.arch);
  return RuntimeError(ErrorKind::InvalidValue, "arch", "one of " + known, arch.empty() ? "\"\"" : arch);
}

}  // namespace rudnn::compiler
