#include "rudnn/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace rudnn {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::U32: return "ui32";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::FP8E4M3: return "f8E4M3FN";
    case DType::U8: return "ui8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view n) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::U32, DType::I32, DType::I64, DType::FP8E4M3, DType::U8})
    if (dtype_name(t) == n) return t;
  if (n == "u32") return DType::U32;
  if (n == "u8" || n == "bool") return DType::U8;
  if (n == "fp8e4m3") return DType::FP8E4M3;
  return std::nullopt;
}

// bfloat16 is the top half of a float; round to nearest even, keep NaN quiet.
std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

float bf16_bits_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {                        // below 2^-14: subnormal or zero
    // value = abs_float; subnormal units are 2^-24. Round to nearest even via float arithmetic.
    const float a = std::bit_cast<float>(abs);
    const float scaled = a * 16777216.0f;    // exact (power of two)
    const float r = std::nearbyint(scaled);  // default rounding mode: to nearest even
    return sign | static_cast<std::uint16_t>(r);
  }
  // normal: rebias exponent, round mantissa 23 -> 10 bits to nearest even
  std::uint32_t m = abs - 0x38000000u;  // exponent bias 127 -> 15
  m += 0xfffu + ((m >> 13) & 1u);
  return sign | static_cast<std::uint16_t>(m >> 13);
}

float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

// FP8 E4M3 (FN variant: no infinities, 0x7f/0xff are NaN, max 448).
std::uint8_t float_to_fp8e4m3_bits(float f) {
  const std::uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return 0x7f;
  float a = std::fabs(f);
  if (a >= 464.0f) return sign | 0x7e;  // saturate to 448
  // Try every finite code and take the nearest (ties to even code): 126 codes, exact and simple.
  std::uint8_t best = 0;
  float best_err = INFINITY;
  for (std::uint8_t c = 0; c <= 0x7e; ++c) {
    const float err = std::fabs(fp8e4m3_bits_to_float(c) - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) best = c, best_err = err;
  }
  return sign | best;
}

float fp8e4m3_bits_to_float(std::uint8_t b) {
  const bool neg = b & 0x80;
  const int exp = (b >> 3) & 0xf;
  const int man = b & 0x7;
  float v;
  if (exp == 15 && man == 7)
    v = NAN;
  else if (exp == 0)
    v = std::ldexp(static_cast<float>(man), -9);
  else
    v = std::ldexp(1.0f + man / 8.0f, exp - 7);
  return neg ? -v : v;
}

}  // namespace rudnn
