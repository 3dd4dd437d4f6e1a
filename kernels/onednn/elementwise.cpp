// add.onednn.default and softmax.onednn.default — the element-wise ops (kernels/ops/add.h,
// softmax.h) through oneDNN's binary (binary_add) and softmax (softmax_v2, softmax_accurate,
// axis 1: the channels) primitives, on NCHW as given (no reorders), forward inference.
// dtypes: f32, bf16 (i8 declined: our i8 output is f32, these primitives write a type of
// oneDNN's choosing from the input's). relu=fused is an eltwise post-op where the primitive
// takes one (a ResNet block's add then ReLU, as a framework hands it to oneDNN),
// inplace/separate an eltwise pass. Threads: OpenMP, ctx.threads set in prepare()
// (kernels/onednn/common.h).
#include "kernels/onednn/common.h"
#include "kernels/onednn/kernels.h"

namespace lb::onednn {
namespace {

dnnl::memory::desc activations(const Problem& p, Arg a, int64_t mb, int64_t ic, int64_t ih, int64_t iw) {
  return dnnl::memory::desc({mb, ic, ih, iw}, dtype_of(p.dt, a), tag::nchw);
}

dnnl::binary::primitive_desc make_add_pd(const Problem& p) {
  const Add& s = p.add();
  const dnnl::binary::desc desc(dnnl::algorithm::binary_add, activations(p, Arg::src, s.mb, s.ic, s.ih, s.iw),
                                activations(p, Arg::src_1, s.mb, s.ic, s.ih, s.iw),
                                activations(p, Arg::dst, s.mb, s.ic, s.ih, s.iw));
  return dnnl::binary::primitive_desc(desc, attributes(p.relu), engine());
}

dnnl::softmax_v2_forward::primitive_desc make_softmax_pd(const Problem& p) {
  const Softmax& s = p.softmax();
  const dnnl::softmax_v2_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate,
      activations(p, Arg::src, s.mb, s.ic, s.ih, s.iw), activations(p, Arg::dst, s.mb, s.ic, s.ih, s.iw), 1);
  return dnnl::softmax_v2_forward::primitive_desc(desc, attributes(p.relu), engine());
}

// The reason oneDNN declines p, or "" (make_pd(p) builds).
template <class MakePd>
std::string declines(const Problem& p, std::string_view what, MakePd make_pd) {
  if (std::string why = dtype_reason(p); !why.empty()) return why;
  if (std::string why = size_reason(p); !why.empty()) return why;
  if (p.dt == DType::i8)
    return "dt=i8: our i8 output is f32 (the u8 input's values), and oneDNN's " + std::string(what) +
           " writes its input's type";
  try {
    make_pd(p);
  } catch (const dnnl::error& e) {
    return "no " + std::string(name(p.dt)) + " " + std::string(what) +
           (p.relu == Relu::fused ? " with a ReLU post-op" : "") + " on this CPU (" +
           dnnl_status2str(e.status) + ")";
  }
  return {};
}

class OnednnAdd final : public PlanKernel {
 public:
  std::string supports(const Problem& p) const override { return declines(p, "binary add", make_add_pd); }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    set_threads(ctx.threads);
    const auto pd = LB_DNNL(make_add_pd(p));
    plan_ = std::make_unique<Plan>();
    Plan& plan = *plan_;
    const dnnl::memory y = plan.bind(Arg::dst, pd.dst_desc());
    plan.add(pd, LB_DNNL(dnnl::binary(pd)),
             {{DNNL_ARG_SRC_0, plan.bind(Arg::src, pd.src_desc(0))},
              {DNNL_ARG_SRC_1, plan.bind(Arg::src_1, pd.src_desc(1))},
              {DNNL_ARG_DST, y}},
             "binary add");
    plan.add_relu_pass(p.relu, y);
    plan.finalize();
  }
};

class OnednnSoftmax final : public PlanKernel {
 public:
  std::string supports(const Problem& p) const override { return declines(p, "softmax", make_softmax_pd); }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    set_threads(ctx.threads);
    const auto pd = LB_DNNL(make_softmax_pd(p));
    plan_ = std::make_unique<Plan>();
    Plan& plan = *plan_;
    const dnnl::memory y = plan.bind(Arg::dst, pd.dst_desc());
    plan.add(pd, LB_DNNL(dnnl::softmax_v2_forward(pd)),
             {{DNNL_ARG_SRC, plan.bind(Arg::src, pd.src_desc())}, {DNNL_ARG_DST, y}}, "softmax");
    plan.add_relu_pass(p.relu, y);
    plan.finalize();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_add() {
  return std::make_unique<OnednnAdd>();
}

std::unique_ptr<Kernel> make_softmax() {
  return std::make_unique<OnednnSoftmax>();
}

}  // namespace lb::onednn
