// Backend `cuda`: our own CUDA kernels, one registration line each (the ids live here
// only). The dense steps 01..08 are the SGEMM progression in reading order; each
// file's header says what changed from the step before and the gain it predicts.
#include "cuda/own/host.h"
#include "kernels/registry.h"

namespace lb {

void register_cuda(Registry& r) {
  using namespace cuda::own;
  const auto gpu = Device::gpu;
  // Steps 01..06 lead up to 07 (KernelInfo::opt_in: swept only when asked for by backend or id).
  auto sgemm = [&r, gpu](std::string id, std::string idea, GemmLauncher launch, bool opt_in = true) {
    KernelInfo info{std::move(id), gpu, std::move(idea), "f32"};
    info.opt_in = opt_in;
    r.add(std::move(info), [launch] { return make_sgemm_dense(launch); });
  };
  sgemm("dense.cuda.01_naive", "one thread per output, each walks K alone", sgemm_01_naive);
  sgemm("dense.cuda.02_coalesced", "one warp per output, lanes read consecutive k, shuffle reduction",
        sgemm_02_coalesced);
  sgemm("dense.cuda.03_smem", "32x32 tiles of x and W staged in shared memory", sgemm_03_smem);
  sgemm("dense.cuda.04_reg1d", "64x64 block tile, 8 outputs per thread along M (1-D register blocking)",
        sgemm_04_reg1d);
  sgemm("dense.cuda.05_reg2d", "128x128 block tile, 8x8 outputs per thread (2-D register blocking)", sgemm_05_reg2d);
  sgemm("dense.cuda.06_vec", "05 with float4 global loads, shared reads and stores", sgemm_06_vec);
  sgemm("dense.cuda.07_warptile", "warp tiles of 32x64 + double-buffered shared memory, one barrier per K-tile",
        sgemm_07_warptile, false);
  r.add({"dense.cuda.08_mma", gpu,
         "tensor cores: mma.sync.m16n8k16 (bf16/f16), ldmatrix, XOR-swizzled shared memory, 3-stage cp.async",
         "f32 (f16/bf16 inputs)"},
        [] { return make_mma_dense(); });
  r.add({"conv2d.cuda.implicit_gemm", gpu,
         "implicit GEMM (pixels x channels, taps gathered from NCHW via a tap table), any groups, 1x1 included", "f32"},
        [] { return make_implicit_gemm_conv2d(); });
  r.add({"conv2d.cuda.depthwise", gpu, "direct depthwise: tile + halo and filter in shared memory, NCHW", "f32"},
        [] { return make_depthwise_conv2d(); });
  r.add({"lstm.cuda.default", gpu,
         "input GEMM for all steps, per-step recurrent GEMM, one fused pointwise cell kernel", "f32"},
        [] { return make_lstm(); });
}

}  // namespace lb
