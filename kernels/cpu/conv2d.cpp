// conv2d.cpu.default — convolution as implicit GEMM on the cpu backend's GEMM (gemm.h),
// NCHW, any stride, padding, dilation and groups (depthwise has its own direct kernel,
// conv2d.cpu.depthwise: a GEMM with one row per group would waste the micro-kernel).
// f32 here; bf16 and int8 in conv2d_lowp.cpp (this kernel hands them over in prepare()).
//
// Per image and group:  C (K_g × P) = W_g (K_g × C_g·R·S) · col (C_g·R·S × P) + bias,
// K_g output channels, P = OH·OW output pixels, C_g input channels, R×S filter.
// Why implicit GEMM rather than im2col + GEMM: the column matrix would be R·S times the
// input (9× for 3×3; 3136 × 576 × 4 B = 7 MB per 56×56×64 image) written and read back
// through memory; here the driver asks for one KC × NC block of it at a time and it is
// built straight into the packed B panels (pack_padded), from the input that is in cache.
// C rows are output channels and columns are pixels, so the tile is stored straight into
// NCHW rows; W, packed once in prepare(), is the A side; bias runs along C's rows.
// 1×1 stride-1 unpadded (pointwise) convolutions skip the im2col logic: col is the input
// itself, C_g × P with pixels contiguous, handed to the driver as a strided matrix. Where P
// fills pixel panels badly (AVX2 7×7: 49 pixels in 64 lanes of 16-pixel panels), the product
// runs the other way round, Cᵀ = Xᵀ · Wᵀ with the pixels in row panels (AVX2 5 rows: 50
// lanes), and Cᵀ is transposed into y: predicted ≤ 1.28× (AVX2), measured on the 2-core AMD
// EPYC Zen 3 VM (old and new builds alternately, 3 runs;
// results/cpu-zen3-2core/2026-12-02_pointwise-pixel-rows) MobileNet's pw13 1.27× / 1.34×
// and pw14 1.22× / 1.37× faster at 1 / 2 threads. AVX-512 (32-pixel panels, 14-row panels):
// 7×7 64 lanes against 56, 14×14 224 against 196, predicted ≤ 1.14×; measured on the 2-core
// AMD EPYC Zen 5 VM (3 runs; results/cpu-zen5-2core/2026-12-02_pointwise-pixel-rows) pw13
// 1.21× / 1.17×, pw14 1.24× / 1.16× (batch 8 1.24× / 1.29×), pw8 (14×14) 1.06× / 1.03× —
// 7×7 more than its lanes predict, 14×14 less; not profiled further.
// On AVX-512 and AVX2 there is no packing of col at all (indirect GEMM): the image is copied
// into a zero-padded buffer (split into SW phase images for width stride SW), and row
// k = (c, r, s) of a tile's B is read at a fixed offset from each pixel's place in that buffer
// (an offsets table made in prepare()).
//   AVX-512 (ukr_f32_indirect_avx512): 14 output channels × 32 pixels, B row k = 32
//   consecutive floats. Packing col measured 31 % of the time on the 3×3 56×56 layer and
//   most of it on AlexNet's stride-4 conv1; the padded copy costs one pass. Output rows at
//   least 32 wide are cut into tiles in raster order, a tile running past a row's end into
//   the next (its lanes from there loaded from the next row and merged: 2 loads more per k
//   step against 28 FMAs); rows of 24-31 pixels, a tile per row. Narrower rows would leave
//   most lanes empty (13 or 14 pixels in 32: 41-44 %; 7 pixels 22 %), so planes narrower
//   than 24 pixels (tiles_fill_lanes) take the packed path: col built per KC × 32-pixel panel
//   (panels across rows: 88 % of the lanes at 13×13 and 14×14, 77 % at 7×7),
//   its cost one copy per K_g FMAs — small for these layers' 192-1024 output channels
//   (31 % at 64 was the 56×56 layer's). Predicted 1.5-2× faster at 13-14 pixels, 3.5× at 7;
//   measured on the 2-core AMD EPYC Zen 5 VM (the build before and this one alternately, 2
//   runs; results/cpu-zen5-2core/2026-12-03_narrow-planes-packed), old ÷ new at 1 / 2
//   threads: AlexNet conv3-5 (13×13) 1.46-1.76× / 1.24-1.64×, MobileNet v1's standard 3×3
//   layers at 14×14 out 1.67-1.76× / 1.20-2.11×, at 7×7 out 2.81-3.78× / 2.31-3.68×, batch 16
//   1.39-2.66× / 1.45-3.14×; 24 pixels and wider unchanged (0.97-1.05×). Against
//   conv2d.onednn.default these still read 0.44-0.85× (their % of peak 24-62 %): each image's
//   2-7 pixel panels reuse each weight that little.
//   Hence, with images enough (each thread at least two), a thread's images go kFoldPixels ÷ P
//   at a time (P pixels a plane) into one product of that many planes' columns side by side
//   (pack_padded takes them across images), into a C block copied into their NCHW planes
//   after: 7×7 planes 6 at a time (10 panels, 92 % of the lanes, against 2 panels at 77 %),
//   14×14 2. Measured on the same VM (that build and this one alternately, 2 runs; the same
//   folder), old ÷ new at batch 16, 1 / 2 threads: 7×7 outputs 1.83-2.08× / 1.35-1.73×, 14×14
//   1.12-1.27× / 1.04-1.54×, now 0.79-1.04× / 0.78-1.26× conv2d.onednn.default; AlexNet's 13×13
//   (2 at a time) unchanged, 0.94-1.06× (0.59-0.74× oneDNN): perf gave the packing of col 21 %
//   of conv4's samples at batch 16 (a bounds test and three loops per run of ≤ 13 pixels, at
//   every k step). So the packed path pads each image as the indirect path does (phase
//   images), and a panel's runs of pixels are plain copies from it at each k step's offset
//   (pack_padded). Measured (that build and this one alternately, 2 runs; the same folder):
//   AlexNet conv3-5 1.12-1.27× / 1.16-1.29× faster, MobileNet's 14×14 and 7×7 layers 1.09-1.13×
//   / 1.05-1.13×; against conv2d.onednn.default now 0.76-0.82× / 0.67-0.84× (66-79 % of peak) on
//   AlexNet's, 0.77-1.08× / 0.73-0.97× on MobileNet's.
//   AVX2 (ukr_f32_indirect_pixels_avx2): the roles swapped, 16 output channels in the lanes
//   (A as aligned vectors of 16-channel weight panels) × 6 pixels anywhere (raster order,
//   across output rows: no lane is wasted on a row's end), each pixel's B row k one float
//   broadcast from x + off[k]. A first AVX2 tile like AVX-512's (6 channels × two 8-pixel
//   groups of B loaded as vectors) measured 78 % of peak on its own: half its B loads split
//   cache lines; broadcasts never do.
//
//   AVX-512 row tiles (output rows of 16 pixels or more, and a group of 16 output channels
//   or more or, a network's first layer, of at most 4 input channels;
//   ukr_f32_indirect_row_avx512): the roles swapped as on AVX2, 32 output channels in
//   two vectors × 14 pixels of one output row (row_tiles: AlexNet conv1's 55 → 14+14+14+13),
//   each pixel's B row k one float broadcast from x + off[k] + j. Prediction: the same 28 FMAs
//   a k step as the 14×32 tile, against 2 aligned loads of A and 14 four-byte broadcasts (no
//   split cache line, no merge of two output rows' lanes, which on Intel takes a port the FMAs
//   use) and channels in whole vectors (64 = 2 × 32 against 14+14+14+14+8 rows, 32 against
//   14+14+4): ≤ 1.1× on AlexNet conv1, ≤ 1.3× on MobileNet's conv1 (3 → 32), where the 4-row
//   tile ran far below the rest. Measured on the 2-core AMD EPYC Zen 5 VM, the build before
//   and this one alternately, 6 runs each (results/cpu-zen5-2core/
//   2026-12-05_conv-first-layer-row-tile), before ÷ after, fastest run / median at 1 | 2
//   threads: AlexNet conv1 batch 1 1.01 / 1.02 | 1.03 / 1.09, batch 8 1.00 / 0.99 | 1.05 /
//   1.02; MobileNet conv1 batch 1 1.08 / 1.08 | 1.07 / 1.06, batch 8 1.05 / 0.98 | 1.20 / 1.35.
//   A 16-channel × 28-pixel tile (1 load of A and 28 broadcasts a step) measured 0.86× on
//   AlexNet conv1: 29 loads a step against the FMAs' 14 cycles, load-bound on Zen 5.
//   First layers only until, on the 2-core Intel Xeon AMX VM (host-3c0555be), the 14×32
//   tile ran the 3×3 56×56 64-channel layer at 77-80 % of peak, oneDNN's blocked kernel at
//   94-96 %, and the row tile forced onto it at 88-89 %. For all layers with 16 channels a
//   group or more the prediction is the same as for the first ones (same loads per FMA, no
//   split line, no merge). Measured there, the build before and this one alternately, 2 runs
//   each (results/cpu-xeon-amx-2core/2026-12-06_conv-row-tile-all-layers), before ÷ after,
//   fastest run at 1 | 2 threads: ResNet 3×3 56×56 batch 1 1.13 | 1.22, batch 32 1.12 |
//   1.11; AlexNet conv2 (27×27, 5×5) batch 1 1.21 | 1.22, batch 16 1.19 | 1.19; MobileNet's
//   standard 3×3 layers that its separable blocks replace at 112, 56 and 28 pixels 1.06-1.24
//   | 1.07-1.21; AlexNet conv1 (unchanged) 1.00 | 1.01. Not run on a Zen host since.
//
// Threads: AVX2, the batch's blocks of 60 pixels (about one output row) as one list split
// across the pool, each thread padding into its own buffer only the input rows its blocks
// read (no barrier; batch 1 is split by output rows, not by images). AVX-512, whole images
// per thread while each thread has one, each padded into the thread's own copy; the images
// left over one at a time on the whole pool, each thread padding the input rows from the
// first its share of the pixel tiles reads to the next thread's first, then the tiles split
// across the pool. Packed path (scalar, AVX-512 planes narrower than 24 pixels, and 1×1): the
// pixels of one image (batch < threads) or whole images per thread (small planes several at
// a time, folded).
// (AVX-512 before: every image padded by the pool split by (channel, row) pairs, then its
// tiles split, so each thread's tiles read half their input rows from the other core's
// caches and every image waited on the pool twice; on the 2-core Zen 5 VM at 2 threads the
// 3×3 layer at batch 32 ran at 75-77 % of peak against 88-91 % on 1 thread, AlexNet conv1 at
// 75 % against 88 %. Predicted: most of that back. Measured on that VM, the build before and
// this one alternately (results/cpu-zen5-2core/2026-12-05_conv-threads, minimum / median of
// the runs), old ÷ new at 2 threads: MobileNet v1's conv1 (3 → 32, stride 2) batch 1 1.36× /
// 1.65×, batch 8 1.33× / 1.37×; res3x3 batch 32 1.11× / 1.11× (6 runs), batch 1 1.03× / 1.05×;
// AlexNet conv1 batch 1 1.10× / 1.10×, batch 8 0.95× / 0.94×, the one loss: there, with
// whole images, each thread's padding took 74-90 µs an image against 27-30 µs on 1 thread
// and its tiles 4-13 % longer (timers in a throwaway build); why is not known. 1 thread:
// 0.99-1.01× (minimum).)
//
// Prediction, AVX-512 (3×3, C=K=64, 56×56, batch 1: 231 MFLOP): compute-bound; the 64-row M
// is four 14-row tiles and one 8-row tile, and 32-pixel tiles within a 56-pixel row use 56 of
// every 64 lanes: ≈ 85 % of the micro-kernel's rate, ≥ 75 % of peak. (Predicted for the
// packed path first: building col, 1.8 M copies against 64 FMAs each, "a few %" — measured
// 31 %, hence the indirect path.) AlexNet conv1 (11×11 stride 4, C = 3, 55-pixel rows): the
// same lane loss, K = 363 in one slice; measured 70 % of peak once its phase images were made
// without a division per element (before: 48 %). Tiles across rows then take the lanes from
// 56 / 64 (3×3) and 55 / 64 (AlexNet) to all but the last tile's: predicted ≤ 1.14× and
// ≤ 1.16×. Measured on the 2-core AMD EPYC Zen 5 VM (old and new builds alternately, 3 runs;
// results/cpu-zen5-2core/2026-12-02_conv-tiles-across-rows): 3×3 batch 1 1.11× / 1.12×,
// batch 8 1.13× / 1.13×, AlexNet conv1 1.14× / 1.12× faster at 1 / 2 threads; against
// conv2d.onednn.blocked after, 0.95-0.97× and 0.89-0.91×. (The 8-row edge tile merging by
// masked loads instead of a blend: its share of AlexNet conv1's perf samples 11 % → 21 %,
// the layer as a whole 1.01×.)
// The padded copy at width stride 2 and 4 (AVX-512): it was 7 % of AlexNet conv1's timed
// samples at 1 thread on the Zen 5 VM, one strided element at a time, and at 2 threads the
// split by channels gave one thread 2 of the 3. Now 16 elements of every phase come from
// 16·SW columns by permutes (split_phases, common.h) and the threads split (channel, row)
// pairs: predicted ≤ 1.06× at 1 thread, ≤ 1.1× at 2. Measured on the 2-core AMD EPYC Zen 5
// VM, the build before and this one alternately, 3 runs
// (results/cpu-zen5-2core/2026-12-03_conv-phase-split), old ÷ new at 1 / 2 threads: AlexNet
// conv1 batch 1 1.11× / 1.14×, batch 8 1.10× / 1.18×, MobileNet v1's conv1 (stride 2) 1.28× /
// 1.28×, res3x3 (stride 1, only the split changed: the noise band) 1.05× / 1.00×; AlexNet
// conv1 batch 1 against conv2d.onednn.blocked 0.83× / 0.80× before, 0.92× / 0.85× after.
// More than predicted at 1 thread, from a 7 % share in one perf run; not profiled further.
// (The split by (channel, row) pairs has since given way to the tiles' rows; see Threads.)
// Prediction, AVX2 (host: 2-core AMD EPYC Zen 3 VM, AVX2 + FMA, no AVX-512): one core's peak
// is 2 FMA pipes × 8 lanes × 2 FLOP = 32 FLOP per cycle, ≈ 100 GFLOP/s (layerbench's figure;
// the tile's k loop with B in L1 measured 98 GFLOP/s). Every layer here is compute-bound:
// 3×3 C=K=64 56×56 is 231 MFLOP per image against 1.75 MB moved (130 FLOP/B); AlexNet conv1
// 140 MFLOP against 1.5 MB. Per k step the tile does 12 FMAs (6 cycles on two pipes) against
// 9 loads (offset, 2 of A, 6 broadcasts; Zen 3 takes 3 a cycle), so the loop runs near peak;
// the 96 results leave through a transpose once per 576·6 cycles (3×3) and the padded copy is
// one pass over the input: predicted ≈ 85–90 % of peak at 1 thread for both layers, ≈ 2× at
// 2 threads. Measured: the tile's loop over the whole 3×3 layer alone 90 % (a stand-alone
// loop); in the layer, phase timing put the padded copy at 4–5 % of the tiles' time (3×3) and
// 10 % (AlexNet, before its phase loop lost a bounds test per element: 5–6 %), the results'
// stores ≈ 6 % (scalar or transposed alike, within the noise). One run of layerbench on that
// host (shared with other jobs; ratio = oneDNN blocked time / ours):
//   problem             threads  ours      oneDNN blocked  ratio  ours, % of peak
//   res3x3 batch 1         1     3.77 ms   3.00 ms         0.79×  61 %
//   res3x3 batch 1         2     2.02 ms   1.74 ms         0.86×  57 %
//   res3x3 batch 32        1     121 ms    103 ms          0.85×  61 %
//   res3x3 batch 32        2     59.8 ms   54.9 ms         0.92×  62 %
//   alexnet_conv1 batch 1  1     2.22 ms   2.72 ms         1.23×  63 %
//   alexnet_conv1 batch 1  2     1.31 ms   1.99 ms         1.52×  53 %
// The load moves these by ±15 %: the run just before it, same code, had res3x3 batch 1 at
// 0.95× (1 thread) and 0.71× (2 threads, both kernels short of a second core); by the least
// process CPU time per thread of each case the two runs put res3x3 at 0.78–1.13×, six of
// the eight at 0.9× or more.
// (Before: AVX2 took the packed im2col path, 42–51 % of peak; at 2 threads and batch 1 each
// thread packed the whole col matrix for its rows of W, slower than 1 thread.)
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/ukernel.h"

