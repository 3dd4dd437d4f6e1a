// The dense op's shape. Its keys, arguments, model and network derivation: dense.cpp.
#pragma once

#include <cstdint>

namespace lb {

// y = x·Wᵀ + b.  x is MB×IC, W is OC×IC, b is OC, y is MB×OC (all row-major).
struct Dense {
  int64_t mb = 1, ic = 1, oc = 1;
  bool operator==(const Dense&) const = default;
};

}  // namespace lb
