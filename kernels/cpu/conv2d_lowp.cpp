// conv2d.cpu.default in bf16 and int8 (conv2d.cpp hands these dtypes here), three ways:
//
// Indirect (AVX-512 with VNNI / BF16, output rows of 24 pixels or more): as the f32 path's
// indirect tile (conv2d.cpp), with 4-byte elements of consecutive channels instead of
// floats. The image is copied per run into a zero-padded one whose element (q, h, w) holds
// channels q·4 … q·4+3 of pixel (h, w) as u8 (int8) or channels q·2, q·2+1 as bf16 (bf16),
// split into SW phase images for width stride SW; the weights are packed once as 14-channel
// panels whose element (k, o) holds the same channels' weights of output channel o for
// k step (quad q, filter row r, column s), s8 or bf16. A tile of 14 output channels × 32
// pixels then does per k step one offset, two loads of 16 elements from the padded image,
// 14 broadcasts and 28 vpdpbusd (pixels as its u8 operand) or vdpbf16ps, the whole depth in
// one pass (s32 or f32 sums in registers), and its epilogue (int8's scale, bias, ReLU) stores
// straight into y's NCHW rows (f32, or bf16). Tiles run in raster order across output rows
// as f32's do. No column matrix, no packing of pixels, no transpose.
//
// Pixel panels (AVX-512, output rows narrower than 24 pixels, not pointwise, a plane that
// fills its 32-pixel panels at least 85 %: 13×13 and 14×14, not 7×7): the same tile over a
// panel of 32 output pixels in raster order across rows, packed from the padded image per
// k step (pack_pixel_panel: a copy per output row's run of pixels, the whole depth; k step k
// at k·32). A panel is packed once per group and then read by every 14-channel weight panel
// (its copy against 19-27 tiles' dot products at AlexNet's 256-384 channels, a few %); the
// plane's 6-7 panels use 88 % of their lanes, where the GEMM below fills 93-100 % of its
// 14-row panels but copies each pixel's depth twice (im2col, then A's packing) and its C
// once more (the transpose): 31 % of our time on AlexNet conv5 at batch 16 against 69 % in
// the tile. Whole images per thread where the batch shares out evenly; else the pool splits
// an image's weight panels (7 pixel panels on 2 threads would split 4 : 3). Predicted ≥ 1.2×
// on AlexNet conv3-5. Measured on the 2-core AMD EPYC Zen 5 VM (the build before and this
// one alternately, 2 runs; results/cpu-zen5-2core/2026-12-04_lowp-pixel-panels), old ÷ new:
// AlexNet conv3-5 (13×13) 1.08-1.49×, MobileNet's standard 3×3 at 14×14 1.03-1.18×, 7×7
// (unchanged, the noise) 0.88-1.15×. 7×7 stays on the GEMM: panels (77 % of their lanes)
// measured 0.5-0.9× there; slicing the depth so that a block of 8 panels and a weight slice
// stay in L2 / L1 measured 3-5 % slower than one pass. Against conv2d.onednn.default now
// 0.69-0.90× on AlexNet conv3-5, 0.80-0.89× at 14×14.
//
// Width stride 2 and 4 (both paths above): each padded row's SW phases come from the
// channel-interleaved row by split_phases (common.h: phase_split_avx512's permutes, the
// one phase split f32's padded copy uses too), where one 4-byte
// element at a time had taken 37 % of MobileNet conv1's bf16 samples (batch 8, 1 thread; 17 %
// after). Measured on the 2-core AMD EPYC Zen 5 VM, the build before and this one
// alternately (results/cpu-zen5-2core/2026-12-04_lowp-phase-split), old ÷ new at 2 / 1
// threads: MobileNet conv1 1.28-1.54× / 1.07-1.49×, AlexNet conv1 1.08-1.17× /
// 1.05-1.13×, a 3×3 stride-2 layer at C = 64 1.15-1.18× / 1.07-1.14×; against
// conv2d.onednn.default after: 0.98-2.53×, 1.03-1.38×, 0.74-1.17×. 1×1 layers keep their
// paths (same host, same way): on 14×14 and 7×7 planes the GEMM (this tile in 32-pixel panels
// across rows measured 0.65-0.8× of it), on 28² and wider the tile (the GEMM 0.3-0.6× of it).
//
// Otherwise (AMX, AVX2's int8, 7×7 planes, 1×1 layers narrower than 24 pixels): im2col, then the
// low-precision GEMM of gemm.h on the path lowp_path() picks, then C transposed into NCHW.
// Per image and group:  Cᵀ (P × K_g) = colᵀ (P × C_g·R·S) · W_gᵀ + bias, P = OH·OW pixels
// as C's rows (14-row panels fill small planes where 32-pixel tiles would not), W_g the B
// operand packed once by pack_lowp_b (the s8 side of u8 × s8), col (C_g·R·S rows of P
// pixels, a copy per output row at stride 1; a pointwise layer's is the image itself) read
// as A transposed (rs = 1, cs = P) and packed by the driver a group of depth rows at a time
// (gemm.cpp, interleave_panels). Threads: the pool shares each step.
//
// Prediction (3×3, C=K=64, 56×56, batch 1: 231 M multiply-adds): on AVX-512 VNNI the
// products alone take about a quarter of the f32 layer's time, bf16 half; through im2col,
// col is 1.8 MB (int8) written once and read once by the packing, 0.1-0.2 ms at L2/L3 rates,
// as long as the products themselves; the indirect tile reads the padded image (200 KB) in
// place, 2 loads per 28 dot products, so it should run near the products' rate (~85 % of peak,
// as f32's does). Measured on the 2-core AMD EPYC Zen 5 VM against conv2d.onednn.blocked,
// its time ÷ ours at 1 / 2 threads, one run each (the indirect path's and conv5's with 6-12
// repetitions shuffled: results/cpu-zen5-2core/2026-12-03_lowp-conv_cpu-vs-onednn; the
// first two lines with layerbench's default repetitions):
//   im2row (pixel rows gathered element by element): int8 3×3 0.09× (1 thread)
//   im2col + GEMM:    int8 3×3 0.41× / 0.28×, bf16 0.51× / 0.53×
//   indirect:         int8 3×3 0.87× / 0.81×, batch 32 0.92× / 0.88×; bf16 0.96× / 0.86×,
//                     batch 32 0.93× / 0.86×; AlexNet conv1 int8 0.89× / 0.81×, bf16 0.87×
//                     / 0.83×; MobileNet pw6 (28²) 0.67-0.73× / 0.55×; MobileNet conv1 (C = 3,
//                     9 or 18 k steps: its epilogue, not its products) 0.34-0.41×
//   im2col + GEMM, 13×13 (AlexNet conv5): int8 0.46× / 0.43×, bf16 0.54× / 0.39×
//   im2col from a zero-padded copy of the image (a copy per output row and k, no bounds
//   test), against the build before, alternately, 2 runs (results/cpu-zen5-2core/
//   2026-12-03_narrow-planes-packed): AlexNet conv3 / conv4 (13×13) 1.07-1.19× / 1.29-1.41×
//   faster at 1 / 2 threads, MobileNet's standard 3×3 at 7×7 1.04-1.06×; against
//   conv2d.onednn.default now 0.70-0.76× / 0.59-0.74× on AlexNet's.
// int8 on AVX2 (ukernel_avx2.cpp's 4×16 vpmaddwd tile), measured on the 2-core AMD EPYC
// Zen 3 VM with the pixel rows gathered, one run (results/cpu-zen3-2core/
// 2026-12-02_avx2-int8_cpu-vs-onednn): 3×3 0.25×, AlexNet conv1 0.40×, MobileNet pw6 0.35×
// oneDNN at 1 and 2 threads alike. Through im2col instead, measured on the Zen 5 VM under
// LB_CPU_ISA=avx2 (the AVX2 code on a CPU that has more; not on an AVX2-only one), against
// the build with the rows gathered (d2d8cd1), alternately, 3 runs each, its time ÷ this
// one's at 1 / 2 threads: 3×3 1.73× / 1.72×, pw6 1.51× / 1.57×, AlexNet conv1 1.05× /
// 1.07×, 13×13 (AlexNet conv5) 0.99× / 0.87×. AMX: verified through the emulated AMX tiles
// (kernels/tests/amx_test.cpp); not measured.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ukernel.h"

