// The softmax op's shape. Its keys, arguments, model and network derivation: softmax.cpp.
#pragma once

#include "kernels/ops/activations.h"

namespace lb {

// y = exp(x - max) / Σ exp(x - max) over the IC channels, at each of the IH×IW positions of
// each sample (a classifier's probabilities are IH = IW = 1): x and y of one shape.
struct Softmax : Activations {
  bool operator==(const Softmax&) const = default;
};

}  // namespace lb
