#pragma once
// Storage types and FP32 conversions. Kernels keep 16-bit data as raw bit patterns (no cuda_fp16.h:
// NVRTC gets no host or toolkit headers, and the host compiler has no __half) and do all arithmetic
// in float. Conversions round to nearest even, the same rule as rudnn::float_to_half_bits (core).
// On the GPU they are single cvt instructions (the only inline PTX outside the prelude: it is
// guarded by __CUDA_ARCH__, so the host never sees it); elsewhere they are bit manipulation.
#include "rudnn/prelude.cuh"

// Vocabulary the host prelude may lack. Occupancy hints mean nothing on the emulator; a loop
// still unrolls there at -O2, the pragma only asks.
#ifndef RUDNN_LAUNCH_BOUNDS_MIN
#define RUDNN_LAUNCH_BOUNDS_MIN(n, min_blocks) RUDNN_LAUNCH_BOUNDS(n)
#endif
#ifndef RUDNN_UNROLL
#if defined(__clang__)
#define RUDNN_UNROLL _Pragma("unroll")
#else
#define RUDNN_UNROLL _Pragma("GCC unroll 32")
#endif
#endif

namespace rudnn {

using u16 = unsigned short;

// IEEE binary16 and bfloat16, as their bit patterns.
struct f16 {
  u16 bits;
};
struct bf16 {
  u16 bits;
};

RUDNN_DEVICE u32 float_as_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(u32, f);
#endif
}
RUDNN_DEVICE float bits_as_float(u32 u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

// −inf as a float (no <cmath> INFINITY on NVRTC): the score of an excluded key, the identity of max.
RUDNN_DEVICE float negative_infinity() { return bits_as_float(0xff800000u); }

// log2(e) rounded to float: e^x = exp2(kLog2e·x), the softmaxes' log2 domain.
inline constexpr float kLog2e = 1.4426950408889634f;

// IsVoid<X>::value: a kernel's optional operand type was given as void (built without that input).
template <class X>
struct IsVoid {
  static constexpr bool value = false;
};
template <>
struct IsVoid<void> {
  static constexpr bool value = true;
};

// Select<B, X, Y>::type is X when B, else Y (std::conditional, which NVRTC's headers do not give us).
template <bool B, class X, class Y>
struct Select {
  using type = X;
};
template <class X, class Y>
struct Select<false, X, Y> {
  using type = Y;
};

namespace numeric_detail {

// float -> binary16, round to nearest even; NaN stays a (quiet) NaN, overflow gives ±inf.
RUDNN_DEVICE u16 float_to_half_rne(float f) {
  const u32 x = float_as_bits(f);
  const u32 sign = (x >> 16) & 0x8000u;
  u32 ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<u16>(sign | 0x7e00u);
  // 0x477ff000 is halfway between 65504 (odd mantissa) and 65536: ties round up to infinity.
  if (ax >= 0x477ff000u) return static_cast<u16>(sign | 0x7c00u);
  if (ax >= 0x38800000u) {             // normal in binary16 (>= 2^-14)
    ax += 0xfffu + ((ax >> 13) & 1u);  // round the 13 dropped bits, ties to even
    ax -= (127u - 15u) << 23;          // rebias; a carry into the exponent is still correct
    return static_cast<u16>(sign | (ax >> 13));
  }
  if (ax < 0x33000000u) return static_cast<u16>(sign);  // below 2^-25 (or exactly 0): rounds to 0
  // Subnormal result: units of 2^-24. value = m * 2^(e-150), so shift m right by 126 - e.
  const u32 e = ax >> 23;
  const u32 m = (ax & 0x7fffffu) | 0x800000u;
  const u32 shift = 126u - e;  // 14..24
  u32 r = m >> shift;
  const u32 rem = m & ((1u << shift) - 1u);
  const u32 half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (r & 1u))) ++r;  // may carry into the smallest normal: right
  return static_cast<u16>(sign | r);
}

RUDNN_DEVICE float half_to_float_bits(u16 h) {
  const u32 sign = (static_cast<u32>(h) & 0x8000u) << 16;
  const u32 e = (h >> 10) & 0x1fu;
  const u32 m = h & 0x3ffu;
  if (e == 0x1fu) return bits_as_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    // m * 2^-24 is exact in float; the multiplication by a power of two is exact too.
    const float mag = static_cast<float>(m) * 5.9604644775390625e-8f;
    return bits_as_float(sign | float_as_bits(mag));
  }
  return bits_as_float(sign | ((e + (127u - 15u)) << 23) | (m << 13));
}

// float -> bfloat16, round to nearest even (overflow carries into the exponent and gives inf).
RUDNN_DEVICE u16 float_to_bf16_rne(float f) {
  const u32 x = float_as_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<u16>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<u16>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace numeric_detail

// ---------------------------------------------------------------------------------------------------
// to_float / from_float<T>: the only conversions templates use.
RUDNN_DEVICE float to_float(float x) { return x; }
RUDNN_DEVICE float to_float(bf16 x) { return bits_as_float(static_cast<u32>(x.bits) << 16); }
RUDNN_DEVICE float to_float(f16 x) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
#else
  return numeric_detail::half_to_float_bits(x.bits);
#endif
}

template <class T>
RUDNN_DEVICE T from_float(float f);
template <>
RUDNN_DEVICE float from_float<float>(float f) {
  return f;
}
template <>
RUDNN_DEVICE f16 from_float<f16>(float f) {
#if defined(__CUDA_ARCH__)
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return f16{h};
#else
  return f16{numeric_detail::float_to_half_rne(f)};
#endif
}
template <>
RUDNN_DEVICE bf16 from_float<bf16>(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return bf16{h};
#else
  return bf16{numeric_detail::float_to_bf16_rne(f)};
#endif
}

// Two 16-bit values packed into one 32-bit word, `lo` in the low half (memory order). On sm_80+
// this is one cvt.rn.{f16x2,bf16x2}.f32, half the conversions of two scalar ones. PTX puts its
// first source operand in the upper half, hence (hi, lo).
template <class T>
RUDNN_DEVICE u32 pack2_from_float(float lo, float hi);
template <>
RUDNN_DEVICE u32 pack2_from_float<f16>(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  u32 packed;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
#else
  return static_cast<u32>(from_float<f16>(lo).bits) | (static_cast<u32>(from_float<f16>(hi).bits) << 16);
#endif
}
template <>
RUDNN_DEVICE u32 pack2_from_float<bf16>(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  u32 packed;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
#else
  return static_cast<u32>(from_float<bf16>(lo).bits) | (static_cast<u32>(from_float<bf16>(hi).bits) << 16);
#endif
}

// Bit patterns of storage types, for code that moves elements as raw words.
template <class T>
struct StorageBits;
template <>
struct StorageBits<float> {
  using type = u32;
  RUDNN_DEVICE static u32 of(float x) { return float_as_bits(x); }
  RUDNN_DEVICE static float make(u32 b) { return bits_as_float(b); }
};
template <>
struct StorageBits<f16> {
  using type = u16;
  RUDNN_DEVICE static u16 of(f16 x) { return x.bits; }
  RUDNN_DEVICE static f16 make(u16 b) { return f16{b}; }
};
template <>
struct StorageBits<bf16> {
  using type = u16;
  RUDNN_DEVICE static u16 of(bf16 x) { return x.bits; }
  RUDNN_DEVICE static bf16 make(u16 b) { return bf16{b}; }
};

}  // namespace rudnn
