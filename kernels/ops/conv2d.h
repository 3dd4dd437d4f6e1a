// The conv2d op's shape. Its keys, arguments, model and network derivation: conv2d.cpp.
#pragma once

#include <cstdint>

namespace lb {

// Cross-correlation, NCHW. x is MB×IC×IH×IW, W is OC×(IC/G)×KH×KW, b is OC,
// y is MB×OC×OH×OW with OH = (IH + 2·PH - ((KH-1)·DH + 1)) / SH + 1 (likewise OW).
// Depthwise when G = IC = OC.
struct Conv2d {
  int64_t mb = 1, ic = 1, ih = 1, iw = 1, oc = 1, kh = 1, kw = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, g = 1;
  int64_t oh() const { return (ih + 2 * ph - ((kh - 1) * dh + 1)) / sh + 1; }
  int64_t ow() const { return (iw + 2 * pw - ((kw - 1) * dw + 1)) / sw + 1; }
  bool depthwise() const { return g > 1 && g == ic && g == oc; }
  bool operator==(const Conv2d&) const = default;
};

// The products of one output channel of one sample whose input element is inside the input
// (the taps over the zero padding left out), over its group's channels: the model's MACs on
// the input are MB·OC times this (conv2d.cpp).
int64_t conv2d_taps_on_input(const Conv2d& c);

}  // namespace lb
