// The dense kernels of backend `cuda`: y = x·Wᵀ + b with x M×K, W N×K, y M×N row-major
// (M = mb, N = oc, K = ic): exactly the Gemm of launch.h with A = x, B = W. Each SGEMM
// step (sgemm_0*.cu) and the tensor-core step (hgemm_08_mma.cu) runs behind the same
// class: relu=fused goes into the kernel's epilogue; relu=inplace and =separate are the
// element-wise pass after the product, as the modes are defined (problem.h).
#include "cuda/gpu_kernel.h"
#include "cuda/own/host.h"

namespace lb::cuda::own {

std::string too_big_for_int(std::initializer_list<int64_t> element_counts) {
  for (int64_t n : element_counts)
    if (n >= (int64_t(1) << 31)) return "a tensor of 2^31 or more elements: these kernels index with int";
  return {};
}

namespace {

// Column tiles go on grid.y (at most 65535); the smallest column tile is 32.
constexpr int64_t kMaxColumns = int64_t(65535) * 32;

std::string dense_limits(const Dense& d) {
  if (std::string why = too_big_for_int({d.mb * d.ic, d.oc * d.ic, d.mb * d.oc}); !why.empty()) return why;
  if (d.oc > kMaxColumns) return "oc > 65535·32: more column tiles than grid.y allows";
  return {};
}

class OwnDense : public GpuKernel {
 public:
  void run(TensorSet&) override {
    const Dense& d = problem_.dense();
    Gemm g;
    g.a = dev(Arg::src);
    g.b = dev(Arg::wei);
    g.bias = static_cast<const float*>(dev(Arg::bias));
    g.c = dev(Arg::dst);
    g.m = int(d.mb), g.n = int(d.oc), g.k = int(d.ic);
    g.relu = problem_.relu == Relu::fused;
    launch(g);
    relu_pass();
  }

 protected:
  virtual void launch(const Gemm& g) = 0;
};

class SgemmDense final : public OwnDense {
 public:
  explicit SgemmDense(GemmLauncher launch) : launch_(launch) {}

  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32}); !why.empty())
      return why + ": f16/bf16 are dense.cuda.08_mma's";
    if (std::string why = dense_limits(p.dense()); !why.empty()) return why;
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
  }

 private:
  void launch(const Gemm& g) override { launch_(g); }
  GemmLauncher launch_;
};

class MmaDense final : public OwnDense {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f16, DType::bf16}); !why.empty())
      return why + ": mma.sync m16n8k16 takes 16-bit inputs";
    if (p.dense().ic % kMmaKMultiple != 0)
      return "ic % 8 != 0: rows must be whole 16-byte chunks for cp.async";
    if (std::string why = dense_limits(p.dense()); !why.empty()) return why;
    return gpu_unusable(80);  // mma.sync with bf16 needs sm_80 or newer
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    hgemm_08_setup();
  }

 private:
  void launch(const Gemm& g) override { hgemm_08_mma(g, problem_.dt == DType::bf16); }
};

}  // namespace

std::unique_ptr<Kernel> make_sgemm_dense(GemmLauncher launch) {
  return std::make_unique<SgemmDense>(launch);
}
std::unique_ptr<Kernel> make_mma_dense() {
  return std::make_unique<MmaDense>();
}

}  // namespace lb::cuda::own
