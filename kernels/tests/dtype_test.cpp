// Narrow-format conversions: exact on every representable value, round-to-nearest-even
// between them, saturation where the format has no infinity.
#include "kernels/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "kernels/common.h"

namespace lb {
namespace {

TEST(DType, NamesRoundTripAndBadNamesAreRejected) {
  for (DType d : kAllDTypes)
    EXPECT_EQ(parse_dtype(name(d)), d);
  EXPECT_THROW(parse_dtype("fp32"), Error);
  try {
    parse_dtype("fp32");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "dtype 'fp32': expected one of f32 tf32 f16 bf16 i8 f8");
  }
}

TEST(DType, F16EveryPatternRoundTrips) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(DType, F16KnownValuesAndRounding) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);         // largest finite
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);         // halfway to the next: rounds to even = inf
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);         // smallest subnormal
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);         // halfway to 0: even is 0
  EXPECT_EQ(f32_to_f16(0x1.8p-24f), 0x0002);       // 1.5 ulp: to even (2)
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3c00);  // halfway, ties to even
  EXPECT_EQ(f32_to_f16(1.0f + 0x1.8p-11f), 0x3c01);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
}

TEST(DType, Bf16RoundTripsAndRounds) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = bf16_to_f32(uint16_t(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), b);
  }
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);  // halfway: even
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);
}

TEST(DType, E4m3RoundTripsSaturatesAndRounds) {
  for (uint32_t b = 0; b < 0x100u; ++b) {
    const float f = e4m3_to_f32(uint8_t(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_e4m3(f), b) << b;
  }
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(f32_to_e4m3(1000.0f), 0x7e);  // no infinity: saturate
  EXPECT_EQ(f32_to_e4m3(-1000.0f), 0xfe);
  EXPECT_EQ(e4m3_to_f32(0x01), 0x1p-9f);
  EXPECT_EQ(f32_to_e4m3(1.0625f), 0x38);  // halfway between 1 and 1.125: even
  EXPECT_EQ(f32_to_e4m3(1.1f), 0x39);
}

TEST(DType, Tf32KeepsTenMantissaBits) {
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-12f), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-11f), 1.0f);  // tie to even
  EXPECT_EQ(round_to_tf32(1.0f + 0x1.8p-11f), 1.0f + 0x1p-10f);
}

TEST(DType, RoundToIsTheRoundTripOfEachFloatingStorage) {
  const float x = 1.0f + 0x1p-10f + 0x1p-20f;
  EXPECT_EQ(round_to(Storage::f32, x), x);
  EXPECT_EQ(round_to(Storage::f16, x), 1.0f + 0x1p-10f);
  EXPECT_EQ(round_to(Storage::bf16, x), 1.0f);
  EXPECT_EQ(round_to(Storage::e4m3, 1.2f), 1.25f);
  EXPECT_THROW(round_to(Storage::u8, x), Error);
}

TEST(DType, UnitRoundoff) {
  EXPECT_EQ(unit_roundoff(Storage::f32), 0x1p-24);
  EXPECT_EQ(unit_roundoff(Storage::bf16), 0x1p-8);
  EXPECT_EQ(unit_roundoff(Storage::s8), 0.0);
  EXPECT_EQ(size_of(Storage::bf16), 2u);
}

}  // namespace
}  // namespace lb
