#include "rudnn/autotune/pruning.h"

#include <fmt/format.h>

namespace rudnn::autotune {

std::optional<std::string> prune_reason(const StaticFacts& f, const DeviceInfo& limits) {
  if (f.block_threads > limits.max_threads_per_block)
    return fmt::format("{}: block of {} threads > the device's {}", f.entry, f.block_threads,
                       limits.max_threads_per_block);
  std::int64_t shared = f.dynamic_shared_bytes;
  if (f.ptxas && f.ptxas->found) {
    const auto& r = *f.ptxas;
    if (r.spill_stores_bytes + r.spill_loads_bytes > 0)
      return fmt::format("{}: spills ({} bytes stored, {} loaded)", f.entry, r.spill_stores_bytes, r.spill_loads_bytes);
    const std::int64_t regs = std::int64_t{r.registers} * f.block_threads;
    if (regs > limits.registers_per_sm)
      return fmt::format("{}: {} registers x {} threads = {} > {} registers per SM", f.entry, r.registers,
                         f.block_threads, regs, limits.registers_per_sm);
    shared += r.shared_bytes;
  }
  if (shared > static_cast<std::int64_t>(limits.shared_memory_per_block_optin))
    return fmt::format("{}: {} bytes of shared memory > the device's {}", f.entry, shared,
                       limits.shared_memory_per_block_optin);
  return std::nullopt;
}

Result<std::vector<StaticFacts>, RuntimeError> static_facts(const compiler::LoweredOp& lowered,
                                                            const compiler::Target& target) {
  std::vector<StaticFacts> facts;
  for (const auto& launch : lowered.launches) {
    StaticFacts f;
    f.entry = launch.entry;
    f.block_threads = launch.block[0] * launch.block[1] * launch.block[2];
    f.dynamic_shared_bytes = launch.dynamic_shared_bytes;
    if (!target.host_emulation) {
      auto compiled = compiler::nvrtc::compile(launch.source, launch.entry, target.arch);
      if (!compiled.ok()) return compiled.error();
      f.ptxas = compiled->report;
    }
    facts.push_back(std::move(f));
  }
  return facts;
}

}  // namespace rudnn::autotune
