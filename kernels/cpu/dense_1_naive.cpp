// dense.cpu.naive — step 1 of the GEMM progression: three loops, y[i][j] = b[j] + Σ_k x[i][k]·W[j][k].
//
// Both x and W are read along k (contiguous), but the sum is one dependent chain of scalar
// FMAs: without -ffast-math the compiler may not reorder it into SIMD lanes, so each
// multiply-add waits on the previous one (latency-bound: ~1 FMA per 4 cycles,
// ≈ 2 GFLOP/s at 4 GHz, < 1 % of the AVX-512 peak). W (OC×IC) is re-read from memory for
// every row of x once it outgrows the caches. One thread.
#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"

namespace lb::cpu {
namespace {

class NaiveDense final : public Kernel {
 public:
  std::string supports(const Problem& p) const override { return require_dtypes(p, {DType::f32}); }
  void prepare(const Problem& p, TensorSet&, const Context&) override {
    d_ = p.dense();
    relu_ = p.relu;
  }
  void run(TensorSet& ts) override {
    const float* x = ts.at(Arg::src).as<float>();  // M×K
    const float* w = ts.at(Arg::wei).as<float>();  // N×K
    const float* b = ts.at(Arg::bias).as<float>();
    float* y = ts.at(Arg::dst).as<float>();  // M×N
    const int64_t M = d_.mb, N = d_.oc, K = d_.ic;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float acc = b[j];
        for (int64_t k = 0; k < K; ++k)
          acc += x[i * K + k] * w[j * K + k];
        y[i * N + j] = relu_ == Relu::fused && acc < 0.0f ? 0.0f : acc;
      }
    relu_pass(relu_, ts, nullptr);
  }

 private:
  Dense d_;
  Relu relu_ = Relu::none;
};

}  // namespace

std::unique_ptr<Kernel> make_naive_dense() {
  return std::make_unique<NaiveDense>();
}

}  // namespace lb::cpu
