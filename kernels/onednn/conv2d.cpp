// conv2d.onednn.default, .nchw and .blocked — NCHW cross-correlation (groups, depthwise,
// stride, padding, dilation) through oneDNN's convolution primitive. The variants differ
// only in the activation layouts oneDNN is given and where converting them is counted:
//
//  - default: x and y are declared `any`, so oneDNN picks the layout its fastest
//    implementation wants (on AVX-512 that is nhwc, "acdb", for brgconv and the brdgmm
//    depthwise kernel). Our tensors are NCHW, so run() reorders x into that layout, runs the
//    convolution and reorders y back: those two activation reorders are part of the timed
//    work (details() lists them; none when oneDNN takes NCHW as it is). In a network that
//    stays in oneDNN's layout they would not exist.
//  - nchw: x and y are declared NCHW, no reorders; oneDNN then usually falls back to its
//    im2col + GEMM path (gemm:jit). Measured here, that wins for most 1×1 convolutions and
//    loses for 3×3 and depthwise ones, so both are offered rather than a guess. Where oneDNN
//    has only its reference implementation for plain NCHW (i8), this variant declines.
//  - blocked: oneDNN's layouts as for default, but the activations are taken to stay in them
//    between layers, as in a network run wholly in oneDNN: x is reordered once in prepare()
//    and y (and relu_dst) back to NCHW in finish(), both untimed; run() is the convolution
//    (and the ReLU pass) alone — what benchdnn and oneDNN's own figures measure.
//
// W (OC×(IC/G)×KH×KW, oneDNN's oihw or goihw) is declared `any` and reordered in prepare().
// dtypes, i8 scales and bias, ReLU modes and threads as in dense.onednn.default.
// oneDNN counts dilation from 0 (no dilation) and wants the right/bottom padding that makes
// its output size agree with ours; that padding may be negative (rows never read).
//
// Training passes (default and nchw; blocked is forward only): fwd_train is the
// forward_training primitive; bwd_d the convolution's backward data (dx from dz and W, W
// reordered once), bwd_w its backward weights (dW and db), bwd both, train the forward then
// both, each with the forward_training primitive as hint. The activations and gradients are
// NCHW for nchw; for default in oneDNN's chosen layouts, reordered in run() as the forward's
// x and y are, and so is dW where oneDNN writes another layout than ours. The ReLU in front
// and what is declined: as dense.onednn.default.
#include "kernels/onednn/common.h"
#include "kernels/onednn/kernels.h"

