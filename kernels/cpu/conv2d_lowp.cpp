// conv2d.cpu.default in bf16 and int8 (conv2d.cpp hands these dtypes here): the column
// matrix built from the image (im2col), then the low-precision GEMM of gemm.h on the path
// lowp_path() picks (AMX tiles, AVX-512's vdpbf16ps / vpdpbusd, or AVX2's int8 tile), then
// C transposed into NCHW.
//
// Per image and group:  Cᵀ (P × K_g) = colᵀ (P × C_g·R·S) · W_gᵀ + bias,
// P = OH·OW output pixels as C's rows, so that W_g (K_g × C_g·R·S, the layer's own layout
// for a group) is the B operand, packed once in prepare() by pack_lowp_b — the only operand
// the low-precision driver takes packed, and the s8 side of u8 × s8 — and the pixels are its
// A operand (u8 for int8). col is C_g·R·S rows of P pixels (each output row's part of a row
// one copy of an input row's run at stride 1), which the driver reads as A transposed
// (rs = 1, cs = P) and packs per block, a group of depth rows side by side at a time
// (gemm.cpp, interleave_panels); a pointwise layer's col is the image itself. Bias (along
// C's columns) and a fused ReLU run in the GEMM's epilogue; int8's s32 sums are scaled there
// by x's scale × W's. Then Cᵀ (f32 for int8, bf16 for bf16) is transposed into y's K_g rows
// of P pixels. Threads: the pool shares each step (depth rows of im2col, the GEMM's own
// split, output channels of the transpose).
//
// Prediction (3×3, C=K=64, 56×56, batch 1: 231 M multiply-adds): on AVX-512 VNNI (64 u8·s8
// products per vpdpbusd against 16 f32 FMAs per vfmadd) the products take about a quarter
// of the f32 layer's time, bf16 about half; col is 576 rows of 3136 pixels (1.8 MB int8,
// 3.6 MB bf16), written once by im2col and read once by the packing, which at L2/L3 rates
// (tens of GB/s) is 0.1-0.2 ms: as long as the products themselves at int8. An indirect tile
// (the f32 path's: pixels read from the image through an offsets table) would remove both.
// Measured on the 2-core AMD EPYC Zen 5 VM, one run each, conv2d.onednn.blocked's time ÷
// ours at 1 / 2 threads: int8 0.41× / 0.28×, bf16 0.51× / 0.53× (before, gathering the pixel
// rows element by element: int8 0.09×, bf16 0.14× at 1 thread); perf over a 1-thread int8
// run: the tile 42 %, A's packing 26 %, im2col 21 %, the transpose 3 %.
// int8 on AVX2 (ukernel_avx2.cpp's 4×16 vpmaddwd tile), measured on the 2-core AMD EPYC
// Zen 3 VM against conv2d.onednn.blocked with the pixel rows gathered, one run
// (results/cpu-zen3-2core/2026-12-02_avx2-int8_cpu-vs-onednn): 3×3 0.25×, AlexNet conv1
// 0.40×, MobileNet pw6 0.35× at 1 and 2 threads alike; not measured since. AMX: verified
// through the emulated AMX tiles (kernels/tests/amx_test.cpp); not measured.
#include <algorithm>
#include <cstdint>

#include "kernels/common.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"

namespace lb::cpu {
namespace {

// Depth rows [k0, k1) of one image-group's column matrix, pixels along rows (row stride P):
// col[k·P + p] = x[c][oh·SH − PH + r·DH][ow·SW − PW + s·DW] for k = (c·R + r)·S + s and pixel
// p = oh·OW + ow, stored zero in the padding (bf16 +0, u8 0: value 0 at any scale). At
// stride 1 each output row's part is one copy of an input row's run.
template <class T>
void im2col(const Conv2d& cv, const T* x, int64_t k0, int64_t k1, T* col) {
  const int64_t OH = cv.oh(), OW = cv.ow(), P = OH * OW, IH = cv.ih, IW = cv.iw;
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t c = k / (cv.kh * cv.kw), r = k / cv.kw % cv.kh, s = k % cv.kw;
    const int64_t iw0 = s * cv.dw - cv.pw;  // input column of output column 0
    // Output columns [lo, hi) read inside the image (the same for every row): the first
    // with ow·SW + iw0 ≥ 0, the first with ow·SW + iw0 ≥ IW.
    const int64_t lo = std::min(iw0 >= 0 ? 0 : ceil_div(-iw0, cv.sw), OW),
                  hi = std::clamp<int64_t>(iw0 >= IW ? 0 : ceil_div(IW - iw0, cv.sw), lo, OW);
    for (int64_t oh = 0; oh < OH; ++oh) {
      T* d = col + k * P + oh * OW;
      const int64_t ih = oh * cv.sh - cv.ph + r * cv.dh;
      if (ih < 0 || ih >= IH) {
        std::fill(d, d + OW, T(0));
        continue;
      }
      const T* row = x + (c * IH + ih) * IW;
      std::fill(d, d + lo, T(0));
      if (cv.sw == 1)
        std::copy(row + lo + iw0, row + hi + iw0, d + lo);
      else
        for (int64_t ow = lo; ow < hi; ++ow)
          d[ow] = row[ow * cv.sw + iw0];
      std::fill(d + hi, d + OW, T(0));
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
    pointwise_ = cv_.kh == 1 && cv_.kw == 1 && cv_.sh == 1 && cv_.sw == 1 && cv_.ph == 0 && cv_.pw == 0;
    col_ = pointwise_ ? AlignedBuffer<std::byte>() : AlignedBuffer<std::byte>(size_t(P * depth) * eb);
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
           " tile=" + std::to_string(t.mr) + "x" + std::to_string(t.nr) + " im2col, pixels as rows";
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
        LowpStrided a{xg, 1, HW};  // a pointwise layer's column matrix is the image itself
        if (!pointwise_) {
          pool_->run([&](int tid, int threads) {
            const Range part = split(depth, 1, tid, threads);
            im2col(cv_, xg, part.first, part.last, col);
          });
          a = {col, 1, P};
        }
        const Epilogue ep{nullptr, bias + g * k_g, relu_ == Relu::fused, false};
        gemm_lowp(elem_, path_, P, k_g, depth, a, packed_[size_t(g)], scale_, sums_.data(), k_g,
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
  bool pointwise_ = false;  // 1×1, stride 1, unpadded: the image is its own column matrix
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
