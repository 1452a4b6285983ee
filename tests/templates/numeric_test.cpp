// numeric.cuh and vector.cuh compiled by the host compiler: conversions agree with core's
// (independent) implementations bit for bit, and Vec moves elements as whole words.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "rudnn/dtype.h"
#include "rudnn/vector.cuh"

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Every float whose top 20 bits are given (the low bits cover rounding cases), plus specials.
template <class F>
void for_many_floats(F f) {
  for (std::uint32_t hi = 0; hi < (1u << 20); hi += 7) {
    for (std::uint32_t lo : {0u, 1u, 0x7ffu, 0x800u, 0x801u, 0xfffu, 0x1000u, 0x8000u, 0xffffu})
      f(from_bits((hi << 12) | (lo & 0xfffu)));
  }
  for (std::uint32_t u : {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x477fe000u, 0x477ff000u,
                          0x477ff001u, 0x33000000u, 0x33000001u, 0x38800000u, 0x387fffffu, 0x3f800000u, 0x7f7fffffu})
    f(from_bits(u));
}

TEST(Numeric, HalfConversionMatchesCore) {
  for_many_floats([](float x) {
    const auto h = rudnn::from_float<rudnn::f16>(x).bits;
    const auto want = rudnn::float_to_half_bits(x);
    if (std::isnan(x)) {
      EXPECT_EQ(h & 0x7e00u, 0x7e00u);
      return;
    }
    ASSERT_EQ(h, want) << std::hexfloat << x;
  });
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float got = rudnn::to_float(rudnn::f16{static_cast<rudnn::u16>(b)});
    const float want = rudnn::half_bits_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got));
    } else {
      ASSERT_EQ(got, want) << b;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << b;
    }
  }
}

TEST(Numeric, Bf16ConversionMatchesCore) {
  for_many_floats([](float x) {
    const auto b = rudnn::from_float<rudnn::bf16>(x).bits;
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(rudnn::to_float(rudnn::bf16{b})));
      return;
    }
    ASSERT_EQ(b, rudnn::float_to_bf16_bits(x)) << std::hexfloat << x;
  });
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float got = rudnn::to_float(rudnn::bf16{static_cast<rudnn::u16>(b)});
    const float want = rudnn::bf16_bits_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got));
    } else {
      ASSERT_EQ(got, want) << b;
    }
  }
}

TEST(Numeric, Pack2PutsTheFirstValueInTheLowHalf) {
  const rudnn::u32 p = rudnn::pack2_from_float<rudnn::bf16>(1.0f, -2.0f);
  EXPECT_EQ(p & 0xffffu, 0x3f80u);
  EXPECT_EQ(p >> 16, 0xc000u);
  const rudnn::u32 q = rudnn::pack2_from_float<rudnn::f16>(1.0f, -2.0f);
  EXPECT_EQ(q & 0xffffu, 0x3c00u);
  EXPECT_EQ(q >> 16, 0xc000u);
}

TEST(Vector, LoadStoreRoundTripsInMemoryOrder) {
  alignas(16) rudnn::bf16 src[8], dst[8];
  for (int i = 0; i < 8; ++i) src[i] = rudnn::from_float<rudnn::bf16>(static_cast<float>(i + 1));
  const auto v = rudnn::load_vec<rudnn::bf16, 8>(src);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(v.get_float(i), static_cast<float>(i + 1));
  float f[8];
  for (int i = 0; i < 8; ++i) f[i] = -0.5f * static_cast<float>(i);
  rudnn::Vec<rudnn::bf16, 8> w;
  w.set_floats(f);
  rudnn::store_vec<rudnn::bf16, 8>(dst, w);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(rudnn::to_float(dst[i]), f[i]);

  alignas(16) float fs[4] = {1, 2, 3, 4}, fd[4] = {};
  rudnn::store_vec<float, 4>(fd, rudnn::load_vec<float, 4>(fs));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(fd[i], fs[i]);

  rudnn::f16 one = rudnn::from_float<rudnn::f16>(3.0f), out{};
  rudnn::store_vec<rudnn::f16, 1>(&out, rudnn::load_vec<rudnn::f16, 1>(&one));
  EXPECT_EQ(out.bits, one.bits);
  static_assert(sizeof(rudnn::Vec<rudnn::bf16, 8>) == 16);
  static_assert(sizeof(rudnn::Vec<rudnn::f16, 1>) == 2);
}

}  // namespace
