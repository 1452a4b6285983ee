#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "rudnn/dtype.h"
#include "rudnn/tensor.h"

namespace rudnn {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::F32), 4u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(dtype_size(DType::FP8E4M3), 1u);
  EXPECT_TRUE(is_quantized(DType::FP8E4M3));
  EXPECT_FALSE(is_quantized(DType::BF16));
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::U32, DType::I32, DType::I64, DType::FP8E4M3})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("f64").has_value());
}

// Every half value converts to float and back to itself (NaNs stay NaN).
TEST(DType, HalfRoundTripsEveryValue) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(f))));
      continue;
    }
    ASSERT_EQ(float_to_half_bits(f), h) << "half bits " << h;
  }
}

TEST(DType, HalfRoundsToNearestEven) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // overflows to inf
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);         // tie: to even (zero)
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
}

TEST(DType, Bf16RoundTripAndRounding) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_bits_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), b);
  }
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie to even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie to even (up)
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(NAN))));
}

TEST(DType, Fp8E4M3) {
  EXPECT_EQ(fp8e4m3_bits_to_float(float_to_fp8e4m3_bits(448.0f)), 448.0f);
  EXPECT_EQ(fp8e4m3_bits_to_float(float_to_fp8e4m3_bits(1000.0f)), 448.0f);  // saturates
  EXPECT_EQ(fp8e4m3_bits_to_float(float_to_fp8e4m3_bits(-1.5f)), -1.5f);
  EXPECT_TRUE(std::isnan(fp8e4m3_bits_to_float(0x7f)));
}

TEST(DType, U8HoldsBooleanMasks) {
  EXPECT_EQ(dtype_size(DType::U8), 1u);
  EXPECT_EQ(dtype_name(DType::U8), "ui8");
  EXPECT_EQ(parse_dtype("u8"), DType::U8);
  EXPECT_EQ(parse_dtype("bool"), DType::U8);
  EXPECT_FALSE(is_float(DType::U8));
  EXPECT_FALSE(is_quantized(DType::U8));
  const std::vector<double> v = {0, 1, 255, 7};
  auto d = HostData::from_f64({4}, DType::U8, v);
  EXPECT_EQ(d.bytes.size(), 4u);
  EXPECT_EQ(d.to_f64(), v);
}

TEST(HostData, F64RoundTripPerDtype) {
  const std::vector<double> v = {1.0, -2.5, 3.0, 0.0};
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64}) {
    auto d = HostData::from_f64({2, 2}, t, v);
    EXPECT_EQ(d.bytes.size(), 4 * dtype_size(t));
    auto back = d.to_f64();
    if (t == DType::I32 || t == DType::I64) {
      EXPECT_EQ(back[0], 1.0);
      EXPECT_EQ(back[1], -2.0);
    } else {
      EXPECT_EQ(back, v);
    }
  }
}

TEST(Shape, Formatting) {
  EXPECT_EQ(shape_to_string({}), "[]");
  EXPECT_EQ(shape_to_string({2, -1, 4}), "[2, ?, 4]");
  EXPECT_EQ(element_count({3, 0, 2}), 0);
  EXPECT_EQ(element_count({}), 1);
}

}  // namespace
}  // namespace rudnn
