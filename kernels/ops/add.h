// The add op's shape. Its keys, arguments, model and network derivation: add.cpp.
#pragma once

#include <cstdint>

namespace lb {

// y = x + x₁, element by element: x, x₁ and y are MB×IC×IH×IW (a residual connection's
// sum; a vector per sample is IH = IW = 1, a sequence's positions are rows of the batch).
struct Add {
  int64_t mb = 1, ic = 1, ih = 1, iw = 1;
  int64_t elements() const { return mb * ic * ih * iw; }
  bool operator==(const Add&) const = default;
};

}  // namespace lb
