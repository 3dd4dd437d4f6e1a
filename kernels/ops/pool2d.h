// The pool2d op's shape. Its keys, arguments, model and network derivation: pool2d.cpp.
#pragma once

#include <cstdint>

namespace lb {

// Max or average pooling of each channel's plane, NCHW: x is MB×IC×IH×IW, y is
// MB×IC×OH×OW with OH = (IH + 2·P - K) / S + 1 (floor, PyTorch's default; likewise OW), a
// K×K window every S pixels. Taps over the zero padding are left out of a max and counted
// as zeros in an average (PyTorch's count_include_pad). A global pool is K = IH = IW.
struct Pool2d {
  enum class Alg { max, avg };
  int64_t mb = 1, ic = 1, ih = 1, iw = 1, k = 1, s = 1, p = 0;
  Alg alg = Alg::max;
  int64_t oh() const { return (ih + 2 * p - k) / s + 1; }
  int64_t ow() const { return (iw + 2 * p - k) / s + 1; }
  bool operator==(const Pool2d&) const = default;
};

}  // namespace lb
