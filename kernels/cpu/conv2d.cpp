// conv2d.cpu.default — convolution as implicit GEMM on the cpu backend's GEMM (gemm.h),
// NCHW, any stride, padding, dilation and groups (depthwise has its own direct kernel,
// conv2d.cpu.depthwise: a GEMM with one row per group would waste the micro-kernel).
//
// Per image and group:  C (K_g × P) = W_g (K_g × C_g·R·S) · col (C_g·R·S × P) + bias,
// K_g output channels, P = OH·OW output pixels, C_g input channels, R×S filter.
// Why implicit GEMM rather than im2col + GEMM: the column matrix would be R·S times the
// input (9× for 3×3; 3136 × 576 × 4 B = 7 MB per 56×56×64 image) written and read back
// through memory; here the driver asks for one KC × NC block of it at a time and it is
// built straight into the packed B panels (pack_columns), from the input that is in cache.
// C rows are output channels and columns are pixels, so the tile is stored straight into
// NCHW rows; W, packed once in prepare(), is the A side; bias runs along C's rows.
// 1×1 stride-1 unpadded (pointwise) convolutions skip the im2col logic: col is the input
// itself, C_g × P with pixels contiguous, handed to the driver as a strided matrix.
// On AVX-512 there is no packing of col at all (indirect GEMM): the image is copied once
// into a zero-padded buffer (split into SW phase images for width stride SW), pixels are
// tiled 32 at a time within an output row, and row k = (c, r, s) of a tile's B is 32
// consecutive floats of that buffer at a fixed offset from the tile's first pixel (an
// offsets table made in prepare()), which the micro-kernel loads directly
// (ukr_f32_indirect_avx512). Packing col measured 31 % of the time on the 3×3 56×56 layer
// and most of it on AlexNet's stride-4 conv1; the padded copy costs one pass over the input.
//
// Threads: indirect path, each image's pixel tiles split across the pool; packed path, the
// pixels of one image (batch < threads) or whole images per thread.
// Prediction (3×3, C=K=64, 56×56, batch 1: 231 MFLOP): compute-bound; the 64-row M is four
// 14-row tiles and one 8-row tile, and 32-pixel tiles within a 56-pixel row use 56 of every
// 64 lanes: ≈ 85 % of the micro-kernel's rate, ≥ 75 % of peak. (Predicted for the packed
// path first: building col, 1.8 M copies against 64 FMAs each, "a few %" — measured 31 %,
// hence the indirect path.) AlexNet conv1 (11×11 stride 4, C = 3, 55-pixel rows): the same
// lane loss, K = 363 in one slice; measured 70 % of peak once its phase images were made
// without a division per element (before: 48 %).
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ukernel.h"