namespace lb::onednn {
namespace {

using dnnl::convolution_backward_data;
using dnnl::convolution_backward_weights;
using dnnl::convolution_forward;

// A convolution's geometry as oneDNN takes it: strides, dilation from 0, and the
// right/bottom padding that makes its output size agree with ours (possibly negative).
struct Geometry {
  dims strides, dilates, left, right;
};

Geometry geometry(const Conv2d& c) {
  // The last input row a window reads, minus the last row there is, is the bottom padding.
  const int64_t pb = (c.oh() - 1) * c.sh + (c.kh - 1) * c.dh + 1 - c.ih - c.ph;
  const int64_t pr = (c.ow() - 1) * c.sw + (c.kw - 1) * c.dw + 1 - c.iw - c.pw;
  return {{c.sh, c.sw}, {c.dh - 1, c.dw - 1}, {c.ph, c.pw}, {pb, pr}};
}

// x (or dx) and y (or dy) of p in NCHW, or `any` for oneDNN to choose.
dnnl::memory::desc x_desc(const Problem& p, Arg a, bool any) {
  const Conv2d& c = p.conv();
  return dnnl::memory::desc({c.mb, c.ic, c.ih, c.iw}, dtype_of(p.dt, a), any ? tag::any : tag::nchw);
}
dnnl::memory::desc y_desc(const Problem& p, Arg a, bool any) {
  const Conv2d& c = p.conv();
  return dnnl::memory::desc({c.mb, c.oc, c.oh(), c.ow()}, dtype_of(p.dt, a), any ? tag::any : tag::nchw);
}

// W (or dW) as we hold it (oihw, or goihw with G leading when grouped), or `any` for oneDNN to choose.
dnnl::memory::desc weights_desc(const Problem& p, bool any, Arg a = Arg::wei) {
  const Conv2d& c = p.conv();
  const dt type = dtype_of(p.dt, a);
  if (c.g == 1) return dnnl::memory::desc({c.oc, c.ic, c.kh, c.kw}, type, any ? tag::any : tag::oihw);
  return dnnl::memory::desc({c.g, c.oc / c.g, c.ic / c.g, c.kh, c.kw}, type, any ? tag::any : tag::goihw);
}

convolution_forward::primitive_desc make_pd(const Problem& p, Layouts layouts, float output_scale) {
  const bool any = layouts != Layouts::nchw;  // library, blocked: oneDNN's choice
  const dnnl::memory::desc b({p.conv().oc}, dtype_of(p.dt, Arg::bias), tag::x);
  const Geometry g = geometry(p.conv());
  const auto prop =
      p.pass == Pass::fwd ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
  const convolution_forward::desc desc(prop, dnnl::algorithm::convolution_direct, x_desc(p, Arg::src, any),
                                       weights_desc(p, true), b, y_desc(p, Arg::dst, any), g.strides,
                                       g.dilates, g.left, g.right);
  // A backward pass's forward is only the hint its primitives are created with.
  return convolution_forward::primitive_desc(
      desc, attributes(runs_forward(p.pass) ? p.relu : Relu::none, output_scale), engine());
}

convolution_backward_data::primitive_desc make_data_pd(const Problem& p, Layouts layouts,
                                                       const convolution_forward::primitive_desc& hint) {
  const bool any = layouts != Layouts::nchw;
  const Geometry g = geometry(p.conv());
  const convolution_backward_data::desc desc(
      dnnl::algorithm::convolution_direct, x_desc(p, Arg::diff_src, any), weights_desc(p, true),
      y_desc(p, Arg::diff_dst, any), g.strides, g.dilates, g.left, g.right);
  return convolution_backward_data::primitive_desc(desc, attributes(Relu::none), engine(), hint);
}

convolution_backward_weights::primitive_desc make_weights_pd(
    const Problem& p, Layouts layouts, const convolution_forward::primitive_desc& hint) {
  const bool any = layouts != Layouts::nchw;
  const Geometry g = geometry(p.conv());
  const dnnl::memory::desc db({p.conv().oc}, dtype_of(p.dt, Arg::diff_bias), tag::x);
  const convolution_backward_weights::desc desc(
      dnnl::algorithm::convolution_direct, x_desc(p, Arg::src, any), weights_desc(p, true, Arg::diff_wei), db,
      y_desc(p, Arg::diff_dst, any), g.strides, g.dilates, g.left, g.right);
  return convolution_backward_weights::primitive_desc(desc, attributes(Relu::none), engine(), hint);
}

constexpr float kProbeScale = 1.0f / 1024;  // i8 probes ask for output scales, as prepare() will

// On an AVX-512 host (a 2-core Zen 5 VM) asking oneDNN 2.6 for an 8192x8192 filter over a
// 1x1 input padded by 8192 did not return from dnnl_primitive_desc_iterator_create in two
// minutes (default and blocked; nchw 0.2 s; the same line returns at once on AVX2 hosts).
// Where in oneDNN the time goes was not found, nor whether a side of 1024 is quick there. No network has a
// filter side past a few dozen, so sides beyond this bound are declined, in every layout alike, before oneDNN
// is asked: supports() must answer quickly on every host.
constexpr int64_t kMaxFilterSide = 1024;

std::string filter_reason(const Conv2d& c) {
  if (c.kh <= kMaxFilterSide && c.kw <= kMaxFilterSide) return {};
  return "a " + std::to_string(c.kh) + "x" + std::to_string(c.kw) +
         " filter: oneDNN 2.6 takes minutes to plan a side past " + std::to_string(kMaxFilterSide) +
         " on AVX-512 hosts, so it is not asked";
}

// Padding past the filter's reach ((K − 1)·D) adds outputs that read only zeros; no network
// has it, and oneDNN 2.6 took minutes (and gigabytes) to plan `kh=1 kw=11 pw=73741823` on a
// 1×1 input on the Zen 5 VM (a fuzzer's find), so it is declined before oneDNN is asked.
std::string padding_reason(const Conv2d& c) {
  if (c.ph <= (c.kh - 1) * c.dh && c.pw <= (c.kw - 1) * c.dw) return {};
  return "padding ph=" + std::to_string(c.ph) + " pw=" + std::to_string(c.pw) +
         " past the filter's reach ((k - 1) * dilation): outputs that read only zeros, which oneDNN 2.6 can "
         "take "
         "minutes to plan, so it is not asked";
}

class OnednnConv2d final : public PlanKernel {
 public:
  explicit OnednnConv2d(Layouts layouts) : layouts_(layouts) {}

