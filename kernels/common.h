// Small helpers every part of layerbench shares: the error type that carries a
// one-line reason to the user, and integer helpers defined once.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

// nvcc compiles this header into device code too (cuda/ includes it); there the integer
// helpers below are marked callable from kernels, so that one definition serves both sides.
#if defined(__CUDACC__)
#define LB_HOST_DEVICE __host__ __device__
#else
#define LB_HOST_DEVICE
#endif

namespace lb {

// `text` safe to print on a terminal: control characters (C0, DEL, C1) and bytes that
// are not UTF-8 written as \n, \t or \xNN, everything else as it is. Errors quote user
// input (a token, a file name, a line), which may hold escape sequences that would
// otherwise reach the terminal. Idempotent: what it writes is printable, backslashes
// are left alone.
inline std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  const auto escape = [&out](unsigned char c) {
    if (c == '\n') return void(out += "\\n");
    if (c == '\t') return void(out += "\\t");
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f)
        escape(c);
      else
        out += char(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, continuation bytes 10xxxxxx, and
    // no overlong, surrogate or out-of-range code point; C1 controls are U+0080..U+009F.
    const int length = c >= 0xc2 && c <= 0xdf   ? 2
                       : c >= 0xe0 && c <= 0xef ? 3
                       : c >= 0xf0 && c <= 0xf4 ? 4
                                                : 0;
    bool valid = length > 0 && i + length <= text.size();
    uint32_t code = valid ? c & (0x7f >> length) : 0;
    for (int k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xc0) == 0x80;
      code = code << 6 | (next & 0x3f);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    valid = valid && code >= smallest[length] && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    if (!valid || code <= 0x9f) {
      escape(c);  // one byte at a time: the rest is looked at afresh
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

// A user-facing failure: bad input, an unsupported combination, a missing file.
// what() is one line that names the offending token or file:line (control characters
// escaped by printable(), so that quoting user input is always safe). The CLI turns
// it into exit code 2; library code never prints.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(printable(what)) {}
  explicit Error(const char* what) : std::runtime_error(printable(what)) {}
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
