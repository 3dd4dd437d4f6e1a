// conv2d.cpu.default in bf16 and int8 (conv2d.cpp hands these dtypes here): the rows of
// pixels gathered from the image (im2row), then the low-precision GEMM of gemm.h on the
// path lowp_path() picks (AMX tiles, or AVX-512's vdpbf16ps / vpdpbusd), then C
// transposed into NCHW.
//
// Per image and group:  Cᵀ (P × K_g) = col (P × C_g·R·S) · W_gᵀ + bias,
// P = OH·OW output pixels as C's rows, so that W_g (K_g × C_g·R·S, the layer's own layout
// for a group) is the B operand, packed once in prepare() by pack_lowp_b — the only operand
// the low-precision driver takes packed — and the gathered pixels are its A operand,
// row-major with the depth contiguous, which the driver packs per block as it does a dense
// layer's x. Bias (along C's columns) and a fused ReLU run in the GEMM's epilogue; int8's
// s32 sums are scaled there by x's scale × W's. Then Cᵀ (f32 for int8, bf16 for bf16) is
// transposed into y's K_g rows of P pixels. Threads: the pool shares each step (pixels of
// im2row, the GEMM's own split, output channels of the transpose).
//
// Prediction (3×3, C=K=64, 56×56, batch 1: 231 M multiply-adds): on AVX-512 VNNI (64 u8·s8
// products per vpdpbusd against 16 f32 FMAs per vfmadd) the GEMM takes about a quarter of
// the f32 layer's time, bf16 about half; im2row writes 3136 × 576 elements (1.8 MB int8,
// 3.6 MB bf16) one at a time, about a nanosecond each, so at batch 1 the gather, not the
// products, sets the time, and it is where this path would be made faster (an indirect
// tile, as f32 has). On AMX (16× / 32× the f32 rate) more so.
// int8 on AVX2 (ukernel_avx2.cpp's 4×16 vpmaddwd tile), measured on the 2-core AMD EPYC
// Zen 3 VM against conv2d.onednn.blocked, one run (results/cpu-zen3-2core/
// 2026-12-02_avx2-int8_cpu-vs-onednn): 3×3 0.25×, AlexNet conv1 0.40×, MobileNet pw6 0.35×
// at 1 and 2 threads alike. perf over a whole 1-thread run of the 3×3 (the reference check
// included, 14 % of the samples): A's packing 26 %, im2row 22 %, the tile 13 % — before A's
// pairs were packed without a division per element, which made the layer 2.1× faster. bf16 and the AVX-512 /
// AMX paths: verified through the emulated AMX tiles (kernels/tests/amx_test.cpp) and, where the host has
// them, the conformance tests; not measured.
#include <algorithm>
#include <cstdint>

#include "kernels/common.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"

namespace lb::cpu {
namespace {

// Rows [p0, p1) of one image-group's column matrix, pixels as rows (row stride ld):
// col[p·ld + (c·R + r)·S + s] = x[c][oh·SH − PH + r·DH][ow·SW − PW + s·DW] for pixel
// p = oh·OW + ow, stored zero in the padding (bf16 +0, u8 0: value 0 at any scale).
template <class T>
void im2row(const Conv2d& cv, const T* x, int64_t p0, int64_t p1, int64_t ld, T* col) {
  const int64_t OW = cv.ow(), IH = cv.ih, IW = cv.iw, C = cv.ic / cv.g;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t oh = p / OW, ow = p % OW;
    T* d = col + p * ld;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t r = 0; r < cv.kh; ++r) {
        const int64_t ih = oh * cv.sh - cv.ph + r * cv.dh;
        if (ih < 0 || ih >= IH) {
          std::fill(d, d + cv.kw, T(0));
          d += cv.kw;
          continue;
        }
        const T* row = x + (c * IH + ih) * IW;
        const int64_t iw0 = ow * cv.sw - cv.pw;
        if (cv.dw == 1 && iw0 >= 0 && iw0 + cv.kw <= IW) {  // the filter row inside the image
          for (int64_t s = 0; s < cv.kw; ++s)  // a loop, not std::copy: a few elements (3 for 3×3)
            *d++ = row[iw0 + s];
          continue;
        }
        for (int64_t s = 0; s < cv.kw; ++s) {
          const int64_t iw = ow * cv.sw - cv.pw + s * cv.dw;
          *d++ = iw >= 0 && iw < IW ? row[iw] : T(0);
        }
      }
  }
}

