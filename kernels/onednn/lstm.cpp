// lstm.onednn.default — stacked unidirectional LSTM through oneDNN's LSTM primitive.
//
// Our layouts are oneDNN's plain ones with D = 1 direction: src T×N×I and dst T×N×H are
// `tnc`, src_iter and src_iter_c L×N×H are `ldnc`, bias L×4H is `ldgo`, and each layer's
// W_x (4H×I) and W_h (4H×H) are `ldgoi`; the gate order i, f, g, o is oneDNN's. Weights are
// declared `any` and reordered in prepare() into the layout oneDNN's GEMMs want.
//
// Layers: one oneDNN LSTM primitive covers L layers only when every layer has the same
// input width (its weights_layer is L×D×SLC×4×H), i.e. for L > 1 only when I = H. Otherwise
// the stack runs as two primitives: layer 0 (I -> H), then layers 1..L-1 (H -> H) in one
// primitive, with layer 0's output sequence (T×N×H) in a buffer prepare() allocates.
//
// dtypes: f32; bf16 (bf16 x, h, W and y; f32 c state and bias, as oneDNN wants them; f32
// accumulation). i8 is declined: int8 LSTMs quantise the hidden state between steps, which
// no reference defines yet. ReLU: oneDNN's RNN primitives take no post-ops, so relu=fused is
// declined; inplace and separate are an eltwise pass over y. Final states (dst_iter) are
// not requested. Threads: OpenMP, ctx.threads set in prepare() (kernels/onednn/common.h).
//
// Training passes (dir=fwd_train, bwd, train; kernels/ops/traits.h): fwd_train is the
// forward_training primitive, which also fills a workspace (every step's gates and states)
// that the backward reads: saved_bytes(). bwd is `lstm_backward` per segment, the top one
// first, one segment's diff_src_layer the next one's diff_dst_layer; its training forward
// runs once at the end of prepare() (untimed) on bwd's own inputs into a buffer of the
// Plan, since the workspace is what a training step's forward would have left. train runs
// the forward (into dst) and then the backward. The backward adds its weight gradients
// into dW, dW_h and db (oneDNN's RNN convention; measured: a second run without zeroing
// doubles them, while the workspace stays valid: zeroed, a second run gives the same
// gradients), so rearm() zeroes them before each timed run, untimed (Kernel::rearm). It
// also reads the last layer's h from dst_layer (measured: dW_h wrong when dst_layer holds
// max(h, 0)), so under train's relu=inplace h stays in a buffer of the Plan and the ReLU
// writes dst from it: oneDNN's LSTM saves nothing by an in-place ReLU in training.
// The ReLU in front is an eltwise backward on dst (inplace, separate). The gradients are
// f32, as oneDNN wants them also for a bf16 LSTM, converted from and to the problem's
// storage around it. Its bf16 backward multiplies the gates' gradients as bf16 operands
// (db 3e-4 of its magnitude off on a 3-sample, 4-step, 8-unit LSTM: 300x the f32 bound),
// which verification allows for (kernels/verify.cpp); measured at 10-20 % of that
// allowance (Zen 5 VM, 2026-12-07). The weights' gradients
// come in oneDNN's layout and are reordered to ours in run() (timed, as for the dense and
// conv kernels' dW).
#include "kernels/onednn/common.h"
#include "kernels/onednn/kernels.h"

