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
  const dnnl::lstm_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::rnn_direction::unidirectional,
                                      d.x, d.h0, d.c0, d.wx, d.wh, d.b, d.y, dnnl::memory::desc(),
                                      dnnl::memory::desc());
  return dnnl::lstm_forward::primitive_desc(desc, attributes(Relu::none), engine());
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
    try {
      for (const Segment& g : segments(p.lstm()))
        make_pd(p, g);
    } catch (const dnnl::error& e) {
      return "no " + std::string(name(p.dt)) + " LSTM on this CPU (" + dnnl_status2str(e.status) + ")";
    }
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    set_threads(ctx.threads);
    const Lstm& s = p.lstm();
    plan_ = std::make_unique<Plan>();
    Plan& plan = *plan_;
    const std::vector<Segment> segs = segments(s);
    dnnl::memory x;  // the segment's input sequence
    dnnl::memory y;
    for (size_t i = 0; i < segs.size(); ++i) {
      const Segment& g = segs[i];
      const auto pd = LB_DNNL(make_pd(p, g));
      const Descs user = descs(p, g, false);
      // Element offsets of the segment's first layer: states L×N×H, bias L×4H, W_h L×4H×H,
      // and W_x stacked as 4H×I for layer 0, then 4H×H per layer (kernels/ref/lstm.cpp).
      const size_t h_off = size_t(g.first * s.mb * s.hc), b_off = size_t(g.first * 4 * s.hc);
      const size_t wh_off = size_t(g.first * 4 * s.hc * s.hc);
      const size_t wx_off = g.first == 0 ? 0 : size_t(4 * s.hc * s.ic + (g.first - 1) * 4 * s.hc * s.hc);
      auto bytes = [&](Arg a, size_t elements) { return elements * size_of(storage_of(p.dt, a)); };
      if (i == 0) x = plan.bind(Arg::src, user.x);
      const dnnl::memory h0 = plan.bind(Arg::src_iter, user.h0, bytes(Arg::src_iter, h_off));
      const dnnl::memory c0 = plan.bind(Arg::src_iter_c, user.c0, bytes(Arg::src_iter_c, h_off));
      const dnnl::memory wx =
          plan.reordered_now(ts, Arg::wei, user.wx, bytes(Arg::wei, wx_off), pd.weights_layer_desc());
      const dnnl::memory wh = plan.reordered_now(ts, Arg::wei_iter, user.wh, bytes(Arg::wei_iter, wh_off),
                                                 pd.weights_iter_desc());
      const dnnl::memory b = plan.bind(Arg::bias, user.b, bytes(Arg::bias, b_off));
      y = i + 1 == segs.size() ? plan.bind(Arg::dst, user.y) : plan.owned(user.y);
      plan.add(pd, LB_DNNL(dnnl::lstm_forward(pd)),
               {{DNNL_ARG_SRC_LAYER, x},
                {DNNL_ARG_SRC_ITER, h0},
                {DNNL_ARG_SRC_ITER_C, c0},
                {DNNL_ARG_WEIGHTS_LAYER, wx},
                {DNNL_ARG_WEIGHTS_ITER, wh},
                {DNNL_ARG_BIAS, b},
                {DNNL_ARG_DST_LAYER, y}},
               "lstm layers " + std::to_string(g.first) + ".." + std::to_string(g.first + g.count - 1) +
                   " (W " + layout(pd.weights_layer_desc()) + ")");
      x = y;
    }
    plan.add_relu_pass(p.relu, y);
    plan.finalize();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_lstm() {
  return std::make_unique<OnednnLstm>();
}

}  // namespace lb::onednn
