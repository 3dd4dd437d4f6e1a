// The add op's shape. Its keys, arguments, model and network derivation: add.cpp.
#pragma once

#include "kernels/ops/activations.h"

namespace lb {

// y = x + x₁, element by element (a residual connection's sum): x, x₁ and y are activations
// of one shape.
struct Add : Activations {
  bool operator==(const Add&) const = default;
};

}  // namespace lb
