// pool2d.onednn.default — max and average pooling (kernels/ops/pool2d.h) through oneDNN's
// pooling primitive, on NCHW as given (`nchw` in and out; no reorders), forward inference
// (a max keeps no workspace). The padding on the right and bottom is what makes oneDNN's
// output size PyTorch's floor one: (OH - 1)·S + K - IH - P, which may be below P, or
// negative where the stride skips the last columns. An average is
// pooling_avg_include_padding (divides by K², as the reference). dtypes: f32, bf16 (i8
// declined: our i8 output is f32, oneDNN's pooling writes its input's type);
// relu=fused is an eltwise post-op where oneDNN's pooling takes one, inplace/separate an
// eltwise pass. Threads: OpenMP, ctx.threads set in prepare() (kernels/onednn/common.h).
#include "kernels/onednn/common.h"
#include "kernels/onednn/kernels.h"

namespace lb::onednn {
namespace {

using dnnl::pooling_forward;

pooling_forward::primitive_desc make_pd(const Problem& p) {
  const Pool2d& q = p.pool();
  const dnnl::memory::desc x({q.mb, q.ic, q.ih, q.iw}, dtype_of(p.dt, Arg::src), tag::nchw);
  const dnnl::memory::desc y({q.mb, q.ic, q.oh(), q.ow()}, dtype_of(p.dt, Arg::dst), tag::nchw);
  const int64_t right = (q.oh() - 1) * q.s + q.k - q.ih - q.p, bottom = (q.ow() - 1) * q.s + q.k - q.iw - q.p;
  const pooling_forward::desc desc(
      dnnl::prop_kind::forward_inference,
      q.alg == Pool2d::Alg::max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding,
      x, y, {q.s, q.s}, {q.k, q.k}, {q.p, q.p}, {right, bottom});
  return pooling_forward::primitive_desc(desc, attributes(p.relu), engine());
}

class OnednnPool2d final : public PlanKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = dtype_reason(p); !why.empty()) return why;
    if (std::string why = size_reason(p); !why.empty()) return why;
    if (p.dt == DType::i8)  // u8 in, f32 out (kernels/tensor.h): oneDNN's pooling keeps the input's type
      return "dt=i8: pooling's output is f32 here (the u8 input's values), and oneDNN's pooling writes its "
             "input's type";
    try {
      make_pd(p);
    } catch (const dnnl::error& e) {
      return "no " + std::string(name(p.dt)) + " pooling" +
             (p.relu == Relu::fused ? " with a ReLU post-op" : "") + " on this CPU (" +
             dnnl_status2str(e.status) + ")";
    }
    return {};
  }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    set_threads(ctx.threads);
    const auto pd = LB_DNNL(make_pd(p));
    plan_ = std::make_unique<Plan>();
    Plan& plan = *plan_;
    const dnnl::memory y = plan.bind(Arg::dst, pd.dst_desc());
    plan.add(pd, LB_DNNL(pooling_forward(pd)),
             {{DNNL_ARG_SRC, plan.bind(Arg::src, pd.src_desc())}, {DNNL_ARG_DST, y}}, "pooling");
    plan.add_relu_pass(p.relu, y);
    plan.finalize();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_pool2d() {
  return std::make_unique<OnednnPool2d>();
}

}  // namespace lb::onednn
