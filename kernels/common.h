// Small helpers every part of layerbench shares: the error type that carries a
// one-line reason to the user, and integer helpers defined once.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

// nvcc compiles this header into device code too (cuda/ includes it); there the integer
// helpers below are marked callable from kernels, so that one definition serves both sides.
#if defined(__CUDACC__)
#define LB_HOST_DEVICE __host__ __device__
#else
#define LB_HOST_DEVICE
#endif

namespace lb {

// A user-facing failure: bad input, an unsupported combination, a missing file.
// what() is one line that names the offending token or file:line. The CLI turns
// it into exit code 2; library code never prints.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ⌈a / b⌉ for a >= 0, b > 0 (written without a + b - 1, which can overflow).
LB_HOST_DEVICE constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0);
}

// The smallest multiple of b that is >= a (a >= 0, b > 0).
LB_HOST_DEVICE constexpr int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

}  // namespace lb
