// dense.onednn.default — y = x·Wᵀ + b through oneDNN's inner product primitive.
//
// x (MB×IC) and y (MB×OC) stay in the given row-major layouts (oneDNN's `nc`); W is
// declared `any`, so oneDNN picks the blocked layout its GEMM micro-kernel streams best
// (e.g. AB16b64a for brgemm), and prepare() reorders W into it once. run() is the inner
// product alone, plus the ReLU pass for relu=inplace/separate.
//
// dtypes: f32; bf16 (bf16 x, W, y; f32 bias; f32 accumulation); i8 (u8 x × s8 W, s32
// accumulation, f32 y): the output scale x.scale·W.scale is a primitive attribute, and since
// oneDNN 2.x applies it to the sum *with* the bias, prepare() keeps a copy of the bias divided
// by that scale. relu=fused is an eltwise post-op; inplace/separate are an eltwise primitive.
// Threads: OpenMP, ctx.threads set in prepare() (kernels/onednn/common.h).
#include "kernels/onednn/common.h"
#include "kernels/onednn/kernels.h"

namespace lb::onednn {
namespace {

dnnl::inner_product_forward::primitive_desc make_pd(const Problem& p, float output_scale) {
  const Dense& d = p.dense();
  const dnnl::memory::desc x({d.mb, d.ic}, dtype_of(p.dt, Arg::src), tag::nc);
  const dnnl::memory::desc w({d.oc, d.ic}, dtype_of(p.dt, Arg::wei), tag::any);
  const dnnl::memory::desc b({d.oc}, dtype_of(p.dt, Arg::bias), tag::x);
  const dnnl::memory::desc y({d.mb, d.oc}, dtype_of(p.dt, Arg::dst), tag::nc);
  const dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference, x, w, b, y);
  return dnnl::inner_product_forward::primitive_desc(desc, attributes(p.relu, output_scale), engine());
}

// Any value other than 1 makes the i8 probe ask for output scales, as prepare() will.
constexpr float kProbeScale = 1.0f / 1024;

class OnednnDense final : public PlanKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = dtype_reason(p); !why.empty()) return why;
    if (std::string why = size_reason(p); !why.empty()) return why;
    try {
      make_pd(p, p.dt == DType::i8 ? kProbeScale : 1.0f);
    } catch (const dnnl::error& e) {
      return "no " + std::string(name(p.dt)) + " inner product on this CPU (" + dnnl_status2str(e.status) +
             ")";
    }
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    set_threads(ctx.threads);
    const Dense& d = p.dense();
    const float scale = p.dt == DType::i8 ? float(ts.at(Arg::src).scale() * ts.at(Arg::wei).scale()) : 1.0f;
    const auto pd = LB_DNNL(make_pd(p, scale));
    plan_ = std::make_unique<Plan>();
    Plan& plan = *plan_;
    const dnnl::memory x = plan.bind(Arg::src, pd.src_desc());
    const dnnl::memory::desc w_user({d.oc, d.ic}, dtype_of(p.dt, Arg::wei), tag::oi);
    const dnnl::memory w = plan.reordered_now(ts, Arg::wei, w_user, 0, pd.weights_desc());
    const dnnl::memory b = plan.bias(ts, pd.bias_desc(), scale);
    const dnnl::memory y = plan.bind(Arg::dst, pd.dst_desc());
    plan.add(pd, LB_DNNL(dnnl::inner_product_forward(pd)),
             {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}},
             "inner product (W " + layout(pd.weights_desc()) + ")");
    plan.add_relu_pass(p.relu, y);
    plan.finalize();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_dense() {
  return std::make_unique<OnednnDense>();
}

}  // namespace lb::onednn
