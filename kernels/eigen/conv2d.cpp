// conv2d.eigen.im2col — NCHW convolution as im2col + one Eigen tensor contraction per image
// and group (stride, padding, dilation, groups; depthwise is conv2d.eigen.depthwise's).
//
// For image n and group g (C/G input channels, K/G filters), with the suite's letters:
//   col (C/G·R·S × P·Q):  col[(c·R + r)·S + s][p·Q + q] = x[n][g·C/G + c][h][w]
//                         with h = p·SH - PH + r·DH, w = q·SW - PW + s·DW (0 outside the image),
//                         written by our loops below;
//   y[n][g·K/G .. (g+1)·K/G] (K/G × P·Q) = W_g (K/G × C/G·R·S) · col,
// where W_g is W's rows for the group exactly as given (OC×(IC/G)×KH×KW is already
// K/G × C/G·R·S per group) and y's rows for the group are contiguous in NCHW, so neither
// needs a copy. Why this is fast: all the arithmetic is one large GEMM (Eigen's packed
// micro-kernel); im2col costs R·S reads per input element, small next to the GEMM's C/G·R·S
// multiply-adds per output. A 1×1 convolution with stride 1 and no padding needs no im2col:
// x[n] itself is the C × H·W matrix.
//
// The bias and the ReLU for relu=fused are the contraction's output kernel; relu=inplace
// and separate an element-wise pass. One image's col buffer (C·R·S × P·Q floats) is
// allocated in prepare(). f32 only. Threads: Eigen's thread pool (kernels/eigen/common.h),
// for the contraction and, by rows, for im2col.
#include <cstring>

#include "kernels/eigen/common.h"
#include "kernels/eigen/kernels.h"
#include "kernels/ops/traits.h"

namespace lb::eigen {
namespace {

class EigenConv2dIm2col final : public Kernel {
 public:
  std::string supports(const Problem& p) const override { return im2col_reason(p); }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    c_ = p.conv();
    relu_ = p.relu;
    threads_ = std::make_unique<Threads>(ctx.threads);
    pointwise_ = c_.kh == 1 && c_.kw == 1 && c_.sh == 1 && c_.sw == 1 && c_.ph == 0 && c_.pw == 0;
    if (!pointwise_) col_ = AlignedBuffer<float>(size_t(c_.ic * c_.kh * c_.kw * c_.oh() * c_.ow()));
    col_data_ = col_.data();
    // One group's contraction into a scratch output fills the cache with Eigen's packing
    // buffers (every image and group has the same shapes); the col buffer holds zeros.
    AlignedBuffer<float> scratch(size_t(c_.oc / c_.g * c_.oh() * c_.ow()));
    const float* col = pointwise_ ? ts.at(Arg::src).as<float>() : col_.data();
    product(ts, col, 0, scratch.data());
  }

  void run(TensorSet& ts) override {
    const int64_t C = c_.ic, K = c_.oc, PQ = c_.oh() * c_.ow();
    for (int64_t n = 0; n < c_.mb; ++n) {
      const float* col = ts.at(Arg::src).as<float>() + n * C * c_.ih * c_.iw;
      if (!pointwise_) {
        im2col(col);
        col = col_.data();
      }
      float* y = ts.at(Arg::dst).as<float>() + n * K * PQ;
      for (int64_t g = 0; g < c_.g; ++g)
        product(ts, col, g, y + g * (K / c_.g) * PQ);
    }
    relu_pass(relu_, ts, *threads_);
  }

  void release() override {
    threads_.reset();
    col_ = AlignedBuffer<float>();
    col_data_ = nullptr;
  }
  size_t scratch_bytes() const override { return threads_ ? threads_->cached_bytes() + col_.bytes() : 0; }
  std::string details() const override {
    if (!threads_) return {};
    if (pointwise_) return "1x1, stride 1, no padding: x used as the column matrix, no im2col";
    return "im2col " + std::to_string(c_.ic * c_.kh * c_.kw) + "x" + std::to_string(c_.oh() * c_.ow()) +
           " per image";
  }

 private:
  // y_g (K/G × P·Q) = W_g · col_g, plus bias (and ReLU), for group g.
  void product(const TensorSet& ts, const float* col, int64_t g, float* y_out) const {
    const int64_t Kg = c_.oc / c_.g, CRSg = c_.ic / c_.g * c_.kh * c_.kw, PQ = c_.oh() * c_.ow();
    const ConstView<2> w(ts.at(Arg::wei).as<float>() + g * Kg * CRSg, Kg, CRSg);  // K/G × C/G·R·S
    const ConstView<2> x(col + g * CRSg * PQ, CRSg, PQ);                          // C/G·R·S × P·Q
    View<2> y(y_out, Kg, PQ);                                                     // K/G × P·Q
    const BiasRelu epilogue{ts.at(Arg::bias).as<float>() + g * Kg, false, relu_ == Relu::fused};
    y.device(threads_->device()) = w.contract(x, contract_dims(1, 0), epilogue);
  }

  // col_ (C·R·S × P·Q) from one image x (C × H × W), rows split across the threads.
  void im2col(const float* x) {
    x_ = x;
    const int64_t rows = c_.ic * c_.kh * c_.kw, PQ = c_.oh() * c_.ow();
    threads_->parallel_for(rows, 8.0 * double(PQ), double(PQ),
                           [this](Eigen::Index first, Eigen::Index last) { im2col_rows(first, last); });
  }

  void im2col_rows(int64_t first, int64_t last) const { eigen::im2col_rows(c_, x_, col_data_, first, last); }

  Conv2d c_;
  Relu relu_ = Relu::none;
  bool pointwise_ = false;
  std::unique_ptr<Threads> threads_;
  AlignedBuffer<float> col_;
  float* col_data_ = nullptr;  // col_.data()
  const float* x_ = nullptr;   // the image im2col_rows() reads
};

}  // namespace

std::unique_ptr<Kernel> make_conv2d() {
  return std::make_unique<EigenConv2dIm2col>();
}

}  // namespace lb::eigen
