// dense.eigen.contraction — y = x·Wᵀ + b as one Eigen tensor contraction.
//
// x is MB×IC and W is OC×IC, both row-major; contracting their IC dimensions gives y
// (MB×OC) without transposing W: Eigen's GEMM packs both operands into its panels on every
// call (it has no pre-packed form), so there is nothing for prepare() to reorder. The bias,
// and the ReLU for relu=fused, are an output kernel applied to each output block as soon as
// it is final; relu=inplace/separate are an element-wise pass afterwards. With MB = 1 the
// product is a matrix-vector one, done by row_gemv() (kernels/eigen/common.h) instead: the
// contraction's own matrix-vector path reads W across its rows and is ~30x slower.
// f32 only. Threads: Eigen's thread pool, ctx.threads workers (kernels/eigen/common.h).
#include "kernels/eigen/common.h"
#include "kernels/eigen/kernels.h"

namespace lb::eigen {
namespace {

class EigenDense final : public Kernel {
 public:
  std::string supports(const Problem& p) const override { return dtype_reason(p); }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    d_ = p.dense();
    relu_ = p.relu;
    threads_ = std::make_unique<Threads>(ctx.threads);
    // One contraction into a scratch output fills the cache with Eigen's packing buffers.
    AlignedBuffer<float> scratch(size_t(d_.mb * d_.oc));
    product(ts, scratch.data());
  }

  void run(TensorSet& ts) override {
    product(ts, ts.at(Arg::dst).as<float>());
    relu_pass(relu_, ts, *threads_);
  }

  void release() override { threads_.reset(); }
  size_t scratch_bytes() const override { return threads_ ? threads_->cached_bytes() : 0; }

 private:
  void product(const TensorSet& ts, float* y_out) const {
    if (d_.mb == 1) {
      row_gemv(*threads_, ts.at(Arg::wei).as<float>(), d_.oc, d_.ic, ts.at(Arg::src).as<float>(),
               ts.at(Arg::bias).as<float>(), relu_ == Relu::fused, y_out);
      return;
    }
    const ConstView<2> x(ts.at(Arg::src).as<float>(), d_.mb, d_.ic);  // MB×IC
    const ConstView<2> w(ts.at(Arg::wei).as<float>(), d_.oc, d_.ic);  // OC×IC
    View<2> y(y_out, d_.mb, d_.oc);                                   // MB×OC
    const BiasRelu epilogue{ts.at(Arg::bias).as<float>(), true, relu_ == Relu::fused};
    y.device(threads_->device()) = x.contract(w, contract_dims(1, 1), epilogue);
  }

  Dense d_;
  Relu relu_ = Relu::none;
  std::unique_ptr<Threads> threads_;
};

}  // namespace

std::unique_ptr<Kernel> make_dense() {
  return std::make_unique<EigenDense>();
}

}  // namespace lb::eigen
