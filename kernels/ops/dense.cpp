// dense: y = x·Wᵀ + b, everything layerbench knows about it (the shape: dense.h).
#include "kernels/ops/dense.h"

#include "kernels/ops/traits.h"

namespace lb {
namespace {

constexpr std::string_view kName = "dense";

constexpr Key<Dense> kKeys[] = {{"mb", &Dense::mb}, {"ic", &Dense::ic}, {"oc", &Dense::oc}};

}  // namespace

const OpTraits& dense_traits() {
  static const OpTraits traits{
      .op = Op::dense,
      .name = kName,
      .parse =
          [](KeyValues& kv, Problem& p) {
            const Dense d = parse_keys<Dense>(kName, kKeys, kv);
            check_size(kName, (long double)d.mb * d.ic * d.oc);
            p.shape = d;
          },
      .print = [](const Problem& p, std::string& out) { print_keys<Dense>(kKeys, p.dense(), out); },
      // x is MB×IC, W is OC×IC, b is OC, y is MB×OC.
      .inputs = {{Arg::src, 0,
                  [](const Problem& p) -> Dims {
                    return {p.dense().mb, p.dense().ic};
                  }},
                 {Arg::wei, -1,
                  [](const Problem& p) -> Dims {
                    return {p.dense().oc, p.dense().ic};
                  }},
                 {Arg::bias, -1, [](const Problem& p) -> Dims { return {p.dense().oc}; }}},
      .output = {Arg::dst, 0,
                 [](const Problem& p) -> Dims {
                   return {p.dense().mb, p.dense().oc};
                 }},
      .accumulation_length = [](const Problem& p) { return p.dense().ic; },
      .macs = [](const Problem& p) { return p.dense().mb * p.dense().ic * p.dense().oc; },
      .layer_type = [](const Problem&) { return kName; },
      .probes = {"dense mb=2 ic=8 oc=8"},
      // A sequence (T×C per sample) is projected position by position: T·batch rows.
      .layer = {.ranks = {1, 2},
                .input = "a vector or sequence",
                .keys = [](const Dims& in, int64_t batch) -> DerivedKeys {
                  return {{"mb", in.size() == 2 ? in[0] * batch : batch}, {"ic", in.back()}};
                },
                .out_shape =
                    [](const Problem& p, const Dims& in) {
                      Dims out = in;
                      out.back() = p.dense().oc;
                      return out;
                    }},
      .not_in_backward = {Arg::bias},
      .bias_index = [](const Problem& p, int64_t i) { return i % p.dense().oc; },
  };
  return traits;
}

}  // namespace lb
