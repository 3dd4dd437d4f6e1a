#include "kernels/dtype.h"

#include <bit>
#include <cmath>

#include "kernels/common.h"

namespace lb {

std::string_view name(DType d) {
  switch (d) {
    case DType::f32:
      return "f32";
    case DType::tf32:
      return "tf32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i8:
      return "i8";
    case DType::f8:
      return "f8";
  }
  return "?";
}

std::string_view name(Storage s) {
  switch (s) {
    case Storage::f32:
      return "f32";
    case Storage::f16:
      return "f16";
    case Storage::bf16:
      return "bf16";
    case Storage::u8:
      return "u8";
    case Storage::s8:
      return "s8";
    case Storage::e4m3:
      return "e4m3";
  }
  return "?";
}

DType parse_dtype(std::string_view token) {
  for (DType d : kAllDTypes)
    if (name(d) == token) return d;
  throw Error("dtype '" + std::string(token) + "': expected one of f32 tf32 f16 bf16 i8 f8");
}

size_t size_of(Storage s) {
  switch (s) {
    case Storage::f32:
      return 4;
    case Storage::f16:
    case Storage::bf16:
      return 2;
    case Storage::u8:
    case Storage::s8:
    case Storage::e4m3:
      return 1;
  }
  return 0;
}

double unit_roundoff(Storage s) {
  switch (s) {
    case Storage::f32:
      return 0x1p-24;
    case Storage::f16:
      return 0x1p-11;
    case Storage::bf16:
      return 0x1p-8;
    case Storage::e4m3:
      return 0x1p-4;
    case Storage::u8:
    case Storage::s8:
      return 0.0;
  }
  return 0.0;
}

double subnormal_half_spacing(Storage s) {
  switch (s) {
    case Storage::f32:
      return 0x1p-150;
    case Storage::f16:
      return 0x1p-25;
    case Storage::bf16:
      return 0x1p-134;
    case Storage::e4m3:
      return 0x1p-10;
    case Storage::u8:
    case Storage::s8:
      return 0.0;
  }
  return 0.0;
}

uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return uint16_t(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  const int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00u);
  if (e <= 0) {  // f16 subnormal: value = m10 * 2^-24, so m10 = mant24 >> (14 - e)
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry may round up to inf: correct
  return uint16_t(sign | h);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

float round_to_tf32(float f) {
  if (!std::isfinite(f)) return f;
  const uint32_t x = std::bit_cast<uint32_t>(f);
  return std::bit_cast<float>((x + 0xfffu + ((x >> 13) & 1u)) & ~0x1fffu);
}

float round_to(Storage s, float f) {
  switch (s) {
    case Storage::f32:
      return f;
    case Storage::f16:
      return f16_to_f32(f32_to_f16(f));
    case Storage::bf16:
      return bf16_to_f32(f32_to_bf16(f));
    case Storage::e4m3:
      return e4m3_to_f32(f32_to_e4m3(f));
    case Storage::u8:
    case Storage::s8:
      break;
  }
  throw Error("round_to: " + std::string(name(s)) + " is an integer storage");
}

uint8_t f32_to_e4m3(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80u : 0u;
  if (std::isnan(f)) return uint8_t(sign | 0x7fu);
  const float a = std::fabs(f);
  if (a < 0x1p-6f) {  // subnormal range: q * 2^-9, q = 8 is the smallest normal's bit pattern
    return uint8_t(sign | uint8_t(std::nearbyint(a * 512.0f)));
  }
  int e = 0;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1;
  int mant = int(std::nearbyint((m * 2.0f - 1.0f) * 8.0f));
  if (mant == 8) {
    mant = 0;
    ++exp;
  }
  const int biased = exp + 7;
  if (biased > 15 || (biased == 15 && mant == 7)) return uint8_t(sign | 0x7eu);  // saturate at 448
  return uint8_t(sign | (biased << 3) | mant);
}

float e4m3_to_f32(uint8_t b) {
  const bool neg = b & 0x80u;
  const int exp = (b >> 3) & 0xf;
  const int mant = b & 7;
  float v;
  if (exp == 15 && mant == 7)
    v = std::nanf("");
  else if (exp == 0)
    v = std::ldexp(float(mant), -9);
  else
    v = std::ldexp(1.0f + float(mant) / 8.0f, exp - 7);
  return neg ? -v : v;
}

}  // namespace lb
