#pragma once
// Element types of rudnn tensors and the host-side numeric conversions they need.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "rudnn/export.h"

namespace rudnn {

// FP8E4M3 is the quantized storage type: it can be stored, moved and read back, and every
// contract that says "non-quantized" rejects it. U8 holds boolean masks (nonzero = true).
enum class DType : std::uint8_t { F32, F16, BF16, U32, I32, I64, FP8E4M3, U8 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
    case DType::U32:
    case DType::I32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::FP8E4M3:
    case DType::U8: return 1;
  }
  return 0;
}
constexpr bool is_quantized(DType t) { return t == DType::FP8E4M3; }
constexpr bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Lower-case names as they appear in MLIR types and error messages: f32, f16, bf16, ui32, ...
RUDNN_API std::string_view dtype_name(DType t);
RUDNN_API std::optional<DType> parse_dtype(std::string_view name);

// IEEE half and bfloat16 conversions, round to nearest even (the same rules as the kernels).
RUDNN_API std::uint16_t float_to_half_bits(float f);
RUDNN_API float half_bits_to_float(std::uint16_t h);
RUDNN_API std::uint16_t float_to_bf16_bits(float f);
RUDNN_API float bf16_bits_to_float(std::uint16_t b);
RUDNN_API std::uint8_t float_to_fp8e4m3_bits(float f);
RUDNN_API float fp8e4m3_bits_to_float(std::uint8_t b);

}  // namespace rudnn
