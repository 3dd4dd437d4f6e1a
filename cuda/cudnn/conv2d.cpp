// conv2d.cudnn.default and conv2d.cudnn.find — convolution on cuDNN 9, the vendor
// yardstick: standard, grouped and depthwise (cudnnSetConvolutionGroupCount), NCHW as our
// tensors are.
//
// The algorithm: .default takes cuDNN's heuristics (cudnnGetConvolutionForwardAlgorithm_v7),
// the best one whose workspace fits 256 MiB; .find (opt-in) runs cuDNN's exhaustive search
// (cudnnFindConvolutionForwardAlgorithmEx on the case's own buffers, every algorithm timed
// once) in prepare(), untimed, and takes the fastest that fits. details() records the
// algorithm, where it came from, its workspace and the math type.
//
// relu=fused runs cudnnConvolutionBiasActivationForward (conv + bias + ReLU in one call),
// tried once in prepare(): where cuDNN answers NOT_SUPPORTED (bf16 on some versions and
// shapes), the case runs the unfused path instead and details() says so. The other modes
// run cudnnConvolutionForward, then cudnnAddTensor for the bias, then
// cudnnActivationForward for a separate or in-place ReLU.
//
// dtypes and math types (cudnn_math(), as PyTorch sets them): f32 as true fp32
// (CUDNN_FMA_MATH: no tensor-core down-conversion), tf32 through CUDNN_DEFAULT_MATH, f16
// and bf16 with f32 accumulation (CUDNN_TENSOR_OP_MATH). The bias is converted to the
// output type once, in prepare(): exactly, the problem's bias values being on that type's
// grid (value_grid, kernels/tensor.h). The unfused path rounds the convolution to the
// output type before cudnnAddTensor adds the bias to it: in f16 / bf16 one rounding more
// than the fused call's, which rounds_before_bias() declares to verification.
//
// Backward passes (CudnnConv2dBackward; .default's bwd_d, bwd_w and bwd through
// split_by_pass, fwd_train being the forward; train not offered: two kernels, two device
// copies): cudnnConvolutionBackwardData for dx, cudnnConvolutionBackwardFilter for dW and
// cudnnConvolutionBackwardBias for db, each algorithm cuDNN's heuristics' first that fits
// the workspace limit. The ReLU in front is our own element-wise kernel
// (GpuKernel::relu_backward_pass); relu=fused is declined (cuDNN's backward calls apply no
// mask). dx in every dtype the forward has; dW and db in f32 and tf32 only: our db is f32,
// and whether cudnnConvolutionBackwardBias writes an f32 db from an f16 / bf16 dy is not
// known here (no GPU to ask), so those are declined until a GPU run says. Never run on a
// GPU yet: written and compiled without one (2026-12-07).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

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

// The descriptors of a problem's x, W, y and the convolution itself, in `type` and `math`:
// what the forward and the backward passes both describe.
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  void make(const Problem& p, cudnnDataType_t type, cudnnMathType_t math) {
    const Conv2d& c = p.conv();
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    LB_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    LB_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    LB_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, int(c.mb), int(c.ic), int(c.ih), int(c.iw)));
    LB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NCHW, int(c.oc), int(c.ic / c.g),
                                              int(c.kh), int(c.kw)));
    LB_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, int(c.ph), int(c.pw), int(c.sh), int(c.sw),
                                                   int(c.dh), int(c.dw), CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_FLOAT));
    LB_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, int(c.g)));
    LB_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math));
    LB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, int(c.mb), int(c.oc), int(c.oh()),
                                              int(c.ow())));
  }
  void destroy() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    x = y = nullptr;
    w = nullptr;
    conv = nullptr;
  }
};

class CudnnConv2d final : public GpuKernel {
 public:
  explicit CudnnConv2d(bool find) : find_(find) {}

