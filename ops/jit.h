#pragma once
// The cold path shared by every op family: lowered kernels → compiled binaries (pack, disk cache or
// compiler: ops/kernel_lookup.cpp) → loaded kernels → a Plan; and the warm path: a Plan + operands →
// launches (ops/plan.cpp).
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/kernel_cache.h"
#include "device_backend.h"
#include "rudnn/compiler/kernel_launch.h"
#include "rudnn/compiler/pipeline.h"
#include "stats_counters.h"
#include "rudnn/tensor.h"

namespace rudnn::ops {

struct PreparedKernel {
  std::shared_ptr<runtime::LoadedKernel> kernel;
  compiler::KernelLaunch launch;  // params, grid rule, block, shared bytes, config (source dropped)
};

struct Plan {
  std::string op_name;
  runtime::StatCounters* family = nullptr;  // the op family's counters (rudnn::family_stats)
  std::vector<PreparedKernel> kernels;
  std::vector<compiler::Temporary> temporaries;  // allocated per call (LoweredOp::temporaries)
  int first_temporary_slot = 0;
};

// The operands of one call, numbered as compiler::SizeRef numbers them (absent optional operands
// keep their slot with data == nullptr).
struct OperandView {
  void* data = nullptr;
  const Shape* shape = nullptr;
  const Shape* strides = nullptr;  // null: contiguous (temporaries, rudnn's own tensors)
};

// The counters of the family of `op_name` ("rudnn.rms_norm" → "normalization"; an op of no family
// counts under its own name). Cold paths only: a lookup.
runtime::StatCounters* family_counters_of(std::string_view op_name);

compiler::Target target_for(const Device& device);

// Compiles (or loads from the caches) every kernel of `lowered` for `device`.
Result<std::shared_ptr<const Plan>, RuntimeError> build_plan(const Device& device, const compiler::LoweredOp& lowered);

// The first launch of `lowered` whose dynamic shared memory is negative or above `limit` (a device's
// or an arch's opt-in bytes per block), or null: the one test of build_plan, rudnn-precompile and the
// candidate lists (lower_configs).
const compiler::KernelLaunch* launch_over_shared_memory(const compiler::LoweredOp& lowered, std::size_t limit);

// Tests: fill every op output with NaN bytes before its kernels run, so an element a kernel fails
// to write shows up. Also on with RUDNN_POISON_OUTPUTS=1.
bool poison_outputs();
void set_poison_outputs(bool on);

// Launches the plan's kernels in order on `queue`. `operands` are the op's operand and result slots;
// run_plan adds the plan's temporaries (stream-ordered allocations, released after the launches);
// slots past the op's own may supply a temporary instead (a workspace the caller owns).
Status<RuntimeError> run_plan(const Plan& plan, const Queue& queue, std::span<const OperandView> operands);

// One caller workspace in place of a plan's temporaries (SPEC §13): temporary i at offsets[i]
// (256-byte aligned) with shapes[i]; the workspace holds at least `bytes` (0: the plan has none).
struct WorkspaceLayout {
  static constexpr std::size_t kAlignment = 256;
  static constexpr std::size_t kMaxTemporaries = 8;
  std::size_t count = 0;
  std::array<Shape, kMaxTemporaries> shapes;
  std::array<std::size_t, kMaxTemporaries> offsets{};
  std::size_t bytes = 0;
};
// The layout of `plan`'s temporaries for a call's operand and result slots (`operands`: their
// shapes; data may be null). An overflowing size is an error naming the plan's op.
Result<WorkspaceLayout, RuntimeError> workspace_layout(const Plan& plan, std::span<const OperandView> operands);
// run_plan with every temporary carved out of `workspace` (`workspace_bytes` of it): the call
// allocates nothing. Too small is InvalidValue naming `workspace`, before any launch.
Status<RuntimeError> run_plan_in_workspace(const Plan& plan, const Queue& queue, std::span<const OperandView> operands,
                                           void* workspace, std::size_t workspace_bytes);

// The binary of one kernel for `device`: the kernel packs of RUDNN_KERNEL_PACK (first), the disk
// cache, else a compile. With RUDNN_DISABLE_JIT=1 a kernel in neither is a JitDisabled error that
// names the op, `call` (its operands and shapes, LoweredOp::call), the arch and the kernel config.
Result<runtime::KernelBinary, RuntimeError> kernel_binary(const Device& device, const compiler::KernelLaunch& launch,
                                                          const std::string& op_name, const std::string& call = {});

// --- Keys and compiles shared with rudnn-precompile, so a pack holds exactly what the runtime
// looks up. An arch is a GPU arch ("sm_90a") or the host device's compile arch ("host-x86_64").

// rudnn's version and the embedded templates' hash: part of every key.
std::string library_version();
bool is_host_arch(const std::string& arch);
// The key of `launch` compiled for `arch` by `compiler_version` (the options are the backend's own).
runtime::KernelCacheKey kernel_cache_key(const compiler::KernelLaunch& launch, const std::string& arch,
                                         const std::string& compiler_version);
// The version of the compiler this process would use for `arch`: "nvrtc 13.0" or the host compiler's
// (NoDevice when NVRTC is missing).
Result<std::string, RuntimeError> local_compiler_version(const std::string& arch);
// Compiles `launch` for `arch` with NVRTC or the host compiler (`work_dir` keeps generated sources).
Result<runtime::KernelBinary, RuntimeError> compile_kernel(const compiler::KernelLaunch& launch,
                                                           const std::string& arch, const std::string& work_dir);

}  // namespace rudnn::ops
