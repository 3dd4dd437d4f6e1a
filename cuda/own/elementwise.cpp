// add.cuda.default, softmax.cuda.default and pool2d.cuda.default, host side: the Kernel
// classes of the ops without products (the device code and its prediction: elementwise.cu,
// pool2d.cu). f32, f16, bf16;
// relu=fused in the kernels' store, inplace/separate the ReLU pass after. Never run on a
// GPU yet: written and compiled without one (2026-12-08).
#include "cuda/gpu_kernel.h"
#include "cuda/own/host.h"

namespace lb::cuda::own {
namespace {

Floats floats_of(DType dt) {
  return dt == DType::bf16 ? Floats::bf16 : dt == DType::f16 ? Floats::f16 : Floats::f32;
}

class OwnAdd final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32, DType::f16, DType::bf16}); !why.empty()) return why;
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
  }

  void run(TensorSet&) override {
    add({.a = dev(Arg::src),
         .b = dev(Arg::src_1),
         .y = dev(Arg::dst),
         .n = problem_.add().elements(),
         .type = floats_of(problem_.dt),
         .relu = problem_.relu == Relu::fused});
    relu_pass();
  }
};

class OwnSoftmax final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32, DType::f16, DType::bf16}); !why.empty()) return why;
    const Softmax& s = p.softmax();
    if (std::string why = too_big_for_int({s.elements()}); !why.empty()) return why;
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
  }

  void run(TensorSet&) override {
    const Softmax& s = problem_.softmax();
    softmax({.x = dev(Arg::src),
             .y = dev(Arg::dst),
             .samples = int(s.mb),
             .channels = int(s.ic),
             .positions = int(s.ih * s.iw),
             .type = floats_of(problem_.dt),
             .relu = problem_.relu == Relu::fused});
    relu_pass();
  }
};

class OwnPool2d final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32, DType::f16, DType::bf16}); !why.empty()) return why;
    const Pool2d& q = p.pool();
    if (std::string why = too_big_for_int({q.mb * q.ic * q.ih * q.iw}); !why.empty()) return why;
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
  }

  void run(TensorSet&) override {
    const Pool2d& q = problem_.pool();
    pool2d({.x = dev(Arg::src),
            .y = dev(Arg::dst),
            .planes = int(q.mb * q.ic),
            .ih = int(q.ih),
            .iw = int(q.iw),
            .oh = int(q.oh()),
            .ow = int(q.ow()),
            .k = int(q.k),
            .s = int(q.s),
            .p = int(q.p),
            .avg = q.alg == Pool2d::Alg::avg,
            .type = floats_of(problem_.dt),
            .relu = problem_.relu == Relu::fused});
    relu_pass();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_pool2d() {
  return std::make_unique<OwnPool2d>();
}

std::unique_ptr<Kernel> make_add() {
  return std::make_unique<OwnAdd>();
}

std::unique_ptr<Kernel> make_softmax() {
  return std::make_unique<OwnSoftmax>();
}

}  // namespace lb::cuda::own