  std::string supports(const Problem& p) const override {
    if (std::string why = cudnn_dtype_reason(p); !why.empty()) return why;
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    const Conv2d& c = p.conv();
    const cudnnDataType_t type = cudnn_type(storage_of(p.dt, Arg::dst));
    const cudnnMathType_t math = cudnn_math(p.dt);
    d_.make(p, type, math);
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&b_));
    LB_CUDNN_CHECK(cudnnCreateActivationDescriptor(&act_));
    LB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(b_, CUDNN_TENSOR_NCHW, type, 1, int(c.oc), 1, 1));
    LB_CUDNN_CHECK(cudnnSetActivationDescriptor(act_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    if (type != CUDNN_DATA_FLOAT) {
      bias_ = converted_copy(ts.at(Arg::bias), storage_of(p.dt, Arg::dst));
      extra_bytes_ = bias_.bytes();
    }

    const std::string chosen_by = find_ ? choose_by_search(p) : choose_by_heuristics(p);
    size_t ws = 0;
    LB_CUDNN_CHECK(
        cudnnGetConvolutionForwardWorkspaceSize(cudnn_handle(), d_.x, d_.w, d_.conv, d_.y, algo_, &ws));
    workspace_ = DeviceBuffer(ws);
    details_ = chosen_by + ": " + algo_name(algo_) + ", workspace " + std::to_string(ws) + " B, " +
               cudnn_math_name(math);

    // The fused call, tried once (its output is overwritten by every run): where cuDNN has
    // no fused kernel for this dtype and shape, the unfused path computes the same.
    fused_ = p.relu == Relu::fused;
    if (fused_) {
      const cudnnStatus_t s = fused_call();
      if (cudnn_not_supported(s)) {
        fused_ = false;
        details_ += "; fused conv+bias+ReLU not supported here (" + std::string(cudnnGetErrorString(s)) +
                    "): conv, add bias, ReLU in place instead";
      } else {
        LB_CUDNN_CHECK(s);
      }
    }
    if (rounds_before_bias())
      details_ +=
          "; y rounded to " + std::string(name(storage_of(p.dt, Arg::dst))) + " before the bias is added";
  }

  void run(TensorSet&) override {
    if (fused_) {
      LB_CUDNN_CHECK(fused_call());
      return;
    }
    const float one = 1.0f, zero = 0.0f;
    cudnnHandle_t h = cudnn_handle();
    LB_CUDNN_CHECK(cudnnConvolutionForward(h, &one, d_.x, dev(Arg::src), d_.w, dev(Arg::wei), d_.conv, algo_,
                                           workspace_.get(), workspace_.bytes(), &zero, d_.y, dev(Arg::dst)));
    LB_CUDNN_CHECK(cudnnAddTensor(h, &one, b_, bias(), &one, d_.y, dev(Arg::dst)));
    if (problem_.relu == Relu::inplace || problem_.relu == Relu::fused)  // fused: cuDNN had no fused kernel
      LB_CUDNN_CHECK(cudnnActivationForward(h, act_, &one, d_.y, dev(Arg::dst), &zero, d_.y, dev(Arg::dst)));
    if (problem_.relu == Relu::separate)
      LB_CUDNN_CHECK(
          cudnnActivationForward(h, act_, &one, d_.y, dev(Arg::dst), &zero, d_.y, dev(Arg::relu_dst)));
  }

  void release() override {
    d_.destroy();
    if (b_) cudnnDestroyTensorDescriptor(b_);
    if (act_) cudnnDestroyActivationDescriptor(act_);
    b_ = nullptr;
    act_ = nullptr;
    bias_ = DeviceBuffer();
    GpuKernel::release();
  }

  ~CudnnConv2d() override { release(); }
  std::string details() const override { return details_; }
  bool rounds_before_bias() const override {
    return !fused_ && storage_of(problem_.dt, Arg::dst) != Storage::f32;
  }

 private:
  const void* bias() const { return bias_.get() ? bias_.get() : dev(Arg::bias); }

  cudnnStatus_t fused_call() {
    const float one = 1.0f, zero = 0.0f;
    return cudnnConvolutionBiasActivationForward(
        cudnn_handle(), &one, d_.x, dev(Arg::src), d_.w, dev(Arg::wei), d_.conv, algo_, workspace_.get(),
        workspace_.bytes(), &zero, d_.y, dev(Arg::dst), b_, bias(), act_, d_.y, dev(Arg::dst));
  }

  // Whether the fused call may take an algorithm: its ReLU is documented for
  // IMPLICIT_PRECOMP_GEMM only; any algorithm serves the unfused modes.
  static bool usable(const Problem& p, cudnnConvolutionFwdAlgo_t a, cudnnStatus_t status, size_t memory) {
    return status == CUDNN_STATUS_SUCCESS && memory <= kMaxWorkspace &&
           (p.relu != Relu::fused || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  }

  std::string choose_by_heuristics(const Problem& p) {
    int returned = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    LB_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_handle(), d_.x, d_.w, d_.conv, d_.y,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
    for (int i = 0; i < returned; ++i)
      if (usable(p, perf[i].algo, perf[i].status, perf[i].memory)) {
        algo_ = perf[i].algo;
        return "cuDNN heuristics, choice " + std::to_string(i + 1) + " of " + std::to_string(returned);
      }
    if (p.relu != Relu::fused) throw Error("cudnn: no forward algorithm for " + print(p));
    algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;  // heuristics may not list it; it serves every
                                                               // shape
    return "the fused call's algorithm (not among cuDNN's heuristics)";
  }

  // cuDNN's exhaustive search on the case's own device buffers (the output is scratch
  // here), with a workspace of the limit; the fastest usable algorithm wins.
  std::string choose_by_search(const Problem& p) {
    DeviceBuffer search_space(kMaxWorkspace);
    int returned = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    LB_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        cudnn_handle(), d_.x, dev(Arg::src), d_.w, dev(Arg::wei), d_.conv, d_.y, dev(Arg::dst),
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, search_space.get(), search_space.bytes()));
    for (int i = 0; i < returned; ++i)  // sorted fastest first
      if (usable(p, perf[i].algo, perf[i].status, perf[i].memory)) {
        algo_ = perf[i].algo;
        char ms[32];
        std::snprintf(ms, sizeof ms, "%.4g", double(perf[i].time));
        return "cuDNN find (exhaustive, " + std::to_string(returned) + " algorithms timed; this one " + ms +
               " ms)";
      }
    if (p.relu != Relu::fused)
      throw Error("cudnn: cuDNN's search found no usable forward algorithm for " + print(p));
    algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    return "the fused call's algorithm (cuDNN's search returned no usable one)";
  }

  bool find_;
  bool fused_ = false;
  ConvDescriptors d_;
  cudnnTensorDescriptor_t b_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  DeviceBuffer bias_;
  std::string details_;
};

