// Small helpers every part of layerbench shares: the error type that carries a
// one-line reason to the user, and integer helpers defined once.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace lb {

// A user-facing failure: bad input, an unsupported combination, a missing file.
// what() is one line that names the offending token or file:line. The CLI turns
// it into exit code 2; library code never prints.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace lb
