// Helpers the reference kernels share: read a tensor as doubles, and write a layer's
// output in each ReLU mode exactly as the mode is defined (problem.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor.h"
#include "kernels/verify.h"

namespace lb::ref {

// out must already hold t.elements() values (sized in prepare(), so run() does not allocate).
inline void load_all(const Tensor& t, Doubles& out) {
  for (int64_t i = 0; i < t.elements(); ++i)
    out[i] = t.load(i);
}

// y holds the layer's output before any ReLU.
inline void write_output(Relu relu, TensorSet& ts, const Doubles& y) {
  Tensor& dst = ts.at(Arg::dst);
  const int64_t n = dst.elements();
  if (relu == Relu::fused) {
    for (int64_t i = 0; i < n; ++i)
      dst.store(i, std::max(y[i], 0.0));
    return;
  }
  if (relu == Relu::relu6) {
    for (int64_t i = 0; i < n; ++i)
      dst.store(i, std::min(std::max(y[i], 0.0), 6.0));
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

// value[i] += d·v[i] and magnitude[i] += |d·v[i]| for i < n: one term of n sums side by
// side (vectorised), each sum in the order of the calls. The references' dot products
// and outer products are made of these.
inline void add_terms(double d, const double* __restrict v, int64_t n, double* __restrict value,
                      double* __restrict magnitude) {
  for (int64_t i = 0; i < n; ++i) {
    const double term = d * v[i];
    value[i] += term;
    magnitude[i] += std::fabs(term);
  }
}

// Zeros an Expected's values and bounds, for sums that add into them.
inline void clear(Expected& e) {
  std::fill(e.value.begin(), e.value.end(), 0.0);
  std::fill(e.magnitude.begin(), e.magnitude.end(), 0.0);
  std::fill(e.stored.begin(), e.stored.end(), 0.0);
}

// Writes every value of v to t (rounded to its storage).
inline void store_all(const Doubles& v, Tensor& t) {
  for (int64_t i = 0; i < t.elements(); ++i)
    t.store(i, v[i]);
}

// The ReLU's backward in front of a backward pass (ops/traits.h, pass_args): dz, the
// gradient of the layer's pre-ReLU output, is the arriving gradient where the ReLU's output
// is > 0, else 0 — read from dst (relu_dst under separate), which the pass reads, or in
// train wrote. dz goes to `dz` as exact values; under separate it is written to diff_dst,
// under inplace over diff_dst (the arriving gradient), and `expected` (diff_dst's) holds
// it: a copy or a zero, exact in any storage.
inline void relu_backward(Relu relu, TensorSet& ts, Doubles& dz, Expected& expected) {
  const Tensor& dy = ts.at(relu == Relu::separate ? Arg::diff_relu_dst : Arg::diff_dst);
  load_all(dy, dz);
  if (relu == Relu::none) return;
  const Tensor& out = ts.at(relu == Relu::separate ? Arg::relu_dst : Arg::dst);
  for (int64_t i = 0; i < out.elements(); ++i)
    if (!(out.load(i) > 0)) dz[i] = 0.0;
  if (relu == Relu::separate || relu == Relu::inplace) {
    Tensor& written = ts.at(Arg::diff_dst);
    for (int64_t i = 0; i < written.elements(); ++i)
      written.store(i, dz[i]);
    // Sized in prepare() (size_expected), so run() does not allocate; magnitude and stored
    // stay 0: nothing is rounded.
    std::copy(dz.begin(), dz.end(), expected.value.begin());
  }
}

// Empty for a forward pass, or a backward pass in a dtype one trains in; else why not.
inline std::string training_dtypes(const Problem& p) {
  if (!runs_backward(p.pass)) return {};
  if (std::string why = require_dtypes(p, {DType::f32, DType::tf32, DType::f16, DType::bf16}); !why.empty())
    return why + ": no gradients in integer or f8 arithmetic are defined";
  return {};
}

}  // namespace lb::ref
