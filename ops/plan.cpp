// Plans: a lowered op's kernels built and loaded once (build_plan), and the warm path that
// launches them with a call's operands and temporaries (run_plan).
#include "jit.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "env.h"
#include "log.h"
#include "queue_impl.h"
#include "stats_counters.h"
#include "checked_math.h"

namespace rudnn::ops {

namespace {
std::atomic<bool>& poison_flag() {
  static std::atomic<bool> flag = [] {
    const char* v = std::getenv("RUDNN_POISON_OUTPUTS");
    return v && std::strcmp(v, "1") == 0;
  }();
  return flag;
}
}  // namespace

bool poison_outputs() { return poison_flag().load(std::memory_order_relaxed); }
void set_poison_outputs(bool on) { poison_flag() = on; }

const compiler::KernelLaunch* launch_over_shared_memory(const compiler::LoweredOp& lowered, std::size_t limit) {
  for (const auto& launch : lowered.launches)
    if (launch.dynamic_shared_bytes < 0 || static_cast<std::uint64_t>(launch.dynamic_shared_bytes) > limit)
      return &launch;
  return nullptr;
}

Result<std::shared_ptr<const Plan>, RuntimeError> build_plan(const Device& device, const compiler::LoweredOp& lowered) {
  // The first plan a process builds is the switches' first use: an undocumented value is an error.
  if (auto env = runtime::check_environment(); !env.ok()) return env.error();
  // Loaded kernels are shared between plans that instantiate the same source (e.g. two epsilons).
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::shared_ptr<runtime::LoadedKernel>> loaded;
  auto plan = std::make_shared<Plan>();
  plan->op_name = lowered.op_name;
  plan->family = family_counters_of(lowered.op_name);
  plan->temporaries = lowered.temporaries;
  plan->first_temporary_slot = lowered.first_temporary_slot;
  // Every kernel within the device's opt-in shared memory before any is compiled (the heuristics
  // pick within it; a forced config may not): the launch would fail, after the plan's earlier
  // kernels ran, and a size past 32 bits would wrap in the launch geometry.
  const std::size_t shared_limit = device.info().shared_memory_per_block_optin;
  if (const compiler::KernelLaunch* over = launch_over_shared_memory(lowered, shared_limit))
    return RuntimeError(ErrorKind::Unsupported, "dynamic shared memory of kernel " + over->entry,
                        fmt::format("0 to {} bytes (the device's opt-in limit per block)", shared_limit),
                        fmt::format("{} bytes", over->dynamic_shared_bytes));
  for (const auto& launch : lowered.launches) {
    std::shared_ptr<runtime::LoadedKernel> kernel;
    const auto module_key = std::make_pair(device.to_string(), launch.source);
    {
      std::lock_guard lock(mutex);
      if (auto it = loaded.find(module_key); it != loaded.end()) kernel = it->second;
    }
    if (!kernel) {
      auto binary = kernel_binary(device, launch, lowered.op_name, lowered.call);
      if (!binary.ok()) return binary.error();
      auto k = device.backend().load_kernel(binary.value(), launch.entry);
      if (!k.ok()) return k.error();
      kernel = k.value();
      std::lock_guard lock(mutex);
      loaded.emplace(module_key, kernel);
    }
    PreparedKernel prepared{kernel, launch};
    prepared.launch.source.clear();
    plan->kernels.push_back(std::move(prepared));
  }
  return std::shared_ptr<const Plan>(std::move(plan));
}

namespace {

// Sizes of a launch (grid, size params, temporaries) are products of the call's extents: each is
// computed with overflow checks, and an overflow is an error naming the kernel rather than a
// wrapped grid or a tiny workspace for a huge problem.
std::optional<std::int64_t> size_value(const compiler::SizeRef& ref, std::span<const OperandView> operands) {
  using K = compiler::SizeRef::Kind;
  switch (ref.kind) {
    case K::Const: return ref.value;
    case K::Rows: {
      const Shape& s = *operands[static_cast<std::size_t>(ref.operand)].shape;
      return checked_element_count(Shape(s.begin(), s.end() - (s.empty() ? 0 : 1)));
    }
    case K::Dim: return (*operands[static_cast<std::size_t>(ref.operand)].shape)[static_cast<std::size_t>(ref.dim)];
    case K::RowStride: {  // the entry accepted the layout (ops::check_layout); a contiguous one: the last extent
      const OperandView& v = operands[static_cast<std::size_t>(ref.operand)];
      if (v.strides == nullptr) return v.shape->empty() ? 1 : v.shape->back();
      return row_stride(*v.shape, *v.strides);
    }
    case K::Stride: {  // the entry accepted the view's strides; a contiguous operand: the later extents
      const OperandView& v = operands[static_cast<std::size_t>(ref.operand)];
      const auto d = static_cast<std::size_t>(ref.dim);
      // A dim of extent 1 is never stepped over: 0, whatever a caller's view carries there, so that
      // kernels comparing layouts (flash_mma's key and value strides) see only what they step.
      if ((*v.shape)[d] == 1) return 0;
      if (v.strides != nullptr) return (*v.strides)[d];
      std::optional<std::int64_t> stride = 1;
      for (std::size_t i = d + 1; stride && i < v.shape->size(); ++i) stride = checked_mul(*stride, (*v.shape)[i]);
      return stride;
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> evaluate(const compiler::SizeExpr& e, std::span<const OperandView> operands) {
  std::int64_t n = 1;
  for (const auto& f : e.factors) {
    auto v = size_value(f, operands);
    if (!v) return std::nullopt;
    auto product = checked_mul(n, *v);
    if (!product) return std::nullopt;
    n = *product;
  }
  if (e.divisor <= 0) return std::nullopt;
  return n / e.divisor + (n % e.divisor != 0 ? 1 : 0);  // ceil, without n + divisor - 1 overflowing
}

RuntimeError size_overflow(const std::string& what, const std::string& op) {
  return RuntimeError(ErrorKind::InvalidValue, what, "a size that fits in 64 bits",
                      "an overflowing product of the call's extents", "in " + op);
}

}  // namespace

namespace {

Status<RuntimeError> launch_kernels(const Plan& plan, const Queue& queue, std::span<const OperandView> operands);

constexpr std::size_t kMaxSlots = 24;

// A temporary's shape for `elements` elements: the IR's static extents, its one dynamic extent
// taking the rest.
void temporary_shape(const compiler::Temporary& t, std::int64_t elements, Shape& shape) {
  shape = t.shape;
  std::int64_t known = 1;
  for (std::int64_t d : t.shape) known *= d < 0 ? 1 : d;  // static extents of the IR: small
  for (std::int64_t& d : shape)
    if (d < 0) d = known > 0 ? elements / known : 0;
}

// The call's operands plus its temporaries, allocated on the queue for the duration of the launches.
// A caller may supply a temporary (operands past first_temporary_slot, non-null): a workspace it
// owns (paged attention's SplitWorkspace), so that warm calls allocate nothing.
Status<RuntimeError> run_with_temporaries(const Plan& plan, const Queue& queue, std::span<const OperandView> operands) {
  const std::size_t first = static_cast<std::size_t>(plan.first_temporary_slot);
  const std::size_t total = first + plan.temporaries.size();
  if (operands.size() < first || operands.size() > total || total > kMaxSlots)
    return RuntimeError(ErrorKind::Internal, plan.op_name,
                        fmt::format("{} operand slots (+ up to {} supplied temporaries, at most {} in all)", first,
                                    plan.temporaries.size(), kMaxSlots),
                        std::to_string(operands.size()));
  std::array<OperandView, kMaxSlots> views{};
  std::array<Shape, kMaxSlots> shapes{};
  std::array<bool, kMaxSlots> owned{};
  std::copy(operands.begin(), operands.end(), views.begin());
  auto& backend = queue.device().backend();
  void* stream = queue.impl().stream();
  Status<RuntimeError> status;
  for (std::size_t i = first; i < total && status.ok(); ++i) {
    const compiler::Temporary& t = plan.temporaries[i - first];
    const auto elements = evaluate(t.elements, std::span<const OperandView>(views.data(), i));
    const auto byte_count =
        elements ? checked_mul(std::max<std::int64_t>(*elements, 1), t.element_bytes) : std::nullopt;
    if (!byte_count) {
      status = size_overflow(fmt::format("temporary {}", i - first), plan.op_name);
      break;
    }
    if (i < operands.size() && operands[i].data) {
      if (element_count(*operands[i].shape) < *elements)
        status = RuntimeError(ErrorKind::Internal, fmt::format("temporary {} of {}", i - first, plan.op_name),
                              fmt::format("a supplied workspace of at least {} elements", *elements),
                              shape_to_string(*operands[i].shape));
      continue;
    }
    temporary_shape(t, *elements, shapes[i]);
    const std::size_t bytes = static_cast<std::size_t>(*byte_count);
    auto memory = backend.allocate(bytes, stream);
    if (!memory.ok()) {
      const RuntimeError& e = memory.error();
      status = RuntimeError(e.kind(), fmt::format("temporary {} of {}", i - first, plan.op_name), e.expected(),
                            e.actual(), e.detail());
      break;
    }
    views[i] = {memory.value(), &shapes[i]};
    owned[i] = true;
    if (poison_outputs()) status = backend.fill_bytes(stream, memory.value(), 0xff, bytes);
  }
  if (status.ok()) status = launch_kernels(plan, queue, std::span<const OperandView>(views.data(), total));
  for (std::size_t i = first; i < total; ++i)
    if (owned[i]) backend.release(views[i].data, stream);
  return status;
}

}  // namespace

Result<WorkspaceLayout, RuntimeError> workspace_layout(const Plan& plan, std::span<const OperandView> operands) {
  const std::size_t first = static_cast<std::size_t>(plan.first_temporary_slot);
  WorkspaceLayout layout;
  layout.count = plan.temporaries.size();
  if (operands.size() != first || layout.count > WorkspaceLayout::kMaxTemporaries || first + layout.count > kMaxSlots)
    return RuntimeError(
        ErrorKind::Internal, plan.op_name,
        fmt::format("{} operand slots and at most {} temporaries", first, WorkspaceLayout::kMaxTemporaries),
        fmt::format("{} slots, {} temporaries", operands.size(), layout.count));
  std::array<OperandView, kMaxSlots> views{};
  std::copy(operands.begin(), operands.end(), views.begin());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < layout.count; ++i) {
    const compiler::Temporary& t = plan.temporaries[i];
    const auto elements = evaluate(t.elements, std::span<const OperandView>(views.data(), first + i));
    const auto bytes = elements ? checked_mul(std::max<std::int64_t>(*elements, 1), t.element_bytes) : std::nullopt;
    const auto start =
        checked_add(static_cast<std::int64_t>(offset), static_cast<std::int64_t>(WorkspaceLayout::kAlignment - 1));
    if (!bytes || !start || !checked_add(*start, *bytes))
      return size_overflow(fmt::format("temporary {}", i), plan.op_name);
    temporary_shape(t, *elements, layout.shapes[i]);
    offset = static_cast<std::size_t>(*start) / WorkspaceLayout::kAlignment * WorkspaceLayout::kAlignment;
    layout.offsets[i] = offset;
    offset += static_cast<std::size_t>(*bytes);
    views[first + i] = {nullptr, &layout.shapes[i]};
  }
  layout.bytes = offset;
  return layout;
}

Status<RuntimeError> run_plan_in_workspace(const Plan& plan, const Queue& queue, std::span<const OperandView> operands,
                                           void* workspace, std::size_t workspace_bytes) {
  auto layout = workspace_layout(plan, operands);
  if (!layout.ok()) return layout.error();
  // Checked here, before any launch, so a caller's output is untouched when it is too small.
  if (layout->bytes > workspace_bytes || (layout->bytes > 0 && workspace == nullptr))
    return RuntimeError(ErrorKind::InvalidValue, "workspace", fmt::format("at least {} bytes", layout->bytes),
                        fmt::format("{} bytes", workspace_bytes), "for " + plan.op_name);
  std::array<OperandView, kMaxSlots> views{};
  std::copy(operands.begin(), operands.end(), views.begin());
  const std::size_t first = operands.size();
  for (std::size_t i = 0; i < layout->count; ++i)
    views[first + i] = {static_cast<std::byte*>(workspace) + layout->offsets[i], &layout->shapes[i]};
  return run_plan(plan, queue, std::span<const OperandView>(views.data(), first + layout->count));
}

Status<RuntimeError> run_plan(const Plan& plan, const Queue& queue, std::span<const OperandView> operands) {
  if (!plan.temporaries.empty()) return run_with_temporaries(plan, queue, operands);
  return launch_kernels(plan, queue, operands);
}

namespace {

Status<RuntimeError> launch_kernels(const Plan& plan, const Queue& queue, std::span<const OperandView> operands) {
  const runtime::FamilyScope scope(plan.family);
  const Device& device = queue.device();
  const DeviceInfo& info = device.info();
  for (const auto& pk : plan.kernels) {
    const auto& l = pk.launch;
    runtime::LaunchGeometry g;
    bool empty = false;
    for (int i = 0; i < 3; ++i) {
      const auto grid = evaluate(l.grid[i], operands);
      if (!grid) return size_overflow(fmt::format("grid dimension {} of kernel {}", i, l.entry), plan.op_name);
      const std::int64_t n = *grid;
      if (n <= 0) empty = true;
      // Templates stride over the grid, so a grid larger than the device allows is clamped.
      const std::int64_t limit = i == 0 ? info.max_grid_x : info.max_grid_yz;
      g.grid[i] = static_cast<std::uint32_t>(std::min(n, limit));
      g.block[i] = static_cast<std::uint32_t>(l.block[i]);
    }
    if (empty) continue;                                                          // nothing to do (e.g. zero rows)
    g.dynamic_shared_bytes = static_cast<std::uint32_t>(l.dynamic_shared_bytes);  // <= the limit (build_plan)

    // Argument storage without heap allocation: one 8-byte slot per parameter.
    constexpr std::size_t kMaxParams = 40;
    if (l.params.size() > kMaxParams)
      return RuntimeError(ErrorKind::Internal, "kernel " + l.entry, "at most 40 parameters",
                          std::to_string(l.params.size()));
    alignas(8) std::array<std::uint64_t, kMaxParams> slots{};
    std::array<void*, kMaxParams> args{};
    for (std::size_t i = 0; i < l.params.size(); ++i) {
      const auto& p = l.params[i];
      using K = compiler::KernelParam::Kind;
      switch (p.kind) {
        case K::Buffer: {
          void* ptr = operands[static_cast<std::size_t>(p.operand)].data;
          std::memcpy(&slots[i], &ptr, sizeof(ptr));
          break;
        }
        case K::NullBuffer: slots[i] = 0; break;
        case K::Size: {
          const auto size = evaluate(p.size, operands);
          if (!size) return size_overflow(fmt::format("parameter {} of kernel {}", p.name, l.entry), plan.op_name);
          const long long v = *size;
          std::memcpy(&slots[i], &v, sizeof(v));
          break;
        }
        case K::F32: std::memcpy(&slots[i], &p.f32, sizeof(float)); break;
      }
      args[i] = &slots[i];
    }
    runtime::count(&runtime::StatCounters::kernel_launches);
    if (auto s = device.backend().launch(queue.impl().stream(), *pk.kernel, g, args.data()); !s.ok()) return s;
  }
  return {};
}

}  // namespace

}  // namespace rudnn::ops