  std::string supports(const Problem& p) const override {
    if (std::string why = dtype_reason(p); !why.empty()) return why;
    if (std::string why = size_reason(p); !why.empty()) return why;
    if (std::string why = filter_reason(p.conv()); !why.empty()) return why;
    if (std::string why = padding_reason(p.conv()); !why.empty()) return why;
    if (std::string why = backward_reason(p); !why.empty()) return why;
    const char* what = "convolution";
    try {
      const auto pd = make_pd(p, layouts_, p.dt == DType::i8 ? kProbeScale : 1.0f);
      std::string impl = runs_forward(p.pass) ? pd.impl_info_str() : "";
      what = "convolution backward data";
      if (computes_data_grads(p.pass)) impl = make_data_pd(p, layouts_, pd).impl_info_str();
      what = "convolution backward weights";
      if (computes_weight_grads(p.pass) && impl.rfind("ref", 0) != 0)
        impl = make_weights_pd(p, layouts_, pd).impl_info_str();
      if (layouts_ == Layouts::nchw && impl.rfind("ref", 0) == 0)
        return "only the reference implementation (" + impl + ") takes " + std::string(name(p.dt)) +
               " in NCHW; conv2d.onednn.default reorders";
    } catch (const dnnl::error& e) {
      return "no " + std::string(name(p.dt)) + " " + what + " on this CPU (" + dnnl_status2str(e.status) +
             ")";
    }
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    set_threads(ctx.threads);
    const float scale = p.dt == DType::i8 ? float(ts.at(Arg::src).scale() * ts.at(Arg::wei).scale()) : 1.0f;
    const auto pd = LB_DNNL(make_pd(p, layouts_, scale));
    plan_ = std::make_unique<Plan>();
    if (runs_forward(p.pass)) add_forward(p, ts, pd, scale);
    if (runs_backward(p.pass)) add_backward(p, ts, pd);
    plan_->finalize();
  }

