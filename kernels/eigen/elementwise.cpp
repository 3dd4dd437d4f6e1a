// add.eigen.default and softmax.eigen.default — the element-wise ops (kernels/ops/add.h,
// softmax.h) as Eigen Tensor expressions on its thread pool device, f32 only:
//   add:      y = x + x₁ (and the ReLU in the same expression where fused);
//   softmax:  over a view MB × C × IH·IW, reduced along the channels: m = max, then
//             y = exp(x - m) (Eigen's vectorised exp), then s = Σ y and y = y / s, the
//             reductions evaluated into a small tensor of their own first (MB × IH·IW), so
//             that the broadcasts read it rather than reduce again per element.
// Memory's time; threads: Eigen's cost model splits each expression.
#include "kernels/eigen/common.h"
#include "kernels/eigen/kernels.h"

namespace lb::eigen {
namespace {

class EigenAdd final : public Kernel {
 public:
  std::string supports(const Problem& p) const override { return dtype_reason(p); }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    n_ = p.add().elements();
    relu_ = p.relu;
    threads_ = std::make_unique<Threads>(ctx.threads);
  }

  void run(TensorSet& ts) override {
    const ConstView<1> a(ts.at(Arg::src).as<float>(), n_), b(ts.at(Arg::src_1).as<float>(), n_);
    View<1> y(ts.at(Arg::dst).as<float>(), n_);
    if (relu_ == Relu::fused)
      y.device(threads_->device()) = (a + b).cwiseMax(0.0f);
    else
      y.device(threads_->device()) = a + b;
    relu_pass(relu_, ts, *threads_);
  }

  void release() override { threads_.reset(); }

 private:
  Eigen::Index n_ = 0;
  Relu relu_ = Relu::none;
  std::unique_ptr<Threads> threads_;
};

class EigenSoftmax final : public Kernel {
 public:
  std::string supports(const Problem& p) const override { return dtype_reason(p); }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    const Softmax& s = p.softmax();
    mb_ = s.mb;
    c_ = s.ic;
    inner_ = s.ih * s.iw;
    relu_ = p.relu;
    threads_ = std::make_unique<Threads>(ctx.threads);
    reduced_ = AlignedBuffer<float>(size_t(mb_ * inner_));
  }

  void run(TensorSet& ts) override {
    using Dims3 = Eigen::array<Eigen::Index, 3>;
    const Eigen::array<Eigen::Index, 1> channels{1};
    const Dims3 per_position{mb_, 1, inner_}, across{1, c_, 1};
    const auto& d = threads_->device();
    const ConstView<3> x(ts.at(Arg::src).as<float>(), mb_, c_, inner_);
    View<3> y(ts.at(Arg::dst).as<float>(), mb_, c_, inner_);
    View<3> r(reduced_.data(), mb_, 1, inner_);
    r.device(d) = x.maximum(channels).reshape(per_position);
    y.device(d) = (x - r.broadcast(across)).exp();
    r.device(d) = y.sum(channels).reshape(per_position);
    if (relu_ == Relu::fused)  // a no-op on values that are >= 0, kept for the mode's sake
      y.device(d) = (y / r.broadcast(across)).cwiseMax(0.0f);
    else
      y.device(d) = y / r.broadcast(across);
    relu_pass(relu_, ts, *threads_);
  }

  size_t scratch_bytes() const override { return reduced_.size() * sizeof(float); }
  void release() override {
    threads_.reset();
    reduced_ = AlignedBuffer<float>();
  }

 private:
  Eigen::Index mb_ = 1, c_ = 1, inner_ = 1;
  Relu relu_ = Relu::none;
  std::unique_ptr<Threads> threads_;
  AlignedBuffer<float> reduced_;
};

}  // namespace

std::unique_ptr<Kernel> make_add() {
  return std::make_unique<EigenAdd>();
}

std::unique_ptr<Kernel> make_softmax() {
  return std::make_unique<EigenSoftmax>();
}

}  // namespace lb::eigen
