// pool2d: max or average pooling in NCHW; everything layerbench knows about it (the shape:
// pool2d.h). No products: no MACs, which the papers' totals leave out too; its time is
// memory's (the model's minimum bytes).
#include "kernels/ops/pool2d.h"

#include "kernels/ops/traits.h"

namespace lb {
namespace {

constexpr std::string_view kName = "pool2d";

constexpr Key<Pool2d> kKeys[] = {{"mb", &Pool2d::mb},
                                 {"ic", &Pool2d::ic},
                                 {"ih", &Pool2d::ih},
                                 {"iw", &Pool2d::iw},
                                 {"k", &Pool2d::k},
                                 {.key = "s", .member = &Pool2d::s, .required = false},
                                 {.key = "p", .member = &Pool2d::p, .min = 0, .required = false}};

std::string_view alg_name(Pool2d::Alg a) {
  return a == Pool2d::Alg::max ? "max" : "avg";
}

// The window fits the padded input, and the padding is at most half the window (as
// PyTorch requires: a window of padding alone would have no max).
void validate(const Pool2d& q) {
  if (q.k > q.ih + 2 * q.p || q.k > q.iw + 2 * q.p)
    throw Error("pool2d: k=" + std::to_string(q.k) + ": larger than the padded input (" +
                std::to_string(q.ih + 2 * q.p) + "x" + std::to_string(q.iw + 2 * q.p) + ")");
  if (2 * q.p > q.k)
    throw Error("pool2d: p=" + std::to_string(q.p) + ": more than half the window k=" + std::to_string(q.k));
  check_size(kName, (long double)q.mb * q.ic * q.ih * q.iw);
}

}  // namespace

const OpTraits& pool2d_traits() {
  static const OpTraits traits{
      .op = Op::pool2d,
      .name = kName,
      .parse =
          [](KeyValues& kv, Problem& p) {
            Pool2d::Alg alg = Pool2d::Alg::max;
            if (auto it = kv.find("alg"); it != kv.end()) {
              if (it->second != "max" && it->second != "avg")
                throw Error("pool2d: alg=" + it->second + ": expected max or avg");
              alg = it->second == "max" ? Pool2d::Alg::max : Pool2d::Alg::avg;
              kv.erase(it);
            }
            Pool2d q = parse_keys<Pool2d>(kName, kKeys, kv);
            q.alg = alg;
            validate(q);
            p.shape = q;
          },
      .print =
          [](const Problem& p, std::string& out) {
            print_keys<Pool2d>(kKeys, p.pool(), out);
            out += " alg=";
            out += alg_name(p.pool().alg);
          },
      .inputs = {{Arg::src, 0,
                  [](const Problem& p) -> Dims {
                    const Pool2d& q = p.pool();
                    return {q.mb, q.ic, q.ih, q.iw};
                  }}},
      .output = {Arg::dst, 0,
                 [](const Problem& p) -> Dims {
                   const Pool2d& q = p.pool();
                   return {q.mb, q.ic, q.oh(), q.ow()};
                 }},
      // An average sums its window; a max rounds nothing.
      .accumulation_length =
          [](const Problem& p) { return p.pool().alg == Pool2d::Alg::avg ? p.pool().k * p.pool().k : 1; },
      .macs = [](const Problem&) { return int64_t(0); },
      .layer_type = [](const Problem& p) -> std::string_view {
        return p.pool().alg == Pool2d::Alg::max ? "maxpool" : "avgpool";
      },
      .probes = {"pool2d mb=2 ic=4 ih=8 iw=8 k=3 s=2 alg=max", "pool2d mb=2 ic=4 ih=8 iw=8 k=2 s=2 alg=avg"},
      .layer = {.ranks = {3},
                .input = "an image (c×h×w)",
                .keys = [](const Dims& in, int64_t batch) -> DerivedKeys {
                  return {{"mb", batch}, {"ic", in[0]}, {"ih", in[1]}, {"iw", in[2]}};
                },
                .out_shape = [](const Problem& p, const Dims& in) -> Dims {
                  return {in[0], p.pool().oh(), p.pool().ow()};
                }},
      .passes = {Pass::fwd},
      .no_pass = "only pooling's forward pass is written yet",
      .keeps_input = [](const Problem& p) { return p.pool().alg == Pool2d::Alg::max; },
  };
  return traits;
}

}  // namespace lb
