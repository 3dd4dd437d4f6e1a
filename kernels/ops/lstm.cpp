// lstm: L stacked unidirectional LSTM layers, gates i, f, g, o; everything layerbench
// knows about it (the shape: lstm.h; equations and layouts: kernels/ref/lstm.cpp).
#include "kernels/ops/lstm.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops/traits.h"

namespace lb {
namespace {

constexpr std::string_view kName = "lstm";

constexpr Key<Lstm> kKeys[] = {{"mb", &Lstm::mb},
                               {"t", &Lstm::t},
                               {"ic", &Lstm::ic},
                               {"hc", &Lstm::hc},
                               {.key = "l", .member = &Lstm::l, .required = false}};

// The widest input a layer's gates read per step: layer 0 reads x (IC), the others the
// previous layer's h (HC); each also reads its own h (HC).
int64_t fan_in(const Lstm& s) {
  return std::max(s.ic, s.hc) + s.hc;
}

// Weights of all layers stacked (layout in kernels/ref/lstm.cpp): W_x is 4HC×IC for
// layer 0 and 4HC×HC for the others; W_h is 4HC×HC per layer.
int64_t input_weights(const Lstm& s) {
  const int64_t g = 4 * s.hc;  // four gates
  return g * s.ic + (s.l - 1) * g * s.hc;
}

// Weights and biases scaled by 1/sqrt(fan-in), so that the gates do not saturate.
double weight_amplitude(const Problem& p) {
  return 1.0 / std::sqrt(double(fan_in(p.lstm())));
}

}  // namespace

const OpTraits& lstm_traits() {
  static const OpTraits traits{
      .op = Op::lstm,
      .name = kName,
      .parse =
          [](KeyValues& kv, Problem& p) {
            const Lstm s = parse_keys<Lstm>(kName, kKeys, kv);
            const long double width = std::max(s.ic, s.hc);
            check_size(kName, (long double)s.t * s.mb * 4 * s.hc * (width + s.hc) * s.l);
            p.shape = s;
          },
      .print = [](const Problem& p, std::string& out) { print_keys<Lstm>(kKeys, p.lstm(), out); },
      // x is T×MB×IC; h0 and c0 are L×MB×HC; y is T×MB×HC (the last layer's h).
      .inputs = {{Arg::src, 1,
                  [](const Problem& p) -> Dims {
                    const Lstm& s = p.lstm();
                    return {s.t, s.mb, s.ic};
                  }},
                 {Arg::wei, -1, [](const Problem& p) -> Dims { return {input_weights(p.lstm())}; },
                  weight_amplitude},
                 {Arg::wei_iter, -1,
                  [](const Problem& p) -> Dims {
                    const Lstm& s = p.lstm();
                    return {s.l, 4 * s.hc, s.hc};
                  },
                  weight_amplitude},
                 {Arg::bias, -1,
                  [](const Problem& p) -> Dims {
                    return {p.lstm().l, 4 * p.lstm().hc};
                  },
                  weight_amplitude},
                 {Arg::src_iter, 1,
                  [](const Problem& p) -> Dims {
                    const Lstm& s = p.lstm();
                    return {s.l, s.mb, s.hc};
                  }},
                 {Arg::src_iter_c, 1,
                  [](const Problem& p) -> Dims {
                    const Lstm& s = p.lstm();
                    return {s.l, s.mb, s.hc};
                  }}},
      .output = {Arg::dst, 1,
                 [](const Problem& p) -> Dims {
                   const Lstm& s = p.lstm();
                   return {s.t, s.mb, s.hc};
                 }},
      .accumulation_length =
          [](const Problem& p) {
            const Lstm& s = p.lstm();
            return fan_in(s) * s.t * s.l;
          },
      // Every weight once per step and sample.
      .macs =
          [](const Problem& p) {
            const Lstm& s = p.lstm();
            return s.t * s.mb * (input_weights(s) + s.l * 4 * s.hc * s.hc);
          },
      .layer_type = [](const Problem&) { return kName; },
      .probes = {"lstm mb=2 t=2 ic=8 hc=8"},
      .layer = {.ranks = {2},
                .input = "a sequence (t×c)",
                .keys = [](const Dims& in, int64_t batch) -> DerivedKeys {
                  return {{"mb", batch}, {"t", in[0]}, {"ic", in[1]}};
                },
                .out_shape = [](const Problem& p, const Dims& in) -> Dims {
                  return {in[0], p.lstm().hc};
                }},
      .passes = {Pass::fwd, Pass::fwd_train, Pass::bwd, Pass::train},
      .no_pass = "an LSTM's data and weight gradients come out of one pass back through time; use dir=bwd",
      // Per step, sample and layer: the four gates and the cell state; the h of every layer
      // but the last (the last's is dst).
      .saved_elements =
          [](const Problem& p) {
            const Lstm& s = p.lstm();
            return s.t * s.mb * (s.l * 5 * s.hc + (s.l - 1) * s.hc);
          },
  };
  return traits;
}

}  // namespace lb
