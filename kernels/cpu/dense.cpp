// dense.cpu.{packed, avx2, default} — steps 3 to 5 of the GEMM progression and the real
// kernel: y = x·Wᵀ + b on the packed, blocked driver of gemm.h, differing only in the
// micro-kernel.
//
//   packed   portable C++ 8×16 tile (ukernel_scalar.cpp): what packing + BLIS blocking buy
//   avx2     5×16 AVX2 tile (ukernel_avx2.cpp)
//   default  the best tile this CPU runs, chosen at run time from CPUID (AVX-512 14×32,
//            else AVX2, else portable; $LB_CPU_ISA overrides), plus bf16 and int8 (u8 × s8
//            → s32, scaled to f32) where the CPU has them: on AMX tiles (tdpbf16ps, tdpbusd;
//            32×32, ukernel_amx.h) where the CPU and Linux allow them, else AVX-512
//            (vdpbf16ps, vpdpbusd; LB_CPU_ISA=avx512 keeps an AMX host there); int8
//            without VNNI on AVX2 (vpmaddwd on widened operands, 4×16, ukernel_avx2.cpp).
//
// x is M×K (M = MB), W is N×K (N = OC): C = A·B with A = x (packed per call, MC rows at a
// time) and B = Wᵀ, packed once in prepare() into NR-column panels (the weights do not
// change between calls). Bias, and ReLU for relu=fused, run in the micro-kernel's epilogue.
// Threads split N by whole panels.
//
// Prediction (f32, 1024³: 2.1 GFLOP, 12 MB of operands): compute-bound (arithmetic intensity
// ≈ 170 FLOP/B), so the micro-kernel's rate less packing x (M·K copies per thread, ~1 %)
// and edge tiles: ≥ 90 % of the FMA peak. Batch 1-16 × 4096 → 4096: 64 MB of W read once
// per call against ≤ 0.5 GFLOP: memory-bound, time ≈ 64 MB / DRAM bandwidth, the same bound
// oneDNN meets. bf16 halves W's bytes and doubles the tile's rate; int8 quarters and
// quadruples them. AMX: 16× (bf16) and 32× (int8) AVX-512's f32 peak per core for the tile
// (ukernel_amx.h), so large batches become bound by packing x and the epilogue.
#include <optional>

#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"

namespace lb::cpu {
namespace {

class PackedDense final : public Kernel {
 public:
  // forced: the ISA of a progression step; nullopt: the best this CPU runs.
  explicit PackedDense(std::optional<Isa> forced) : forced_(forced) {}

  std::string supports(const Problem& p) const override {
    if (forced_) {
      if (!isa_supported(*forced_)) return "this CPU has no " + std::string(name(*forced_));
      return require_dtypes(p, {DType::f32});
    }
    if (std::string why = require_dtypes(p, {DType::f32, DType::bf16, DType::i8}); !why.empty()) return why;
    return p.dt == DType::f32 ? std::string() : elem_reason(lowp_elem(p.dt));
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    d_ = p.dense();
    relu_ = p.relu;
    dt_ = p.dt;
    isa_ = forced_ ? *forced_ : best_isa();
    if (dt_ != DType::f32) isa_ = Isa::avx512;  // the workspace's; AMX's and AVX2's int8 blocks fit in it
    path_ = dt_ == DType::f32 ? LowpPath::avx512 : lowp_path(lowp_elem(dt_));
    pool_ = std::make_unique<Pool>(ctx.threads);
    const Tensor& w = ts.at(Arg::wei);  // N×K: element (j, k) at j·K + k
    if (dt_ == DType::f32) {
      packed_ = Packed(isa_, false, d_.oc, d_.ic, Strided{w.as<float>(), d_.ic, 1});
    } else {
      packed_ = pack_lowp_b(lowp_elem(dt_), path_, d_.oc, d_.ic, w.data(), d_.ic, 1);
      scale_ = float(ts.at(Arg::src).scale() * w.scale());
      if (dt_ == DType::bf16 && lowp_needs_partials(Elem::bf16, path_, d_.ic))
        partials_ = AlignedBuffer<float>(size_t(d_.mb * d_.oc));
    }
    ws_ = Workspace(isa_, ctx.threads, true, false);
  }

  void run(TensorSet& ts) override {
    const Epilogue ep{nullptr, ts.at(Arg::bias).as<float>(), relu_ == Relu::fused, false};
    const void* x = ts.at(Arg::src).data();
    void* y = ts.at(Arg::dst).data();
    if (dt_ == DType::f32) {
      Operand a;
      a.strided = Strided{static_cast<const float*>(x), d_.ic, 1};
      Operand b;
      b.packed = &packed_;
      gemm_f32(isa_, d_.mb, d_.oc, d_.ic, a, b, static_cast<float*>(y), d_.oc, ep, ws_, pool_.get());
    } else if (dt_ == DType::bf16) {
      gemm_lowp(Elem::bf16, path_, d_.mb, d_.oc, d_.ic, x, d_.ic, packed_, 1.0f, partials_.data(), d_.oc,
                static_cast<uint16_t*>(y), d_.oc, ep, ws_, pool_.get());
    } else {
      gemm_lowp(Elem::u8s8, path_, d_.mb, d_.oc, d_.ic, x, d_.ic, packed_, scale_, static_cast<float*>(y),
                d_.oc, nullptr, 0, ep, ws_, pool_.get());
    }
    relu_pass(relu_, ts, pool_.get());
  }

  void release() override {
    packed_ = {};
    ws_ = {};
    partials_ = {};
    pool_.reset();
  }

  std::string details() const override {
    if (dt_ == DType::f32) {
      const Tile t = f32_tile(isa_);
      return "isa=" + std::string(name(isa_)) + " tile=" + std::to_string(t.mr) + "x" + std::to_string(t.nr);
    }
    const Tile t = lowp_tile(path_);
    return "isa=" + std::string(name(path_)) + " " + std::string(lowp_instruction(lowp_elem(dt_), path_)) +
           " tile=" + std::to_string(t.mr) + "x" + std::to_string(t.nr);
  }
  size_t scratch_bytes() const override { return packed_.bytes() + ws_.bytes() + partials_.bytes(); }

 private:
  std::optional<Isa> forced_;
  Dense d_;
  Relu relu_ = Relu::none;
  DType dt_ = DType::f32;
  Isa isa_ = Isa::scalar;
  LowpPath path_ = LowpPath::avx512;  // bf16 and int8
  float scale_ = 1.0f;
  std::unique_ptr<Pool> pool_;
  Packed packed_;
  Workspace ws_;
  AlignedBuffer<float> partials_;
};

}  // namespace

std::unique_ptr<Kernel> make_packed_dense(Isa isa) {
  return std::make_unique<PackedDense>(isa);
}
std::unique_ptr<Kernel> make_dense() {
  return std::make_unique<PackedDense>(std::nullopt);
}

}  // namespace lb::cpu
