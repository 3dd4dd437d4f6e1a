// The ref backend's kernels as factories; register.cpp gives each its id and description.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/verify.h"

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
//
// A backward pass gives the same three for every output it writes (expected(arg)): a
// gradient element is a dot product too (dx = Σ dz·W, dW = Σ dz·x, db = Σ dz), with its
// Σ|terms|. The ReLU's mask comes from the dst (or relu_dst) it reads, or in train from
// the dst it wrote, and dz = dy where that is > 0; its masked values are exact.
class Oracle : public Kernel {
 public:
  const Doubles& exact() const { return y_; }
  const Doubles& magnitude() const { return magnitude_; }
  const Doubles& stored() const { return stored_; }
  // After run(): what the reference says of output `a` of the pass (empty if none).
  const Expected& expected(Arg a) const { return expected_[int(a)]; }
  // Before prepare(): compute the outputs that sum over the batch (dW, db) only at these
  // indices of their first axis (output channels), over the whole batch, so that checking
  // a large layer's weight gradient costs a few rows of it; the others stay 0. Empty: all.
  void only_rows(std::vector<int64_t> rows) { rows_ = std::move(rows); }

 protected:
  // Sizes expected(a) of every output of p (in prepare()).
  void size_expected(const Problem& p, const TensorSet& ts) {
    for (Arg a : output_args(p)) {
      Expected& e = expected_[int(a)];
      const size_t n = size_t(ts.at(a).elements());
      e.value.assign(n, 0.0);
      e.magnitude.assign(n, 0.0);
      e.stored.assign(n, 0.0);
    }
  }
  // Whether row r of an output summed over the batch is computed (only_rows()).
  bool computes_row(int64_t r) const {
    return rows_.empty() || std::find(rows_.begin(), rows_.end(), r) != rows_.end();
  }

  std::array<Expected, kNumArgs> expected_;  // sized in prepare(), so that run() does not allocate
  Doubles& y_ = expected_[int(Arg::dst)].value;
  Doubles& magnitude_ = expected_[int(Arg::dst)].magnitude;
  Doubles& stored_ = expected_[int(Arg::dst)].stored;
  std::vector<int64_t> rows_;
};

std::unique_ptr<Kernel> make_dense();
std::unique_ptr<Kernel> make_conv2d();
std::unique_ptr<Kernel> make_lstm();
std::unique_ptr<Kernel> make_pool2d();
std::unique_ptr<Kernel> make_add();
std::unique_ptr<Kernel> make_softmax();

}  // namespace lb::ref
