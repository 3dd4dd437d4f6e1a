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
//
// Training passes (kernels/ops/traits.h): fwd_train is the forward_training primitive;
// bwd_d the inner product's backward data (dx = dz·W, W reordered once into the layout it
// asks for), bwd_w its backward weights (dW = dzᵀ·x and db; dW reordered back to OC×IC in
// run() where oneDNN writes another layout), bwd both, train the forward then both — each
// created with the forward_training primitive as its hint, as oneDNN requires. The ReLU in
// front is an eltwise backward that reads dst (separate: into diff_dst; inplace: over it);
// relu=fused is declined, oneDNN's backward primitives having no such post-op. f32 and
// bf16 (f32 diff_bias), where this CPU has them; no i8 or f16 backward.
#include "kernels/onednn/common.h"
#include "kernels/onednn/kernels.h"

namespace lb::onednn {
namespace {

using dnnl::inner_product_backward_data;
using dnnl::inner_product_backward_weights;
using dnnl::inner_product_forward;

// The user layouts of a dense problem's arguments (a gradient's are its primal's).
struct Descs {
  dnnl::memory::desc x, w_any, w_user, b, y;
};

Descs descs(const Problem& p) {
  const Dense& d = p.dense();
  return {{{d.mb, d.ic}, dtype_of(p.dt, Arg::src), tag::nc},
          {{d.oc, d.ic}, dtype_of(p.dt, Arg::wei), tag::any},
          {{d.oc, d.ic}, dtype_of(p.dt, Arg::wei), tag::oi},
          {{d.oc}, dtype_of(p.dt, Arg::bias), tag::x},
          {{d.mb, d.oc}, dtype_of(p.dt, Arg::dst), tag::nc}};
}

inner_product_forward::primitive_desc make_pd(const Problem& p, float output_scale) {
  const Descs m = descs(p);
  const auto prop =
      p.pass == Pass::fwd ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
  const inner_product_forward::desc desc(prop, m.x, m.w_any, m.b, m.y);
  // A backward pass's forward is only the hint its primitives are created with.
  return inner_product_forward::primitive_desc(
      desc, attributes(runs_forward(p.pass) ? p.relu : Relu::none, output_scale), engine());
}

// The gradients' primitive descriptors (dtype_of gives each gradient its primal's type).
inner_product_backward_data::primitive_desc make_data_pd(const Problem& p,
                                                         const inner_product_forward::primitive_desc& hint) {
  const Descs m = descs(p);
  const auto dx = dnnl::memory::desc(m.x.dims(), dtype_of(p.dt, Arg::diff_src), tag::nc);
  const auto dy = dnnl::memory::desc(m.y.dims(), dtype_of(p.dt, Arg::diff_dst), tag::nc);
  return inner_product_backward_data::primitive_desc(inner_product_backward_data::desc(dx, m.w_any, dy),
                                                     attributes(Relu::none), engine(), hint);
}

inner_product_backward_weights::primitive_desc make_weights_pd(
    const Problem& p, const inner_product_forward::primitive_desc& hint) {
  const Descs m = descs(p);
  const auto dw = dnnl::memory::desc(m.w_any.dims(), dtype_of(p.dt, Arg::diff_wei), tag::any);
  const auto db = dnnl::memory::desc(m.b.dims(), dtype_of(p.dt, Arg::diff_bias), tag::x);
  const auto dy = dnnl::memory::desc(m.y.dims(), dtype_of(p.dt, Arg::diff_dst), tag::nc);
  return inner_product_backward_weights::primitive_desc(inner_product_backward_weights::desc(m.x, dw, db, dy),
                                                        attributes(Relu::none), engine(), hint);
}

// Any value other than 1 makes the i8 probe ask for output scales, as prepare() will.
constexpr float kProbeScale = 1.0f / 1024;

class OnednnDense final : public PlanKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = dtype_reason(p); !why.empty()) return why;
    if (std::string why = size_reason(p); !why.empty()) return why;
    if (std::string why = backward_reason(p); !why.empty()) return why;
    const char* what = "inner product";
    try {
      const auto pd = make_pd(p, p.dt == DType::i8 ? kProbeScale : 1.0f);
      what = "inner product backward data";
      if (computes_data_grads(p.pass)) make_data_pd(p, pd);
      what = "inner product backward weights";
      if (computes_weight_grads(p.pass)) make_weights_pd(p, pd);
    } catch (const dnnl::error& e) {
      return "no " + std::string(name(p.dt)) + " " + what + " on this CPU (" + dnnl_status2str(e.status) +
             ")";
    }
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    set_threads(ctx.threads);
    const float scale = p.dt == DType::i8 ? float(ts.at(Arg::src).scale() * ts.at(Arg::wei).scale()) : 1.0f;
    const auto pd = LB_DNNL(make_pd(p, scale));
    plan_ = std::make_unique<Plan>();
    Plan& plan = *plan_;
    const bool reads_x = runs_forward(p.pass) || computes_weight_grads(p.pass),
               reads_w = runs_forward(p.pass) || computes_data_grads(p.pass);
    const dnnl::memory x = reads_x ? plan.bind(Arg::src, pd.src_desc()) : dnnl::memory();
    const dnnl::memory::desc w_user = descs(p).w_user;
    const dnnl::memory w = reads_w && runs_forward(p.pass)
                               ? plan.reordered_now(ts, Arg::wei, w_user, 0, pd.weights_desc())
                               : dnnl::memory();
    if (runs_forward(p.pass)) {
      const dnnl::memory b = plan.bias(ts, pd.bias_desc(), scale);
      const dnnl::memory y = plan.bind(Arg::dst, pd.dst_desc());
      plan.add(pd, LB_DNNL(inner_product_forward(pd)),
               {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}},
               "inner product (W " + layout(pd.weights_desc()) + ")");
      plan.add_relu_pass(p.relu, y);
    }
    if (runs_backward(p.pass)) {
      const dnnl::memory dz = plan.add_relu_backward(p.relu, descs(p).y);
      if (computes_data_grads(p.pass)) {
        const auto bd = LB_DNNL(make_data_pd(p, pd));
        const dnnl::memory wd = w && bd.weights_desc() == pd.weights_desc()
                                    ? w
                                    : plan.reordered_now(ts, Arg::wei, w_user, 0, bd.weights_desc());
        plan.add(bd, LB_DNNL(inner_product_backward_data(bd)),
                 {{DNNL_ARG_DIFF_DST, dz},
                  {DNNL_ARG_WEIGHTS, wd},
                  {DNNL_ARG_DIFF_SRC, plan.bind(Arg::diff_src, bd.diff_src_desc())}},
                 "inner product backward data (W " + layout(bd.weights_desc()) + ")");
      }
      if (computes_weight_grads(p.pass)) {
        const auto bw = LB_DNNL(make_weights_pd(p, pd));
        const Plan::Output dw = plan.output(Arg::diff_wei, w_user, bw.diff_weights_desc());
        plan.add(bw, LB_DNNL(inner_product_backward_weights(bw)),
                 {{DNNL_ARG_SRC, x},
                  {DNNL_ARG_DIFF_DST, dz},
                  {DNNL_ARG_DIFF_WEIGHTS, dw.written},
                  {DNNL_ARG_DIFF_BIAS, plan.bind(Arg::diff_bias, bw.diff_bias_desc())}},
                 "inner product backward weights (dW " + layout(bw.diff_weights_desc()) + ")");
        plan.then(dw, "dW");
      }
    }
    plan.finalize();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_dense() {
  return std::make_unique<OnednnDense>();
}

}  // namespace lb::onednn
