// The softmax op's shape. Its keys, arguments, model and network derivation: softmax.cpp.
#pragma once

#include <cstdint>

namespace lb {

// y = exp(x - max) / Σ exp(x - max) over the IC channels, at each of the IH×IW positions of
// each sample: x and y are MB×IC×IH×IW (a classifier's probabilities are IH = IW = 1; a
// sequence's positions are rows of the batch, as dense takes them).
struct Softmax {
  int64_t mb = 1, ic = 1, ih = 1, iw = 1;
  int64_t elements() const { return mb * ic * ih * iw; }
  bool operator==(const Softmax&) const = default;
};

}  // namespace lb