 private:
  // The forward: x in, the convolution, y out, the ReLU pass (header).
  void add_forward(const Problem& p, TensorSet& ts, const convolution_forward::primitive_desc& pd,
                   float scale) {
    Plan& plan = *plan_;
    const Conv2d& c = p.conv();
    const dnnl::memory::desc x_user({c.mb, c.ic, c.ih, c.iw}, dtype_of(p.dt, Arg::src), tag::nchw);
    const dnnl::memory::desc y_user({c.mb, c.oc, c.oh(), c.ow()}, dtype_of(p.dt, Arg::dst), tag::nchw);
    const dnnl::memory y_bound = plan.bind(Arg::dst, y_user);
    dnnl::memory x, y = y_bound;
    if (layouts_ == Layouts::blocked) {
      x = plan.reordered_now(ts, Arg::src, x_user, 0, pd.src_desc());  // untimed
    } else {
      x = plan.bind(Arg::src, x_user);
      if (pd.src_desc() != x_user) {
        const dnnl::memory x_bound = x;
        x = plan.temporary(pd.src_desc());  // used inside run() only
        plan.add_reorder(x_bound, x, "x reorder");
      }
    }
    // y in oneDNN's layout: inside run() only, unless it is kept until finish() (blocked).
    if (pd.dst_desc() != y_user)
      y = layouts_ == Layouts::blocked ? plan.owned(pd.dst_desc()) : plan.temporary(pd.dst_desc());

    const dnnl::memory w = plan.reordered_now(ts, Arg::wei, weights_desc(p, false), 0, pd.weights_desc());
    const dnnl::memory b = plan.bias(ts, pd.bias_desc(), scale);
    plan.add(pd, LB_DNNL(dnnl::convolution_forward(pd)),
             {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}},
             "convolution (x " + layout(pd.src_desc()) + ", W " + layout(pd.weights_desc()) + ")");
    if (y == y_bound) {
      plan.add_relu_pass(p.relu, y_bound);
    } else if (layouts_ != Layouts::blocked) {
      plan.add_reorder(y, y_bound, "y reorder");
      plan.add_relu_pass(p.relu, y_bound);
    } else {
      // y stays in oneDNN's layout for the timed work, ReLU pass included; finish() hands
      // y (and relu_dst) back in NCHW.
      if (p.relu == Relu::separate) {
        const dnnl::memory r = plan.owned(pd.dst_desc());
        plan.add_relu(y, r);
        plan.add_finish_reorder(r, plan.bind(Arg::relu_dst, y_user), "relu_dst reorder");
      } else {
        plan.add_relu_pass(p.relu, y);
      }
      plan.add_finish_reorder(y, y_bound, "y reorder");
    }
  }

  // The backward: dz (the ReLU's backward in NCHW), then dx and dW, db (header).
  void add_backward(const Problem& p, TensorSet& ts, const convolution_forward::primitive_desc& pd) {
    Plan& plan = *plan_;
    const dnnl::memory dz = plan.add_relu_backward(p.relu, y_desc(p, Arg::diff_dst, false));
    if (computes_data_grads(p.pass)) {
      const auto bd = LB_DNNL(make_data_pd(p, layouts_, pd));
      const dnnl::memory w = plan.reordered_now(ts, Arg::wei, weights_desc(p, false), 0, bd.weights_desc());
      const dnnl::memory dy = plan.input_of(dz, bd.diff_dst_desc(), "dy");
      const Plan::Output dx = plan.output(Arg::diff_src, x_desc(p, Arg::diff_src, false), bd.diff_src_desc());
      plan.add(bd, LB_DNNL(convolution_backward_data(bd)),
               {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dx.written}},
               "convolution backward data (dy " + layout(bd.diff_dst_desc()) + ", W " +
                   layout(bd.weights_desc()) + ")");
      plan.then(dx, "dx");
    }
    if (computes_weight_grads(p.pass)) {
      const auto bw = LB_DNNL(make_weights_pd(p, layouts_, pd));
      const dnnl::memory x = plan.input(Arg::src, x_desc(p, Arg::src, false), bw.src_desc());
      const dnnl::memory dy = plan.input_of(dz, bw.diff_dst_desc(), "dy");
      const Plan::Output dw =
          plan.output(Arg::diff_wei, weights_desc(p, false, Arg::diff_wei), bw.diff_weights_desc());
      plan.add(bw, LB_DNNL(convolution_backward_weights(bw)),
               {{DNNL_ARG_SRC, x},
                {DNNL_ARG_DIFF_DST, dy},
                {DNNL_ARG_DIFF_WEIGHTS, dw.written},
                {DNNL_ARG_DIFF_BIAS, plan.bind(Arg::diff_bias, bw.diff_bias_desc())}},
               "convolution backward weights (x " + layout(bw.src_desc()) + ", dW " +
                   layout(bw.diff_weights_desc()) + ")");
      plan.then(dw, "dW");
    }
  }

  Layouts layouts_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv2d(Layouts layouts) {
  return std::make_unique<OnednnConv2d>(layouts);
}

}  // namespace lb::onednn
