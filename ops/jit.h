#pragma once
// The cold path shared by every op family: lowered kernels → compiled binaries (disk cache, pack or
// compiler) → loaded kernels → a Plan; and the warm path: a Plan + operands → launches.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device_backend.h"
#include "rudnn/compiler/kernel_launch.h"
#include "rudnn/compiler/pipeline.h"
#include "rudnn/tensor.h"

namespace rudnn::ops {

struct PreparedKernel {
  std::shared_ptr<runtime::LoadedKernel> kernel;
  compiler::KernelLaunch launch;  // params, grid rule, block, shared bytes, config (source dropped)
};

struct Plan {
  std::string op_name;
  std::vector<PreparedKernel> kernels;
};

// The operands of one call, numbered as compiler::SizeRef numbers them (absent optional operands
// keep their slot with data == nullptr).
struct OperandView {
  void* data = nullptr;
  const Shape* shape = nullptr;
};

compiler::Target target_for(const Device& device);

// Compiles (or loads from the caches) every kernel of `lowered` for `device`.
Result<std::shared_ptr<const Plan>, RuntimeError> build_plan(const Device& device, const compiler::LoweredOp& lowered);

// Tests: fill every op output with NaN bytes before its kernels run, so an element a kernel fails
// to write shows up. Also on with RUDNN_POISON_OUTPUTS=1.
bool poison_outputs();
void set_poison_outputs(bool on);

// Launches the plan's kernels in order on `queue`.
Status<RuntimeError> run_plan(const Plan& plan, const Queue& queue, std::span<const OperandView> operands);

// The binary of one kernel for `device`: disk cache, else compile (unless RUDNN_DISABLE_JIT=1).
Result<runtime::KernelBinary, RuntimeError> kernel_binary(const Device& device, const compiler::KernelLaunch& launch,
                                                          const std::string& op_name);

}  // namespace rudnn::ops
