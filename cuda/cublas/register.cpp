// Backend `cublas`: NVIDIA's GEMM library, the yardstick for our own dense kernels; one
// registration line (the id lives here only).
#include "cuda/cublas/kernels.h"
#include "kernels/registry.h"

namespace lb {

void register_cublas(Registry& r) {
  using namespace cuda;
  r.add({.id = "dense.cublas.lt",
         .device = Device::gpu,
         .idea = "cuBLASLt matmul, TN layout, bias (+ReLU) in the epilogue; backward NN (dx) and NT with a "
                 "BGRADB epilogue (dW, db)",
         .accumulation = "f32 (tf32/f16/bf16/fp8 inputs)",
         .passes = {Pass::fwd, Pass::fwd_train, Pass::bwd_d, Pass::bwd_w, Pass::bwd}},
        [] { return make_cublas_dense(); });
}

}  // namespace lb