namespace lb::cpu {
namespace {

// Packs columns [j0, j0+count) (output pixels) × rows [k0, k0+kc) (c, r, s) of one image's
// col matrix into NR-pixel panels: panel element (k, i) = x[c][oh·SH − PH + r·DH][ow·SW − PW + s·DW]
// for pixel j0 + q·NR + i = oh·OW + ow, zero where that falls in the padding or past count.
void pack_columns(const Conv2d& cv, const float* x, int64_t j0, int64_t count, int64_t k0, int64_t kc, int nr,
                  float* dst) {
  const int64_t OW = cv.ow(), IH = cv.ih, IW = cv.iw, RS = cv.kh * cv.kw;
  const int64_t panels = ceil_div(count, nr);
  for (int64_t q = 0; q < panels; ++q) {
    float* d = dst + q * kc * nr;
    const int64_t first = j0 + q * nr, n = std::min<int64_t>(nr, count - q * nr);
    // The panel's pixels as runs within one output row: (row, first column, length, offset).
    struct Run {
      int64_t oh, ow, len, at;
    };
    Run runs[64];
    int nruns = 0;
    for (int64_t at = 0; at < n;) {
      const int64_t j = first + at, oh = j / OW, ow = j % OW, len = std::min(n - at, OW - ow);
      runs[nruns++] = {oh, ow, len, at};
      at += len;
    }
    int64_t c = k0 / RS, r = (k0 % RS) / cv.kw, s = k0 % cv.kw;
    for (int64_t k = 0; k < kc; ++k, d += nr) {
      const float* plane = x + c * IH * IW;
      if (n < nr) std::fill(d + n, d + nr, 0.0f);
      for (int u = 0; u < nruns; ++u) {
        const Run& run = runs[u];
        float* o = d + run.at;
        const int64_t ih = run.oh * cv.sh - cv.ph + r * cv.dh;
        if (ih < 0 || ih >= IH) {
          std::fill(o, o + run.len, 0.0f);
          continue;
        }
        const float* row = plane + ih * IW;
        const int64_t iw0 = run.ow * cv.sw - cv.pw + s * cv.dw;  // input column of the run's first pixel
        if (cv.sw == 1) {
          // In-bounds part [lo, hi) of the run copied, the rest zero.
          const int64_t lo = std::clamp<int64_t>(-iw0, 0, run.len),
                        hi = std::clamp<int64_t>(IW - iw0, lo, run.len);
          for (int64_t i = 0; i < lo; ++i)
            o[i] = 0.0f;
          for (int64_t i = lo; i < hi; ++i)
            o[i] = row[iw0 + i];
          for (int64_t i = hi; i < run.len; ++i)
            o[i] = 0.0f;
        } else {
          for (int64_t i = 0; i < run.len; ++i) {
            const int64_t iw = iw0 + i * cv.sw;
            o[i] = iw >= 0 && iw < IW ? row[iw] : 0.0f;
          }
        }
      }
      if (++s == cv.kw) {
        s = 0;
        if (++r == cv.kh) {
          r = 0;
          ++c;
        }
      }
    }
  }
}

class ImplicitGemmConv final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32}); !why.empty()) return why;
    if (p.conv().depthwise()) return "depthwise convolutions are conv2d.cpu.depthwise's";
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    cv_ = p.conv();
    relu_ = p.relu;
    isa_ = best_isa();
    threads_ = ctx.threads;
    pool_ = std::make_unique<Pool>(ctx.threads);
    const int64_t kg = cv_.oc / cv_.g, depth = cv_.ic / cv_.g * cv_.kh * cv_.kw;
    const float* w = ts.at(Arg::wei).as<float>();  // K×(C/G)×R×S: group g's rows are a K_g × depth matrix
    packed_.clear();
    for (int64_t g = 0; g < cv_.g; ++g)
      packed_.emplace_back(isa_, true, kg, depth, Strided{w + g * kg * depth, depth, 1});
    pointwise_ = cv_.kh == 1 && cv_.kw == 1 && cv_.sh == 1 && cv_.sw == 1 && cv_.ph == 0 && cv_.pw == 0;
    indirect_ = !pointwise_ && isa_ == Isa::avx512;
    if (indirect_) {
      // The padded image split into SW phase images along W (phase p holds padded columns
      // p, p + SW, p + 2·SW, …), so that output pixels ow, ow+1, … read consecutive floats
      // of one phase image whatever the stride: padded column ow·SW + s·DW is column
      // ow + (s·DW) / SW of phase (s·DW) % SW.
      pad_h_ = cv_.ih + 2 * cv_.ph;
      phase_w_ = ceil_div(cv_.iw + 2 * cv_.pw, cv_.sw);
      // Borders stay zero; 32 more floats because the micro-kernel reads a whole tile width
      // past the last offset of a narrower tile.
      padded_ = AlignedBuffer<float>(size_t(cv_.sw * cv_.ic * pad_h_ * phase_w_ + kTileWidth));
      const int64_t phase = cv_.ic * pad_h_ * phase_w_;
      offsets_.clear();
      for (int64_t c = 0; c < cv_.ic / cv_.g; ++c)
        for (int64_t r = 0; r < cv_.kh; ++r)
          for (int64_t s = 0; s < cv_.kw; ++s)
            offsets_.push_back((s * cv_.dw) % cv_.sw * phase + (c * pad_h_ + r * cv_.dh) * phase_w_ +
                               (s * cv_.dw) / cv_.sw);
      tiles_.clear();
      for (int64_t oh = 0; oh < cv_.oh(); ++oh)
        for (int64_t ow = 0; ow < cv_.ow(); ow += kTileWidth)
          tiles_.push_back({oh, ow, std::min<int64_t>(kTileWidth, cv_.ow() - ow)});
    } else {
      ws_ = Workspace(isa_, ctx.threads, false, true, depth);
    }
  }

  void run(TensorSet& ts) override {
    const float* x = ts.at(Arg::src).as<float>();
    const float* bias = ts.at(Arg::bias).as<float>();
    float* y = ts.at(Arg::dst).as<float>();
    if (indirect_) {
      for (int64_t n = 0; n < cv_.mb; ++n)
        indirect_image(x + n * cv_.ic * cv_.ih * cv_.iw, bias, y + n * cv_.oc * cv_.oh() * cv_.ow());
      relu_pass(relu_, ts, pool_.get());
      return;
    }
    const int64_t P = cv_.oh() * cv_.ow(), HW = cv_.ih * cv_.iw;
    const int64_t c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g, depth = c_g * cv_.kh * cv_.kw;
    // One image-group product; `tid` < 0: split its pixels across the pool.
    auto product = [&](int64_t n, int64_t g, int tid) {
      const float* xg = x + (n * cv_.ic + g * c_g) * HW;
      Operand a;
      a.packed = &packed_[size_t(g)];
      auto columns = [&, xg](int64_t j0, int64_t count, int64_t k0, int64_t kc, int nr, float* dst) {
        pack_columns(cv_, xg, j0, count, k0, kc, nr, dst);
      };
      const PackFn pack = columns;  // refers to `columns`, which outlives the product below
      Operand b;
      if (pointwise_)
        b.strided = Strided{xg, 1, HW};  // (pixel j, channel c) at j + c·HW
      else
        b.pack = &pack;
      const Epilogue ep{bias + g * k_g, nullptr, relu_ == Relu::fused, false};
      float* c = y + (n * cv_.oc + g * k_g) * P;
      if (tid < 0)
        gemm_f32(isa_, k_g, P, depth, a, b, c, P, ep, ws_, pool_.get());
      else
        gemm_f32_serial(isa_, k_g, P, depth, a, b, c, P, ep, ws_, tid);
    };
    if (cv_.mb < threads_) {
      for (int64_t n = 0; n < cv_.mb; ++n)
        for (int64_t g = 0; g < cv_.g; ++g)
          product(n, g, -1);
    } else {
      pool_->run([&](int tid, int threads) {
        const Range part = split(cv_.mb * cv_.g, 1, tid, threads);
        for (int64_t i = part.first; i < part.last; ++i)
          product(i / cv_.g, i % cv_.g, tid);
      });
    }
    relu_pass(relu_, ts, pool_.get());
  }

  void release() override {
    packed_.clear();
    ws_ = {};
    padded_ = {};
    offsets_.clear();
    tiles_.clear();
    pool_.reset();
  }
  std::string details() const override {
    const Tile t = f32_tile(isa_);
    return "isa=" + std::string(name(isa_)) + " tile=" + std::to_string(t.mr) + "x" + std::to_string(t.nr) +
           (pointwise_  ? " pointwise"
            : indirect_ ? " indirect"
                        : " implicit-im2col");
  }
  size_t scratch_bytes() const override {
    size_t b = ws_.bytes() + padded_.bytes() + offsets_.size() * sizeof(int64_t);
    for (const Packed& p : packed_)
      b += p.bytes();
    return b;
  }

 private:
  static constexpr int64_t kTileWidth = 32;  // pixels per tile: the AVX-512 tile's NR
  struct PixelTile {
    int64_t oh, ow, n;
  };

  // One image by indirect GEMM: pad it (threads split channels), then threads split the
  // pixel tiles; each tile runs every group's row panels over the whole depth in KC slices.
  void indirect_image(const float* x, const float* bias, float* y) {
    const int64_t IH = cv_.ih, IW = cv_.iw, P = cv_.oh() * cv_.ow();
    float* pad = padded_.data();
    const int64_t SW = cv_.sw, phase = cv_.ic * pad_h_ * phase_w_;
    pool_->run([&](int tid, int threads) {
      const Range part = split(cv_.ic, 1, tid, threads);
      for (int64_t c = part.first; c < part.last; ++c)
        for (int64_t h = 0; h < IH; ++h) {
          const float* row = x + (c * IH + h) * IW;
          float* dst = pad + (c * pad_h_ + h + cv_.ph) * phase_w_;
          if (SW == 1) {
            std::copy(row, row + IW, dst + cv_.pw);
            continue;
          }
          // Phase p holds padded columns p, p + SW, …: input columns p − PW + j·SW.
          for (int64_t p = 0; p < SW; ++p) {
            float* d = dst + p * phase;
            for (int64_t j = 0, w = p - cv_.pw; j < phase_w_; ++j, w += SW)
              if (w >= 0 && w < IW) d[j] = row[w];
          }
        }
    });
    const int64_t c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g, depth = int64_t(offsets_.size());
    const Tile t = f32_tile(isa_);
    constexpr int64_t kKc = 1024;  // as the packed GEMM's KC: C is revisited once per 1024 of depth
    pool_->run([&](int tid, int threads) {
      const Range part = split(int64_t(tiles_.size()), 1, tid, threads);
      IndirectArgs u;
      u.ldc = P;
      u.relu = relu_ == Relu::fused;
      for (int64_t i = part.first; i < part.last; ++i) {
        const PixelTile& pt = tiles_[size_t(i)];
        u.n = int(pt.n);
        for (int64_t g = 0; g < cv_.g; ++g) {
          const float* xg = pad + (g * c_g * pad_h_ + pt.oh * cv_.sh) * phase_w_ + pt.ow;
          for (int64_t m0 = 0; m0 < k_g; m0 += t.mr) {
            u.m = int(std::min<int64_t>(t.mr, k_g - m0));
            u.c = y + (g * k_g + m0) * P + pt.oh * cv_.ow() + pt.ow;
            u.bias_row = bias + g * k_g + m0;
            for (int64_t pc = 0; pc < depth; pc += kKc) {
              u.kc = std::min(kKc, depth - pc);
              u.a = reinterpret_cast<const float*>(packed_[size_t(g)].panel_bytes(m0 / t.mr, pc));
              u.x = xg;
              u.off = offsets_.data() + pc;
              u.load_c = pc > 0;
              u.last = pc + u.kc >= depth;
              ukr_f32_indirect_avx512(u);
            }
          }
        }
      }
    });
  }

  Conv2d cv_;
  Relu relu_ = Relu::none;
  Isa isa_ = Isa::scalar;
  int threads_ = 1;
  bool pointwise_ = false;
  bool indirect_ = false;
  int64_t pad_h_ = 0, phase_w_ = 0;
  AlignedBuffer<float> padded_;
  std::vector<int64_t> offsets_;
  std::vector<PixelTile> tiles_;
  std::unique_ptr<Pool> pool_;
  std::vector<Packed> packed_;
  Workspace ws_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv2d() {
  return std::make_unique<ImplicitGemmConv>();
}

}  // namespace lb::cpu
