// Data types: what a problem's tensors hold (DType, as written in a problem line)
// and how each tensor is stored in memory (Storage). One DType maps to several
// storages: an int8 problem reads u8 activations and s8 weights and writes f32.
// The mapping lives in one function, storage_of() in tensor.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace lb {

enum class DType { f32, tf32, f16, bf16, i8, f8 };
inline constexpr DType kAllDTypes[] = {DType::f32,  DType::tf32, DType::f16,
                                       DType::bf16, DType::i8,   DType::f8};

// f8 is OCP FP8 E4M3 (no infinities, max 448), the format Hopper's tensor cores read.
enum class Storage { f32, f16, bf16, u8, s8, e4m3 };

std::string_view name(DType d);
std::string_view name(Storage s);
// Throws lb::Error naming the token and the accepted values.
DType parse_dtype(std::string_view token);

size_t size_of(Storage s);

// Relative rounding unit (half an ulp at 1.0) of a storage's floating format;
// 0 for the integer storages, whose values are exact.
double unit_roundoff(Storage s);
// Half the spacing of a floating storage's subnormals: the absolute rounding error of a
// value too small for the relative unit (f16 outputs reach it through cancellation); 0
// for integer storages.
double subnormal_half_spacing(Storage s);

// Round-to-nearest-even conversions; the narrow formats are bit patterns.
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
// bf16's are inline: kernels convert per element in their loops.
// (memcpy, not std::bit_cast: nvcc compiles this header too, in C++17.)
inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (f != f) return uint16_t((x >> 16) | 0x40u);  // NaN stays NaN
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float bf16_to_f32(uint16_t b) {
  const uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
uint8_t f32_to_e4m3(float f);  // saturates to +-448, NaN stays NaN
float e4m3_to_f32(uint8_t b);
float round_to_tf32(float f);  // 10 explicit mantissa bits, as tensor cores read f32
// f as a floating storage holds it (f16, bf16, e4m3: the round trip through its bits; f32:
// f itself); integer storages, which scale their values, throw lb::Error.
float round_to(Storage s, float f);

}  // namespace lb
