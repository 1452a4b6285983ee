#include "contracts/gated_delta.h"

#include <cmath>
#include <fmt/format.h>

#include "checked_math.h"

namespace rudnn::contracts {

namespace {
using Err = GatedDeltaError;
}  // namespace

std::optional<GatedDeltaError> check_gated_delta(const GatedDeltaSignature& sig) {
  const GatedDeltaOperand& q = sig.query;
  if (auto e = check_float<Err>(q, "query")) return e;
  if (q.shape.size() != 4)
    return fail<Err>(ErrorKind::ShapeMismatch, "query", "rank 4 [batch, heads, seq, key_dim]",
                     shape_to_string(q.shape));
  const std::int64_t b = q.shape[0], h = q.shape[1], t = q.shape[2], k = q.shape[3];
  if (k == 0 || b == 0 || h == 0)
    return fail<Err>(ErrorKind::EmptyDimension, "query", "batch, heads and key_dim > 0", shape_to_string(q.shape));
  if (k != kDynamic && k > kMaxGatedDeltaDim)
    return fail<Err>(ErrorKind::Unsupported, "query", fmt::format("key_dim <= {}", kMaxGatedDeltaDim),
                     shape_to_string(q.shape));
  auto same_dtype = [&](const GatedDeltaOperand& x, const char* name) -> std::optional<GatedDeltaError> {
    if (auto e = check_float<Err>(x, name)) return e;
    if (x.dtype != q.dtype)
      return fail<Err>(ErrorKind::UnsupportedDType, name, fmt::format("{} (the query dtype)", dtype_name(q.dtype)),
                       std::string(dtype_name(x.dtype)));
    return std::nullopt;
  };
  if (auto e = same_dtype(sig.key, "key")) return e;
  if (auto e = check_shape<Err>(sig.key, "key", q.shape, "the shape of query")) return e;
  if (auto e = same_dtype(sig.value, "value")) return e;
  if (sig.value.shape.size() != 4)
    return fail<Err>(ErrorKind::ShapeMismatch, "value", "rank 4 [batch, heads, seq, value_dim]",
                     shape_to_string(sig.value.shape));
  const std::int64_t v = sig.value.shape[3];
  if (auto e = check_shape<Err>(sig.value, "value", {b, h, t, v}, "batch, heads, seq of query")) return e;
  if (v == 0) return fail<Err>(ErrorKind::EmptyDimension, "value", "value_dim > 0", shape_to_string(sig.value.shape));
  if (v != kDynamic && v > kMaxGatedDeltaDim)
    return fail<Err>(ErrorKind::Unsupported, "value", fmt::format("value_dim <= {}", kMaxGatedDeltaDim),
                     shape_to_string(sig.value.shape));
  // beta and log_decay: the query dtype or f32, the same for both (one kernel instantiation).
  for (auto [x, name] : {std::pair{&sig.beta, "beta"}, {&sig.log_decay, "log_decay"}}) {
    if (auto e = check_float<Err>(*x, name)) return e;
    if (x->dtype != q.dtype && x->dtype != DType::F32)
      return fail<Err>(ErrorKind::UnsupportedDType, name,
                       fmt::format("{} (the query dtype) or f32", dtype_name(q.dtype)),
                       std::string(dtype_name(x->dtype)));
    if (auto e = check_shape<Err>(*x, name, {b, h, t}, "batch, heads, seq of query")) return e;
  }
  if (sig.log_decay.dtype != sig.beta.dtype)
    return fail<Err>(ErrorKind::UnsupportedDType, "log_decay",
                     fmt::format("{} (the dtype of beta)", dtype_name(sig.beta.dtype)),
                     std::string(dtype_name(sig.log_decay.dtype)));
  if (sig.initial_state) {
    const GatedDeltaOperand& s = *sig.initial_state;
    if (is_quantized(s.dtype))
      return fail<Err>(ErrorKind::QuantizedDType, "initial_state", "non-quantized f32",
                       std::string(dtype_name(s.dtype)));
    if (s.dtype != DType::F32)
      return fail<Err>(ErrorKind::UnsupportedDType, "initial_state", "f32", std::string(dtype_name(s.dtype)));
    if (auto e = check_shape<Err>(s, "initial_state", {b, h, k, v}, "batch, heads, key_dim, value_dim")) return e;
  }
  for (auto [x, name] :
       {std::pair{&sig.key, "key"}, {&sig.value, "value"}, {&sig.beta, "beta"}, {&sig.log_decay, "log_decay"}})
    if (auto e = check_device<Err>(*x, name, q, "query")) return e;
  if (sig.initial_state)
    if (auto e = check_device<Err>(*sig.initial_state, "initial_state", q, "query")) return e;
  if (!std::isfinite(sig.query_scale))
    return fail<Err>(ErrorKind::InvalidValue, "query_scale", "a finite value", fmt::format("{}", sig.query_scale));
  if (sig.chunk_size < 0 || sig.chunk_size > kMaxChunkSize)
    return fail<Err>(ErrorKind::InvalidValue, "chunk_size", fmt::format("0 (the recurrence) or 1..{}", kMaxChunkSize),
                     std::to_string(sig.chunk_size));
  return std::nullopt;
}

std::optional<GatedDeltaError> check_chunk_shared_memory(std::int64_t c, std::int64_t k, std::int64_t limit,
                                                         bool tensor_core) {
  if (c <= 0) return fail<Err>(ErrorKind::InvalidValue, "chunk_size", "> 0", std::to_string(c));
  // Checked: a huge C (2^62) wraps 4·(C² + C) to a small number that would pass the bound and
  // leave the kernel walking an enormous chunk.
  const auto squared = checked_mul(c, c);
  const auto sum = squared ? checked_add(*squared, c) : std::nullopt;
  const auto scratch = sum ? checked_mul(4, *sum) : std::nullopt;
  if (!scratch || *scratch > limit)
    return fail<Err>(ErrorKind::InvalidValue, "chunk_size",
                     fmt::format("4·(C² + C) <= {} bytes (the device's shared memory per block)", limit),
                     scratch ? fmt::format("{} ({} bytes)", c, *scratch) : fmt::format("{} (more than 2^63 bytes)", c));
  const std::int64_t need = chunk_shared_bytes(c, k, smallest_chunk_columns(tensor_core), tensor_core);
  if (need > limit)
    return fail<Err>(ErrorKind::Unsupported, "chunk_size",
                     fmt::format("a chunk whose kernel fits the device's {} bytes of shared memory per block", limit),
                     fmt::format("{} with key_dim {} ({} bytes)", c, k, need));
  return std::nullopt;
}

std::string describe_call(const GatedDeltaSignature& sig) {
  auto one = [](const char* name, const GatedDeltaOperand& o) {
    return std::string(name) + " " + shape_to_string(o.shape) + " " + std::string(dtype_name(o.dtype));
  };
  std::string s = one("query", sig.query) + ", " + one("key", sig.key) + ", " + one("value", sig.value) + ", " +
                  one("beta", sig.beta) + ", " + one("log_decay", sig.log_decay);
  if (sig.initial_state) s += ", " + one("initial_state", *sig.initial_state);
  if (sig.chunk_size > 0) s += fmt::format(", chunk_size {}", sig.chunk_size);
  return s;
}

}  // namespace rudnn::contracts
