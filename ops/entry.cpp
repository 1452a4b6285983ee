#include "entry.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <span>

#include "family.h"

namespace rudnn::ops {

std::optional<RuntimeError> check_contiguous(const Tensor& t, const char* name) {
  if (t.is_contiguous()) return std::nullopt;
  return RuntimeError(ErrorKind::ShapeMismatch, name, "a contiguous tensor", "strides " + shape_to_string(t.strides()));
}

namespace {

// Whether no two elements of `t` share storage: ordered by stride, each dim stepped over must step
// past the whole span of the ones inside it (sufficient, and what every engine's view satisfies).
bool elements_disjoint(const Tensor& t) {
  std::array<std::pair<std::int64_t, std::int64_t>, 8> dims{};  // (stride, extent) of stepped dims
  std::size_t n = 0;
  for (std::size_t i = 0; i < t.shape().size(); ++i) {
    if (t.shape()[i] == 0) return true;  // no element at all
    if (t.shape()[i] == 1) continue;
    if (n == dims.size()) return false;
    dims[n++] = {t.strides()[i], t.shape()[i]};
  }
  std::sort(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(n));
  std::int64_t span = 1;  // elements the dims so far cover
  for (std::size_t i = 0; i < n; ++i) {
    if (dims[i].first < span) return false;
    span = dims[i].first * dims[i].second;  // the view's span fits in 63 bits (Tensor::view)
  }
  return true;
}

}  // namespace

std::optional<RuntimeError> check_layout(const Tensor& t, const char* name, Layout layout) {
  if (layout == Layout::Contiguous) return check_contiguous(t, name);
  if (layout == Layout::Strided) {
    if (t.shape().empty() || t.shape().back() <= 1 || t.strides().back() == 1) return std::nullopt;
    return RuntimeError(ErrorKind::ShapeMismatch, name, "unit stride in the last dim (any strides in the others)",
                        "strides " + shape_to_string(t.strides()) + " for shape " + shape_to_string(t.shape()));
  }
  if (t.row_stride()) return std::nullopt;
  return RuntimeError(ErrorKind::ShapeMismatch, name,
                      "rows with one row stride >= the last extent and unit stride in the last dim",
                      "strides " + shape_to_string(t.strides()) + " for shape " + shape_to_string(t.shape()));
}

std::optional<RuntimeError> check_same_queue(const Tensor& t, const char* name, const Tensor& ref,
                                             const char* ref_name) {
  if (t.device() == ref.device() && !(t.queue() == ref.queue()))
    return RuntimeError(ErrorKind::QueueMismatch, name, std::string("the queue of ") + ref_name,
                        "another queue of the same device");
  return std::nullopt;
}

std::optional<RuntimeError> check_operands(std::initializer_list<std::pair<const Tensor*, const char*>> tensors) {
  const std::pair<const Tensor*, const char*>* first = nullptr;
  for (const auto& t : tensors) {
    if (!t.first) continue;
    if (auto e = check_contiguous(*t.first, t.second)) return e;
    if (!first)
      first = &t;
    else if (auto e = check_same_queue(*t.first, t.second, *first->first, first->second))
      return e;
  }
  return std::nullopt;
}

std::optional<RuntimeError> check_output(const Tensor& out, const char* name, const Shape& shape, DType dtype,
                                         const Tensor& ref, std::span<const NamedTensor> inputs, Layout layout) {
  if (out.shape() != shape)
    return RuntimeError(ErrorKind::ShapeMismatch, name, shape_to_string(shape), shape_to_string(out.shape()));
  if (out.dtype() != dtype)
    return RuntimeError(ErrorKind::UnsupportedDType, name, std::string(dtype_name(dtype)),
                        std::string(dtype_name(out.dtype())));
  if (!(out.device() == ref.device()))
    return RuntimeError(ErrorKind::DeviceMismatch, name, "the inputs' device (" + ref.device().to_string() + ")",
                        out.device().to_string());
  if (auto e = check_layout(out, name, layout)) return e;
  if (layout == Layout::Strided && !elements_disjoint(out))
    return RuntimeError(ErrorKind::InvalidValue, name, "strides under which no two elements share storage",
                        "strides " + shape_to_string(out.strides()) + " for shape " + shape_to_string(out.shape()));
  if (auto e = check_same_queue(out, name, ref, "the inputs")) return e;
  const NamedTensor self{&out, name};
  return check_disjoint(std::span(&self, 1), inputs);
}

std::optional<RuntimeError> check_outputs(std::span<const OutputBuffer> outputs, const Tensor& ref,
                                          std::span<const NamedTensor> inputs) {
  std::array<NamedTensor, 4> named{};
  if (outputs.size() > named.size()) std::abort();  // no entry has more outputs
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const OutputBuffer& o = outputs[i];
    if (auto e = check_output(*o.tensor, o.name, o.shape, o.dtype, ref, inputs)) return e;
    named[i] = {o.tensor, o.name};
  }
  return check_disjoint(std::span(named.data(), outputs.size()), {});
}

Result<Tensor, RuntimeError> output_or(const Tensor* into, const Shape& shape, DType dtype, const Queue& queue) {
  if (into) return *into;
  return output(shape, dtype, queue);
}

