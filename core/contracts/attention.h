#pragma once
// The attention contracts of SPEC §5, written once over plain shapes and dtypes: the public entry
// (rudnn/attention.h) and the dialect verifier both call them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "contracts/normalization.h"  // NormOperand, kDynamic
#include "rudnn/error.h"

namespace rudnn::contracts {

using AttentionOperand = NormOperand;

enum class AttentionStrategy { FlashBlackboxAccelerated, FlashUnit, Fallback, Autotune };
std::string_view strategy_name(AttentionStrategy s);  // "flash_mma", "flash_unit", "fallback", "autotune"
std::optional<AttentionStrategy> parse_attention_strategy(std::string_view name);

// Head-dim limits of the strategies (SPEC §5, issue 5).
inline constexpr std::int64_t kFallbackMaxHeadDim = 1024;
inline constexpr std::int64_t kFlashUnitMaxHeadDim = 256;
inline constexpr std::int64_t kFlashMmaHeadDims[] = {64, 96, 128, 256};

struct AttentionSignature {
  AttentionOperand query;                // [B, Hq, Tq, D]  f32/f16/bf16
  AttentionOperand key;                  // [B, Hkv, Tk, D] the query dtype
  AttentionOperand value;                // [B, Hkv, Tk, Dv] the query dtype
  std::optional<AttentionOperand> mask;  // u8 [B or 1, Hq or 1, Tq, Tk], nonzero = excluded
  std::optional<AttentionOperand> bias;  // f32 or the query dtype, [B or 1, Hq or 1, Tq, Tk]
  double scale = 1.0;                    // finite
  bool causal = false;
};

// The first violated contract line, or nothing (shapes, dtypes, devices, scale). Dynamic extents
// (kDynamic) pass the checks needing them.
std::optional<AttentionSetupError> check_attention(const AttentionSignature& sig);

// Why `strategy` cannot serve the call (a concrete strategy, not Autotune), or nothing: the
// tensor-core flash kernel needs f16/bf16, D = Dv ∈ {64, 96, 128, 256} and a target with
// mma.sync m16n8k16 (contracts/arch.h; `arch` empty: not checked); FlashUnit D, Dv ≤ 256;
// Fallback D, Dv ≤ 1024. Kind Unsupported, argument "strategy".
std::optional<AttentionSetupError> check_strategy_fits(const AttentionSignature& sig, AttentionStrategy strategy,
                                                       const std::string& arch = {});

std::string describe_call(const AttentionSignature& sig);

}  // namespace rudnn::contracts