namespace lb::cpu {
namespace {

class ImplicitGemmConv final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32, DType::bf16, DType::i8}); !why.empty()) return why;
    if (p.conv().depthwise()) return "depthwise convolutions are conv2d.cpu.depthwise's";
    if (p.dt != DType::f32) return elem_reason(lowp_elem(p.dt));  // conv2d_lowp.cpp's
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    lowp_.reset();
    if (p.dt != DType::f32) {  // bf16 and int8: conv2d_lowp.cpp
      lowp_ = make_lowp_conv2d();
      return lowp_->prepare(p, ts, ctx);
    }
    cv_ = p.conv();
    relu_ = p.relu;
    isa_ = best_isa();
    threads_ = ctx.threads;
    pool_ = std::make_unique<Pool>(ctx.threads);
    const int64_t kg = cv_.oc / cv_.g, depth = cv_.ic / cv_.g * cv_.kh * cv_.kw;
    const float* w = ts.at(Arg::wei).as<float>();  // K×(C/G)×R×S: group g's rows are a K_g × depth matrix
    pointwise_ = cv_.kh == 1 && cv_.kw == 1 && cv_.sh == 1 && cv_.sw == 1 && cv_.ph == 0 && cv_.pw == 0;
    // AVX-512's indirect tiles where they fill their lanes (tiles_fill_lanes: output rows of 24
    // pixels or more); narrower planes take the packed path, whose 32-pixel panels run
    // across rows (see the header). AVX2's tiles take 6 pixels anywhere. On AVX-512, output
    // rows of 16 pixels or more take the row tile with channels in the lanes wherever a group
    // has kLaneChannels output channels or more (a vector of them), or is a network's first
    // layer (at most kLaneInputChannels input channels: an image's).
    channel_lanes_ = !pointwise_ && isa_ == Isa::avx512 && cv_.ow() >= 16 &&
                     (kg >= kLaneChannels || cv_.ic / cv_.g <= kLaneInputChannels);
    indirect_ =
        !pointwise_ &&
        ((isa_ == Isa::avx512 && (channel_lanes_ || tiles_fill_lanes(cv_, kTileWidth))) || isa_ == Isa::avx2);
    // Pointwise with the pixels as C's rows where pixel panels (NR wide) would leave over a
    // tenth more lanes empty than row panels (MR): AVX2 16 / 5, 7×7 planes 64 lanes against
    // 50; AVX-512 32 / 14, 7×7 64 against 56 and 14×14 224 against 196. (Scalar: unmeasured.)
    const Tile tile = f32_tile(isa_);
    const int64_t P = cv_.oh() * cv_.ow();
    pixel_rows_ = pointwise_ && cv_.g == 1 && isa_ != Isa::scalar &&
                  ceil_div(P, int64_t(tile.nr)) * tile.nr * 10 > ceil_div(P, int64_t(tile.mr)) * tile.mr * 11;
    packed_.clear();
    chan_a_ = {};
    sums_ = {};
    fold_ = 1;
    if (indirect_ && (isa_ == Isa::avx2 || channel_lanes_)) {
      // The AVX2 indirect tile's and the AVX-512 row tile's A: panels of chan_lanes() channels,
      // k-major, each as wide as its channels rounded up to 16 (past K_g zero): chan_panel().
      const int64_t R = chan_lanes(), width = round_up(kg, 16);
      chan_a_ = AlignedBuffer<float>(size_t(cv_.g * width * depth));
      std::fill(chan_a_.data(), chan_a_.data() + chan_a_.size(), 0.0f);
      for (int64_t g = 0; g < cv_.g; ++g)
        for (int64_t i = 0; i < kg; ++i) {
          const int64_t q = i / R, panel_width = std::min(R, width - q * R);
          for (int64_t k = 0; k < depth; ++k)
            chan_a_.data()[(g * width + q * R) * depth + k * panel_width + i % R] =
                w[(g * kg + i) * depth + k];
        }
    } else if (pixel_rows_) {
      // Wᵀ (C × K) as the B side: column k is W's row k.
      packed_.emplace_back(isa_, false, kg, depth, Strided{w, depth, 1});
      sums_ = AlignedBuffer<float>(size_t(P * kg * (cv_.mb < threads_ ? 1 : threads_)));
    } else {
      for (int64_t g = 0; g < cv_.g; ++g)
        packed_.emplace_back(isa_, true, kg, depth, Strided{w + g * kg * depth, depth, 1});
    }
    // The padded image split into SW phase images along W (tap_offsets(), common.h).
    pad_h_ = cv_.ih + 2 * cv_.ph;
    phase_w_ = ceil_div(cv_.iw + 2 * cv_.pw, cv_.sw);
    if (indirect_) {
      tiles_.clear();
      pixels_.clear();
      rows_ = pad_h_;
      if (channel_lanes_) {
        tiles_ = row_tiles(cv_.oh(), cv_.ow());
      } else if (isa_ == Isa::avx512) {
        tiles_ = pixel_tiles(cv_, kTileWidth);  // 32 pixels in raster order, across rows
      } else {
        // Every output pixel's offset in a group's padded image (first phase image, row
        // oh·SH, column ow) and in an output plane, in raster order; tiles of 6 run on.
        for (int64_t oh = 0; oh < cv_.oh(); ++oh)
          for (int64_t ow = 0; ow < cv_.ow(); ++ow)
            pixels_.push_back({oh * cv_.sh * phase_w_ + ow, oh * cv_.ow() + ow});
        // Each thread's window of padded rows: the most one block reads and 8 output rows more
        // (3×3 64-channel 56×56: 13 of 58 rows, 190 KB, which stays in L2).
        int64_t span = 0;
        for (int64_t b = 0; b < pixel_blocks(); ++b)
          span = std::max(span, padded_rows(b).last - padded_rows(b).first);
        rows_ = std::min(pad_h_, span + 8 * cv_.sh);
      }
      // AVX2: a window per thread; AVX-512: an image per thread where each has one (see run()).
      make_padded(rows_, isa_ == Isa::avx2 || cv_.mb >= threads_ ? threads_ : 1);
    } else if (pixel_rows_) {
      ws_ = Workspace(isa_, ctx.threads, true, false, depth);
    } else {
      ws_ = Workspace(isa_, ctx.threads, false, true, depth);
    }
    if (!indirect_ && !pointwise_) {
      // Images folded into one product where a plane has fewer pixels than kFoldPixels and each
      // thread has images enough (see the header).
      fold_ = cv_.mb < 2 * threads_ ? 1 : std::min(ceil_div(kFoldPixels, P), cv_.mb / threads_);
      if (fold_ > 1) sums_ = AlignedBuffer<float>(size_t(threads_ * kg * fold_ * P));
      // The images padded as the indirect path pads them: one (batch < threads) or fold_ per thread.
      make_padded(pad_h_, cv_.mb < threads_ ? 1 : threads_ * fold_);
    }
  }

  void run(TensorSet& ts) override {
    if (lowp_) return lowp_->run(ts);
    const float* x = ts.at(Arg::src).as<float>();
    const float* bias = ts.at(Arg::bias).as<float>();
    float* y = ts.at(Arg::dst).as<float>();
    if (indirect_ && isa_ == Isa::avx2) {
      // The images' pixel blocks as one list split across the pool: each thread pads the
      // input rows its blocks read into its own window of padded rows, block by block just
      // before use, sliding the window down when a block's rows run past its end; nothing
      // waits for another thread (batch 1: each pads a little over half the rows).
      const int64_t blocks = pixel_blocks(), IHW = cv_.ic * cv_.ih * cv_.iw,
                    OHW = cv_.oc * cv_.oh() * cv_.ow();
      pool_->run([&](int tid, int threads) {
        const Range part = split(cv_.mb * blocks, 1, tid, threads);
        float* pad = padded_.data() + tid * padded_floats_;
        int64_t image = -1, row0 = 0, filled = 0;  // padded rows [row0, filled) of `image`
        for (int64_t i = part.first; i < part.last; ++i) {
          const int64_t n = i / blocks, b = i % blocks;
          const Range need = padded_rows(b);
          if (n != image || need.last > row0 + rows_) {
            image = n;
            row0 = filled = need.first;
          }
          if (need.last > filled) {
            fill_rows(x + n * IHW, pad, filled, need.last, row0);
            filled = need.last;
          }
          pixels_block(pad, row0, bias, y + n * OHW, b);
        }
      });
      relu_pass(relu_, ts, pool_.get());
      return;
    }
    if (indirect_) {
      // Whole images per thread while every thread has one, each padded into the thread's own
      // copy (nothing waits for another thread, the padded image stays in its core's
      // caches); the images left over shared by the pool one at a time.
      const int64_t IHW = cv_.ic * cv_.ih * cv_.iw, OHW = cv_.oc * cv_.oh() * cv_.ow();
      const int64_t whole = cv_.mb - cv_.mb % threads_, n_tiles = int64_t(tiles_.size());
      if (whole > 0)
        pool_->run([&](int tid, int threads) {
          const Range part = split(whole, 1, tid, threads);
          float* pad = padded_.data() + tid * padded_floats_;
          for (int64_t n = part.first; n < part.last; ++n) {
            pad_rows(x + n * IHW, pad, 0, cv_.ic, 0, cv_.ih);
            tiles(pad, bias, y + n * OHW, {0, n_tiles});
          }
        });
      for (int64_t n = whole; n < cv_.mb; ++n)
        indirect_image(x + n * IHW, bias, y + n * OHW);
      relu_pass(relu_, ts, pool_.get());
      return;
    }
    if (pixel_rows_) {
      pixel_rows_product(x, bias, y);
      relu_pass(relu_, ts, pool_.get());
      return;
    }
    if (!pointwise_) {
      packed_product(x, bias, y);
      relu_pass(relu_, ts, pool_.get());
      return;
    }
    // Pointwise: col is the image itself, C_g × P with pixels contiguous.
    const int64_t P = cv_.oh() * cv_.ow(), HW = cv_.ih * cv_.iw;
    const int64_t c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g;
    // One image-group product; `tid` < 0: split its pixels across the pool.
    auto product = [&](int64_t n, int64_t g, int tid) {
      const float* xg = x + (n * cv_.ic + g * c_g) * HW;
      Operand a, b;
      a.packed = &packed_[size_t(g)];
      b.strided = Strided{xg, 1, HW};  // (pixel j, channel c) at j + c·HW
      Epilogue ep{bias + g * k_g, nullptr, relu_ == Relu::fused, false};
      // A pointwise layer's output past kStreamBytes per image: where the driver writes it in
      // one K slice, full tiles bypass the caches (AVX2's tile; on the AMD EPYC Zen 3 VM
      // MobileNet's pw2, 32 deep and 3.2 MB out, 1.38x faster at 1 thread, unchanged at 2).
      // Not when a separate ReLU pass reads y next.
      ep.stream = double(k_g * P) * 4 > kStreamBytes && (relu_ == Relu::none || relu_ == Relu::fused);
      float* c = y + (n * cv_.oc + g * k_g) * P;
      if (tid < 0)
        gemm_f32(isa_, k_g, P, c_g, a, b, c, P, ep, ws_, pool_.get());
      else
        gemm_f32_serial(isa_, k_g, P, c_g, a, b, c, P, ep, ws_, tid);
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
    lowp_.reset();
    packed_.clear();
    sums_ = {};
    ws_ = {};
    padded_ = {};
    chan_a_ = {};
    offsets_.clear();
    tiles_.clear();
    pixels_.clear();
    pool_.reset();
  }
  std::string details() const override {
    if (lowp_) return lowp_->details();
    const bool pixels = indirect_ && isa_ == Isa::avx2;
    const Tile t = channel_lanes_ ? Tile{kRowChannelsAvx512, kRowPixelsAvx512}
                   : pixels       ? Tile{kChannelsAvx2, kPixelsAvx2}
                                  : f32_tile(isa_);
    return "isa=" + std::string(name(isa_)) + " tile=" + std::to_string(t.mr) + "x" + std::to_string(t.nr) +
           (pixel_rows_      ? " pointwise, pixels as rows"
            : pointwise_     ? " pointwise"
            : channel_lanes_ ? " indirect, channels in lanes"
            : indirect_      ? " indirect"
                             : " implicit-im2col");
  }
  size_t scratch_bytes() const override {
    if (lowp_) return lowp_->scratch_bytes();
    size_t b = ws_.bytes() + padded_.bytes() + offsets_.size() * sizeof(int64_t);
    for (const Packed& p : packed_)
      b += p.bytes();
    return b + chan_a_.bytes() + sums_.bytes();
  }

 private:
  static constexpr int64_t kTileWidth = 32;  // pixels per tile: the AVX-512 tile's NR
  static constexpr int64_t kKc = 1024;       // as the packed GEMM's KC: C is revisited once per 1024 of depth
  static constexpr double kStreamBytes = 1 << 20;   // far past a 512 KiB L2
  static constexpr int64_t kFoldPixels = 256;       // columns a folded product aims at: 8 panels of 32
  static constexpr int64_t kLaneInputChannels = 4;  // channel_lanes_: input channels a group at most,
  static constexpr int64_t kLaneChannels = 16;      // or output channels a group at least
  static constexpr int64_t kLaneTiles = 8;          // channel_lanes_: tiles a panel's weights stay for
  struct Pixel {
    int64_t in, out;  // offsets in a group's padded image and in an output plane
  };

  // Input rows [h0, h1) of channels [c0, c1) of one image into the padded rows `pad` holds
  // from padded row row0 on (its phase images); the borders are never written.
  void pad_rows(const float* x, float* pad, int64_t c0, int64_t c1, int64_t h0, int64_t h1,
                int64_t row0 = 0) const {
    const int64_t IH = cv_.ih, IW = cv_.iw, SW = cv_.sw, phase = cv_.ic * rows_ * phase_w_;
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t h = h0; h < h1; ++h) {
        const float* row = x + (c * IH + h) * IW;
        float* dst = pad + (c * rows_ + h + cv_.ph - row0) * phase_w_;
        if (SW == 1) {
          std::copy(row, row + IW, dst + cv_.pw);
          continue;
        }
        split_phases(isa_ == Isa::avx512, row, IW, cv_.pw, SW, phase_w_, dst, phase);  // see the header
      }
  }

  // Pointwise, pixels as rows: per image Cᵀ (P × K) = Xᵀ (P × C) · Wᵀ (C × K) + bias into
  // sums_, bias and a fused ReLU in the GEMM's epilogue (per column now), then Cᵀ
  // transposed into y's K rows of P pixels. Batch < threads: the pool shares each image's
  // product, then its transpose by output channels; else whole images per thread. On
  // AVX-512 the transpose goes through registers in 16×16 blocks: on the Zen 4 VM its share
  // of pw8's samples 7.4 % → 2.4 %, pw8 / pw13 / pw14 1.03-1.06× faster at 1 and 2 threads,
  // pw8 at batch 8 1.11× / 1.14× (results/cpu-zen4-2core/2026-12-02_pixel-rows-transpose).
  void pixel_rows_product(const float* x, const float* bias, float* y) {
    const int64_t P = cv_.oh() * cv_.ow(), C = cv_.ic, K = cv_.oc;
    Operand b;
    b.packed = &packed_[0];
    const Epilogue ep{nullptr, bias, relu_ == Relu::fused, false};
    auto product = [&](int64_t n, float* sums, int tid) {
      Operand a;
      a.strided = Strided{x + n * C * P, 1, P};  // (pixel p, channel c) at p + c·P
      if (tid < 0)
        gemm_f32(isa_, P, K, C, a, b, sums, K, ep, ws_, pool_.get());
      else
        gemm_f32_serial(isa_, P, K, C, a, b, sums, K, ep, ws_, tid);
    };
    // Output channels [k0, k1) of one image from its Cᵀ.
    auto transpose = [&](const float* sums, float* yn, int64_t k0, int64_t k1) {
      pixel_rows_to_channels(isa_, sums, K, P, k0, k1, yn);
    };
    if (cv_.mb < threads_) {
      for (int64_t n = 0; n < cv_.mb; ++n) {
        product(n, sums_.data(), -1);
        pool_->run([&](int tid, int threads) {
          const Range part = split(K, 16, tid, threads);
          transpose(sums_.data(), y + n * K * P, part.first, part.last);
        });
      }
      return;
    }
    pool_->run([&](int tid, int threads) {
      float* sums = sums_.data() + tid * P * K;
      const Range part = split(cv_.mb, 1, tid, threads);
      for (int64_t n = part.first; n < part.last; ++n) {
        product(n, sums, tid);
        transpose(sums, y + n * K * P, 0, K);
      }
    });
  }

  // AVX2: padded rows [r0, r1) of one image into a window that starts at padded row row0:
  // input rows copied, the rows of the top and bottom padding zeroed (the window's slots
  // held other rows before).
  void fill_rows(const float* x, float* pad, int64_t r0, int64_t r1, int64_t row0) const {
    const int64_t phase = cv_.ic * rows_ * phase_w_;
    for (int64_t r = r0; r < r1; ++r) {
      if (r >= cv_.ph && r < cv_.ph + cv_.ih) continue;
      for (int64_t p = 0; p < cv_.sw; ++p)
        for (int64_t c = 0; c < cv_.ic; ++c) {
          float* d = pad + p * phase + (c * rows_ + r - row0) * phase_w_;
          std::fill(d, d + phase_w_, 0.0f);
        }
    }
    const int64_t h0 = std::max<int64_t>(r0 - cv_.ph, 0), h1 = std::min<int64_t>(r1 - cv_.ph, cv_.ih);
    if (h0 < h1) pad_rows(x, pad, 0, cv_.ic, h0, h1, row0);
  }

  // AVX2: output pixels in tiles of kPixelsAvx2, kBlock tiles (about one 56-pixel output row)
  // to a block, each block run over all output channels while its input rows are in cache.
  static constexpr int64_t kBlock = 10;
  int64_t pixel_blocks() const { return ceil_div(int64_t(pixels_.size()), kBlock * kPixelsAvx2); }
  Range block_pixels(int64_t b) const {
    return {b * kBlock * kPixelsAvx2, std::min(int64_t(pixels_.size()), (b + 1) * kBlock * kPixelsAvx2)};
  }
  // The padded rows a block reads: its output rows [oh0, oh1] read [oh0·SH, oh1·SH + (KH−1)·DH].
  Range padded_rows(int64_t b) const {
    const Range px = block_pixels(b);
    return {px.first / cv_.ow() * cv_.sh, (px.last - 1) / cv_.ow() * cv_.sh + (cv_.kh - 1) * cv_.dh + 1};
  }

  // One block of one image by the AVX2 indirect pixel tile, from a window of its padded
  // image that starts at padded row row0.
  void pixels_block(const float* pad, int64_t row0, const float* bias, float* y, int64_t b) const {
    constexpr int R = kChannelsAvx2, T = kPixelsAvx2;
    const int64_t P = cv_.oh() * cv_.ow(), c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g;
    const int64_t depth = int64_t(offsets_.size()), panels = ceil_div(k_g, int64_t(R));
    const Range px = block_pixels(b);
    IndirectPixelsArgs u;
    u.ldc = P;
    u.runs_of_3 = cv_.kw == 3 && cv_.sw == 1 && cv_.dw == 1;
    // Depth slices in whole runs of 3 where the tile takes them (runs start at multiples of 3).
    const int64_t slice = u.runs_of_3 ? kKc - kKc % 3 : kKc;
    u.relu = relu_ == Relu::fused;
    for (int64_t g = 0; g < cv_.g; ++g) {
      const float* xg = pad + g * c_g * rows_ * phase_w_;
      for (int64_t q = 0; q < panels; ++q) {
        u.m = int(std::min<int64_t>(R, k_g - q * R));
        u.bias_row = bias + g * k_g + q * R;
        float* yq = y + (g * k_g + q * R) * P;
        for (int64_t pc = 0; pc < depth; pc += slice) {
          u.kc = std::min(slice, depth - pc);
          u.a = chan_panel(g, q, depth) + pc * R;
          u.off = offsets_.data() + pc;
          u.load_c = pc > 0;
          u.last = pc + u.kc >= depth;
          for (int64_t p0 = px.first; p0 < px.last; p0 += T) {
            u.n = int(std::min<int64_t>(T, px.last - p0));
            for (int j = 0; j < T; ++j) {
              const Pixel& p = pixels_[size_t(p0 + (j < u.n ? j : 0))];
              u.x[j] = xg + (p.in - row0 * phase_w_);
              u.c[j] = yq + p.out;
            }
            ukr_f32_indirect_pixels_avx2(u);
          }
        }
      }
    }
  }

  // `copies` padded images (or windows) of `rows` rows a channel, and the k steps' offsets in
  // one. Borders stay zero; 32 more floats because the AVX-512 micro-kernel reads a whole tile
  // width past the last offset of a narrower tile.
  void make_padded(int64_t rows, int64_t copies) {
    rows_ = rows;
    padded_floats_ = cv_.sw * cv_.ic * rows_ * phase_w_ + kTileWidth;
    padded_ = AlignedBuffer<float>(size_t(padded_floats_ * copies));
    offsets_ = tap_offsets(cv_, cv_.ic / cv_.g, rows_, phase_w_, cv_.ic * rows_ * phase_w_);
  }

  // One image into the padded image `pad` on the whole pool: the image's (channel, row) pairs
  // split evenly (split by channels, AlexNet conv1's 3 left one of 2 threads two thirds of
  // the rows).
  void pad_image(const float* x, float* pad) {
    const int64_t IH = cv_.ih;
    pool_->run([&](int tid, int threads) {
      const Range part = split(cv_.ic * IH, 1, tid, threads);
      for (int64_t i = part.first; i < part.last;) {
        const int64_t c = i / IH, h0 = i % IH, h1 = std::min(IH, h0 + part.last - i);
        pad_rows(x, pad, c, c + 1, h0, h1);
        i += h1 - h0;
      }
    });
  }

  // Columns [j0, j0+count) × depth rows [k0, k0+kc) of the col matrix in NR-pixel panels, from
  // padded images padded_floats_ apart (column j: pixel j % P of image j / P; `pad` at a
  // group's first channel): element (k, pixel oh·OW + ow) at pad + offsets_[k] + oh·SH·phase_w_
  // + ow, zero past count: NR-pixel panels of pack_pixel_panel (common.h).
  void pack_padded(const float* pad, int64_t j0, int64_t count, int64_t k0, int64_t kc, int nr,
                   float* dst) const {
    const int64_t OW = cv_.ow(), P = cv_.oh() * OW;
    for (int64_t q = 0, panels = ceil_div(count, nr); q < panels; ++q)
      pack_pixel_panel(pad, padded_floats_, cv_.sh * phase_w_, OW, P, j0 + q * nr,
                       std::min<int64_t>(nr, count - q * nr), offsets_.data() + k0, kc, nr, false,
                       dst + q * kc * nr);
  }

  // The packed path (scalar; AVX-512 planes narrower than tiles_fill_lanes): each image padded
  // as the indirect path pads it, then per group C_g = W_g · col + bias on the GEMM driver, col's
  // panels built from the padded image (pack_padded). Batch < threads: the pool pads each image,
  // then shares its products; else each thread pads and multiplies its own images, fold_ at a
  // time as one product of fold_·P columns into its C block in sums_, copied into the images'
  // NCHW planes after.
  void packed_product(const float* x, const float* bias, float* y) {
    const int64_t P = cv_.oh() * cv_.ow(), IHW = cv_.ic * cv_.ih * cv_.iw;
    const int64_t c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g, depth = int64_t(offsets_.size());
    // One product of f padded images' columns (`pad`: the first) for group g into c.
    auto product = [&](const float* pad, int64_t f, int64_t g, float* c, int tid) {
      const float* pg = pad + g * c_g * rows_ * phase_w_;
      auto columns = [&, pg](int64_t j0, int64_t count, int64_t k0, int64_t kc, int nr, float* dst) {
        pack_padded(pg, j0, count, k0, kc, nr, dst);
      };
      const PackFn pack = columns;  // refers to `columns`, which outlives the product below
      Operand a, b;
      a.packed = &packed_[size_t(g)];
      b.pack = &pack;
      const Epilogue ep{bias + g * k_g, nullptr, relu_ == Relu::fused, false};
      if (tid < 0)
        gemm_f32(isa_, k_g, f * P, depth, a, b, c, f * P, ep, ws_, pool_.get());
      else
        gemm_f32_serial(isa_, k_g, f * P, depth, a, b, c, f * P, ep, ws_, tid);
    };
    if (cv_.mb < threads_) {
      for (int64_t n = 0; n < cv_.mb; ++n) {
        pad_image(x + n * IHW, padded_.data());
        for (int64_t g = 0; g < cv_.g; ++g)
          product(padded_.data(), 1, g, y + (n * cv_.oc + g * k_g) * P, -1);
      }
      return;
    }
    pool_->run([&](int tid, int threads) {
      const Range part = split(cv_.mb, 1, tid, threads);
      float* pad = padded_.data() + tid * fold_ * padded_floats_;
      float* sums = fold_ > 1 ? sums_.data() + tid * k_g * fold_ * P : nullptr;
      for (int64_t n0 = part.first; n0 < part.last; n0 += fold_) {
        const int64_t f = std::min(fold_, part.last - n0);
        for (int64_t i = 0; i < f; ++i)
          pad_rows(x + (n0 + i) * IHW, pad + i * padded_floats_, 0, cv_.ic, 0, cv_.ih);
        for (int64_t g = 0; g < cv_.g; ++g) {
          if (!sums) {
            product(pad, 1, g, y + (n0 * cv_.oc + g * k_g) * P, tid);
            continue;
          }
          product(pad, f, g, sums, tid);
          for (int64_t i = 0; i < f; ++i)
            for (int64_t k = 0; k < k_g; ++k)
              std::copy_n(sums + k * f * P + i * P, P, y + ((n0 + i) * cv_.oc + g * k_g + k) * P);
        }
      }
    });
  }

  // AVX-512: one image by indirect GEMM on the whole pool: pad it, then threads split the
  // pixel tiles. Each thread pads the input rows from the first its tiles read to the first
  // the next thread's read, every channel, so that its tiles find all but the filter's
  // overlap into the next thread's rows in its own core's caches.
  void indirect_image(const float* x, const float* bias, float* y) {
    const int64_t n_tiles = int64_t(tiles_.size());
    float* pad = padded_.data();
    pool_->run([&](int tid, int threads) {
      const auto first_row = [&](int t) -> int64_t {  // non-decreasing in t: tiles in raster order
        if (t == 0) return 0;
        if (t >= threads) return cv_.ih;
        const int64_t first = split(n_tiles, 1, t, threads).first;
        if (first >= n_tiles) return cv_.ih;
        return std::clamp<int64_t>(tiles_[size_t(first)].oh * cv_.sh - cv_.ph, 0, cv_.ih);
      };
      const int64_t h0 = first_row(tid), h1 = first_row(tid + 1);
      if (h0 < h1) pad_rows(x, pad, 0, cv_.ic, h0, h1);
    });
    pool_->run([&](int tid, int threads) { tiles(pad, bias, y, split(n_tiles, 1, tid, threads)); });
  }

  // Tiles [part.first, part.last) of one image from its padded image `pad` into y.
  void tiles(const float* pad, const float* bias, float* y, Range part) const {
    if (channel_lanes_)
      lane_tiles(pad, bias, y, part);
    else
      indirect_tiles(pad, bias, y, part);
  }

  // Output rows of `ow` pixels in tiles of at most kRowPixelsAvx512, a row's tiles of
  // (nearly) equal width: 55 → 14 + 14 + 14 + 13, 112 → 8 × 14, 31 → 11 + 11 + 9.
  static std::vector<PixelTile> row_tiles(int64_t oh, int64_t ow) {
    std::vector<PixelTile> t;
    const int64_t per_row = ceil_div(ow, int64_t(kRowPixelsAvx512)), width = ceil_div(ow, per_row);
    for (int64_t h = 0; h < oh; ++h)
      for (int64_t w = 0; w < ow; w += width)
        t.push_back({h, w, std::min(width, ow - w)});
    return t;
  }

  // AVX-512 row tiles [part.first, part.last) (row_tiles) of one image from its padded image
  // `pad` into y, kLaneTiles at a time, each group's channel panels in turn over them: a
  // panel's weights (32 × depth floats: AlexNet conv1's 46 KB) stay in L1 or L2 across them.
  void lane_tiles(const float* pad, const float* bias, float* y, Range part) const {
    const int64_t P = cv_.oh() * cv_.ow(), c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g;
    const int64_t depth = int64_t(offsets_.size()), R = kRowChannelsAvx512;
    IndirectRowArgs u;
    u.kc = depth;
    u.off = offsets_.data();
    u.ldc = P;
    u.relu = relu_ == Relu::fused;
    for (int64_t i0 = part.first; i0 < part.last; i0 += kLaneTiles) {
      const int64_t i1 = std::min(part.last, i0 + kLaneTiles);
      for (int64_t g = 0; g < cv_.g; ++g)
        for (int64_t q = 0; q * R < k_g; ++q) {
          u.m = int(std::min(R, k_g - q * R));
          u.a = chan_panel(g, q, depth);
          u.bias_row = bias + g * k_g + q * R;
          for (int64_t i = i0; i < i1; ++i) {
            const PixelTile& pt = tiles_[size_t(i)];
            u.n = int(pt.n);
            u.x = pad + (g * c_g * pad_h_ + pt.oh * cv_.sh) * phase_w_ + pt.ow;
            u.c = y + (g * k_g + q * R) * P + pt.oh * cv_.ow() + pt.ow;
            ukr_f32_indirect_row_avx512(u);
          }
        }
    }
  }

  // The channels-in-lanes tiles' weights (chan_a_): panels of chan_lanes() channels, the last as
  // wide as its channels rounded up to 16; panel q of group g, k-major, at (g·⌈K_g⌉₁₆ + q·R)·depth.
  int64_t chan_lanes() const { return isa_ == Isa::avx2 ? kChannelsAvx2 : kRowChannelsAvx512; }
  const float* chan_panel(int64_t g, int64_t q, int64_t depth) const {
    return chan_a_.data() + (g * round_up(cv_.oc / cv_.g, 16) + q * chan_lanes()) * depth;
  }

  // Pixel tiles [part.first, part.last) of one image from its padded image `pad` into y; each
  // tile runs every group's row panels over the whole depth in KC slices.
  void indirect_tiles(const float* pad, const float* bias, float* y, Range part) const {
    const int64_t P = cv_.oh() * cv_.ow();
    const int64_t c_g = cv_.ic / cv_.g, k_g = cv_.oc / cv_.g, depth = int64_t(offsets_.size());
    const Tile t = f32_tile(isa_);
    IndirectArgs u;
    u.ldc = P;
    u.relu = relu_ == Relu::fused;
    u.next_row = cv_.sh * phase_w_ - cv_.ow();
    for (int64_t i = part.first; i < part.last; ++i) {
      const PixelTile& pt = tiles_[size_t(i)];
      u.n = int(pt.n);
      u.split = pt.ow + pt.n > cv_.ow() ? int(cv_.ow() - pt.ow) : int(kTileWidth);
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
  }

  Conv2d cv_;
  Relu relu_ = Relu::none;
  Isa isa_ = Isa::scalar;
  int threads_ = 1;
  bool pointwise_ = false;
  bool pixel_rows_ = false;  // pointwise with pixels as C's rows (pixel_rows_product)
  bool indirect_ = false;
  bool channel_lanes_ = false;  // AVX-512: the row tile with channels in the lanes (lane_tiles)
  int64_t pad_h_ = 0, phase_w_ = 0;
  int64_t rows_ = 0;           // padded rows held per channel: all (AVX-512), a window (AVX2)
  int64_t padded_floats_ = 0;  // one padded image or window
  AlignedBuffer<float> padded_;
  std::vector<int64_t> offsets_;
  std::vector<PixelTile> tiles_;  // AVX-512 (channel_lanes_: row_tiles)
  std::vector<Pixel> pixels_;     // AVX2
  AlignedBuffer<float> chan_a_;   // AVX2, channel_lanes_: the weights in channel panels (chan_panel)
  AlignedBuffer<float> sums_;     // pixel_rows_: Cᵀ of one image (per thread where each has images);
                                  // fold_ > 1: each thread's C block of fold_ images
  int64_t fold_ = 1;              // packed path: images per product
  std::unique_ptr<Pool> pool_;
  std::vector<Packed> packed_;
  Workspace ws_;
  std::unique_ptr<Kernel> lowp_;  // bf16 and int8 (conv2d_lowp.cpp); null for f32
};

}  // namespace

std::unique_ptr<Kernel> make_conv2d() {
  return std::make_unique<ImplicitGemmConv>();
}

}  // namespace lb::cpu
