// What the cpu backend's vector code includes: the intrinsics, and the target attributes of
// functions compiled for one ISA inside a file compiled for the baseline (chosen at run time
// from CPUID).
#pragma once

// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 intrinsics (the
// _mm512_undefined_ps() pass-through operand of masked operations) wherever they are
// inlined: a false positive, silenced for the intrinsics header only (GCC judges the
// warning by the state at the line it points to).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

// Vectors pass by value between functions compiled for the same ISA only; GCC warns that
// the ABI would differ for callers without it, which there are none of.
#pragma GCC diagnostic ignored "-Wpsabi"

#define LB_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define LB_TARGET_AVX2 __attribute__((target("avx2,fma")))
