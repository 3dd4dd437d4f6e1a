// Backend `cpu`: our own CPU kernels, one registration line each (the ids live here only).
// The dense steps 1..5 are the GEMM progression in reading order (dense_1_naive.cpp,
// dense_2_blocked.cpp, dense.cpp); steps 1..4 lead up to 5 and are opt-in (swept only when
// asked for by backend or id).
#include <iterator>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/registry.h"

namespace lb {

void register_cpu(Registry& r) {
  using namespace cpu;
  const std::vector<Pass> every(std::begin(kAllPasses), std::end(kAllPasses));
  // A bad $LB_CPU_ISA (an unknown name, an ISA this CPU lacks) stops the command here,
  // before any kernel is listed or run; a good one is recorded with what it covers.
  forced_isa();
  r.add_context("layerbench_cpu_isa_forced", isa_context());
  forced_amx_blocking();  // the same for $LB_AMX_BLOCKING
  r.add_context("layerbench_amx_blocking", amx_blocking_context());
  r.add_context("layerbench_cpu_microkernel_isa", std::string(name(best_isa())));
  // What bf16 and int8 multiply with here (AMX tiles, AVX-512 dot products), or why neither.
  std::string lowp;
  for (Elem e : {Elem::bf16, Elem::u8s8}) {
    const std::string why = elem_reason(e);
    lowp += std::string(lowp.empty() ? "" : "; ") + (e == Elem::bf16 ? "bf16: " : "int8: ") +
            (why.empty() ? std::string(lowp_instruction(e, lowp_path(e))) : why);
  }
  r.add_context("layerbench_cpu_lowp_microkernel", lowp);
  r.add({.id = "dense.cpu.naive",
         .idea = "GEMM step 1: three loops, one scalar dot product per output",
         .accumulation = "f32",
         .opt_in = true},
        [] { return make_naive_dense(); });
  r.add({.id = "dense.cpu.blocked",
         .idea = "GEMM step 2: W transposed once, axpy inner loop along N, L1/L2 blocks",
         .accumulation = "f32",
         .opt_in = true},
        [] { return make_blocked_dense(); });
  r.add({.id = "dense.cpu.packed",
         .idea = "GEMM step 3: BLIS blocking + packed panels, portable C++ 8x16 micro-kernel",
         .accumulation = "f32",
         .multithreaded = true,
         .opt_in = true},
        [] { return make_packed_dense(Isa::scalar); });
  r.add({.id = "dense.cpu.avx2",
         .idea = "GEMM step 4: packed panels, AVX2 5x16 micro-kernel",
         .accumulation = "f32",
         .multithreaded = true,
         .opt_in = true},
        [] { return make_packed_dense(Isa::avx2); });
  r.add({.id = "dense.cpu.default",
         .idea = "GEMM step 5: packed panels, best micro-kernel by CPUID (AVX-512 14x32); bf16 vdpbf16ps, "
                 "int8 vpdpbusd (AVX2: vpmaddwd)",
         .accumulation = "f32 (bf16), s32 (int8)",
         .multithreaded = true,
         .passes = every},
        [] { return split_by_pass(make_dense(), make_dense_backward()); });
  r.add({.id = "conv2d.cpu.default",
         .idea = "implicit GEMM: indirect from a padded image (unit stride, AVX-512) or im2col into packed "
                 "panels; 1x1 as plain GEMM; bf16 and int8 indirect on channel quads / pairs (AVX-512) or "
                 "im2col + the low-precision GEMM",
         .accumulation = "f32 (bf16), s32 (int8)",
         .multithreaded = true,
         .passes = every},
        [] { return split_by_pass(make_conv2d(), make_conv2d_backward()); });
  r.add({.id = "conv2d.cpu.depthwise",
         .idea = "direct NCHW kernel, vectorised along the output width with masked loads for padding",
         .accumulation = "f32",
         .multithreaded = true},
        [] { return make_depthwise_conv2d(); });
  r.add({.id = "conv2d.cpu.depthwise_blocked",
         .idea = "depthwise 3x3 on nChw16c (AVX-512) or nChw8c (AVX2) activations (x reordered in prepare, "
                 "y in finish, untimed): the channels as the lanes, 9 FMAs per output vector",
         .accumulation = "f32",
         .multithreaded = true,
         .opt_in = true},
        [] { return make_depthwise_blocked_conv2d(); });
  r.add({.id = "lstm.cpu.default",
         .idea = "hoisted input GEMM; per step a per-thread recurrent GEMM on gate-interleaved "
                 "columns + fused cell",
         .accumulation = "f32",
         .multithreaded = true,
         .passes = {Pass::fwd, Pass::fwd_train, Pass::bwd, Pass::train}},
        [] { return make_lstm(); });
  r.add({.id = "pool2d.cpu.default",
         .idea = "separable: each input row reduced across once into a ring of K rows, output rows down "
                 "them (vectorised)",
         .accumulation = "f32",
         .multithreaded = true,
         .relu6 = true},
        [] { return make_pool2d(); });
  r.add({.id = "add.cpu.default",
         .idea = "one pass, the ReLU fused in it",
         .accumulation = "f32",
         .multithreaded = true,
         .relu6 = true},
        [] { return make_add(); });
  r.add({.id = "softmax.cpu.default",
         .idea =
             "max, vectorised exp and sum, scale: along a row, or down the channels on a vector of positions",
         .accumulation = "f32",
         .multithreaded = true},
        [] { return make_softmax(); });
}

}  // namespace lb
