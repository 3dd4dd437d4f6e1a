// conv2d.ref.naive — the oracle for 2-D convolution (cross-correlation), every group
// count (depthwise is G = IC = OC), stride, padding and dilation.
//   y[n][k][p][q] = b[k] + sum_{c,r,s} x[n][g*C/G + c][p*SH - PH + r*DH][q*SW - PW + s*DW]
//                                     * W[k][c][r][s],   g = k / (K/G)
// x is N×C×H×W, W is K×(C/G)×R×S, y is N×K×P×Q (NCHW); out-of-image taps read 0.
// Alongside, each output's magnitude: the same sum over |x·W| of the taps inside the
// image, plus |b[k]|; and |y| as the part its rounding to dst adds (ref/kernels.h).
//
// Backward, with dz the gradient of y before the ReLU (ref/common.h, relu_backward), over
// the same taps (those inside the image):
//   dx[n][g*C/G + c][h][w] += dz[n][k][p][q] * W[k][c][r][s]   for h = p*SH - PH + r*DH, ...
//   dW[k][c][r][s]         = sum_{n,p,q} dz[n][k][p][q] * x[n][g*C/G + c][h][w]
//   db[k]                  = sum_{n,p,q} dz[n][k][p][q]
// each with its magnitude, the sum of the terms' absolute values. The forward's loops run
// a plane's outputs side by side, each sum in the order above (vectorised): `check
// --backend ref --network resnet50 --max-macs 1000000000` 22 -> 5.4 s (AMD EPYC Zen 5
// VM, 2026-12-07; the 22 s with another single-threaded run on the other core).
#include <algorithm>
#include <cmath>

#include "kernels/ref/common.h"
#include "kernels/ref/kernels.h"

namespace lb::ref {
namespace {

class RefConv2d final : public Oracle {
 public:
  std::string supports(const Problem& p) const override { return training_dtypes(p); }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    problem_ = p;
    c_ = p.conv();
    relu_ = p.relu;
    const Conv2d& c = c_;
    x_.resize(c.mb * c.ic * c.ih * c.iw);
    w_.resize(c.oc * (c.ic / c.g) * c.kh * c.kw);
    b_.resize(c.oc);
    dz_.resize(c.mb * c.oc * c.oh() * c.ow());
    size_expected(p, ts);
  }

  void run(TensorSet& ts) override {
    if (runs_forward(problem_.pass)) forward(ts);
    if (runs_backward(problem_.pass)) backward(ts);
  }

 private:
  // The outputs [first, last) along one axis whose tap at `offset` (r·DH) lands inside the
  // input (0 <= o·stride - pad + offset < n_in).
  struct Taps {
    int64_t first, last;
  };
  static Taps inside(int64_t n_in, int64_t n_out, int64_t stride, int64_t pad, int64_t offset) {
    auto ceil_div = [](int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };
    auto floor_div = [](int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
    const int64_t first = std::max<int64_t>(0, ceil_div(pad - offset, stride));
    const int64_t last = std::min(n_out, floor_div(n_in - 1 + pad - offset, stride) + 1);
    return {first, std::max(first, last)};
  }

  // Calls tap(n, k, p, q, x index, w index, y index) for every tap inside the image, in
  // the order the forward sums them; `keep(k)` skips output channels.
  template <class Tap, class Keep>
  void for_each_tap(Keep keep, Tap tap) const {
    const Conv2d& c = c_;
    const int64_t N = c.mb, C = c.ic, H = c.ih, W = c.iw, K = c.oc, R = c.kh, S = c.kw;
    const int64_t P = c.oh(), Q = c.ow(), G = c.g, Cg = C / G, Kg = K / G;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        if (!keep(k)) continue;
        const int64_t g = k / Kg;
        for (int64_t p = 0; p < P; ++p)
          for (int64_t q = 0; q < Q; ++q)
            for (int64_t cg = 0; cg < Cg; ++cg)
              for (int64_t r = 0; r < R; ++r) {
                const int64_t h = p * c.sh - c.ph + r * c.dh;
                if (h < 0 || h >= H) continue;
                for (int64_t s = 0; s < S; ++s) {
                  const int64_t wi = q * c.sw - c.pw + s * c.dw;
                  if (wi < 0 || wi >= W) continue;
                  tap(((n * C + g * Cg + cg) * H + h) * W + wi, ((k * Cg + cg) * R + r) * S + s,
                      ((n * K + k) * P + p) * Q + q);
                }
              }
      }
  }

