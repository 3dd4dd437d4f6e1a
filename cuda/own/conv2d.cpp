// The conv2d kernels of backend `cuda`, f32, NCHW (problem.h): the implicit GEMM for every
// group count (pointwise 1×1 included) and the direct depthwise kernel for G = C = K.
// relu=fused goes into the kernels' epilogue; relu=inplace and =separate are the
// element-wise pass after the convolution.
#include <vector>

#include "cuda/check.h"
#include "cuda/gpu_kernel.h"
#include "cuda/own/host.h"

namespace lb::cuda::own {
namespace {

std::string conv_limits(const Conv2d& c) {
  const int64_t oh = c.oh(), ow = c.ow();
  if (std::string why = too_big_for_int(
          {c.mb * c.ic * c.ih * c.iw, c.oc * (c.ic / c.g) * c.kh * c.kw, c.mb * c.oc * oh * ow});
      !why.empty())
    return why;
  // Window rows p·SH − PH + r·DH stay within ±(IH + 2·PH) (problem.cpp bounds the
  // dilated filter by the padded input), so this keeps them in int.
  if (c.ih + 2 * c.ph >= (int64_t(1) << 30) || c.iw + 2 * c.pw >= (int64_t(1) << 30))
    return "ih + 2·ph or iw + 2·pw >= 2^30: window coordinates would overflow int";
  return {};
}

class OwnConv2d : public GpuKernel {
 public:
  void run(TensorSet&) override {
    launch(args());
    relu_pass();
  }

 protected:
  virtual void launch(const Conv& c) = 0;

  static Conv args_of(const Problem& p) {
    const Conv2d& s = p.conv();
    Conv c;
    c.n = int(s.mb), c.c = int(s.ic), c.h = int(s.ih), c.w_ = int(s.iw), c.k = int(s.oc);
    c.r = int(s.kh), c.s = int(s.kw), c.p = int(s.oh()), c.q = int(s.ow());
    c.sh = int(s.sh), c.sw = int(s.sw), c.ph = int(s.ph), c.pw = int(s.pw), c.dh = int(s.dh),
    c.dw = int(s.dw);
    c.g = int(s.g);
    c.relu = p.relu == Relu::fused;
    return c;
  }

  Conv args() const {
    Conv c = args_of(problem_);
    c.x = static_cast<const float*>(dev(Arg::src));
    c.w = static_cast<const float*>(dev(Arg::wei));
    c.bias = static_cast<const float*>(dev(Arg::bias));
    c.y = static_cast<float*>(dev(Arg::dst));
    return c;
  }
};

class ImplicitGemmConv2d final : public OwnConv2d {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32}); !why.empty()) return why;
    const Conv2d& c = p.conv();
    if (std::string why = conv_limits(c); !why.empty()) return why;
    if (c.g > 65535) return "g > 65535: groups go on grid.z";
    if (c.oc / c.g > int64_t(65535) * 64) return "oc/g > 65535·64: more channel tiles than grid.y allows";
    if ((c.ic / c.g) * c.kh * c.kw > kMaxTapsPerGroup) return "(ic/g)·kh·kw > 2^24 taps per output";
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    // The tap table: entry t = (c·R + r)·S + s, W's row order within a group.
    const Conv2d& c = p.conv();
    std::vector<Tap> taps;
    for (int64_t ch = 0; ch < c.ic / c.g; ++ch)
      for (int64_t r = 0; r < c.kh; ++r)
        for (int64_t s = 0; s < c.kw; ++s)
          taps.push_back({int(ch * c.ih * c.iw), int(r * c.dh), int(s * c.dw)});
    table_ = DeviceBuffer(taps.size() * sizeof(Tap));
    LB_CUDA_CHECK(cudaMemcpy(table_.get(), taps.data(), table_.bytes(), cudaMemcpyHostToDevice));
    extra_bytes_ = table_.bytes();
  }

  void release() override {
    table_ = DeviceBuffer();
    GpuKernel::release();
  }

 private:
  void launch(const Conv& c) override { conv2d_implicit_gemm(c, table_.as<const Tap>()); }
  DeviceBuffer table_;
};

class DepthwiseConv2d final : public OwnConv2d {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32}); !why.empty()) return why;
    const Conv2d& c = p.conv();
    if (!c.depthwise())
      return "not depthwise: needs g = ic = oc > 1 (conv2d.cuda.implicit_gemm takes the rest)";
    if (std::string why = conv_limits(c); !why.empty()) return why;
    const Conv a = args_of(p);
    if (conv2d_depthwise_smem_bytes(a) > kDepthwiseMaxSmem)
      return "the input window of one output tile needs more than 48 KiB of shared memory (stride or "
             "dilation too large)";
    if (conv2d_depthwise_tiles_h(a) > kDepthwiseMaxTilesPerAxis ||
        conv2d_depthwise_tiles_w(a) > kDepthwiseMaxTilesPerAxis)
      return "more output tiles along an axis than grid.y/z allow";
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
  }

 private:
  void launch(const Conv& c) override { conv2d_depthwise(c); }
};

}  // namespace

std::unique_ptr<Kernel> make_implicit_gemm_conv2d() {
  return std::make_unique<ImplicitGemmConv2d>();
}
std::unique_ptr<Kernel> make_depthwise_conv2d() {
  return std::make_unique<DepthwiseConv2d>();
}

}  // namespace lb::cuda::own
