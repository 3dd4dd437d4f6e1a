// conv2d.ref.naive — the oracle for 2-D convolution (cross-correlation), every group
// count (depthwise is G = IC = OC), stride, padding and dilation.
//   y[n][k][p][q] = b[k] + sum_{c,r,s} x[n][g*C/G + c][p*SH - PH + r*DH][q*SW - PW + s*DW]
//                                     * W[k][c][r][s],   g = k / (K/G)
// x is N×C×H×W, W is K×(C/G)×R×S, y is N×K×P×Q (NCHW); out-of-image taps read 0.
// Alongside, each output's magnitude: the same sum over |x·W| of the taps inside the
// image, plus |b[k]|; and |y| as the part its rounding to dst adds (ref/kernels.h).
#include <cmath>

#include "kernels/ref/common.h"
#include "kernels/ref/kernels.h"

namespace lb::ref {
namespace {

class RefConv2d final : public Oracle {
 public:
  std::string supports(const Problem&) const override { return {}; }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    c_ = p.conv();
    relu_ = p.relu;
    x_.resize(ts.at(Arg::src).elements());
    w_.resize(ts.at(Arg::wei).elements());
    b_.resize(ts.at(Arg::bias).elements());
    y_.resize(ts.at(Arg::dst).elements());
    magnitude_.resize(y_.size());
    stored_.resize(y_.size());
  }

  void run(TensorSet& ts) override {
    load_all(ts.at(Arg::src), x_);
    load_all(ts.at(Arg::wei), w_);
    load_all(ts.at(Arg::bias), b_);
    const Conv2d& c = c_;
    const int64_t N = c.mb, C = c.ic, H = c.ih, W = c.iw, K = c.oc, R = c.kh, S = c.kw;
    const int64_t P = c.oh(), Q = c.ow(), G = c.g, Cg = C / G, Kg = K / G;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const int64_t g = k / Kg;
        for (int64_t p = 0; p < P; ++p)
          for (int64_t q = 0; q < Q; ++q) {
            double acc = b_[k], magnitude = std::fabs(b_[k]);
            for (int64_t cg = 0; cg < Cg; ++cg) {
              const double* x = &x_[(n * C + g * Cg + cg) * H * W];  // one input plane
              const double* w = &w_[(k * Cg + cg) * R * S];          // one R×S filter
              for (int64_t r = 0; r < R; ++r) {
                const int64_t h = p * c.sh - c.ph + r * c.dh;
                if (h < 0 || h >= H) continue;
                for (int64_t s = 0; s < S; ++s) {
                  const int64_t wi = q * c.sw - c.pw + s * c.dw;
                  if (wi < 0 || wi >= W) continue;
                  const double term = x[h * W + wi] * w[r * S + s];
                  acc += term;
                  magnitude += std::fabs(term);
                }
              }
            }
            y_[((n * K + k) * P + p) * Q + q] = acc;
            magnitude_[((n * K + k) * P + p) * Q + q] = magnitude;
            stored_[((n * K + k) * P + p) * Q + q] = std::fabs(acc);  // rounded once, to dst
          }
      }
    write_output(relu_, ts, y_);
  }

 private:
  Conv2d c_;
  Relu relu_ = Relu::none;
  std::vector<double> x_, w_, b_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv2d() {
  return std::make_unique<RefConv2d>();
}

}  // namespace lb::ref
