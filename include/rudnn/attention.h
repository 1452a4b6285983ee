#pragma once
// Attention (SPEC §5): softmax(scale · Q Kᵀ + bias, excluded keys masked) V with grouped-query heads.
// A call whose inputs or strategy do not fit is an AttentionSetupError that names the requirement —
// never a silent substitution — and launches nothing.
#include <cstddef>
#include <optional>

#include "rudnn/error.h"
#include "rudnn/export.h"
#include "rudnn/tensor.h"

namespace rudnn::attention {

using rudnn::AttentionSetupError;

enum class AttentionStrategy {
  FlashBlackboxAccelerated,  // one fused tensor-core kernel (mma.sync): f16/bf16, D = Dv ∈ {64, 96, 128, 256}
  FlashUnit,                 // one fused flash kernel on plain cores: every float dtype, D, Dv ≤ 256
  Fallback,                  // scores, softmax, weighted sum as separate kernels: D, Dv ≤ 1024
  Autotune,                  // the fastest of the strategies (and tiles) that fit, measured and cached
};

struct AttentionModuleOptions {
  std::optional<float> scale;  // default 1/√D
  bool causal = false;         // bottom-right aligned when Tq ≠ Tk (query i sees key j iff j ≤ i + Tk − Tq)
};

// Autotune when the library is built with the autotune component, else Fallback.
RUDNN_API AttentionStrategy default_strategy();

// query [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv] (one float dtype, Hq % Hkv = 0);
// mask u8 [B or 1, Hq or 1, Tq, Tk] (nonzero = excluded); attn_bias f32 or the query dtype, same
// broadcast shape, added to the scaled scores. Returns [B, Hq, Tq, Dv] in the query dtype; a row with
// every key excluded is zeros. FP32 accumulation.
RUDNN_API Result<Tensor, AttentionSetupError> attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        const std::optional<Tensor>& mask,
                                                        const std::optional<Tensor>& attn_bias,
                                                        AttentionModuleOptions options = {},
                                                        AttentionStrategy strategy = default_strategy());
// The same into a caller's buffer `out` (SPEC §13): [B, Hq, Tq, Dv] in the query dtype, contiguous,
// on the query's device and queue, overlapping no input. A rejected call names `out` and writes
// nothing. Temporaries (Fallback's scores) come from the queue's stream-ordered pool; the overload
// with a workspace below takes them from the caller's memory.
RUDNN_API Status<AttentionSetupError> attention_into(const Tensor& query, const Tensor& key, const Tensor& value,
                                                     const std::optional<Tensor>& mask,
                                                     const std::optional<Tensor>& attn_bias, const Tensor& out,
                                                     AttentionModuleOptions options = {},
                                                     AttentionStrategy strategy = default_strategy());

// The bytes of scratch an attention call with these inputs, options and strategy needs (Fallback's
// FP32 scores, [B, Hq, Tq, Tk]; 0 for the fused kernels), for the workspace overload below. Makes
// the call's plan, as the call would: a cold query lowers and compiles (and is a CaptureViolation
// inside a capture); a rejected call's error is returned.
RUDNN_API Result<std::size_t, AttentionSetupError> attention_workspace_bytes(
    const Tensor& query, const Tensor& key, const Tensor& value, const std::optional<Tensor>& mask,
    const std::optional<Tensor>& attn_bias, AttentionModuleOptions options = {},
    AttentionStrategy strategy = default_strategy());
// attention_into with every temporary in `workspace`, a caller's buffer (e.g. a U8 Tensor::view)
// of at least attention_workspace_bytes: contiguous, on the query's device and queue, overlapping
// no input and not `out`. The call then allocates nothing. A workspace too small is InvalidValue
// naming `workspace` with the bytes it needs; nothing is written.
RUDNN_API Status<AttentionSetupError> attention_into(const Tensor& query, const Tensor& key, const Tensor& value,
                                                     const std::optional<Tensor>& mask,
                                                     const std::optional<Tensor>& attn_bias, const Tensor& out,
                                                     const Tensor& workspace, AttentionModuleOptions options = {},
                                                     AttentionStrategy strategy = default_strategy());

}  // namespace rudnn::attention