class LowpConv final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::bf16, DType::i8}); !why.empty()) return why;
    return elem_reason(lowp_elem(p.dt));
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    cv_ = p.conv();
    relu_ = p.relu;
    elem_ = lowp_elem(p.dt);
    path_ = lowp_path(elem_);
    pool_ = std::make_unique<Pool>(ctx.threads);
    const int64_t k_g = cv_.oc / cv_.g, depth = cv_.ic / cv_.g * cv_.kh * cv_.kw, P = cv_.oh() * cv_.ow();
    const Tensor& w = ts.at(Arg::wei);  // K×(C/G)×R×S: group g's rows are a K_g × depth matrix
    const size_t eb = elem_ == Elem::bf16 ? 2 : 1;
    packed_.clear();
    for (int64_t g = 0; g < cv_.g; ++g)
      packed_.push_back(pack_lowp_b(elem_, path_, k_g, depth,
                                    static_cast<const std::byte*>(w.data()) + size_t(g * k_g * depth) * eb,
                                    depth, 1));
    scale_ = elem_ == Elem::u8s8 ? float(ts.at(Arg::src).scale() * w.scale()) : 1.0f;
    col_ = AlignedBuffer<std::byte>(size_t(P * depth) * eb);
    sums_ = AlignedBuffer<float>(size_t(P * k_g));  // int8: Cᵀ; bf16: partial sums between K slices
    if (elem_ == Elem::bf16) out_bf16_ = AlignedBuffer<uint16_t>(size_t(P * k_g));
    ws_ = Workspace(Isa::avx512, ctx.threads, true, false);  // AMX's and AVX2's blocks fit (gemm_lowp checks)
  }

  void run(TensorSet& ts) override {
    if (elem_ == Elem::bf16)
      run_as<uint16_t>(ts);
    else
      run_as<uint8_t>(ts);
    relu_pass(relu_, ts, pool_.get());
  }

  void release() override {
    packed_.clear();
    col_ = {};
    sums_ = {};
    out_bf16_ = {};
    ws_ = {};
    pool_.reset();
  }

  std::string details() const override {
    const Tile t = lowp_tile(path_);
    return "isa=" + std::string(name(path_)) + " " + std::string(lowp_instruction(elem_, path_)) +
           " tile=" + std::to_string(t.mr) + "x" + std::to_string(t.nr) + " im2row, pixels as rows";
  }
  size_t scratch_bytes() const override {
    size_t b = ws_.bytes() + col_.bytes() + sums_.bytes() + out_bf16_.bytes();
    for (const Packed& p : packed_)
      b += p.bytes();
    return b;
  }

 private:
  // T: x's storage (bf16 as uint16_t, u8); y is bf16 (uint16_t) or f32 alike.
  template <class T>
  void run_as(TensorSet& ts) {
    const int64_t c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g, depth = c_g * cv_.kh * cv_.kw;
    const int64_t P = cv_.oh() * cv_.ow(), HW = cv_.ih * cv_.iw;
    const T* x = ts.at(Arg::src).as<T>();
    const float* bias = ts.at(Arg::bias).as<float>();
    T* col = reinterpret_cast<T*>(col_.data());
    const bool bf16 = elem_ == Elem::bf16;
    for (int64_t n = 0; n < cv_.mb; ++n)
      for (int64_t g = 0; g < cv_.g; ++g) {
        const T* xg = x + (n * cv_.ic + g * c_g) * HW;
        pool_->run([&](int tid, int threads) {
          const Range part = split(P, 1, tid, threads);
          im2row(cv_, xg, part.first, part.last, depth, col);
        });
        const Epilogue ep{nullptr, bias + g * k_g, relu_ == Relu::fused, false};
        gemm_lowp(elem_, path_, P, k_g, depth, col, depth, packed_[size_t(g)], scale_, sums_.data(), k_g,
                  bf16 ? out_bf16_.data() : nullptr, k_g, ep, ws_, pool_.get());
        const int64_t first = (n * cv_.oc + g * k_g) * P;  // y's first element of this image-group
        pool_->run([&](int tid, int threads) {
          const Range part = split(k_g, 1, tid, threads);
          if (bf16)
            pixel_rows_to_channels(out_bf16_.data(), k_g, P, part.first, part.last,
                                   ts.at(Arg::dst).as<uint16_t>() + first);
          else
            pixel_rows_to_channels(best_isa(), sums_.data(), k_g, P, part.first, part.last,
                                   ts.at(Arg::dst).as<float>() + first);
        });
      }
  }

  Conv2d cv_;
  Relu relu_ = Relu::none;
  Elem elem_ = Elem::u8s8;
  LowpPath path_ = LowpPath::avx512;
  float scale_ = 1.0f;
  std::unique_ptr<Pool> pool_;
  std::vector<Packed> packed_;
  AlignedBuffer<std::byte> col_;
  AlignedBuffer<float> sums_;
  AlignedBuffer<uint16_t> out_bf16_;
  Workspace ws_;
};

}  // namespace

std::unique_ptr<Kernel> make_lowp_conv2d() {
  return std::make_unique<LowpConv>();
}

}  // namespace lb::cpu
