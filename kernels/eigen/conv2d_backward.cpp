// conv2d.eigen.im2col's backward passes (bwd_d, bwd_w, bwd; train after its forward), on the
// forward's column matrix (conv2d.cpp; im2col_rows and its adjoint col2im_channels in
// common.h), per image n and group g:
//   dW_g (K/G × C/G·R·S) += dz_g (K/G × P·Q) contracted with col_g (C/G·R·S × P·Q) over P·Q;
//   dcol_g (C/G·R·S × P·Q) = W_g (K/G × C/G·R·S) contracted with dz_g over K/G, then
//   dx_n = col2im(dcol): the column matrix's adjoint adds each tap's row where it landed;
//   db = dz summed over images and pixels.
// dz as in dense_backward.cpp (diff_dst, after the ReLU's backward for separate and inplace;
// relu=fused declined). One image's column matrix is held from prepare() on. f32 only.
// Threads: Eigen's pool for the contractions, our loops split by its cost model.
#include <algorithm>

#include "kernels/eigen/common.h"
#include "kernels/eigen/kernels.h"
#include "kernels/ops/traits.h"

namespace lb::eigen {
namespace {

class EigenConv2dBackward final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = im2col_reason(p); !why.empty()) return why;
    return fused_backward_reason(p);
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    c_ = p.conv();
    relu_ = p.relu;
    pass_ = p.pass;
    threads_ = std::make_unique<Threads>(ctx.threads);
    col_ = AlignedBuffer<float>(size_t(c_.ic * c_.kh * c_.kw * c_.oh() * c_.ow()));
    // One group's contractions into scratch outputs fill the cache with Eigen's packing
    // buffers (every image and group has the same shapes), on diff_dst as it is.
    const int64_t Kg = c_.oc / c_.g, crs = c_.ic / c_.g * c_.kh * c_.kw;
    AlignedBuffer<float> dw(size_t(Kg * crs));
    std::fill(dw.data(), dw.data() + Kg * crs, 0.0f);  // added into, then dropped
    if (computes_weight_grads(pass_)) weights_of_group(ts, 0, 0, dw.data());
    if (computes_data_grads(pass_)) columns_of_group(ts, 0, 0);
  }

  void run(TensorSet& ts) override {
    relu_backward_pass(relu_, ts, *threads_);
    const int64_t C = c_.ic, K = c_.oc, HW = c_.ih * c_.iw, Kg = K / c_.g, crs = C / c_.g * c_.kh * c_.kw;
    for (int64_t n = 0; n < c_.mb; ++n) {
      if (computes_weight_grads(pass_)) {
        Tensor& dw = ts.at(Arg::diff_wei);
        if (n == 0) std::fill(dw.as<float>(), dw.as<float>() + dw.elements(), 0.0f);
        im2col(ts.at(Arg::src).as<float>() + n * C * HW);
        for (int64_t g = 0; g < c_.g; ++g)
          weights_of_group(ts, n, g, dw.as<float>() + g * Kg * crs);
      }
      if (computes_data_grads(pass_)) {
        for (int64_t g = 0; g < c_.g; ++g)
          columns_of_group(ts, n, g);
        col2im(ts.at(Arg::diff_src).as<float>() + n * C * HW);
      }
    }
    if (computes_weight_grads(pass_)) bias_gradient(ts);
  }

  void release() override {
    threads_.reset();
    col_ = AlignedBuffer<float>();
  }
  size_t scratch_bytes() const override { return threads_ ? threads_->cached_bytes() + col_.bytes() : 0; }

 private:
  // dz_g of image n (K/G × P·Q): diff_dst's rows.
  ConstView<2> dz(const TensorSet& ts, int64_t n, int64_t g) const {
    const int64_t Kg = c_.oc / c_.g, PQ = c_.oh() * c_.ow();
    return ConstView<2>(ts.at(Arg::diff_dst).as<float>() + (n * c_.oc + g * Kg) * PQ, Kg, PQ);
  }

  // dW_g (K/G × C/G·R·S) += dz_g · col_gᵀ, from the column matrix of image n in col_ (dW
  // zeroed before the first image: one contraction to instantiate, `+=`, not two).
  void weights_of_group(const TensorSet& ts, int64_t n, int64_t g, float* dw) const {
    const int64_t Kg = c_.oc / c_.g, crs = c_.ic / c_.g * c_.kh * c_.kw, PQ = c_.oh() * c_.ow();
    const ConstView<2> col(col_.data() + g * crs * PQ, crs, PQ);
    View<2>(dw, Kg, crs).device(threads_->device()) += dz(ts, n, g).contract(col, contract_dims(1, 1));
  }

  // dcol_g (C/G·R·S × P·Q) = W_gᵀ · dz_g into col_.
  void columns_of_group(const TensorSet& ts, int64_t n, int64_t g) {
    const int64_t Kg = c_.oc / c_.g, crs = c_.ic / c_.g * c_.kh * c_.kw, PQ = c_.oh() * c_.ow();
    const ConstView<2> w(ts.at(Arg::wei).as<float>() + g * Kg * crs, Kg, crs);
    View<2> dcol(col_.data() + g * crs * PQ, crs, PQ);
    dcol.device(threads_->device()) = w.contract(dz(ts, n, g), contract_dims(0, 0));
  }

  // Both split over the pool; two pointers captured each (no allocation in run()).
  void im2col(const float* x) {
    const int64_t rows = c_.ic * c_.kh * c_.kw, PQ = c_.oh() * c_.ow();
    threads_->parallel_for(
        rows, 8.0 * double(PQ), double(PQ),
        [this, x](Eigen::Index first, Eigen::Index last) { im2col_rows(c_, x, col_.data(), first, last); });
  }

  void col2im(float* dx) {
    const int64_t taps = c_.kh * c_.kw, PQ = c_.oh() * c_.ow();
    threads_->parallel_for(c_.ic, 8.0 * double(taps * PQ), double(taps * PQ),
                           [this, dx](Eigen::Index first, Eigen::Index last) {
                             col2im_channels(c_, col_.data(), dx, first, last);
                           });
  }

  void bias_gradient(TensorSet& ts) const {
    // Two pointers captured, so that the std::function parallel_for takes does not allocate
    // in run() (kernels/eigen/common.h).
    struct Sums {
      int64_t K, PQ, N;
      float* db;
      const float* dy;
    } s{c_.oc, c_.oh() * c_.ow(), c_.mb, ts.at(Arg::diff_bias).as<float>(), ts.at(Arg::diff_dst).as<float>()};
    threads_->parallel_for(s.K, 4.0 * double(s.N * s.PQ), double(s.N * s.PQ),
                           [&s](Eigen::Index first, Eigen::Index last) {
                             for (Eigen::Index k = first; k < last; ++k) {
                               float sum = 0.0f;
                               for (int64_t n = 0; n < s.N; ++n)
                                 for (int64_t i = 0; i < s.PQ; ++i)
                                   sum += s.dy[(n * s.K + k) * s.PQ + i];
                               s.db[k] = sum;
                             }
                           });
  }

  Conv2d c_;
  Relu relu_ = Relu::none;
  Pass pass_ = Pass::bwd;
  std::unique_ptr<Threads> threads_;
  AlignedBuffer<float> col_;  // one image's column matrix (bwd_w), or its gradient dcol (bwd_d)
};

}  // namespace

std::unique_ptr<Kernel> make_conv2d_backward() {
  return std::make_unique<EigenConv2dBackward>();
}

}  // namespace lb::eigen
