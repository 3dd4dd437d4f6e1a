// dense.cpu.blocked — step 2: loop order and cache blocking.
//
// What changed: prepare() stores Wᵀ (K×N), so the innermost loop runs along N:
// y[i][j0:j1] += x[i][k] · Wᵀ[k][j0:j1], an axpy the compiler vectorises (no reduction to
// reorder). Blocks of JB columns × KB rows of Wᵀ (256 × 256 × 4 B = 256 KB) stay in L2 while
// every row of x passes over them, and the JB-wide slice of y stays in L1.
// Prediction: each vector FMA now needs a load and a store of y besides the load of Wᵀ:
// bound by loads/stores at ~1 vector FMA per cycle, about a quarter of the FMA peak at
// best (≈ 60 GFLOP/s), some 30× step 1. One thread.
#include <algorithm>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"

namespace lb::cpu {
namespace {

constexpr int64_t JB = 256;  // columns of y per block (1 KB of y: L1)
constexpr int64_t KB = 256;  // rows of Wᵀ per block (JB × KB × 4 B = 256 KB: L2)

class BlockedDense final : public Kernel {
 public:
  std::string supports(const Problem& p) const override { return require_dtypes(p, {DType::f32}); }
  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    d_ = p.dense();
    relu_ = p.relu;
    const int64_t N = d_.oc, K = d_.ic;
    wt_ = AlignedBuffer<float>(size_t(K * N));
    const float* w = ts.at(Arg::wei).as<float>();  // N×K
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        wt_.data()[k * N + j] = w[j * K + k];
  }
  void run(TensorSet& ts) override {
    const float* x = ts.at(Arg::src).as<float>();  // M×K
    const float* b = ts.at(Arg::bias).as<float>();
    float* y = ts.at(Arg::dst).as<float>();  // M×N
    const float* wt = wt_.data();            // K×N
    const int64_t M = d_.mb, N = d_.oc, K = d_.ic;
    for (int64_t j0 = 0; j0 < N; j0 += JB) {
      const int64_t j1 = std::min(N, j0 + JB);
      for (int64_t i = 0; i < M; ++i)
        std::copy(b + j0, b + j1, y + i * N + j0);
      for (int64_t k0 = 0; k0 < K; k0 += KB) {
        const int64_t k1 = std::min(K, k0 + KB);
        for (int64_t i = 0; i < M; ++i) {
          float* yi = y + i * N;
          for (int64_t k = k0; k < k1; ++k) {
            const float xv = x[i * K + k];
            const float* wk = wt + k * N;
            for (int64_t j = j0; j < j1; ++j)
              yi[j] += xv * wk[j];
          }
        }
      }
      if (relu_ == Relu::fused)
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = j0; j < j1; ++j)
            y[i * N + j] = std::max(y[i * N + j], 0.0f);
    }
    relu_pass(relu_, ts, nullptr);
  }
  void release() override { wt_ = {}; }
  size_t scratch_bytes() const override { return wt_.bytes(); }

 private:
  Dense d_;
  Relu relu_ = Relu::none;
  AlignedBuffer<float> wt_;
};

}  // namespace

std::unique_ptr<Kernel> make_blocked_dense() {
  return std::make_unique<BlockedDense>();
}

}  // namespace lb::cpu
