// Backend `cudnn`: NVIDIA's convolution and RNN library, one registration line per kernel
// (the ids live here only).
#include "cuda/cudnn/kernels.h"
#include "kernels/registry.h"

namespace lb {

void register_cudnn(Registry& r) {
  using namespace cuda;
  r.add({.id = "conv2d.cudnn.default",
         .device = Device::gpu,
         .idea = "cuDNN heuristics' algorithm; fused conv+bias+ReLU when asked; backward data, filter, bias",
         .accumulation = "f32 (tf32/f16/bf16 tensor cores)",
         .passes = {Pass::fwd, Pass::fwd_train, Pass::bwd_d, Pass::bwd_w, Pass::bwd}},
        [] { return make_cudnn_conv2d(false); });
  r.add({.id = "conv2d.cudnn.find",
         .device = Device::gpu,
         .idea =
             "cuDNN's exhaustive algorithm search (cudnnFind*) in prepare(), untimed; the fastest that fits",
         .accumulation = "f32 (tf32/f16/bf16 tensor cores)",
         .opt_in = true},
        [] { return make_cudnn_conv2d(true); });
  r.add({.id = "lstm.cudnn.default",
         .device = Device::gpu,
         .idea = "cuDNN RNN forward (inference), our weights copied into its weight space; training: "
                 "reserve space, BackwardData_v8 and BackwardWeights_v8",
         .accumulation = "f32 (tf32/f16/bf16 tensor cores)",
         .passes = {Pass::fwd, Pass::fwd_train, Pass::bwd, Pass::train}},
        [] { return make_cudnn_lstm(); });
  r.add({.id = "pool2d.cudnn.default",
         .device = Device::gpu,
         .idea =
             "cudnnPoolingForward, NCHW: max, or average counting the padding (PyTorch's count_include_pad)",
         .accumulation = "f32"},
        [] { return make_cudnn_pool2d(); });
  r.add({.id = "softmax.cudnn.default",
         .device = Device::gpu,
         .idea = "cudnnSoftmaxForward, NCHW: accurate (max subtracted), over the channels",
         .accumulation = "f32"},
        [] { return make_cudnn_softmax(); });
}

}  // namespace lb
