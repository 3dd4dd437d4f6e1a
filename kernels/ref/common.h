// Helpers the reference kernels share: read a tensor as doubles, and write a layer's
// output in each ReLU mode exactly as the mode is defined (problem.h).
#pragma once

#include <algorithm>
#include <vector>

#include "kernels/tensor.h"

namespace lb::ref {

// out must already hold t.elements() values (sized in prepare(), so run() does not allocate).
inline void load_all(const Tensor& t, std::vector<double>& out) {
  for (int64_t i = 0; i < t.elements(); ++i)
    out[i] = t.load(i);
}

// y holds the layer's output before any ReLU.
inline void write_output(Relu relu, TensorSet& ts, const std::vector<double>& y) {
  Tensor& dst = ts.at(Arg::dst);
  const int64_t n = dst.elements();
  if (relu == Relu::fused) {
    for (int64_t i = 0; i < n; ++i)
      dst.store(i, std::max(y[i], 0.0));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    dst.store(i, y[i]);
  if (relu == Relu::inplace) {  // a second pass that overwrites the layer output
    for (int64_t i = 0; i < n; ++i)
      dst.store(i, std::max(dst.load(i), 0.0));
  } else if (relu == Relu::separate) {  // a second pass into its own buffer
    Tensor& r = ts.at(Arg::relu_dst);
    for (int64_t i = 0; i < n; ++i)
      r.store(i, std::max(dst.load(i), 0.0));
  }
}

}  // namespace lb::ref