class CudnnConv2dBackward final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = cudnn_dtype_reason(p); !why.empty()) return why;
    if (p.relu == Relu::fused)
      return "relu=fused in dir=" + std::string(name(p.pass)) +
             ": cuDNN's backward calls apply no ReLU mask (relu=inplace or separate: our element-wise "
             "kernel)";
    if (computes_weight_grads(p.pass) && p.dt != DType::f32 && p.dt != DType::tf32)
      return "dt=" + std::string(name(p.dt)) + " in dir=" + std::string(name(p.pass)) +
             ": our db is f32, and an f32 db from cudnnConvolutionBackwardBias on a narrower dy is untried "
             "(dx alone: dir=bwd_d)";
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    const Conv2d& c = p.conv();
    const cudnnDataType_t type = cudnn_type(storage_of(p.dt, Arg::diff_dst));
    const cudnnMathType_t math = cudnn_math(p.dt);
    d_.make(p, type, math);
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&b_));
    LB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(b_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, int(c.oc), 1, 1));
    cudnnHandle_t h = cudnn_handle();
    size_t ws = 0;
    data_ = computes_data_grads(p.pass);
    weights_ = computes_weight_grads(p.pass);
    details_.clear();
    if (data_) {
      int returned = 0;
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      LB_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          h, d_.w, d_.y, d_.conv, d_.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
      const int i = first_usable(perf, returned);
      if (i < 0) throw Error("cudnn: no backward-data algorithm for " + print(p));
      data_algo_ = perf[i].algo;
      size_t bytes = 0;
      LB_CUDNN_CHECK(
          cudnnGetConvolutionBackwardDataWorkspaceSize(h, d_.w, d_.y, d_.conv, d_.x, data_algo_, &bytes));
      ws = std::max(ws, bytes);
      details_ += "backward data: heuristics' choice " + std::to_string(i + 1) + " of " +
                  std::to_string(returned) + " (algo " + std::to_string(int(data_algo_)) + ")";
    }
    if (weights_) {
      int returned = 0;
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      LB_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          h, d_.x, d_.y, d_.conv, d_.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf));
      const int i = first_usable(perf, returned);
      if (i < 0) throw Error("cudnn: no backward-filter algorithm for " + print(p));
      filter_algo_ = perf[i].algo;
      size_t bytes = 0;
      LB_CUDNN_CHECK(
          cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d_.x, d_.y, d_.conv, d_.w, filter_algo_, &bytes));
      ws = std::max(ws, bytes);
      details_ += std::string(details_.empty() ? "" : "; ") + "backward filter: heuristics' choice " +
                  std::to_string(i + 1) + " of " + std::to_string(returned) + " (algo " +
                  std::to_string(int(filter_algo_)) + "); backward bias";
    }
    workspace_ = DeviceBuffer(ws);  // the calls run one after the other
    details_ += ", workspace " + std::to_string(ws) + " B, " + cudnn_math_name(math);
  }

  void run(TensorSet&) override {
    relu_backward_pass();
    const float one = 1.0f, zero = 0.0f;
    cudnnHandle_t h = cudnn_handle();
    if (data_)
      LB_CUDNN_CHECK(cudnnConvolutionBackwardData(h, &one, d_.w, dev(Arg::wei), d_.y, dev(Arg::diff_dst),
                                                  d_.conv, data_algo_, workspace_.get(), workspace_.bytes(),
                                                  &zero, d_.x, dev(Arg::diff_src)));
    if (weights_) {
      LB_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, &one, d_.x, dev(Arg::src), d_.y, dev(Arg::diff_dst),
                                                    d_.conv, filter_algo_, workspace_.get(),
                                                    workspace_.bytes(), &zero, d_.w, dev(Arg::diff_wei)));
      LB_CUDNN_CHECK(
          cudnnConvolutionBackwardBias(h, &one, d_.y, dev(Arg::diff_dst), &zero, b_, dev(Arg::diff_bias)));
    }
  }

  void release() override {
    d_.destroy();
    if (b_) cudnnDestroyTensorDescriptor(b_);
    b_ = nullptr;
    GpuKernel::release();
  }

  ~CudnnConv2dBackward() override { release(); }
  std::string details() const override { return details_; }

 private:
  // The first of cuDNN's ranked answers that succeeded and fits the workspace limit; -1: none.
  template <class Perf>
  static int first_usable(const Perf* perf, int n) {
    for (int i = 0; i < n; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspace) return i;
    return -1;
  }

  bool data_ = false, weights_ = false;
  ConvDescriptors d_;
  cudnnTensorDescriptor_t b_ = nullptr;
  cudnnConvolutionBwdDataAlgo_t data_algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t filter_algo_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  std::string details_;
};

}  // namespace

std::unique_ptr<Kernel> make_cudnn_conv2d(bool find) {
  // .find searches the forward's algorithm only; its backward passes take the heuristics' choice.
  return split_by_pass(std::make_unique<CudnnConv2d>(find), std::make_unique<CudnnConv2dBackward>());
}

}  // namespace lb::cuda