namespace lb::onednn {
namespace {

// Layers first .. first+count-1 run as one primitive whose input is `width` wide.
struct Segment {
  int64_t first, count, width;
};

std::vector<Segment> segments(const Lstm& s) {
  if (s.l == 1 || s.ic == s.hc) return {{0, s.l, s.ic}};
  return {{0, 1, s.ic}, {1, s.l - 1, s.hc}};
}

struct Descs {
  dnnl::memory::desc x, h0, c0, wx, wh, b, y;
};

// The user-layout descriptors of one segment; weights as `any` when asked.
Descs descs(const Problem& p, const Segment& g, bool any_weights) {
  const Lstm& s = p.lstm();
  const dt type = dtype_of(p.dt, Arg::src);
  const tag wtag = any_weights ? tag::any : tag::ldgoi;
  return {dnnl::memory::desc({s.t, s.mb, g.width}, type, tag::tnc),
          dnnl::memory::desc({g.count, 1, s.mb, s.hc}, dtype_of(p.dt, Arg::src_iter), tag::ldnc),
          dnnl::memory::desc({g.count, 1, s.mb, s.hc}, dtype_of(p.dt, Arg::src_iter_c), tag::ldnc),
          dnnl::memory::desc({g.count, 1, g.width, 4, s.hc}, dtype_of(p.dt, Arg::wei), wtag),
          dnnl::memory::desc({g.count, 1, s.hc, 4, s.hc}, dtype_of(p.dt, Arg::wei_iter), wtag),
          dnnl::memory::desc({g.count, 1, 4, s.hc}, dtype_of(p.dt, Arg::bias), tag::ldgo),
          dnnl::memory::desc({s.t, s.mb, s.hc}, dtype_of(p.dt, Arg::dst), tag::tnc)};
}

dnnl::lstm_forward::primitive_desc make_pd(const Problem& p, const Segment& g) {
  const Descs d = descs(p, g, true);
  const auto prop =
      p.pass == Pass::fwd ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
  const dnnl::lstm_forward::desc desc(prop, dnnl::rnn_direction::unidirectional, d.x, d.h0, d.c0, d.wx, d.wh,
                                      d.b, d.y, dnnl::memory::desc(), dnnl::memory::desc());
  return dnnl::lstm_forward::primitive_desc(desc, attributes(Relu::none), engine());
}

// The descriptors of a segment's gradients as oneDNN's LSTM backward takes them: f32, in
// our layouts but for the weights' (`any`: oneDNN's choice).
Descs diff_descs(const Problem& p, const Segment& g) {
  const Lstm& s = p.lstm();
  auto f32 = [](const dims& d, tag t) { return dnnl::memory::desc(d, dt::f32, t); };
  return {f32({s.t, s.mb, g.width}, tag::tnc),
          f32({g.count, 1, s.mb, s.hc}, tag::ldnc),
          f32({g.count, 1, s.mb, s.hc}, tag::ldnc),
          f32({g.count, 1, g.width, 4, s.hc}, tag::any),
          f32({g.count, 1, s.hc, 4, s.hc}, tag::any),
          f32({g.count, 1, 4, s.hc}, tag::ldgo),
          f32({s.t, s.mb, s.hc}, tag::tnc)};
}

dnnl::lstm_backward::primitive_desc make_backward_pd(const Problem& p, const Segment& g,
                                                     const dnnl::lstm_forward::primitive_desc& hint) {
  const Descs d = descs(p, g, true), dd = diff_descs(p, g);
  const dnnl::memory::desc none;
  const dnnl::lstm_backward::desc desc(dnnl::prop_kind::backward, dnnl::rnn_direction::unidirectional, d.x,
                                       d.h0, d.c0, d.wx, d.wh, d.b, d.y, none, none, dd.x, dd.h0, dd.c0,
                                       dd.wx, dd.wh, dd.b, dd.y, none, none);
  return dnnl::lstm_backward::primitive_desc(desc, attributes(Relu::none), engine(), hint);
}

// Element offsets of a segment's first layer in our stacked tensors: states L×N×H, bias
// L×4H, W_h L×4H×H, and W_x 4H×I for layer 0, then 4H×H per layer (kernels/ref/lstm.cpp).
struct Offsets {
  size_t h, b, wh, wx;
};

Offsets offsets(const Lstm& s, const Segment& g) {
  return {size_t(g.first * s.mb * s.hc), size_t(g.first * 4 * s.hc), size_t(g.first * 4 * s.hc * s.hc),
          g.first == 0 ? 0 : size_t(4 * s.hc * s.ic + (g.first - 1) * 4 * s.hc * s.hc)};
}

class OnednnLstm final : public PlanKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = dtype_reason(p); !why.empty()) return why;
    if (std::string why = size_reason(p); !why.empty()) return why;
    // oneDNN has int8 LSTMs, but the reference declines them: there is nothing to check one against.
    if (std::string why = require_dtypes(p, {DType::f32, DType::f16, DType::bf16}); !why.empty())
      return why + ": no reference quantisation of the hidden state";
    if (p.relu == Relu::fused) return "relu=fused not supported for lstm (RNN primitives take no post-ops)";
    const char* what = "LSTM";
    try {
      for (const Segment& g : segments(p.lstm())) {
        what = "LSTM";
        const auto pd = make_pd(p, g);
        what = "LSTM backward";
        if (runs_backward(p.pass)) make_backward_pd(p, g, pd);
      }
    } catch (const dnnl::error& e) {
      return "no " + std::string(name(p.dt)) + " " + what + " on this CPU (" + dnnl_status2str(e.status) +
             ")";
    }
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    set_threads(ctx.threads);
    const Lstm& s = p.lstm();
    plan_ = std::make_unique<Plan>();
    Plan& plan = *plan_;
    const std::vector<Segment> segs = segments(s);
    const bool training = p.pass != Pass::fwd, backward = runs_backward(p.pass);
    // bwd's forward runs once in prepare() into the Plan's buffers; fwd, fwd_train and
    // train's in run(), into dst.
    const Plan::Stage forward_stage = runs_forward(p.pass) ? Plan::Stage::run : Plan::Stage::once;
    // The backward reads the last layer's h from dst_layer (header), so train's relu=inplace
    // writes max(h, 0) into dst from a buffer of the Plan that keeps h.
    const bool keep_h = p.pass == Pass::train && p.relu == Relu::inplace;
    auto bytes = [&](Arg a, size_t elements) { return elements * size_of(storage_of(p.dt, a)); };
    struct Layer {  // a segment's forward, as its backward reads it
      dnnl::lstm_forward::primitive_desc pd;
      dnnl::memory x, h0, c0, wx, wh, b, y, workspace;
    };
    std::vector<Layer> done;
    dnnl::memory x;  // the segment's input sequence
    for (size_t i = 0; i < segs.size(); ++i) {
      const Segment& g = segs[i];
      const Offsets o = offsets(s, g);
      const auto pd = LB_DNNL(make_pd(p, g));
      const Descs user = descs(p, g, false);
      if (i == 0) x = plan.bind(Arg::src, user.x);
      const dnnl::memory h0 = plan.bind(Arg::src_iter, user.h0, bytes(Arg::src_iter, o.h));
      const dnnl::memory c0 = plan.bind(Arg::src_iter_c, user.c0, bytes(Arg::src_iter_c, o.h));
      const dnnl::memory wx =
          plan.reordered_now(ts, Arg::wei, user.wx, bytes(Arg::wei, o.wx), pd.weights_layer_desc());
      const dnnl::memory wh =
          plan.reordered_now(ts, Arg::wei_iter, user.wh, bytes(Arg::wei_iter, o.wh), pd.weights_iter_desc());
      const dnnl::memory b = plan.bind(Arg::bias, user.b, bytes(Arg::bias, o.b));
      const bool last = i + 1 == segs.size();
      const dnnl::memory y = last && forward_stage == Plan::Stage::run && !keep_h
                                 ? plan.bind(Arg::dst, user.y)
                                 : plan.owned(user.y);
      std::vector<std::pair<int, dnnl::memory>> args = {
          {DNNL_ARG_SRC_LAYER, x},      {DNNL_ARG_SRC_ITER, h0},     {DNNL_ARG_SRC_ITER_C, c0},
          {DNNL_ARG_WEIGHTS_LAYER, wx}, {DNNL_ARG_WEIGHTS_ITER, wh}, {DNNL_ARG_BIAS, b},
          {DNNL_ARG_DST_LAYER, y}};
      dnnl::memory workspace;
      if (training) {
        workspace = plan.owned(pd.workspace_desc(), true);
        args.push_back({DNNL_ARG_WORKSPACE, workspace});
      }
      plan.add(pd, LB_DNNL(dnnl::lstm_forward(pd)), std::move(args),
               std::string(forward_stage == Plan::Stage::once ? "prepare(): " : "") + "lstm layers " +
                   std::to_string(g.first) + ".." + std::to_string(g.first + g.count - 1) + " (W " +
                   layout(pd.weights_layer_desc()) + ")",
               forward_stage);
      done.push_back({pd, x, h0, c0, wx, wh, b, y, workspace});
      x = y;
    }
    if (keep_h)
      plan.add_relu(x, plan.bind(Arg::dst, descs(p, segs.back(), false).y));
    else if (runs_forward(p.pass))
      plan.add_relu_pass(p.relu, x);
    if (backward) {
      // dz, the gradient of the last layer's h, in f32.
      dnnl::memory dy = plan.input_of(plan.add_relu_backward(p.relu, descs(p, segs.back(), false).y),
                                      diff_descs(p, segs.back()).y, "dy");
      for (size_t i = segs.size(); i-- > 0;) {
        const Segment& g = segs[i];
        const Layer& f = done[i];
        const Offsets o = offsets(s, g);
        const auto bd = LB_DNNL(make_backward_pd(p, g, f.pd));
        const Descs user = descs(p, g, false);
        // Our layouts with the gradients' dtypes (each its primal's storage).
        auto user_of = [&](Arg a, dims d, tag t) {
          return dnnl::memory::desc(d, dtype_of(p.dt, diff_of(a)), t);
        };
        // The weights in the backward's layout: the forward's copy where it wants the same.
        auto weights = [&](Arg a, const dnnl::memory& forward, const dnnl::memory::desc& ours,
                           size_t elements, const dnnl::memory::desc& want) {
          return forward.get_desc() == want ? forward
                                            : plan.reordered_now(ts, a, ours, bytes(a, elements), want);
        };
        const dnnl::memory wx = weights(Arg::wei, f.wx, user.wx, o.wx, bd.weights_layer_desc());
        const dnnl::memory wh = weights(Arg::wei_iter, f.wh, user.wh, o.wh, bd.weights_iter_desc());
        auto out = [&](Arg a, const dnnl::memory::desc& ours, size_t elements,
                       const dnnl::memory::desc& have) {
          return plan.output(diff_of(a), ours, have, elements * size_of(storage_of(p.dt, diff_of(a))));
        };
        const Plan::Output dh0 = out(Arg::src_iter, user_of(Arg::src_iter, user.h0.dims(), tag::ldnc), o.h,
                                     bd.diff_src_iter_desc());
        const Plan::Output dc0 = out(Arg::src_iter_c, user_of(Arg::src_iter_c, user.c0.dims(), tag::ldnc),
                                     o.h, bd.diff_src_iter_c_desc());
        const Plan::Output dwx =
            out(Arg::wei, user_of(Arg::wei, user.wx.dims(), tag::ldgoi), o.wx, bd.diff_weights_layer_desc());
        const Plan::Output dwh = out(Arg::wei_iter, user_of(Arg::wei_iter, user.wh.dims(), tag::ldgoi), o.wh,
                                     bd.diff_weights_iter_desc());
        const Plan::Output db =
            out(Arg::bias, user_of(Arg::bias, user.b.dims(), tag::ldgo), o.b, bd.diff_bias_desc());
        for (const Plan::Output* w : {&dwx, &dwh, &db})
          plan.zero_in_rearm(w->written);
        // The bottom segment writes diff_src; the others the gradient of the layer below's h.
        const Plan::Output dx =
            i == 0 ? out(Arg::src, user_of(Arg::src, user.x.dims(), tag::tnc), 0, bd.diff_src_layer_desc())
                   : Plan::Output{plan.owned(bd.diff_src_layer_desc()), {}};
        plan.add(bd, LB_DNNL(dnnl::lstm_backward(bd)),
                 {{DNNL_ARG_SRC_LAYER, f.x},
                  {DNNL_ARG_SRC_ITER, f.h0},
                  {DNNL_ARG_SRC_ITER_C, f.c0},
                  {DNNL_ARG_WEIGHTS_LAYER, wx},
                  {DNNL_ARG_WEIGHTS_ITER, wh},
                  {DNNL_ARG_BIAS, f.b},
                  {DNNL_ARG_DST_LAYER, f.y},
                  {DNNL_ARG_WORKSPACE, f.workspace},
                  {DNNL_ARG_DIFF_DST_LAYER, dy},
                  {DNNL_ARG_DIFF_SRC_LAYER, dx.written},
                  {DNNL_ARG_DIFF_SRC_ITER, dh0.written},
                  {DNNL_ARG_DIFF_SRC_ITER_C, dc0.written},
                  {DNNL_ARG_DIFF_WEIGHTS_LAYER, dwx.written},
                  {DNNL_ARG_DIFF_WEIGHTS_ITER, dwh.written},
                  {DNNL_ARG_DIFF_BIAS, db.written}},
                 "lstm backward layers " + std::to_string(g.first) + ".." +
                     std::to_string(g.first + g.count - 1) + " (dW " + layout(bd.diff_weights_layer_desc()) +
                     ")");
        if (i == 0) plan.then(dx, "dx");
        plan.then(dh0, "dh0");
        plan.then(dc0, "dc0");
        plan.then(dwx, "dW");
        plan.then(dwh, "dW_h");
        plan.then(db, "db");
        dy = dx.written;
      }
    }
    plan.finalize();
    plan.prepared(ts);
  }
};

}  // namespace

std::unique_ptr<Kernel> make_lstm() {
  return std::make_unique<OnednnLstm>();
}

}  // namespace lb::onednn