  void backward(TensorSet& ts) {
    relu_backward(relu_, ts, dz_, expected_[int(Arg::diff_dst)]);
    if (computes_data_grads(problem_.pass)) {
      load_all(ts.at(Arg::wei), w_);
      Expected& dx = expected_[int(Arg::diff_src)];
      clear(dx);  // sums from zero in every run
      for_each_tap([](int64_t) { return true; },
                   [&](int64_t xi, int64_t wi, int64_t yi) {
                     const double term = dz_[yi] * w_[wi];
                     dx.value[xi] += term;
                     dx.magnitude[xi] += std::fabs(term);
                   });
      for (size_t i = 0; i < dx.value.size(); ++i)
        dx.stored[i] = std::fabs(dx.value[i]);
      store_all(dx.value, ts.at(Arg::diff_src));
    }
    if (computes_weight_grads(problem_.pass)) {
      load_all(ts.at(Arg::src), x_);
      Expected &dw = expected_[int(Arg::diff_wei)], &db = expected_[int(Arg::diff_bias)];
      clear(dw);
      clear(db);
      const int64_t plane = c_.oh() * c_.ow();
      for (int64_t n = 0; n < c_.mb; ++n)
        for (int64_t k = 0; k < c_.oc; ++k) {
          if (!computes_row(k)) continue;
          for (int64_t i = 0; i < plane; ++i) {
            const double d = dz_[(n * c_.oc + k) * plane + i];
            db.value[k] += d;
            db.magnitude[k] += std::fabs(d);
          }
        }
      for_each_tap([this](int64_t k) { return computes_row(k); },
                   [&](int64_t xi, int64_t wi, int64_t yi) {
                     const double term = dz_[yi] * x_[xi];
                     dw.value[wi] += term;
                     dw.magnitude[wi] += std::fabs(term);
                   });
      for (size_t i = 0; i < dw.value.size(); ++i)
        dw.stored[i] = std::fabs(dw.value[i]);
      for (size_t i = 0; i < db.value.size(); ++i)
        db.stored[i] = std::fabs(db.value[i]);
      store_all(dw.value, ts.at(Arg::diff_wei));
      store_all(db.value, ts.at(Arg::diff_bias));
    }
  }

  void forward(TensorSet& ts) {
    load_all(ts.at(Arg::src), x_);
    load_all(ts.at(Arg::wei), w_);
    load_all(ts.at(Arg::bias), b_);
    const Conv2d& c = c_;
    const int64_t N = c.mb, C = c.ic, H = c.ih, W = c.iw, K = c.oc, R = c.kh, S = c.kw;
    const int64_t P = c.oh(), Q = c.ow(), G = c.g, Cg = C / G, Kg = K / G;
    // Per output plane, the taps outer (cg, r, s, the order each output sums them) and the
    // outputs they reach inner: each sum in the same order as one output at a time, the
    // plane's outputs side by side (vectorised where the column stride is 1).
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const int64_t g = k / Kg, at = (n * K + k) * P * Q;
        double* __restrict acc = &y_[at];
        double* __restrict magnitude = &magnitude_[at];
        std::fill(acc, acc + P * Q, b_[k]);
        std::fill(magnitude, magnitude + P * Q, std::fabs(b_[k]));
        for (int64_t cg = 0; cg < Cg; ++cg) {
          const double* x = &x_[(n * C + g * Cg + cg) * H * W];  // one input plane
          const double* w = &w_[(k * Cg + cg) * R * S];          // one R×S filter
          for (int64_t r = 0; r < R; ++r) {
            const Taps ps = inside(H, P, c.sh, c.ph, r * c.dh);
            for (int64_t t = 0; t < S; ++t) {
              const Taps qs = inside(W, Q, c.sw, c.pw, t * c.dw);
              const double wv = w[r * S + t];
              for (int64_t p = ps.first; p < ps.last; ++p) {
                const double* row = x + (p * c.sh - c.ph + r * c.dh) * W - c.pw + t * c.dw;
                double* a = acc + p * Q;
                double* m = magnitude + p * Q;
                for (int64_t q = qs.first; q < qs.last; ++q) {
                  const double term = row[q * c.sw] * wv;
                  a[q] += term;
                  m[q] += std::fabs(term);
                }
              }
            }
          }
        }
        for (int64_t i = 0; i < P * Q; ++i)
          stored_[at + i] = std::fabs(acc[i]);  // rounded once, to dst
      }
    write_output(relu_, ts, y_);
  }

  Problem problem_;
  Conv2d c_;
  Relu relu_ = Relu::none;
  Doubles x_, w_, b_, dz_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv2d() {
  return std::make_unique<RefConv2d>();
}

}  // namespace lb::ref
