// Backend `onednn`: oneDNN's primitives, one registration line each (the ids live here only).
// conv2d.onednn.nchw and .blocked are opt-in (named by --kernel or --backend onednn): they
// answer "what do the reorders cost", and a default sweep is a third shorter without each.
#include "kernels/onednn/kernels.h"
#include "kernels/registry.h"

namespace lb {

void register_onednn(Registry& r) {
  using namespace onednn;
  r.add({.id = "dense.onednn.default",
         .idea = "inner product primitive, W reordered to oneDNN's layout",
         .accumulation = "f32 (i8: s32)",
         .multithreaded = true},
        [] { return make_dense(); });
  r.add({.id = "conv2d.onednn.default",
         .idea = "convolution primitive in oneDNN's chosen layouts; x, y reordered from/to NCHW in run()",
         .accumulation = "f32 (i8: s32)",
         .multithreaded = true},
        [] { return make_conv2d(Layouts::library); });
  r.add({.id = "conv2d.onednn.nchw",
         .idea = "convolution primitive on NCHW as given (no reorders)",
         .accumulation = "f32 (i8: s32)",
         .multithreaded = true,
         .opt_in = true},
        [] { return make_conv2d(Layouts::nchw); });
  r.add({.id = "conv2d.onednn.blocked",
         .idea = "convolution primitive, activations kept in oneDNN's layouts (x, y reordered untimed)",
         .accumulation = "f32 (i8: s32)",
         .multithreaded = true,
         .opt_in = true},
        [] { return make_conv2d(Layouts::blocked); });
  r.add({.id = "lstm.onednn.default",
         .idea = "LSTM primitive (one per run of equal-width layers), weights reordered in prepare()",
         .accumulation = "f32",
         .multithreaded = true},
        [] { return make_lstm(); });
}

}  // namespace lb
