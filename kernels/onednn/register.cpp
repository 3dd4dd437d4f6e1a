// Backend `onednn`: oneDNN's primitives, one registration line each (the ids live here only).
// conv2d.onednn.nchw and .blocked are opt-in (named by --kernel or --backend onednn): they
// answer "what do the reorders cost", and a default sweep is a third shorter without each.
#include <oneapi/dnnl/dnnl.h>

#include <iterator>
#include <string>
#include <vector>

#include "kernels/onednn/kernels.h"
#include "kernels/registry.h"

namespace lb {

namespace {

std::string isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "isa " + std::to_string(int(isa));
  }
}

}  // namespace

void register_onednn(Registry& r) {
  using namespace onednn;
  const dnnl_version_t* v = dnnl_version();
  r.add_context("layerbench_onednn_version", std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                                                 std::to_string(v->patch) + " (" + (v->hash ? v->hash : "") +
                                                 ")");
  // The highest ISA oneDNN may dispatch to here; each case's lb_details names the implementation.
  r.add_context("layerbench_onednn_isa", isa_name(dnnl_get_effective_cpu_isa()));
  const std::vector<Pass> every(std::begin(kAllPasses), std::end(kAllPasses));
  r.add({.id = "dense.onednn.default",
         .idea = "inner product primitive, W reordered to oneDNN's layout",
         .accumulation = "f32 (i8: s32)",
         .multithreaded = true,
         .passes = every,
         .relu6 = true},
        [] { return make_dense(); });
  r.add({.id = "conv2d.onednn.default",
         .idea = "convolution primitive in oneDNN's chosen layouts; x, y reordered from/to NCHW in run()",
         .accumulation = "f32 (i8: s32)",
         .multithreaded = true,
         .passes = every,
         .relu6 = true},
        [] { return make_conv2d(Layouts::library); });
  r.add({.id = "conv2d.onednn.nchw",
         .idea = "convolution primitive on NCHW as given (no reorders)",
         .accumulation = "f32 (i8: s32)",
         .multithreaded = true,
         .opt_in = true,
         .passes = every,
         .relu6 = true},
        [] { return make_conv2d(Layouts::nchw); });
  r.add({.id = "conv2d.onednn.blocked",
         .idea = "convolution primitive, activations kept in oneDNN's layouts (x, y reordered untimed)",
         .accumulation = "f32 (i8: s32)",
         .multithreaded = true,
         .opt_in = true,
         .relu6 = true},
        [] { return make_conv2d(Layouts::blocked); });
  r.add({.id = "lstm.onednn.default",
         .idea = "LSTM primitive (one per run of equal-width layers), weights reordered in prepare()",
         .accumulation = "f32",
         .multithreaded = true,
         .passes = {Pass::fwd, Pass::fwd_train, Pass::bwd, Pass::train}},
        [] { return make_lstm(); });
  r.add({.id = "pool2d.onednn.default",
         .idea = "pooling primitive on NCHW as given (no reorders)",
         .accumulation = "f32",
         .multithreaded = true,
         .relu6 = true},
        [] { return make_pool2d(); });
  r.add({.id = "add.onednn.default",
         .idea = "binary_add primitive on NCHW as given, the ReLU a post-op",
         .accumulation = "f32",
         .multithreaded = true,
         .relu6 = true},
        [] { return make_add(); });
  r.add({.id = "softmax.onednn.default",
         .idea = "softmax_v2 primitive (accurate) over axis 1, NCHW as given",
         .accumulation = "f32",
         .multithreaded = true},
        [] { return make_softmax(); });
}

}  // namespace lb
