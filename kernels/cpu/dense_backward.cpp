// dense.cpu.default's backward passes (bwd_d, bwd_w, bwd; train after its forward): the
// forward's GEMM driver (gemm.h) with other strides, no transposed copy of anything.
//
//   bwd_d   dx (MB×IC) = dz (MB×OC) · W (OC×IC): A = dz as given (rows of OC), B = W read
//           along its rows — packed once in prepare() into NR-column panels, as the
//           forward packs Wᵀ (the weights do not change between calls);
//   bwd_w   dW (OC×IC) = dzᵀ (OC×MB) · x (MB×IC): A = dz read down its columns (row stride
//           1, depth stride OC), B = x (depth stride IC), both packed per call by the
//           driver; db[o] = Σ_n dz[n][o], one pass over dz beside it.
// dz is diff_dst as given (relu=none), after the ReLU's backward pass (separate: into
// diff_dst from diff_relu_dst and relu_dst; inplace: over diff_dst where dst is 0), or for
// relu=fused the mask applied as A is packed (dz = dy where y > 0), so no dz is written.
// f32 only (bf16 backward: not yet). Threads: the driver's split; the ReLU and db passes
// split the elements / columns.
//
// Prediction (f32, the 2-core AMD EPYC Zen 5 VM's AVX-512 14×32 tile): each GEMM is as
// deep as the forward's (bwd_d: K = OC; bwd_w: K = MB), so at MB = 64, 4096 → 4096, bwd_d
// runs at the forward's rate (≥ 85 % of the FMA peak) and bwd_w at K = 64 pays packing both
// sides per call (x: MB×IC, dzᵀ: OC×MB, ~2/K of the work) — about 0.9× the forward.
// Measured there (1 thread, one run of `layerbench run --dir fwd,bwd_d,bwd_w`, 2026-12-07):
// forward 12.4 ms (84 %), bwd_d 12.3 ms (85 %), bwd_w 13.8 ms (76 %); oneDNN 2.6's inner
// product 12.3, 15.5 and 19.3 ms: ours 1.26× (bwd_d) and 1.40× (bwd_w) its speed, and half
// its memory in bwd_w (75 against 139 MB: oneDNN writes dW in its blocked layout, then
// reorders it into ours).
#include <algorithm>

#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"

namespace lb::cpu {
namespace {

// [begin, end) of n split evenly across n_threads, for thread tid.
std::pair<int64_t, int64_t> share(int64_t n, int tid, int n_threads) {
  return {n * tid / n_threads, n * (tid + 1) / n_threads};
}

class DenseBackward final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32}); !why.empty())
      return why + ": the backward passes are f32 only for now";
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    d_ = p.dense();
    relu_ = p.relu;
    pass_ = p.pass;
    isa_ = best_isa();
    pool_ = std::make_unique<Pool>(ctx.threads);
    if (computes_data_grads(pass_))  // B(column i, depth o) = W[o][i]
      packed_w_ = Packed(isa_, false, d_.ic, d_.oc, Strided{ts.at(Arg::wei).as<float>(), 1, d_.ic});
    ws_ = Workspace(isa_, ctx.threads, true, computes_weight_grads(pass_));
  }

  void run(TensorSet& ts) override {
    const int64_t M = d_.mb, N = d_.oc, K = d_.ic;
    const float* dz = gradient_at_output(relu_, ts, *pool_);
    // For relu=fused: dy and the forward's y, masked as A is packed. A(i, k) at i·rs + k·cs.
    const float* dy = ts.at(Arg::diff_dst).as<float>();
    const float* y = relu_ == Relu::fused ? ts.at(Arg::dst).as<float>() : nullptr;
    auto masked_packer = [dy, y](int64_t rs, int64_t cs) {
      return [dy, y, rs, cs](int64_t i0, int64_t count, int64_t k0, int64_t kc, int r, float* dst) {
        for (int64_t p = 0; p * r < count; ++p)
          for (int64_t k = 0; k < kc; ++k)
            for (int rr = 0; rr < r; ++rr) {
              const int64_t row = p * r + rr;
              float v = 0.0f;
              if (row < count) {
                const int64_t at = (i0 + row) * rs + (k0 + k) * cs;
                v = y[at] > 0.0f ? dy[at] : 0.0f;
              }
              dst[(p * kc + k) * r + rr] = v;
            }
      };
    };
    if (computes_data_grads(pass_)) {
      const auto pack = masked_packer(N, 1);
      const PackFn pack_ref(pack);
      Operand a, b;
      if (dz)
        a.strided = Strided{dz, N, 1};
      else
        a.pack = &pack_ref;
      b.packed = &packed_w_;
      gemm_f32(isa_, M, K, N, a, b, ts.at(Arg::diff_src).as<float>(), K, Epilogue{}, ws_, pool_.get());
    }
    if (computes_weight_grads(pass_)) {
      const auto pack = masked_packer(1, N);
      const PackFn pack_ref(pack);
      Operand a, b;
      if (dz)
        a.strided = Strided{dz, 1, N};
      else
        a.pack = &pack_ref;
      b.strided = Strided{ts.at(Arg::src).as<float>(), 1, K};
      gemm_f32(isa_, N, K, M, a, b, ts.at(Arg::diff_wei).as<float>(), K, Epilogue{}, ws_, pool_.get());
      float* db = ts.at(Arg::diff_bias).as<float>();
      pool_->run([&](int tid, int n_threads) {
        const auto [o0, o1] = share(N, tid, n_threads);
        std::fill(db + o0, db + o1, 0.0f);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t o = o0; o < o1; ++o) {
            const int64_t at = m * N + o;
            db[o] += dz ? dz[at] : (y[at] > 0.0f ? dy[at] : 0.0f);
          }
      });
    }
  }

  void release() override {
    packed_w_ = {};
    ws_ = {};
    pool_.reset();
  }

  std::string details() const override {
    const Tile t = f32_tile(isa_);
    return "isa=" + std::string(name(isa_)) + " tile=" + std::to_string(t.mr) + "x" + std::to_string(t.nr) +
           (relu_ == Relu::fused ? ", mask in A's packing" : "");
  }
  size_t scratch_bytes() const override { return packed_w_.bytes() + ws_.bytes(); }

 private:
  Dense d_;
  Relu relu_ = Relu::none;
  Pass pass_ = Pass::bwd;
  Isa isa_ = Isa::scalar;
  std::unique_ptr<Pool> pool_;
  Packed packed_w_;
  Workspace ws_;
};

}  // namespace

std::unique_ptr<Kernel> make_dense_backward() {
  return std::make_unique<DenseBackward>();
}

}  // namespace lb::cpu
