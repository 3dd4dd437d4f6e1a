// pool2d.cudnn.default: cudnnPoolingForward on NCHW — the window's maximum
// (CUDNN_POOLING_MAX_DETERMINISTIC; taps over the padding left out) or its average with the
// padding counted as zeros (CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, PyTorch's
// count_include_pad, as the op defines it: kernels/ops/pool2d.h); a K×K window, stride S,
// padding P. cuDNN's output size (floor) is checked against ours in prepare(). relu=inplace
// and =separate are our element-wise pass (GpuKernel::relu_pass); relu=fused is declined
// (pooling has no epilogue). Forward only, as the op. Prediction: memory-bound — one read of x
// and one write of y — so at the GPU's copy bandwidth. Never run on a GPU yet: written and
// compiled without one (2026-12-07).
#include <memory>
#include <string>

#include "cuda/cudnn/common.h"
#include "cuda/cudnn/kernels.h"
#include "cuda/gpu_kernel.h"

namespace lb::cuda {
namespace {

class CudnnPool2d final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (p.relu == Relu::fused) return "relu=fused: cuDNN's pooling has no epilogue";
    if (std::string why = cudnn_dtype_reason(p); !why.empty()) return why;
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    const Pool2d& q = p.pool();
    const cudnnDataType_t type = cudnn_type(storage_of(p.dt, Arg::src));
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_));
    LB_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&pool_));
    LB_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, type, int(q.mb), int(q.ic), int(q.ih), int(q.iw)));
    LB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, type, int(q.mb), int(q.ic), int(q.oh()),
                                              int(q.ow())));
    const cudnnPoolingMode_t mode = q.alg == Pool2d::Alg::max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                                              : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    LB_CUDNN_CHECK(cudnnSetPooling2dDescriptor(pool_, mode, CUDNN_PROPAGATE_NAN, int(q.k), int(q.k), int(q.p),
                                               int(q.p), int(q.s), int(q.s)));
    int n = 0, c = 0, h = 0, w = 0;
    LB_CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(pool_, x_, &n, &c, &h, &w));
    if (n != q.mb || c != q.ic || h != q.oh() || w != q.ow())
      throw Error("cuDNN pools " + print(p) + " to " + std::to_string(h) + "x" + std::to_string(w) +
                  ", not " + std::to_string(q.oh()) + "x" + std::to_string(q.ow()));
  }

  void run(TensorSet&) override {
    const float one = 1.0f, zero = 0.0f;
    LB_CUDNN_CHECK(
        cudnnPoolingForward(cudnn_handle(), pool_, &one, x_, dev(Arg::src), &zero, y_, dev(Arg::dst)));
    relu_pass();
  }

  void release() override {
    if (x_) cudnnDestroyTensorDescriptor(x_);
    if (y_) cudnnDestroyTensorDescriptor(y_);
    if (pool_) cudnnDestroyPoolingDescriptor(pool_);
    x_ = y_ = nullptr;
    pool_ = nullptr;
    GpuKernel::release();
  }

  ~CudnnPool2d() override { release(); }

 private:
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnPoolingDescriptor_t pool_ = nullptr;
};

}  // namespace

std::unique_ptr<Kernel> make_cudnn_pool2d() {
  return std::make_unique<CudnnPool2d>();
}

}  // namespace lb::cuda
