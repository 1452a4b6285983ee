// The public convolution entries: contract → operand checks → plan (lowered once per shape, dtype,
// options, strategy and device) → launches, and the ConvInfo of what ran.
#include "rudnn/convolution.h"

#include "contracts/arch.h"
#include "contracts/conv.h"
#include "bounded_list.h"
#include "entry.h"
#include "log.h"
#include "rudnn/Dialect/Rudnn/IR/ConvConfig.h"
#include "rudnn/compiler/conv.h"

namespace rudnn::convolution {

namespace {

using contracts::ConvDirection;
using ops::as;
using ops::operand;
namespace conv_config = dialect::conv_config;

const char* strategy_name(ConvStrategy s) {
  switch (s) {
    case ConvStrategy::Direct: return "direct";
    case ConvStrategy::ImplicitGemm: return "implicit_gemm";
    case ConvStrategy::Autotune: return "autotune";
  }
  return "implicit_gemm";
}

contracts::ConvParams params_of(const ConvOptions& o) { return {o.stride, o.padding, o.dilation, o.groups}; }

// Two extents (each < 2^31, the contract's bound) in one key word.
std::int64_t pair(std::int64_t a, std::int64_t b) { return (a << 32) | b; }
// Three option values (each <= 2^20) in one key word.
std::int64_t triple(const std::array<std::int64_t, 3>& v) { return (v[0] << 42) | (v[1] << 21) | v[2]; }

// What the conv heuristic knows of the device: its tensor cores and its shared memory per block.
struct DeviceCaps {
  bool tensor_cores = false;
  std::int64_t max_shared_bytes = 0;
};
DeviceCaps caps_of(const Device& device) {
  const compiler::Target target = ops::target_for(device);
  return {contracts::has_mma_m16n8k16(target.arch),
          static_cast<std::int64_t>(target.limits.shared_memory_per_block_optin)};
}

// What ran, from the plan's config and the heuristic's substitution for the requested strategy.
ConvInfo info_of(const ops::Plan& plan, const contracts::ConvSignature& sig, const contracts::ConvGeometry& g,
                 ConvStrategy strategy, DType dtype, const DeviceCaps& caps) {
  ConvInfo info;
  const compiler::KernelConfig& config = plan.kernels.front().launch.config;
  info.tile = config.to_string();
  if (auto choice = conv_config::choiceOf(config.values)) {
    switch (choice->algorithm) {
      case conv_config::Algorithm::Direct: info.algorithm = ConvAlgorithm::Direct; break;
      case conv_config::Algorithm::Depthwise: info.algorithm = ConvAlgorithm::Depthwise; break;
      case conv_config::Algorithm::ImplicitGemm:
        info.algorithm = choice->gemm.tensorCore ? ConvAlgorithm::ImplicitGemmTensorCore : ConvAlgorithm::ImplicitGemm;
        break;
    }
  }
  if (strategy == ConvStrategy::ImplicitGemm) {
    const auto h =
        conv_config::heuristicChoice(sig.direction, g, dtype, true, caps.tensor_cores, caps.max_shared_bytes);
    info.substituted = !h.substitution.empty();
    info.reason = h.substitution;
  }
  return info;
}

struct Call {
  contracts::ConvSignature sig;
  ConvStrategy strategy;
  bool bias_grad = false;
  const Tensor* first;  // the tensor whose device, queue and batch the call has
  ops::BoundedList<ops::NamedTensor, 3> tensors;
  // The *_into entries' buffers, checked after the call's own lines and before any plan work; with
  // `output_shape_from_signature` the first one's shape is the convolution's output shape, known
  // once the signature passed its contract.
  ops::BoundedList<ops::OutputBuffer, 2> outputs;
  bool output_shape_from_signature = false;
  const Tensor* workspace = nullptr;  // a caller's workspace for the temporaries
};

// The call's temporaries for `info` (when asked): the exact bytes of the plan's workspace layout,
// what a caller's workspace for the call must hold (launch_in_workspace checks it).
std::optional<ConvSetupError> report_workspace(const ops::Plan& plan, std::initializer_list<ops::OperandView> slots,
                                               ConvInfo* info) {
  if (!info) return std::nullopt;
  auto bytes = ops::workspace_bytes(plan, slots);
  if (!bytes.ok()) return as<ConvSetupError>(bytes.error());
  info->workspace_bytes = static_cast<std::int64_t>(*bytes);
  return std::nullopt;
}

// A tensor's slot view for report_workspace.
ops::OperandView view_of(const Tensor& t) { return {t.data(), &t.shape(), &t.strides()}; }

// The plan's kernels on the call's queue, the temporaries in the caller's workspace when given.
Status<RuntimeError> launch(const ops::Plan& plan, const Call& call, std::initializer_list<const Tensor*> slots) {
  return call.workspace ? ops::launch_in_workspace(plan, call.first->queue(), slots, *call.workspace)
                        : ops::launch(plan, call.first->queue(), slots);
}

Result<std::shared_ptr<const ops::Plan>, ConvSetupError> plan_for(const Call& call, ConvInfo* info) {
  const contracts::ConvSignature& sig = call.sig;
  if (auto e = contracts::check_conv(sig)) return *e;
  for (auto [t, name] : call.tensors)
    if (auto e = ops::check_contiguous(*t, name)) return as<ConvSetupError>(*e);
  for (auto [t, name] : call.tensors)
    if (auto e = ops::check_same_queue(*t, name, *call.first, call.tensors.front().second))
      return as<ConvSetupError>(*e);
  if (!call.outputs.empty()) {
    ops::BoundedList<ops::OutputBuffer, 2> outputs = call.outputs;
    if (call.output_shape_from_signature) outputs[0].shape = contracts::conv_output_shape(sig);
    if (auto e = ops::check_outputs(outputs, *call.first, call.tensors)) return as<ConvSetupError>(*e);
  }
  if (call.workspace) {
    ops::BoundedList<ops::NamedTensor, 5> others;
    for (const ops::NamedTensor& t : call.tensors) others.push_back(t);
    for (const ops::OutputBuffer& o : call.outputs) others.push_back({o.tensor, o.name});
    if (auto e = ops::check_workspace(*call.workspace, *call.first, others)) return as<ConvSetupError>(*e);
  }
  const Device& device = call.first->device();
  const contracts::ConvGeometry g = contracts::conv_geometry(sig);
  const DType dtype = call.first->dtype();
  const bool tunable = call.strategy == ConvStrategy::Autotune;
  const std::int64_t mode = ops::autotune_mode_word(tunable);
  const std::string op_name = sig.direction == ConvDirection::Forward        ? "rudnn.conv_forward"
                              : sig.direction == ConvDirection::DataBackward ? "rudnn.conv_data_backward"
                                                                             : "rudnn.conv_weight_backward";
  const std::int64_t bias_word = sig.bias ? 1 + static_cast<std::int64_t>(sig.bias->dtype) : 0;
  const ops::PlanKey key =
      ops::PlanKeyBuilder(op_name)
          .add(static_cast<std::int64_t>(dtype) | (bias_word << 8) | (std::int64_t{sig.channels_last} << 16) |
               (std::int64_t{call.bias_grad} << 17) | (static_cast<std::int64_t>(call.strategy) << 18) |
               (std::int64_t{g.spatial_dims} << 24))
          .add(pair(g.channels, g.out_channels))
          .add(g.groups)
          .add(pair(g.input[0], g.input[1]))
          .add(pair(g.input[2], (g.kernel[0] << 14) | (g.kernel[1] << 7) | g.kernel[2]))
          .add(triple(g.stride))
          .add(triple(g.padding))
          .add(triple(g.dilation))
          .add(device)
          .add(mode)
          .add(conv_config::bucketBatch(g))  // split counts are per bucket (and autotune's key)
          .key();
  auto plan = ops::cached_plan(
      key, call.first->queue(), tunable ? ops::Tunable::Yes : ops::Tunable::No, mode != 0,
      [&](compiler::ConfigProvider* provider) {
        // Cold path only: a substitution is logged once, when the plan is made.
        const DeviceCaps caps = caps_of(device);
        if (call.strategy == ConvStrategy::ImplicitGemm)
          if (auto h =
                  conv_config::heuristicChoice(sig.direction, g, dtype, true, caps.tensor_cores, caps.max_shared_bytes);
              !h.substitution.empty())
            runtime::log_info("{}: {} runs Direct ({})", op_name, contracts::describe_call(sig), h.substitution);
        compiler::ConvRequest request{sig, strategy_name(call.strategy), call.bias_grad, std::nullopt, provider};
        return compiler::lower_conv(request, ops::target_for(device));
      });
  if (!plan.ok()) return as<ConvSetupError>(plan.error());
  // Warm calls build the report only when the caller asks for it.
  if (info) *info = info_of(**plan, sig, g, call.strategy, dtype, caps_of(device));  // workspace: size_workspace
  return std::shared_ptr<const ops::Plan>(*plan);
}

Result<Tensor, ConvSetupError> forward(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                       const ConvOptions& options, ConvStrategy strategy, ConvInfo* info,
                                       bool channels_last, const Tensor* into = nullptr,
                                       const Tensor* workspace = nullptr) {
  Call call{{ConvDirection::Forward, channels_last, operand(input), operand(weight), std::nullopt, std::nullopt,
             params_of(options)},
            strategy,
            false,
            &input,
            {{&input, "input"}, {&weight, "weight"}}};
  if (bias) {
    call.sig.bias = operand(*bias);
    call.tensors.push_back({&*bias, "bias"});
  }
  if (into) {
    call.outputs.push_back({into, "out", {}, input.dtype()});
    call.output_shape_from_signature = true;
  }
  call.workspace = workspace;
  auto plan = plan_for(call, info);
  if (!plan.ok()) return plan.error();
  const Shape out_shape = contracts::conv_output_shape(call.sig);
  const Tensor* b = bias ? &*bias : nullptr;
  if (auto e = report_workspace(**plan,
                                {view_of(input), view_of(weight), b ? view_of(*b) : ops::OperandView{},
                                 ops::OperandView{nullptr, &out_shape}},
                                info))
    return *e;
  auto out = ops::output_or(into, out_shape, input.dtype(), input.queue());
  if (!out.ok()) return as<ConvSetupError>(out.error());
  if (auto s = launch(**plan, call, {&input, &weight, b, &*out}); !s.ok()) return as<ConvSetupError>(s.error());
  return std::move(out.value());
}

}  // namespace

const char* algorithm_name(ConvAlgorithm algorithm) {
  switch (algorithm) {
    case ConvAlgorithm::Direct: return "direct";
    case ConvAlgorithm::Depthwise: return "depthwise";
    case ConvAlgorithm::ImplicitGemm: return "implicit_gemm";
    case ConvAlgorithm::ImplicitGemmTensorCore: return "implicit_gemm_tensor_core";
  }
  return "direct";
}

ConvStrategy default_strategy() {
#if RUDNN_HAS_AUTOTUNE
  return ConvStrategy::Autotune;
#else
  return ConvStrategy::ImplicitGemm;
#endif
}

Result<Tensor, ConvSetupError> conv_forward(const Tensor& input, const Tensor& weight,
                                            const std::optional<Tensor>& bias, const ConvOptions& options,
                                            ConvStrategy strategy, ConvInfo* info) {
  return forward(input, weight, bias, options, strategy, info, false);
}

Result<Tensor, ConvSetupError> conv_forward_nhwc(const Tensor& input, const Tensor& weight,
                                                 const std::optional<Tensor>& bias, const ConvOptions& options,
                                                 ConvStrategy strategy, ConvInfo* info) {
  return forward(input, weight, bias, options, strategy, info, true);
}

namespace {

// A shape the caller gives (input_shape, weight_shape) has no negative extent: the contracts read a
// negative one as "dynamic" (a graph's `?`), which a call never is.
std::optional<ConvSetupError> check_given_shape(const Shape& shape, const char* name) {
  for (std::int64_t extent : shape)
    if (extent < 0) return ConvSetupError(ErrorKind::InvalidValue, name, "extents >= 0", shape_to_string(shape));
  return std::nullopt;
}

Result<Tensor, ConvSetupError> data_backward(const Tensor& grad_output, const Tensor& weight, const Shape& input_shape,
                                             const ConvOptions& options, ConvStrategy strategy, ConvLayout layout,
                                             ConvInfo* info, const Tensor* into, const Tensor* workspace = nullptr) {
  if (auto e = check_given_shape(input_shape, "input_shape")) return *e;
  contracts::Operand shape_only{input_shape, grad_output.dtype(), ops::device_id(grad_output.device())};
  Call call{{ConvDirection::DataBackward, layout == ConvLayout::ChannelsLast, shape_only, operand(weight), std::nullopt,
             operand(grad_output), params_of(options)},
            strategy,
            false,
            &grad_output,
            {{&grad_output, "grad_output"}, {&weight, "weight"}}};
  if (into) call.outputs.push_back({into, "grad_input", input_shape, grad_output.dtype()});
  call.workspace = workspace;
  auto plan = plan_for(call, info);
  if (!plan.ok()) return plan.error();
  if (auto e = report_workspace(**plan,
                                {view_of(grad_output), view_of(weight), ops::OperandView{nullptr, &input_shape}}, info))
    return *e;
  auto out = ops::output_or(into, input_shape, grad_output.dtype(), grad_output.queue());
  if (!out.ok()) return as<ConvSetupError>(out.error());
  if (auto s = launch(**plan, call, {&grad_output, &weight, &*out}); !s.ok()) return as<ConvSetupError>(s.error());
  return std::move(out.value());
}

Result<ConvWeightGrads, ConvSetupError> weight_backward(const Tensor& input, const Tensor& grad_output,
                                                        const Shape& weight_shape, const ConvOptions& options,
                                                        bool with_bias_grad, ConvStrategy strategy, ConvLayout layout,
                                                        ConvInfo* info, const ConvWeightGrads* into,
                                                        const Tensor* workspace = nullptr) {
  if (auto e = check_given_shape(weight_shape, "weight_shape")) return *e;
  contracts::Operand shape_only{weight_shape, input.dtype(), ops::device_id(input.device())};
  Call call{{ConvDirection::WeightBackward, layout == ConvLayout::ChannelsLast, operand(input), shape_only,
             std::nullopt, operand(grad_output), params_of(options)},
            strategy,
            with_bias_grad,
            &input,
            {{&input, "input"}, {&grad_output, "grad_output"}}};
  if (into) {
    // The bias gradient overlaps no input and not grad_weight (check_outputs names the later one).
    call.outputs.push_back({&into->grad_weight, "grad_weight", weight_shape, input.dtype()});
    // (An empty weight_shape fails the contract before the outputs are checked.)
    const Shape bias_shape = weight_shape.empty() ? Shape{} : Shape{weight_shape[0]};
    if (into->grad_bias) call.outputs.push_back({&*into->grad_bias, "grad_bias", bias_shape, DType::F32});
  }
  call.workspace = workspace;
  auto plan = plan_for(call, info);
  if (!plan.ok()) return plan.error();
  // The launch's slots: the bias gradient's only when asked (the plan has no slot for it otherwise).
  const Shape bias_shape{weight_shape[0]};
  const ops::OperandView in_view = view_of(input), gy_view = view_of(grad_output), dw_view{nullptr, &weight_shape};
  if (auto e = with_bias_grad ? report_workspace(**plan, {in_view, gy_view, dw_view, {nullptr, &bias_shape}}, info)
                              : report_workspace(**plan, {in_view, gy_view, dw_view}, info))
    return *e;
  auto dw = ops::output_or(into ? &into->grad_weight : nullptr, weight_shape, input.dtype(), input.queue());
  if (!dw.ok()) return as<ConvSetupError>(dw.error());
  std::optional<Tensor> db;
  if (with_bias_grad) {
    auto made = ops::output_or(into ? &*into->grad_bias : nullptr, {weight_shape[0]}, DType::F32, input.queue());
    if (!made.ok()) return as<ConvSetupError>(made.error());
    db = std::move(made.value());
  }
  auto s = db ? launch(**plan, call, {&input, &grad_output, &*dw, &*db})
              : launch(**plan, call, {&input, &grad_output, &*dw});
  if (!s.ok()) return as<ConvSetupError>(s.error());
  return ConvWeightGrads{std::move(dw.value()), std::move(db)};
}

}  // namespace

Result<Tensor, ConvSetupError> conv_data_backward(const Tensor& grad_output, const Tensor& weight,
                                                  const Shape& input_shape, const ConvOptions& options,
                                                  ConvStrategy strategy, ConvLayout layout, ConvInfo* info) {
  return data_backward(grad_output, weight, input_shape, options, strategy, layout, info, nullptr);
}

Result<ConvWeightGrads, ConvSetupError> conv_weight_backward(const Tensor& input, const Tensor& grad_output,
                                                             const Shape& weight_shape, const ConvOptions& options,
                                                             bool with_bias_grad, ConvStrategy strategy,
                                                             ConvLayout layout, ConvInfo* info) {
  return weight_backward(input, grad_output, weight_shape, options, with_bias_grad, strategy, layout, info, nullptr);
}

namespace {
template <class R>
Status<ConvSetupError> status_of(const R& r) {
  if (!r.ok()) return r.error();
  return {};
}
}  // namespace

Status<ConvSetupError> conv_forward_into(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                         const ConvOptions& options, const Tensor& out, ConvStrategy strategy,
                                         ConvInfo* info, const Tensor* workspace) {
  return status_of(forward(input, weight, bias, options, strategy, info, false, &out, workspace));
}

Status<ConvSetupError> conv_forward_nhwc_into(const Tensor& input, const Tensor& weight,
                                              const std::optional<Tensor>& bias, const ConvOptions& options,
                                              const Tensor& out, ConvStrategy strategy, ConvInfo* info,
                                              const Tensor* workspace) {
  return status_of(forward(input, weight, bias, options, strategy, info, true, &out, workspace));
}

Status<ConvSetupError> conv_data_backward_into(const Tensor& grad_output, const Tensor& weight,
                                               const Shape& input_shape, const ConvOptions& options,
                                               const Tensor& grad_input, ConvStrategy strategy, ConvLayout layout,
                                               ConvInfo* info, const Tensor* workspace) {
  return status_of(
      data_backward(grad_output, weight, input_shape, options, strategy, layout, info, &grad_input, workspace));
}

Status<ConvSetupError> conv_weight_backward_into(const Tensor& input, const Tensor& grad_output,
                                                 const Shape& weight_shape, const ConvOptions& options,
                                                 const ConvWeightGrads& grads, ConvStrategy strategy, ConvLayout layout,
                                                 ConvInfo* info, const Tensor* workspace) {
  return status_of(weight_backward(input, grad_output, weight_shape, options, grads.grad_bias.has_value(), strategy,
                                   layout, info, &grads, workspace));
}

}  // namespace rudnn::convolution
