// The lstm op's shape. Its keys, arguments, model and network derivation: lstm.cpp.
#pragma once

#include <cstdint>

namespace lb {

// L stacked unidirectional LSTM layers over T steps, batch MB, input size IC,
// hidden size HC. Equations and tensor layouts: kernels/ref/lstm.cpp.
struct Lstm {
  int64_t mb = 1, t = 1, ic = 1, hc = 1, l = 1;
  bool operator==(const Lstm&) const = default;
};

}  // namespace lb
