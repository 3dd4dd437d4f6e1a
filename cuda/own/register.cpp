// Backend `cuda`: our own CUDA kernels, one registration line each (the ids live here
// only). The dense steps 01..08 are the SGEMM progression in reading order; each file's
// header says what changed from the step before and the gain it predicts.
#include "cuda/own/host.h"
#include "kernels/registry.h"

namespace lb {

void register_cuda(Registry& r) {
  using namespace cuda::own;
  // Steps 01..06 lead up to 07, all behind the same class: a table of data, one row a step.
  // Opt-in (KernelInfo::opt_in): swept only when asked for by backend or id.
  struct Step {
    const char* id;
    const char* idea;
    GemmLauncher launch;
  };
  for (const Step& s : {
           Step{"dense.cuda.01_naive", "one thread per output, each walks K alone", sgemm_01_naive},
           Step{"dense.cuda.02_coalesced", "one warp per output, lanes read consecutive k, shuffle reduction",
                sgemm_02_coalesced},
           Step{"dense.cuda.03_smem", "32x32 tiles of x and W staged in shared memory", sgemm_03_smem},
           Step{"dense.cuda.04_reg1d",
                "64x64 block tile, 8 outputs per thread along M (1-D register blocking)", sgemm_04_reg1d},
           Step{"dense.cuda.05_reg2d", "128x128 block tile, 8x8 outputs per thread (2-D register blocking)",
                sgemm_05_reg2d},
           Step{"dense.cuda.06_vec", "05 with float4 global loads, shared reads and stores", sgemm_06_vec},
       })
    r.add({.id = s.id, .device = Device::gpu, .idea = s.idea, .accumulation = "f32", .opt_in = true},
          [launch = s.launch] { return make_sgemm_dense(launch); });
  r.add({.id = "dense.cuda.07_warptile",
         .device = Device::gpu,
         .idea = "warp tiles of 32x64 + double-buffered shared memory, one barrier per K-tile",
         .accumulation = "f32"},
        [] { return make_sgemm_dense(sgemm_07_warptile); });
  r.add({.id = "dense.cuda.08_mma",
         .device = Device::gpu,
         .idea = "tensor cores: mma.sync.m16n8k16 (bf16/f16), ldmatrix, XOR-swizzled shared memory, 3-stage "
                 "cp.async",
         .accumulation = "f32 (f16/bf16 inputs)"},
        [] { return make_mma_dense(); });
  r.add(
      {.id = "conv2d.cuda.implicit_gemm",
       .device = Device::gpu,
       .idea = "implicit GEMM (pixels x channels, taps gathered from NCHW via a tap table), any groups, 1x1 "
               "included",
       .accumulation = "f32"},
      [] { return make_implicit_gemm_conv2d(); });
  r.add({.id = "conv2d.cuda.depthwise",
         .device = Device::gpu,
         .idea = "direct depthwise: tile + halo and filter in shared memory, NCHW",
         .accumulation = "f32"},
        [] { return make_depthwise_conv2d(); });
  r.add({.id = "lstm.cuda.default",
         .device = Device::gpu,
         .idea = "input GEMM for all steps, per-step recurrent GEMM, one fused pointwise cell kernel",
         .accumulation = "f32"},
        [] { return make_lstm(); });
  r.add({.id = "pool2d.cuda.default",
         .device = Device::gpu,
         .idea = "one thread per output, its window from the plane, the ReLU fused in the store",
         .accumulation = "f32"},
        [] { return make_pool2d(); });
  r.add({.id = "add.cuda.default",
         .device = Device::gpu,
         .idea = "one thread per element, grid-stride, the ReLU fused in the store",
         .accumulation = "f32"},
        [] { return make_add(); });
  r.add(
      {.id = "softmax.cuda.default",
       .device = Device::gpu,
       .idea = "a block per row (max and sum reduced across it), or a thread per position down the channels",
       .accumulation = "f32"},
      [] { return make_softmax(); });
}

}  // namespace lb