std::optional<RuntimeError> check_workspace(const Tensor& workspace, const Tensor& ref,
                                            std::span<const NamedTensor> others) {
  if (!(workspace.device() == ref.device()))
    return RuntimeError(ErrorKind::DeviceMismatch, "workspace", "the inputs' device (" + ref.device().to_string() + ")",
                        workspace.device().to_string());
  if (auto e = check_contiguous(workspace, "workspace")) return e;
  if (auto e = check_same_queue(workspace, "workspace", ref, "the inputs")) return e;
  const NamedTensor self{&workspace, "workspace"};
  return check_disjoint(std::span(&self, 1), others);
}

namespace {
// The operand views of a call's slots (null: an absent optional operand).
std::size_t slot_views(std::span<const Tensor* const> slots, std::array<OperandView, 16>& views) {
  std::size_t n = 0;
  for (const Tensor* t : slots) {
    if (n == views.size()) std::abort();  // no op has that many slots
    if (t) views[n] = {t->data(), &t->shape(), &t->strides()};
    ++n;
  }
  return n;
}
}  // namespace

Status<RuntimeError> launch_in_workspace(const Plan& plan, const Queue& queue,
                                         std::initializer_list<const Tensor*> slots, const Tensor& workspace) {
  std::array<OperandView, 16> views{};
  const std::size_t n = slot_views(std::span<const Tensor* const>(slots.begin(), slots.size()), views);
  return run_plan_in_workspace(plan, queue, std::span(views.data(), n), workspace.data(), workspace.nbytes());
}

Result<std::size_t, RuntimeError> workspace_bytes(const Plan& plan, std::initializer_list<OperandView> slots) {
  auto layout = workspace_layout(plan, std::span(slots.begin(), slots.size()));
  if (!layout.ok()) return layout.error();
  return layout->bytes;
}

runtime::StatCounters* family_counters_of(std::string_view op_name) {
  const OpFamily* family = family_for(op_name);
  if (!family) family = family_for("rudnn." + std::string(op_name));  // keys may omit the dialect prefix
  return runtime::family_counters(family ? std::string_view(family->name) : op_name);
}

std::optional<RuntimeError> check_disjoint(std::span<const NamedTensor> outputs, std::span<const NamedTensor> others) {
  auto overlap = [](const Tensor& a, const Tensor& b) {
    if (!(a.device() == b.device()) || a.span_bytes() == 0 || b.span_bytes() == 0) return false;
    const auto* a0 = static_cast<const std::byte*>(a.data());
    const auto* b0 = static_cast<const std::byte*>(b.data());
    return a0 < b0 + b.span_bytes() && b0 < a0 + a.span_bytes();  // strided views: their whole spans
  };
  auto error = [](const NamedTensor& out, const NamedTensor& other) {
    return RuntimeError(ErrorKind::InvalidValue, out.second,
                        std::string("storage that overlaps no input, output or workspace"),
                        std::string("storage overlapping ") + other.second);
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].first) continue;
    for (std::size_t j = 0; j < i; ++j)
      if (outputs[j].first && overlap(*outputs[i].first, *outputs[j].first)) return error(outputs[i], outputs[j]);
    for (const NamedTensor& other : others)
      if (other.first && overlap(*outputs[i].first, *other.first)) return error(outputs[i], other);
  }
  return std::nullopt;
}

PlanKeyBuilder::PlanKeyBuilder(std::string_view op_name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a of the op name
  for (char c : op_name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  key_.words[0] = static_cast<std::int64_t>(h);
  op_name.copy(key_.op.data(), std::min(op_name.size(), key_.op.size() - 1));
}

PlanKeyBuilder& PlanKeyBuilder::add(std::int64_t word) {
  // A family that outgrows the key is a programming error caught by every test of that family.
  if (next_ >= key_.words.size()) std::abort();
  key_.words[next_++] = word;
  return *this;
}

PlanKeyBuilder& PlanKeyBuilder::add(const Device& device) {
  return add(static_cast<std::int64_t>(device.kind()) | (static_cast<std::int64_t>(device.ordinal()) << 8));
}

PlanKeyBuilder& PlanKeyBuilder::add_bits(float value) {
  return add(static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(value)));
}

std::int64_t autotune_mode_word([[maybe_unused]] bool tunable) {
#if RUDNN_HAS_AUTOTUNE
  if (tunable && autotune::mode() != autotune::Mode::Off) return 1 + static_cast<std::int64_t>(autotune::mode());
#endif
  return 0;
}

std::int64_t autotune_bucket(std::int64_t extent, std::int64_t mode_word) {
  if (mode_word == 0) return 0;
  return extent <= 1 ? 1 : static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(extent)));
}

Result<Tensor, RuntimeError> output(const Shape& shape, DType dtype, const Queue& queue) {
  auto t = Tensor::empty(shape, dtype, queue);
  if (!t.ok()) return t.error();
  if (poison_outputs())
    if (auto s = t->poison(); !s.ok()) return s.error();
  return std::move(t.value());
}

Status<RuntimeError> launch(const Plan& plan, const Queue& queue, std::initializer_list<const Tensor*> slots) {
  return launch(plan, queue, std::span<const Tensor* const>(slots.begin(), slots.size()));
}

Status<RuntimeError> launch(const Plan& plan, const Queue& queue, std::span<const Tensor* const> slots) {
  std::array<OperandView, 16> views{};
  const std::size_t n = slot_views(slots, views);
  return run_plan(plan, queue, std::span(views.data(), n));
}

}  // namespace rudnn::ops
