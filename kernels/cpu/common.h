// What the cpu backend's kernels share: the pool, workspace and buffers a kernel holds
// from prepare() on, and the ReLU passes for relu=inplace/separate.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/pool.h"
#include "kernels/kernel.h"

namespace lb::cpu {

// The element kind of a low-precision dtype's product: bf16, or int8's u8 × s8.
inline Elem lowp_elem(DType dt) {
  return dt == DType::bf16 ? Elem::bf16 : Elem::u8s8;
}

// y[k·P + p] = ct[p·K + k] for channels k0 ≤ k < k1: a convolution's C computed with the
// pixels as rows (Cᵀ, P × K) into NCHW's channel rows, 16 channels at a time (each pixel's
// 16 contiguous sums of Cᵀ to 16 rows of y). The f32 one goes through registers in 16×16
// blocks where `isa` is AVX-512 (transpose_f32_avx512).
template <class T>
void pixel_rows_to_channels(const T* ct, int64_t K, int64_t P, int64_t k0, int64_t k1, T* y) {
  for (int64_t kb = k0; kb < k1; kb += 16) {
    const int64_t ke = std::min(kb + 16, k1);
    for (int64_t p = 0; p < P; ++p)
      for (int64_t k = kb; k < ke; ++k)
        y[k * P + p] = ct[p * K + k];
  }
}
void pixel_rows_to_channels(Isa isa, const float* ct, int64_t K, int64_t P, int64_t k0, int64_t k1, float* y);

// relu=inplace: dst := max(dst, 0); relu=separate: relu_dst := max(dst, 0) (f32 or bf16
// storage); else nothing. Split across the pool.
void relu_pass(Relu relu, TensorSet& ts, Pool* pool);

}  // namespace lb::cpu
