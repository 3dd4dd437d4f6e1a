// pool2d.ref.naive — the oracle for max and average pooling (kernels/ops/pool2d.h):
//   max: y[n][c][p][q] = max over the window's taps inside the image of x[n][c][h][w]
//   avg: y[n][c][p][q] = (sum over the taps inside the image of x[n][c][h][w]) / K²
// with h = p·S - P + r, w = q·S - P + s for r, s in [0, K) (the padding counts as zeros in
// an average, PyTorch's count_include_pad). In double; the magnitude of an average is
// Σ|x| / K², of a max |y| (a max rounds nothing: only the output's storage rounds it).
#include <cmath>
#include <limits>

#include "kernels/ref/common.h"
#include "kernels/ref/kernels.h"

namespace lb::ref {
namespace {

class RefPool2d final : public Oracle {
 public:
  std::string supports(const Problem&) const override { return {}; }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    q_ = p.pool();
    relu_ = p.relu;
    x_.resize(ts.at(Arg::src).elements());
    size_expected(p, ts);
  }

  void run(TensorSet& ts) override {
    load_all(ts.at(Arg::src), x_);
    const Pool2d& q = q_;
    const int64_t P = q.oh(), Q = q.ow(), H = q.ih, W = q.iw;
    const bool avg = q.alg == Pool2d::Alg::avg;
    int64_t at = 0;
    for (int64_t plane = 0; plane < q.mb * q.ic; ++plane) {
      const double* x = &x_[plane * H * W];
      for (int64_t p = 0; p < P; ++p)
        for (int64_t o = 0; o < Q; ++o, ++at) {
          double acc = avg ? 0.0 : -std::numeric_limits<double>::infinity(), magnitude = 0.0;
          for (int64_t r = 0; r < q.k; ++r) {
            const int64_t h = p * q.s - q.p + r;
            if (h < 0 || h >= H) continue;
            for (int64_t s = 0; s < q.k; ++s) {
              const int64_t w = o * q.s - q.p + s;
              if (w < 0 || w >= W) continue;
              const double v = x[h * W + w];
              if (avg) {
                acc += v;
                magnitude += std::fabs(v);
              } else {
                acc = std::max(acc, v);
              }
            }
          }
          if (avg) {
            acc /= double(q.k * q.k);
            magnitude /= double(q.k * q.k);
          } else {
            magnitude = std::fabs(acc);
          }
          y_[at] = acc;
          magnitude_[at] = magnitude;
          stored_[at] = std::fabs(acc);
        }
    }
    write_output(relu_, ts, y_);
  }

 private:
  Pool2d q_;
  Relu relu_ = Relu::none;
  Doubles x_;
};

}  // namespace

std::unique_ptr<Kernel> make_pool2d() {
  return std::make_unique<RefPool2d>();
}

}  // namespace lb::ref