namespace lb::cpu {
namespace {

// Depth rows [k0, k1) of one image-group's column matrix, pixels along rows (row stride P):
// col[k·P + p] = x[c][oh·SH − PH + r·DH][ow·SW − PW + s·DW] for k = (c·R + r)·S + s and pixel
// p = oh·OW + ow, from `pad`, the group's channels zero-padded (rows of IW + 2·PW, IH + 2·PH
// of them a channel; bf16 +0, u8 0: value 0 at any scale): each output row's part one copy
// (stride 1) or gather, without a bounds test. (From the unpadded image, a bounds test and
// three copies per output row and k took 31 % of AlexNet conv4's int8 time at batch 16 on
// the Zen 5 VM.)
template <class T>
void im2col(const Conv2d& cv, const T* pad, int64_t k0, int64_t k1, T* col) {
  const int64_t OH = cv.oh(), OW = cv.ow(), P = OH * OW, PH = cv.ih + 2 * cv.ph, PW = cv.iw + 2 * cv.pw;
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t c = k / (cv.kh * cv.kw), r = k / cv.kw % cv.kh, s = k % cv.kw;
    const T* src = pad + (c * PH + r * cv.dh) * PW + s * cv.dw;
    T* d = col + k * P;
    for (int64_t oh = 0; oh < OH; ++oh, d += OW, src += cv.sh * PW) {
      if (cv.sw == 1) {
        std::copy_n(src, OW, d);
        continue;
      }
      for (int64_t ow = 0; ow < OW; ++ow)
        d[ow] = src[ow * cv.sw];
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
    scale_ = elem_ == Elem::u8s8 ? float(ts.at(Arg::src).scale() * w.scale()) : 1.0f;
    pointwise_ = cv_.kh == 1 && cv_.kw == 1 && cv_.sh == 1 && cv_.sw == 1 && cv_.ph == 0 && cv_.pw == 0;
    // Indirect where its 32-pixel tiles are at least 3/4 used (output rows of 24 pixels or
    // more); narrower planes through the same tile from 32-pixel panels packed across rows
    // (pixel_panels_), but for pointwise layers, whose image is the GEMM's column matrix as it is.
    pixel_panels_ = path_ == LowpPath::avx512 && !tiles_fill_lanes(cv_, kTileWidth) && !pointwise_ &&
                    panels_fill_lanes(cv_, kTileWidth);
    indirect_ = path_ == LowpPath::avx512 && (tiles_fill_lanes(cv_, kTileWidth) || pixel_panels_);
    packed_.clear();
    panel_ = {};
    panel_offsets_.clear();
    col_ = {};
    pad_col_ = {};
    sums_ = {};
    out_bf16_ = {};
    ws_ = {};
    if (indirect_) {
      if (elem_ == Elem::bf16)
        prepare_indirect(w.as<uint16_t>());
      else
        prepare_indirect(w.as<int8_t>());
      row_ = cv_.sw > 1 ? AlignedBuffer<uint32_t>(size_t(ctx.threads * cv_.iw)) : AlignedBuffer<uint32_t>();
      return;
    }
    for (int64_t g = 0; g < cv_.g; ++g)
      packed_.push_back(pack_lowp_b(elem_, path_, k_g, depth,
                                    static_cast<const std::byte*>(w.data()) + size_t(g * k_g * depth) * eb,
                                    depth, 1));
    col_ = pointwise_ ? AlignedBuffer<std::byte>() : AlignedBuffer<std::byte>(size_t(P * depth) * eb);
    // The image zero-padded for im2col (borders stay zero: only the interior is written).
    pad_col_ =
        pointwise_
            ? AlignedBuffer<std::byte>()
            : AlignedBuffer<std::byte>(size_t(cv_.ic * (cv_.ih + 2 * cv_.ph) * (cv_.iw + 2 * cv_.pw)) * eb);
    sums_ = AlignedBuffer<float>(size_t(P * k_g));  // int8: Cᵀ; bf16: partial sums between K slices
    if (elem_ == Elem::bf16) out_bf16_ = AlignedBuffer<uint16_t>(size_t(P * k_g));
    ws_ = Workspace(Isa::avx512, ctx.threads, true, false);  // AMX's and AVX2's blocks fit (gemm_lowp checks)
  }

  void run(TensorSet& ts) override {
    if (pixel_panels_ && elem_ == Elem::bf16)
      run_panels<uint16_t>(ts);
    else if (pixel_panels_)
      run_panels<uint8_t>(ts);
    else if (indirect_ && elem_ == Elem::bf16)
      run_indirect<uint16_t>(ts);
    else if (indirect_)
      run_indirect<uint8_t>(ts);
    else if (elem_ == Elem::bf16)
      run_as<uint16_t>(ts);
    else
      run_as<uint8_t>(ts);
    relu_pass(relu_, ts, pool_.get());
  }

  void release() override {
    weights_ = {};
    padded_ = {};
    row_ = {};
    panel_ = {};
    packed_.clear();
    col_ = {};
    pad_col_ = {};
    sums_ = {};
    out_bf16_ = {};
    ws_ = {};
    pool_.reset();
  }

  std::string details() const override {
    const Tile t = lowp_tile(path_);
    return "isa=" + std::string(name(path_)) + " " + std::string(lowp_instruction(elem_, path_)) +
           " tile=" + std::to_string(t.mr) + "x" + std::to_string(t.nr) +
           (indirect_ ? " indirect, channel " + std::string(elem_ == Elem::bf16 ? "pairs" : "quads") +
                            " from a padded image" + (pixel_panels_ ? ", packed in 32-pixel panels" : "")
                      : " im2col, pixels as rows");
  }
  size_t scratch_bytes() const override {
    size_t b = ws_.bytes() + col_.bytes() + pad_col_.bytes() + sums_.bytes() + out_bf16_.bytes() +
               weights_.bytes() + padded_.bytes() + row_.bytes() + panel_.bytes() +
               (offsets_.size() + panel_offsets_.size()) * sizeof(int64_t);
    for (const Packed& p : packed_)
      b += p.bytes();
    return b;
  }

 private:
  static constexpr int kRows = 14, kTileWidth = 32;  // the AVX-512 tile: output channels × pixels

  // The indirect path's weights, offsets, tiles and padded image (see the header). W: K ×
  // (C/G) × R × S, as bf16 or s8.
  template <class W>
  void prepare_indirect(const W* w) {
    const int64_t c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g;
    per_ = elem_ == Elem::bf16 ? 2 : 4;
    quads_ = ceil_div(c_g, per_);
    steps_ = quads_ * cv_.kh * cv_.kw;
    panels_ = ceil_div(k_g, int64_t(kRows));
    // A: per group and 14-channel panel, per k step (quad q, filter row r, column s), 14
    // elements, each the `per` weights of channels q·per … of one output channel.
    weights_ = AlignedBuffer<uint32_t>(size_t(cv_.g * panels_ * steps_ * kRows));
    std::fill(weights_.data(), weights_.data() + weights_.size(), 0u);
    const int bits = 32 / per_;
    for (int64_t g = 0; g < cv_.g; ++g)
      for (int64_t o = 0; o < k_g; ++o)
        for (int64_t c = 0; c < c_g; ++c)
          for (int64_t r = 0; r < cv_.kh; ++r)
            for (int64_t s = 0; s < cv_.kw; ++s) {
              const int64_t k = ((c / per_) * cv_.kh + r) * cv_.kw + s;
              const auto bits_of = static_cast<std::make_unsigned_t<W>>(
                  w[(((g * k_g + o) * c_g + c) * cv_.kh + r) * cv_.kw + s]);
              weights_.data()[((g * panels_ + o / kRows) * steps_ + k) * kRows + o % kRows] |=
                  uint32_t(bits_of) << (c % per_ * bits);
            }
    // The padded image split into SW phase images along W, as conv2d.cpp's f32 path does
    // (tap_offsets()); tiles in raster order across output rows (pixel_tiles()).
    pad_h_ = cv_.ih + 2 * cv_.ph;
    phase_w_ = ceil_div(cv_.iw + 2 * cv_.pw, cv_.sw);
    phase_ = cv_.g * quads_ * pad_h_ * phase_w_;
    // Borders stay zero; a tile width more: the tile reads 32 elements past its last offset.
    padded_elems_ = cv_.sw * phase_ + kTileWidth;
    offsets_ = tap_offsets(cv_, quads_, pad_h_, phase_w_, phase_);
    int64_t copies = 1;
    if (pixel_panels_) {
      tiles_ = plane_panels(cv_, kTileWidth);
      // Whole images per thread where they share out evenly (no barrier: a 13×13 plane's 6
      // panels, a 14×14 plane's 7, would otherwise split 4 : 3 on 2 threads); else each image
      // padded by the pool and its panels split.
      own_images_ = cv_.mb % pool_->size() == 0;
      if (own_images_) copies = pool_->size();
      // A panel per thread, a tile width of slack for pack_pixel_panel's fixed-length copies;
      // the tile reads k step k at k·32.
      panel_ = AlignedBuffer<uint32_t>(size_t(pool_->size() * (steps_ + 1) * kTileWidth));
      panel_offsets_.resize(size_t(steps_));
      for (int64_t k = 0; k < steps_; ++k)
        panel_offsets_[size_t(k)] = k * kTileWidth;
    } else {
      tiles_ = pixel_tiles(cv_, kTileWidth);
    }
    padded_ = AlignedBuffer<uint32_t>(size_t(padded_elems_ * copies));
    std::fill(padded_.data(), padded_.data() + padded_.size(), 0u);
  }

  // One image's channels into the padded image (interior only), the pool splitting the
  // input rows of every group's quads (or pairs) among the threads.
  template <class T>
  void pad_image(const T* x) {
    pool_->run([&](int tid, int threads) {
      const Range part = split(cv_.g * quads_ * cv_.ih, 1, tid, threads);
      pad_rows(x, padded_.data(), part.first, part.last, row_tmp(tid));
    });
  }
  // Input rows [first, last) of every group's quads (or pairs), row u the input row u % IH of
  // quad u / IH, into `pad`'s interior; tmp: IW words (width stride > 1: a row before its phases).
  template <class T>
  void pad_rows(const T* x, uint32_t* pad, int64_t first, int64_t last, uint32_t* tmp) const {
    const int64_t c_g = cv_.ic / cv_.g, IH = cv_.ih, IW = cv_.iw;
    for (int64_t u = first; u < last; ++u) {
      const int64_t gq = u / IH, ih = u % IH, c0 = gq / quads_ * c_g + gq % quads_ * per_;
      const int have = int(std::min<int64_t>(per_, c_g - gq % quads_ * per_));
      const T* rows[4] = {};
      for (int j = 0; j < have; ++j)
        rows[j] = x + ((c0 + j) * IH + ih) * IW;
      uint32_t* line = pad + (gq * pad_h_ + ih + cv_.ph) * phase_w_;
      if (cv_.sw == 1) {
        interleave_rows(rows, have, IW, line + cv_.pw);
        continue;
      }
      interleave_rows(rows, have, IW, tmp);
      split_phases(path_ == LowpPath::avx512, reinterpret_cast<const float*>(tmp), IW, cv_.pw, cv_.sw,
                   phase_w_, reinterpret_cast<float*>(line), phase_);
    }
  }

  uint32_t* row_tmp(int tid) { return row_.size() ? row_.data() + tid * cv_.iw : nullptr; }

  // Narrow planes: each image padded as run_indirect pads it, then its plane_panels through
  // panel_tile, whole images per thread (own_images_) or else each image's 14-channel weight
  // panels split across the pool, every thread taking all of its panels (a thread packs each
  // one, a small copy; a 14×14 plane's 7 pixel panels on 2 threads would split 4 : 3).
  template <class T>
  void run_panels(TensorSet& ts) {
    const int64_t IHW = cv_.ic * cv_.ih * cv_.iw, rows = cv_.g * quads_ * cv_.ih,
                  tpi = int64_t(tiles_.size());
    const T* x = ts.at(Arg::src).as<T>();
    if (own_images_) {
      pool_->run([&](int tid, int threads) {
        const Range part = split(cv_.mb, 1, tid, threads);
        uint32_t* pad = padded_.data() + tid * padded_elems_;
        for (int64_t n = part.first; n < part.last; ++n) {
          pad_rows(x + n * IHW, pad, 0, rows, row_tmp(tid));
          for (int64_t t = 0; t < tpi; ++t)
            panel_tile(pad, n, tiles_[size_t(t)], {0, cv_.g * panels_}, tid, ts);
        }
      });
      return;
    }
    for (int64_t n = 0; n < cv_.mb; ++n) {
      pad_image(x + n * IHW);
      pool_->run([&](int tid, int threads) {
        const Range part = split(cv_.g * panels_, 1, tid, threads);
        for (int64_t t = 0; t < tpi; ++t)
          panel_tile(padded_.data(), n, tiles_[size_t(t)], part, tid, ts);
      });
    }
  }

  // One pixel panel of image n (padded at `pad`) through weight panels `w` (panel i: group
  // i / panels_'s 14-channel panel i % panels_): per group, its pixels packed (pack_pixel_panel,
  // the whole depth) into thread tid's panel, then the tile over it per weight panel, the whole
  // depth in one pass as run_indirect's.
  void panel_tile(const uint32_t* pad, int64_t n, const PixelTile& pt, Range w, int tid, TensorSet& ts) {
    const int64_t k_g = cv_.oc / cv_.g, OW = cv_.ow(), P = cv_.oh() * OW, first = pt.oh * OW + pt.ow;
    const bool bf16 = elem_ == Elem::bf16;
    void (*tile)(const IndirectArgs&) = bf16 ? ukr_bf16_indirect_avx512 : ukr_u8s8_indirect_avx512;
    Tensor& dst = ts.at(Arg::dst);
    const float* bias = ts.at(Arg::bias).as<float>();
    uint32_t* panel = panel_.data() + tid * (steps_ + 1) * kTileWidth;
    IndirectArgs u;
    u.ldc = P;
    u.relu = relu_ == Relu::fused;
    u.scale = scale_;
    u.kc = steps_;
    u.off = panel_offsets_.data();
    u.load_c = false;
    u.last = true;
    u.x = reinterpret_cast<const float*>(panel);
    u.n = int(pt.n);
    for (int64_t i = w.first; i < w.last;) {
      const int64_t g = i / panels_, end = std::min(w.last, (g + 1) * panels_);
      pack_pixel_panel(pad + g * quads_ * pad_h_ * phase_w_, 0, cv_.sh * phase_w_, OW, P, first, pt.n,
                       offsets_.data(), steps_, kTileWidth, true, panel);
      for (; i < end; ++i) {
        const int64_t m0 = i % panels_ * kRows;
        u.m = int(std::min<int64_t>(kRows, k_g - m0));
        u.a = reinterpret_cast<const float*>(weights_.data() + i * steps_ * kRows);
        u.bias_row = bias + g * k_g + m0;
        const int64_t at = (n * cv_.oc + g * k_g + m0) * P + first;
        if (bf16)
          u.out_bf16 = dst.as<uint16_t>() + at;
        else
          u.c = dst.as<float>() + at;
        tile(u);
      }
    }
  }

  template <class T>
  void run_indirect(TensorSet& ts) {
    const int64_t k_g = cv_.oc / cv_.g, P = cv_.oh() * cv_.ow(), OW = cv_.ow();
    const T* x = ts.at(Arg::src).as<T>();
    const float* bias = ts.at(Arg::bias).as<float>();
    const bool bf16 = elem_ == Elem::bf16;
    void (*tile)(const IndirectArgs&) = bf16 ? ukr_bf16_indirect_avx512 : ukr_u8s8_indirect_avx512;
    Tensor& dst = ts.at(Arg::dst);
    for (int64_t n = 0; n < cv_.mb; ++n) {
      pad_image(x + n * cv_.ic * cv_.ih * cv_.iw);
      const int64_t y0 = n * cv_.oc * P;
      pool_->run([&](int tid, int threads) {
        const Range part = split(int64_t(tiles_.size()), 1, tid, threads);
        IndirectArgs u;
        u.ldc = P;
        u.relu = relu_ == Relu::fused;
        u.next_row = cv_.sh * phase_w_ - OW;
        u.scale = scale_;
        u.kc = steps_;
        u.off = offsets_.data();
        u.load_c = false;
        u.last = true;
        for (int64_t i = part.first; i < part.last; ++i) {
          const PixelTile& pt = tiles_[size_t(i)];
          u.n = int(pt.n);
          u.split = pt.ow + pt.n > OW ? int(OW - pt.ow) : kTileWidth;
          for (int64_t g = 0; g < cv_.g; ++g) {
            u.x = reinterpret_cast<const float*>(padded_.data() +
                                                 (g * quads_ * pad_h_ + pt.oh * cv_.sh) * phase_w_ + pt.ow);
            for (int64_t m0 = 0; m0 < k_g; m0 += kRows) {
              u.m = int(std::min<int64_t>(kRows, k_g - m0));
              u.a = reinterpret_cast<const float*>(weights_.data() +
                                                   (g * panels_ + m0 / kRows) * steps_ * kRows);
              u.bias_row = bias + g * k_g + m0;
              const int64_t at = y0 + (g * k_g + m0) * P + pt.oh * OW + pt.ow;
              if (bf16)
                u.out_bf16 = dst.as<uint16_t>() + at;
              else
                u.c = dst.as<float>() + at;
              tile(u);
            }
          }
        }
      });
    }
  }

  // T: x's storage (bf16 as uint16_t, u8); y is bf16 (uint16_t) or f32 alike.
  template <class T>
  void run_as(TensorSet& ts) {
    const int64_t c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g, depth = c_g * cv_.kh * cv_.kw;
    const int64_t P = cv_.oh() * cv_.ow(), HW = cv_.ih * cv_.iw;
    const T* x = ts.at(Arg::src).as<T>();
    const float* bias = ts.at(Arg::bias).as<float>();
    T* col = reinterpret_cast<T*>(col_.data());
    T* pad = reinterpret_cast<T*>(pad_col_.data());
    const int64_t PH = cv_.ih + 2 * cv_.ph, PW = cv_.iw + 2 * cv_.pw;
    const bool bf16 = elem_ == Elem::bf16;
    for (int64_t n = 0; n < cv_.mb; ++n) {
      if (!pointwise_)  // the image's rows into the padded one's interior
        pool_->run([&](int tid, int threads) {
          const Range part = split(cv_.ic * cv_.ih, 1, tid, threads);
          for (int64_t i = part.first; i < part.last; ++i)
            std::copy_n(x + n * cv_.ic * HW + i * cv_.iw, cv_.iw,
                        pad + (i / cv_.ih * PH + i % cv_.ih + cv_.ph) * PW + cv_.pw);
        });
      for (int64_t g = 0; g < cv_.g; ++g) {
        const T* xg = x + (n * cv_.ic + g * c_g) * HW;
        LowpStrided a{xg, 1, HW};  // a pointwise layer's column matrix is the image itself
        if (!pointwise_) {
          pool_->run([&](int tid, int threads) {
            const Range part = split(depth, 1, tid, threads);
            im2col(cv_, pad + g * c_g * PH * PW, part.first, part.last, col);
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
  }

  Conv2d cv_;
  Relu relu_ = Relu::none;
  Elem elem_ = Elem::u8s8;
  LowpPath path_ = LowpPath::avx512;
  float scale_ = 1.0f;
  bool pointwise_ = false;  // 1×1, stride 1, unpadded: the image is its own column matrix
  // The indirect path (AVX-512): see prepare_indirect().
  bool indirect_ = false;
  // Narrow planes (run_panels): whole images per thread (own_images_), each its padded copy.
  bool pixel_panels_ = false, own_images_ = false;
  int64_t padded_elems_ = 0;
  int per_ = 4;  // channels per 4-byte element: 2 bf16, 4 u8
  int64_t quads_ = 0, steps_ = 0, panels_ = 0, pad_h_ = 0, phase_w_ = 0, phase_ = 0;
  AlignedBuffer<uint32_t> weights_, padded_, row_, panel_;
  std::vector<int64_t> offsets_, panel_offsets_;
  std::vector<PixelTile> tiles_;
  std::unique_ptr<Pool> pool_;
  std::vector<Packed> packed_;
  AlignedBuffer<std::byte> col_;
  AlignedBuffer<std::byte> pad_col_;  // the image zero-padded, for im2col
  AlignedBuffer<float> sums_;
  AlignedBuffer<uint16_t> out_bf16_;
  Workspace ws_;
};

}  // namespace

std::unique_ptr<Kernel> make_lowp_conv2d() {
  return std::make_unique<LowpConv>();
}

}  // namespace lb::cpu
