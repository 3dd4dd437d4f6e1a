// softmax over the channels, everything layerbench knows about it (the shape: softmax.h).
// No products: no MACs (the papers' totals leave it out); its time is an exponential per
// element and memory's, the input read twice (its maximum, then the sum) and the output
// written and scaled.
#include "kernels/ops/softmax.h"

#include "kernels/ops/traits.h"

namespace lb {
namespace {

constexpr std::string_view kName = "softmax";

Dims dims(const Problem& p) {
  return activation_dims(p.softmax());
}

}  // namespace

const OpTraits& softmax_traits() {
  static const OpTraits traits{
      .op = Op::softmax,
      .name = kName,
      .parse =
          [](KeyValues& kv, Problem& p) {
            const Softmax s = parse_keys<Softmax>(kName, kActivationKeys<Softmax>, kv);
            check_size(kName, (long double)s.mb * s.ic * s.ih * s.iw);
            p.shape = s;
          },
      .print = [](const Problem& p,
                  std::string& out) { print_keys<Softmax>(kActivationKeys<Softmax>, p.softmax(), out); },
      .inputs = {{Arg::src, 0, dims}},
      .output = {Arg::dst, 0, dims},
      // Each output divides by the sum of IC exponentials.
      .accumulation_length = [](const Problem& p) { return p.softmax().ic; },
      .macs = [](const Problem&) { return int64_t(0); },
      .layer_type = [](const Problem&) { return kName; },
      .probes = {"softmax mb=2 ic=10", "softmax mb=2 ic=4 ih=3 iw=3"},
      .layer = {.ranks = {1, 2, 3},
                .input = "a vector, sequence or image",
                .keys = activation_keys,
                .out_shape = [](const Problem&, const Dims& in) { return in; }},
      .passes = {Pass::fwd},
      .no_pass = "only softmax's forward pass is written yet",
      .keeps_input = [](const Problem&) { return false; },
      .keeps_output = true,
  };
  return traits;
}

}  // namespace lb
