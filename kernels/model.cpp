#include "kernels/model.h"

#include "kernels/tensor.h"

namespace lb {

Model model(const Problem& p) {
  Model m;
  auto bytes = [&p](Arg a, double elements) { return elements * double(size_of(storage_of(p.dt, a))); };
  double out = 1;
  for (int64_t d : output_dims(p))
    out *= double(d);
  switch (p.op()) {
    case Op::dense: {
      const Dense& d = p.dense();
      m.params = d.oc * d.ic + d.oc;
      m.param_bytes = bytes(Arg::wei, double(d.oc) * d.ic) + bytes(Arg::bias, d.oc);
      m.src_bytes = bytes(Arg::src, double(d.mb) * d.ic);
      m.macs = d.mb * d.ic * d.oc;
      break;
    }
    case Op::conv2d: {
      const Conv2d& c = p.conv();
      const int64_t taps = c.ic / c.g * c.kh * c.kw;  // products per output value
      m.params = c.oc * taps + c.oc;
      m.param_bytes = bytes(Arg::wei, double(c.oc) * taps) + bytes(Arg::bias, c.oc);
      m.src_bytes = bytes(Arg::src, double(c.mb) * c.ic * c.ih * c.iw);
      m.macs = c.mb * c.oc * c.oh() * c.ow() * taps;
      break;
    }
    case Op::lstm: {
      const Lstm& s = p.lstm();
      const int64_t g = 4 * s.hc;
      const int64_t wx = g * s.ic + (s.l - 1) * g * s.hc, wh = s.l * g * s.hc, b = s.l * g;
      m.params = wx + wh + b;
      m.param_bytes = bytes(Arg::wei, wx) + bytes(Arg::wei_iter, wh) + bytes(Arg::bias, b);
      const double state = double(s.l) * s.mb * s.hc;
      m.src_bytes = bytes(Arg::src, double(s.t) * s.mb * s.ic) + bytes(Arg::src_iter, state) +
                    bytes(Arg::src_iter_c, state);
      m.macs = s.t * s.mb * (wx + wh);  // every weight once per step and sample
      break;
    }
  }
  m.dst_bytes = bytes(Arg::dst, out);
  m.relu_bytes = p.relu == Relu::separate ? bytes(Arg::relu_dst, out) : 0.0;
  m.flops = 2.0 * double(m.macs);
  m.min_bytes = m.param_bytes + m.src_bytes + m.dst_bytes + m.relu_bytes;
  m.intensity = m.flops / m.min_bytes;
  m.inference_bytes = m.param_bytes + m.src_bytes + m.dst_bytes + m.relu_bytes;
  m.training_bytes = 2.0 * m.param_bytes + m.src_bytes + m.dst_bytes + m.relu_bytes;
  return m;
}

std::string layer_type(const Problem& p) {
  switch (p.op()) {
    case Op::dense:
      return "dense";
    case Op::lstm:
      return "lstm";
    case Op::conv2d: {
      const Conv2d& c = p.conv();
      if (c.depthwise()) return "depthwise";
      if (c.g == 1 && c.kh == 1 && c.kw == 1) return "pointwise";
      return "conv";
    }
  }
  return "?";
}

}  // namespace lb
