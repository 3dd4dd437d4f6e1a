// add: y = x + x₁ element by element (a residual connection), everything layerbench knows
// about it (the shape: add.h). No products: no MACs (the papers' totals leave it out); its
// time is memory's, two inputs read and one output written.
#include "kernels/ops/add.h"

#include "kernels/ops/traits.h"

namespace lb {
namespace {

constexpr std::string_view kName = "add";

Dims dims(const Problem& p) {
  return activation_dims(p.add());
}

}  // namespace

const OpTraits& add_traits() {
  static const OpTraits traits{
      .op = Op::add,
      .name = kName,
      .parse =
          [](KeyValues& kv, Problem& p) {
            const Add a = parse_keys<Add>(kName, kActivationKeys<Add>, kv);
            check_size(kName, (long double)a.mb * a.ic * a.ih * a.iw);
            p.shape = a;
          },
      .print = [](const Problem& p,
                  std::string& out) { print_keys<Add>(kActivationKeys<Add>, p.add(), out); },
      .inputs = {{Arg::src, 0, dims}, {Arg::src_1, 0, dims}},
      .output = {Arg::dst, 0, dims},
      // Two terms, one rounding.
      .accumulation_length = [](const Problem&) { return int64_t(2); },
      .macs = [](const Problem&) { return int64_t(0); },
      .layer_type = [](const Problem&) { return kName; },
      .probes = {"add mb=2 ic=4 ih=3 iw=3"},
      .layer = {.ranks = {1, 2, 3},
                .input = "a vector, sequence or image",
                .keys = activation_keys,
                .out_shape = [](const Problem&, const Dims& in) { return in; },
                .layer_inputs = 2},
      .passes = {Pass::fwd},
      .no_pass = "only add's forward pass is written yet",
      .keeps_input = [](const Problem&) { return false; },  // its gradient passes to both inputs as it is
  };
  return traits;
}

}  // namespace lb
