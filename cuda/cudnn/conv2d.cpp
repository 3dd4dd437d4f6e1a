// conv2d.cudnn.default — convolution on cuDNN 9, the vendor yardstick: standard,
// grouped and depthwise (cudnnSetConvolutionGroupCount), NCHW as our tensors are.
//
// prepare() asks cuDNN's heuristics (cudnnGetConvolutionForwardAlgorithm_v7) for the
// best algorithm whose workspace fits 256 MiB and records it with its workspace
// (details()). relu=fused runs cudnnConvolutionBiasActivationForward (conv + bias +
// ReLU in one call); the other modes run cudnnConvolutionForward, then cudnnAddTensor
// for the bias, then cudnnActivationForward for a separate or in-place ReLU.
//
// dtypes: f32 as true fp32 (CUDNN_FMA_MATH: no tensor-core down-conversion), tf32
// (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION), f16 and bf16 with f32 accumulation
// (CUDNN_TENSOR_OP_MATH). The bias is converted to the output type once, in prepare().
#include <memory>

#include "cuda/cudnn/common.h"
#include "cuda/cudnn/kernels.h"
#include "cuda/gpu_kernel.h"

namespace lb::cuda {
namespace {

constexpr size_t kMaxWorkspace = size_t(256) << 20;

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "?";
  }
}

class CudnnConv2d final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = cudnn_dtype_reason(p); !why.empty()) return why;
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    const Conv2d& c = p.conv();
    const cudnnDataType_t type = cudnn_type(storage_of(p.dt, Arg::dst));
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_));
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&b_));
    LB_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w_));
    LB_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_));
    LB_CUDNN_CHECK(cudnnCreateActivationDescriptor(&act_));
    LB_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, type, int(c.mb), int(c.ic), int(c.ih), int(c.iw)));
    LB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_, type, CUDNN_TENSOR_NCHW, int(c.oc), int(c.ic / c.g),
                                              int(c.kh), int(c.kw)));
    LB_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_, int(c.ph), int(c.pw), int(c.sh), int(c.sw),
                                                   int(c.dh), int(c.dw), CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_FLOAT));
    LB_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_, int(c.g)));
    const cudnnMathType_t math = p.dt == DType::f32    ? CUDNN_FMA_MATH
                                 : p.dt == DType::tf32 ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
                                                       : CUDNN_TENSOR_OP_MATH;
    LB_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, math));
    LB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, type, int(c.mb), int(c.oc), int(c.oh()),
                                              int(c.ow())));
    LB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(b_, CUDNN_TENSOR_NCHW, type, 1, int(c.oc), 1, 1));
    LB_CUDNN_CHECK(cudnnSetActivationDescriptor(act_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));

    int returned = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    LB_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_handle(), x_, w_, conv_, y_,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
    bool chosen = false;
    for (int i = 0; i < returned && !chosen; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kMaxWorkspace) continue;
      // The fused call's ReLU is documented for IMPLICIT_PRECOMP_GEMM; other algorithms
      // are taken only for the unfused modes.
      if (p.relu == Relu::fused && perf[i].algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) continue;
      algo_ = perf[i].algo;
      chosen = true;
    }
    if (!chosen && p.relu == Relu::fused) {  // heuristics may not list it; it serves every shape
      algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      chosen = true;
    }
    if (!chosen) throw Error("cudnn: no forward algorithm for " + print(p));
    size_t ws = 0;
    LB_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(cudnn_handle(), x_, w_, conv_, y_, algo_, &ws));
    workspace_ = DeviceBuffer(ws);
    if (type != CUDNN_DATA_FLOAT) {
      bias_ = converted_copy(ts.at(Arg::bias), storage_of(p.dt, Arg::dst));
      extra_bytes_ = bias_.bytes();
    }
    details_ =
        std::string("cuDNN heuristics: ") + algo_name(algo_) + ", workspace " + std::to_string(ws) + " B";
  }

  void run(TensorSet&) override {
    const float one = 1.0f, zero = 0.0f;
    const void* bias = bias_.get() ? bias_.get() : dev(Arg::bias);
    cudnnHandle_t h = cudnn_handle();
    if (problem_.relu == Relu::fused) {
      LB_CUDNN_CHECK(cudnnConvolutionBiasActivationForward(
          h, &one, x_, dev(Arg::src), w_, dev(Arg::wei), conv_, algo_, workspace_.get(), workspace_.bytes(),
          &zero, y_, dev(Arg::dst), b_, bias, act_, y_, dev(Arg::dst)));
      return;
    }
    LB_CUDNN_CHECK(cudnnConvolutionForward(h, &one, x_, dev(Arg::src), w_, dev(Arg::wei), conv_, algo_,
                                           workspace_.get(), workspace_.bytes(), &zero, y_, dev(Arg::dst)));
    LB_CUDNN_CHECK(cudnnAddTensor(h, &one, b_, bias, &one, y_, dev(Arg::dst)));
    if (problem_.relu == Relu::inplace)
      LB_CUDNN_CHECK(cudnnActivationForward(h, act_, &one, y_, dev(Arg::dst), &zero, y_, dev(Arg::dst)));
    if (problem_.relu == Relu::separate)
      LB_CUDNN_CHECK(cudnnActivationForward(h, act_, &one, y_, dev(Arg::dst), &zero, y_, dev(Arg::relu_dst)));
  }

  void release() override {
    if (x_) cudnnDestroyTensorDescriptor(x_);
    if (y_) cudnnDestroyTensorDescriptor(y_);
    if (b_) cudnnDestroyTensorDescriptor(b_);
    if (w_) cudnnDestroyFilterDescriptor(w_);
    if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
    if (act_) cudnnDestroyActivationDescriptor(act_);
    x_ = y_ = b_ = nullptr;
    w_ = nullptr;
    conv_ = nullptr;
    act_ = nullptr;
    bias_ = DeviceBuffer();
    GpuKernel::release();
  }

  ~CudnnConv2d() override { release(); }
  std::string details() const override { return details_; }

 private:
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, b_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  DeviceBuffer bias_;
  std::string details_;
};

}  // namespace

std::unique_ptr<Kernel> make_cudnn_conv2d() {
  return std::make_unique<CudnnConv2d>();
}

}  // namespace lb::cuda
