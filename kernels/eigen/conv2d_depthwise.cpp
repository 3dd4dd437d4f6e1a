// conv2d.eigen.depthwise — depthwise convolution (G = C = K: one R×S filter per channel) as
// Eigen array expressions, one output plane at a time.
//
// For image n and channel c, with y the P×Q output plane and x the H×W input plane:
//   y = b[c];  for each tap (r, s):  y[p][q] += W[c][r][s] · x[p·SH - PH + r·DH][q·SW - PW + s·DW]
// Each tap is one expression over the block of outputs whose input is inside the image
// (valid_range(); padding contributes nothing, so there is no padded copy), reading x
// through a strided Map: row stride SH·W, column stride SW. With SW = 1 the columns are
// contiguous and Eigen vectorises the update; with SW > 1 it is a strided scalar loop.
// Why this is fast enough: depthwise does R·S multiply-adds per output, so it is bound by
// memory, not arithmetic; a plane (≤ 112×112 floats here) stays in L2 across the R·S taps,
// and x and y are each streamed once. There is no GEMM to hand it to: im2col would turn
// it into C products of a 1×R·S row by an R·S×P·Q matrix.
// ReLU fused: one more pass over the plane while it is in cache. f32 only. Threads:
// planes (N·C of them) split across Eigen's thread pool (kernels/eigen/common.h).
#include "kernels/eigen/common.h"
#include "kernels/eigen/kernels.h"

namespace lb::eigen {
namespace {

class EigenConv2dDepthwise final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = dtype_reason(p); !why.empty()) return why;
    if (!p.conv().depthwise()) return "takes depthwise convolutions (g = ic = oc) only";
    return {};
  }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    c_ = p.conv();
    relu_ = p.relu;
    threads_ = std::make_unique<Threads>(ctx.threads);
  }

  void run(TensorSet& ts) override {
    x_ = ts.at(Arg::src).as<float>();
    w_ = ts.at(Arg::wei).as<float>();
    b_ = ts.at(Arg::bias).as<float>();
    y_ = ts.at(Arg::dst).as<float>();
    const double outputs = double(c_.oh() * c_.ow()), taps = double(c_.kh * c_.kw);
    threads_->parallel_for(c_.mb * c_.ic, 4.0 * double(c_.ih * c_.iw) + 4.0 * outputs, 2.0 * taps * outputs,
                           [this](Eigen::Index first, Eigen::Index last) { planes(first, last); });
    relu_pass(relu_, ts, *threads_);
  }

  void release() override { threads_.reset(); }

 private:
  // Planes first .. last-1 of the N·C planes (plane i is image i / C, channel i % C).
  void planes(int64_t first, int64_t last) const {
    using Stride = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
    using RowStride = Eigen::OuterStride<Eigen::Dynamic>;
    const Conv2d& c = c_;
    const int64_t H = c.ih, W = c.iw, P = c.oh(), Q = c.ow(), R = c.kh, S = c.kw;
    for (int64_t i = first; i < last; ++i) {
      const int64_t ch = i % c.ic;
      const float* x = x_ + i * H * W;   // H×W
      const float* w = w_ + ch * R * S;  // R×S
      Eigen::Map<Rows> y(y_ + i * P * Q, P, Q);
      y.setConstant(b_[ch]);
      for (int64_t r = 0; r < R; ++r) {
        const Range ps = valid_range(H, P, c.sh, c.ph, r * c.dh);
        for (int64_t s = 0; s < S; ++s) {
          const Range qs = valid_range(W, Q, c.sw, c.pw, s * c.dw);
          const int64_t np = ps.last - ps.first, nq = qs.last - qs.first;
          if (np == 0 || nq == 0) continue;
          const float* in = x + (ps.first * c.sh - c.ph + r * c.dh) * W + qs.first * c.sw - c.pw + s * c.dw;
          auto out = y.block(ps.first, qs.first, np, nq);
          if (c.sw == 1)
            out += w[r * S + s] * Eigen::Map<const Rows, 0, RowStride>(in, np, nq, RowStride(c.sh * W));
          else
            out += w[r * S + s] * Eigen::Map<const Rows, 0, Stride>(in, np, nq, Stride(c.sh * W, c.sw));
        }
      }
      if (relu_ == Relu::fused) y = y.max(0.0f);
    }
  }

  Conv2d c_;
  Relu relu_ = Relu::none;
  std::unique_ptr<Threads> threads_;
  const float *x_ = nullptr, *w_ = nullptr, *b_ = nullptr;  // run()'s tensors, for planes()
  float* y_ = nullptr;
};

}  // namespace

std::unique_ptr<Kernel> make_depthwise_conv2d() {
  return std::make_unique<EigenConv2dDepthwise>();
}

}  // namespace lb::eigen
