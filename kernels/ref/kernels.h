// The ref backend's kernels as factories; register.cpp gives each its id and description.
#pragma once

#include <memory>
#include <vector>

#include "kernels/kernel.h"

namespace lb::ref {

// What a reference computes beyond the layer's outputs, for verification alone
// (kernels/verify.cpp, which reaches it through dynamic_cast): every reference derives
// from Oracle, no other backend sees it, and kernel.h stays the one interface.
//
// After run(), per element of dst in dst's layout, before any ReLU:
//   exact()      the value in double, before rounding to dst's storage;
//   magnitude()  the scale of the arithmetic's rounding errors in it: a kernel that
//                rounds each operation with relative unit ε is within about
//                ε·magnitude of exact(). For a dot product Σ xᵢ·wᵢ + b it is
//                Σ |xᵢ·wᵢ| + |b| — not |y|, which cancellation makes small while the
//                rounding errors of the terms stay (dense.cpp, conv2d.cpp);
//   stored()     the scale of the errors from rounding values to dst's storage, in
//                units of that storage's: |y| where the output is rounded once (dense,
//                conv2d); the LSTM stores h and reads it back at every step.
// The LSTM carries both through its gates and steps (lstm.cpp). All three are filled
// on every run: the sum of magnitudes is a second chain of additions beside the value's,
// which the loops' latency leaves room for (measured: a dense reference takes about a
// fifth longer with it).
class Oracle : public Kernel {
 public:
  const std::vector<double>& exact() const { return y_; }
  const std::vector<double>& magnitude() const { return magnitude_; }
  const std::vector<double>& stored() const { return stored_; }

 protected:
  std::vector<double> y_, magnitude_, stored_;  // sized in prepare(), so that run() does not allocate
};

std::unique_ptr<Kernel> make_dense();
std::unique_ptr<Kernel> make_conv2d();
std::unique_ptr<Kernel> make_lstm();

}  // namespace lb::ref
