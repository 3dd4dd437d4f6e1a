// Backend `ref`: the oracles every other kernel is verified against, one registration line
// each (the ids live here only).
#include <iterator>
#include <vector>

#include "kernels/ref/kernels.h"
#include "kernels/registry.h"

namespace lb {

void register_ref(Registry& r) {
  using namespace ref;
  const std::vector<Pass> kEveryPass(std::begin(kAllPasses), std::end(kAllPasses));
  r.add({.id = "dense.ref.naive",
         .idea = "three plain loops, one dot product per output",
         .accumulation = "f64",
         .passes = kEveryPass,
         .relu6 = true},
        [] { return make_dense(); });
  r.add({.id = "conv2d.ref.naive",
         .idea = "direct seven-loop convolution, NCHW",
         .accumulation = "f64",
         .passes = kEveryPass,
         .relu6 = true},
        [] { return make_conv2d(); });
  r.add({.id = "lstm.ref.naive",
         .idea = "per step and sample: gate dot products, then the cell",
         .accumulation = "f64",
         .passes = {Pass::fwd, Pass::fwd_train, Pass::bwd, Pass::train}},
        [] { return make_lstm(); });
  r.add({.id = "pool2d.ref.naive",
         .idea = "the window's taps per output, in double",
         .accumulation = "f64",
         .passes = {Pass::fwd},
         .relu6 = true},
        [] { return make_pool2d(); });
  r.add({.id = "add.ref.naive",
         .idea = "x + x1 per element, in double",
         .accumulation = "f64",
         .passes = {Pass::fwd},
         .relu6 = true},
        [] { return make_add(); });
  r.add({.id = "softmax.ref.naive",
         .idea = "per position: the channels' max, the sum of exponentials, each divided, in double",
         .accumulation = "f64",
         .passes = {Pass::fwd},
         .relu6 = true},
        [] { return make_softmax(); });
}

}  // namespace lb
