// pool2d.eigen.taps — max and average pooling (kernels/ops/pool2d.h) as Eigen array
// expressions, one output plane at a time, as conv2d.eigen.depthwise: per tap (r, s) of
// the K×K window, one expression over the block of outputs whose input for that tap is
// inside the image (valid_range()), reading x through a strided Map (row stride S·W,
// column stride S; contiguous and vectorised where S = 1):
//   max: y = -inf, then y = max(y, x_tap);   avg: y = 0, y += x_tap, then y /= K²
// (padding left out of a max, zeros in an average: PyTorch's count_include_pad). No
// products: bound by memory, the plane in L2 across the K² taps. f32 only. ReLU fused: one
// more pass over the plane in cache. Threads: planes split across Eigen's thread pool.
#include <limits>

#include "kernels/eigen/common.h"
#include "kernels/eigen/kernels.h"

namespace lb::eigen {
namespace {

class EigenPool2d final : public Kernel {
 public:
  std::string supports(const Problem& p) const override { return dtype_reason(p); }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    q_ = p.pool();
    relu_ = p.relu;
    threads_ = std::make_unique<Threads>(ctx.threads);
  }

  void run(TensorSet& ts) override {
    x_ = ts.at(Arg::src).as<float>();
    y_ = ts.at(Arg::dst).as<float>();
    const double outputs = double(q_.oh() * q_.ow()), taps = double(q_.k * q_.k);
    threads_->parallel_for(q_.mb * q_.ic, 4.0 * double(q_.ih * q_.iw) + 4.0 * outputs, taps * outputs,
                           [this](Eigen::Index first, Eigen::Index last) { planes(first, last); });
    relu_pass(relu_, ts, *threads_);
  }

  void release() override { threads_.reset(); }

 private:
  void planes(int64_t first, int64_t last) const {
    using Stride = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
    using RowStride = Eigen::OuterStride<Eigen::Dynamic>;
    const Pool2d& q = q_;
    const int64_t H = q.ih, W = q.iw, P = q.oh(), Q = q.ow(), K = q.k;
    const bool avg = q.alg == Pool2d::Alg::avg;
    for (int64_t i = first; i < last; ++i) {
      const float* x = x_ + i * H * W;
      Eigen::Map<Rows> y(y_ + i * P * Q, P, Q);
      y.setConstant(avg ? 0.0f : -std::numeric_limits<float>::infinity());
      for (int64_t r = 0; r < K; ++r) {
        const Range ps = valid_range(H, P, q.s, q.p, r);
        for (int64_t s = 0; s < K; ++s) {
          const Range qs = valid_range(W, Q, q.s, q.p, s);
          const int64_t np = ps.last - ps.first, nq = qs.last - qs.first;
          if (np == 0 || nq == 0) continue;
          const float* in = x + (ps.first * q.s - q.p + r) * W + qs.first * q.s - q.p + s;
          auto out = y.block(ps.first, qs.first, np, nq);
          auto tap = [&](const auto& xs) {
            if (avg)
              out += xs;
            else
              out = out.max(xs);
          };
          if (q.s == 1)
            tap(Eigen::Map<const Rows, 0, RowStride>(in, np, nq, RowStride(W)));
          else
            tap(Eigen::Map<const Rows, 0, Stride>(in, np, nq, Stride(q.s * W, q.s)));
        }
      }
      if (avg) y *= 1.0f / float(K * K);
      if (relu_ == Relu::fused) y = y.max(0.0f);
    }
  }

  Pool2d q_;
  Relu relu_ = Relu::none;
  std::unique_ptr<Threads> threads_;
  const float* x_ = nullptr;  // run()'s tensors, for planes()
  float* y_ = nullptr;
};

}  // namespace

std::unique_ptr<Kernel> make_pool2d() {
  return std::make_unique<EigenPool2d>();
}

}  // namespace lb::eigen
