// softmax.cudnn.default: cudnnSoftmaxForward on NCHW, CUDNN_SOFTMAX_ACCURATE (the max
// subtracted first) and CUDNN_SOFTMAX_MODE_CHANNEL (over C at each of the H×W positions,
// as the op defines it: kernels/ops/softmax.h). relu=inplace and =separate are our
// element-wise pass (GpuKernel::relu_pass); relu=fused is declined (no epilogue). Forward
// only, as the op. Prediction: memory-bound. Never run on a GPU yet: written and compiled
// without one (2026-12-08).
#include <memory>
#include <string>

#include "cuda/cudnn/common.h"
#include "cuda/cudnn/kernels.h"
#include "cuda/gpu_kernel.h"

namespace lb::cuda {
namespace {

class CudnnSoftmax final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (p.relu == Relu::fused) return "relu=fused: cuDNN's softmax has no epilogue";
    if (std::string why = cudnn_dtype_reason(p); !why.empty()) return why;
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    const Softmax& s = p.softmax();
    const cudnnDataType_t type = cudnn_type(storage_of(p.dt, Arg::src));
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
    LB_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, type, int(s.mb), int(s.ic), int(s.ih), int(s.iw)));
  }

  void run(TensorSet&) override {
    const float one = 1.0f, zero = 0.0f;
    LB_CUDNN_CHECK(cudnnSoftmaxForward(cudnn_handle(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
                                       &one, x_, dev(Arg::src), &zero, x_, dev(Arg::dst)));
    relu_pass();
  }

  void release() override {
    if (x_) cudnnDestroyTensorDescriptor(x_);
    x_ = nullptr;
    GpuKernel::release();
  }

  ~CudnnSoftmax() override { release(); }

 private:
  cudnnTensorDescriptor_t x_ = nullptr;  // x and y alike
};

}  // namespace

std::unique_ptr<Kernel> make_cudnn_softmax() {
  return std::make_unique<CudnnSoftmax>();
}

}  // namespace lb::cuda
