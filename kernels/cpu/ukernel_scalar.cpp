// Portable micro-kernel, 8×16 f32 tiles in plain C++: the packed, blocked GEMM without any
// intrinsic — what packing and blocking buy on their own. An 8×16 accumulator array
// the compiler keeps in registers (and turns into SIMD code for the build's target: with
// -march=native, one 16-wide vector per row, 8 independent FMA chains — the honest "what
// the compiler makes of it" step).
#include "kernels/cpu/ukernel.h"

namespace lb::cpu {
namespace {

constexpr int MR = 8;
constexpr int NR = 16;

}  // namespace

// The loop vectoriser would vectorise along k with shuffles (the innermost loop once i and
// j are unrolled); left to the SLP vectoriser, the 8 columns of a row become one vector.
__attribute__((optimize("no-tree-loop-vectorize"))) void ukr_f32_scalar(const UkArgs& u) {
  float acc[MR][NR] = {};
  const float* a = static_cast<const float*>(u.a);
  const float* b = static_cast<const float*>(u.b);
  for (int64_t k = 0; k < u.kc; ++k, a += MR, b += NR)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j)
        acc[i][j] += a[i] * b[j];
  for (int i = 0; i < u.m; ++i)
    for (int j = 0; j < u.n; ++j) {
      float v = acc[i][j];
      float* c = u.c + i * u.ldc + j;
      if (u.load_c) v += *c;
      if (u.last) {
        if (u.bias_row) v += u.bias_row[i];
        if (u.bias_col) v += u.bias_col[j];
        if (u.relu) v = v > 0.0f ? v : 0.0f;
      }
      *c = v;
    }
}

}  // namespace lb::cpu
