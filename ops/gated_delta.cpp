// The public gated delta entries: contract check (plus the chunk's shared-memory bound against the
// device's real limit) → plan cache → (cold) compiler → one launch.
#include "rudnn/gated_delta.h"

#include "contracts/arch.h"

#include <bit>

#include "contracts/gated_delta.h"
#include "entry.h"

namespace rudnn::gated_delta {

namespace {

using ops::as;
using ops::operand;

// One call into `into` (the caller's output and final-state buffers, checked) or fresh tensors.
Result<GatedDeltaOutput, GatedDeltaError> run(const GatedDeltaInput& in, std::int64_t chunk,
                                              const GatedDeltaOutput* into = nullptr) {
  contracts::GatedDeltaSignature sig{operand(in.query),     operand(in.key), operand(in.value), operand(in.beta),
                                     operand(in.log_decay), std::nullopt,    in.query_scale,    chunk};
  if (in.initial_state) sig.initial_state = operand(*in.initial_state);
  if (auto e = contracts::check_gated_delta(sig)) return *e;
  const Device& device = in.query.device();
  const std::int64_t b = in.query.dim(0), h = in.query.dim(1), t = in.query.dim(2), k = in.query.dim(3),
                     v = in.value.dim(3);
  if (chunk > 0)
    if (auto e = contracts::check_chunk_shared_memory(
            chunk, k, static_cast<std::int64_t>(device.info().shared_memory_per_block_optin),
            // f16/bf16 take the tensor-core kernel where the device has tensor cores
            in.query.dtype() != DType::F32 && contracts::has_mma_m16n8k16(ops::target_for(device).arch)))
      return *e;
  if (auto e = ops::check_operands({{&in.query, "query"},
                                    {&in.key, "key"},
                                    {&in.value, "value"},
                                    {&in.beta, "beta"},
                                    {&in.log_decay, "log_decay"},
                                    {in.initial_state ? &*in.initial_state : nullptr, "initial_state"}}))
    return as<GatedDeltaError>(*e);
  if (into) {
    const ops::NamedTensor inputs[] = {
        {&in.query, "query"},         {&in.key, "key"},
        {&in.value, "value"},         {&in.beta, "beta"},
        {&in.log_decay, "log_decay"}, {in.initial_state ? &*in.initial_state : nullptr, "initial_state"},
        {&into->output, "output"}};
    if (auto e =
            ops::check_output(into->output, "output", {b, h, t, v}, in.query.dtype(), in.query, std::span(inputs, 6)))
      return as<GatedDeltaError>(*e);
    if (auto e = ops::check_output(into->final_state, "final_state", {b, h, k, v}, DType::F32, in.query, inputs))
      return as<GatedDeltaError>(*e);
  }

  const std::int64_t mode = ops::autotune_mode_word(true);
  const ops::PlanKey key = ops::PlanKeyBuilder("rudnn.gated_delta")
                               .add(in.query.dtype())
                               .add(in.beta.dtype())
                               .add(k)
                               .add(v)
                               .add(chunk)
                               .add(in.initial_state.has_value())
                               .add(device)
                               .add_bits(in.query_scale)
                               .add(mode)
                               .add(ops::autotune_bucket(b, mode))
                               .add(ops::autotune_bucket(h, mode))
                               .add(ops::autotune_bucket(t, mode))
                               .key();
  auto plan =
      ops::cached_plan(key, in.query.queue(), ops::Tunable::Yes, mode != 0, [&](compiler::ConfigProvider* provider) {
        compiler::GatedDeltaRequest request{sig, std::nullopt};
        request.provider = provider;
        return compiler::lower_gated_delta(request, ops::target_for(device));
      });
  if (!plan.ok()) return as<GatedDeltaError>(plan.error());
  auto output =
      into ? Result<Tensor, RuntimeError>(into->output) : ops::output({b, h, t, v}, in.query.dtype(), in.query.queue());
  if (!output.ok()) return as<GatedDeltaError>(output.error());
  auto state =
      into ? Result<Tensor, RuntimeError>(into->final_state) : ops::output({b, h, k, v}, DType::F32, in.query.queue());
  if (!state.ok()) return as<GatedDeltaError>(state.error());
  // Slots: query, key, value, beta, log_decay, initial_state (kept, maybe empty), output, final_state.
  if (auto s = ops::launch(**plan, in.query.queue(),
                           {&in.query, &in.key, &in.value, &in.beta, &in.log_decay,
                            in.initial_state ? &*in.initial_state : nullptr, &*output, &*state});
      !s.ok())
    return as<GatedDeltaError>(s.error());
  return GatedDeltaOutput{std::move(output.value()), std::move(state.value())};
}

}  // namespace

Result<GatedDeltaOutput, GatedDeltaError> chunk_gated_delta_rule(const GatedDeltaInput& input,
                                                                 std::int64_t chunk_size) {
  if (chunk_size <= 0) return GatedDeltaError(ErrorKind::InvalidValue, "chunk_size", "> 0", std::to_string(chunk_size));
  return run(input, chunk_size);
}

Result<GatedDeltaOutput, GatedDeltaError> gated_delta_rule(const GatedDeltaInput& input) { return run(input, 0); }

Status<GatedDeltaError> chunk_gated_delta_rule_into(const GatedDeltaInput& input, std::int64_t chunk_size,
                                                    const GatedDeltaOutput& out) {
  if (chunk_size <= 0) return GatedDeltaError(ErrorKind::InvalidValue, "chunk_size", "> 0", std::to_string(chunk_size));
  auto r = run(input, chunk_size, &out);
  if (!r.ok()) return r.error();
  return {};
}

Status<GatedDeltaError> gated_delta_rule_into(const GatedDeltaInput& input, const GatedDeltaOutput& out) {
  auto r = run(input, 0, &out);
  if (!r.ok()) return r.error();
  return {};
}

}  // namespace rudnn::gated_delta
