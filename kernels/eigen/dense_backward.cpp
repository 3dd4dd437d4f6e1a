// dense.eigen.contraction's backward passes (bwd_d, bwd_w, bwd; train after its forward), as
// Eigen tensor expressions on the same row-major views:
//   dx (MB×IC) = dz (MB×OC) contracted with W (OC×IC) over OC;
//   dW (OC×IC) = dz contracted with x (MB×IC) over MB (Eigen packs both per call, as in the
//   forward: no transposed copy of ours);
//   db (OC)    = dz summed over MB.
// dz: diff_dst as given (relu=none); after the ReLU's backward (relu_backward_pass, a loop)
// into diff_dst (separate) or over it (inplace); relu=fused declined (fused_backward_reason). f32 only.
// Threads: Eigen's pool, as the forward (kernels/eigen/common.h).
#include "kernels/eigen/common.h"
#include "kernels/eigen/kernels.h"

namespace lb::eigen {
namespace {

class EigenDenseBackward final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = dtype_reason(p); !why.empty()) return why;
    return fused_backward_reason(p);
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    d_ = p.dense();
    relu_ = p.relu;
    pass_ = p.pass;
    threads_ = std::make_unique<Threads>(ctx.threads);
    // One evaluation into scratch outputs fills the cache with Eigen's packing buffers (on
    // diff_dst as it is: the ReLU's backward, which writes it, is run()'s).
    AlignedBuffer<float> dx(size_t(d_.mb * d_.ic)), dw(size_t(d_.oc * d_.ic)), db(size_t(d_.oc));
    gradients(ts, computes_data_grads(pass_) ? dx.data() : nullptr,
              computes_weight_grads(pass_) ? dw.data() : nullptr, db.data());
  }

  void run(TensorSet& ts) override {
    relu_backward_pass(relu_, ts, *threads_);
    gradients(ts, computes_data_grads(pass_) ? ts.at(Arg::diff_src).as<float>() : nullptr,
              computes_weight_grads(pass_) ? ts.at(Arg::diff_wei).as<float>() : nullptr,
              computes_weight_grads(pass_) ? ts.at(Arg::diff_bias).as<float>() : nullptr);
  }

  void release() override { threads_.reset(); }
  size_t scratch_bytes() const override { return threads_ ? threads_->cached_bytes() : 0; }

 private:
  // The gradients into the outputs given (null: not computed), from dz, diff_dst.
  void gradients(const TensorSet& ts, float* dx_out, float* dw_out, float* db_out) const {
    const auto& dev = threads_->device();
    const ConstView<2> dz(ts.at(Arg::diff_dst).as<float>(), d_.mb, d_.oc);  // MB×OC
    if (dx_out) {
      const ConstView<2> w(ts.at(Arg::wei).as<float>(), d_.oc, d_.ic);
      View<2>(dx_out, d_.mb, d_.ic).device(dev) = dz.contract(w, contract_dims(1, 0));
    }
    if (dw_out) {
      const ConstView<2> x(ts.at(Arg::src).as<float>(), d_.mb, d_.ic);
      View<2>(dw_out, d_.oc, d_.ic).device(dev) = dz.contract(x, contract_dims(0, 0));
      View<1>(db_out, d_.oc).device(dev) = dz.sum(Eigen::array<Eigen::Index, 1>{0});
    }
  }

  Dense d_;
  Relu relu_ = Relu::none;
  Pass pass_ = Pass::bwd;
  std::unique_ptr<Threads> threads_;
};

}  // namespace

std::unique_ptr<Kernel> make_dense_backward() {
  return std::make_unique<EigenDenseBackward>();
}

}  // namespace lb::eigen
