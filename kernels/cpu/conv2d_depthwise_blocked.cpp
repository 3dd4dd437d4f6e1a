// conv2d.cpu.depthwise_blocked — depthwise 3×3 convolution (G = C = K, stride 1 or 2 both
// ways, dilation 1), f32, with the activations taken to stay in a channel-blocked layout
// nChwLc ([N][C/L][H][W][L]: nChw16c on AVX-512, nChw8c on AVX2, one vector of channels per
// pixel) between layers, as conv2d.onednn.blocked takes them to stay in oneDNN's: prepare()
// converts x from NCHW once, finish() converts y (and relu_dst) back, both untimed; run() is
// the convolution alone, reading and writing nChwLc. The question it answers: how our
// compute does against oneDNN's when neither pays for a layout change.
//
// Compute: the channels-as-lanes step of conv2d.cpu.depthwise's c8 path (depthwise_lanes.h),
// straight on the blocked tensors instead of on transposed bands: per image and group of L
// channels (one unit of work, split across the pool as that path splits its units), per
// output row, the three input rows it reads are three pointers into x (a row of zeros for
// the rows outside the image), the interior outputs — those whose three tap columns lie
// inside the row — go kStep at a time through lane_outputs(), and the 1-2 outputs per row
// whose taps reach into the left or right padding one at a time with the taps outside
// skipped. Bias and relu=fused are in the store; relu=inplace/separate is a pass over the
// blocked y inside run(), as conv2d.onednn.blocked keeps its ReLU pass in the timed part.
// C % L ≠ 0: the last group is zero-padded (x, weights and bias lanes past C are 0), and
// finish() copies back the channels that exist.
//
// Prediction (AVX2, per 8 outputs = 8 channels × 1 pixel): bytes, the blocked x and y once:
// stride 1 32 B in + 32 B out, stride 2 128 B in + 32 B out — the same as NCHW; the c8 path
// of conv2d.cpu.depthwise moves them twice more, through its bands (in L1). FLOPs: 144 (9
// FMAs). Instructions: 9 FMAs, 1 store, and (kStep outputs sharing each loaded pixel) 4.2
// loads at stride 1 (21 per 5), 6.5 at stride 2 (39 per 6): ~15-17, against ~25 (stride 1)
// and ~40 (stride 2) for the c8 path with its transposes and ~13 for rows_s1. Bound: the
// FMAs, 4.5 cycles per 8 outputs at 2 per cycle (loads, at 2 per cycle, 2.1-3.3 cycles), so
// dw2 at batch 1 (50 k pixel-vectors) ~75 µs at 3 GHz; oneDNN's jit_dw:avx2 does the same 9
// FMAs per output vector, so the prediction is parity (~1.0×) where both are FMA-bound, and
// at batch 32 (x and y ~100 MB, past the caches) both bound by DRAM on the same bytes.
//
// Measured (2-core Zen 3 EPYC VM, AVX2, shared with other work while measured; one
// `layerbench run` of the nine MobileNet depthwise shapes of cpu_targets at batch 1 and 32,
// 1 and 2 threads, ratio = conv2d.onednn.blocked's time / ours, means): batch 1 1.21-2.29×
// (dw2 on 1 thread 111 µs, ~2/3 of the FMA bound above; oneDNN 161 µs, further below it than
// predicted); batch 32 1.05-2.65× except dw7 on 1 thread, 0.91×
// (3.18 ms vs 2.9 ms; 1.12× in an earlier run of the same stride-2 code, so stride 2 at
// batch 32, bound by DRAM on the same bytes as oneDNN, is parity within this VM's noise).
// Against the c8 path of conv2d.cpu.depthwise on the same planes (batch 1, 1 thread): dw13
// 9.5 µs vs 26 µs, dw14 28 µs vs 52 µs — the transposes were most of its time, as predicted.
// Non-temporal y (stride 1, x and y past kOutgrowsCachesBytes), measured against plain stores in
// alternating runs at batch 32: dw2 6.0 / 5.6 ms vs 6.9 / 8.0 (1 thread), dw4 and dw6 at 2
// threads 5-30 % faster, dw8 / dw14 within the noise; at stride 2 (y a fifth of the bytes)
// no gain (dw3 9.3 vs 8.3 ms), so it streams at stride 1 only. Software prefetch of the
// input a row ahead + 2-64 KB, tried then on the Zen 3 VM: dw3 at batch 32 10-20 % slower
// than the hardware prefetchers alone.
//
// Prefetch one output row ahead (prefetch_step(), x and y past kOutgrowsCachesBytes, rows of ≥
// kPrefetchMinRow pixels). Seen on the 2-core Zen 5 VM: at batch 32, dw3 and dw5 (stride 2)
// moved x and y at 17-29 GB/s against a DRAM read peak of 36-39 GB/s, and dw3 at batch 1 ran
// 4.4× faster per image (1 thread), so the row walk waited on memory latency, not bandwidth.
// Each step of kStep outputs now prefetches the S input rows that the next output row adds,
// at the columns the step reads. Measured there, the same build with the prefetch on and off
// alternately, 3 runs each, time off ÷ on, median of the pairs
// (results/cpu-zen5-2core/2026-12-03_depthwise-prefetch):
//   AVX-512, batch 32, 28-112-pixel rows: 1.04-2.05× (dw3 on 2 threads 1.04×, the least);
//   in the same runs the cases where it stays off, as the control: 0.89-1.23×;
//   14- and 7-pixel rows (dw8, dw13, dw14 at batch 32) with it on, 3 pairs: 0.87-1.04×,
//   so no gain there, hence kPrefetchMinRow;
//   batch 1 (in the caches) with it on, 2 pairs: 0.65-1.19×, hence kOutgrowsCachesBytes;
//   AVX2 (LB_CPU_ISA=avx2 on the same host, not on an AVX2-only CPU), batch 32: 1.09-1.77×.
// Against conv2d.onednn.blocked (AVX-512, median of 3 runs) this took the depthwise cases at
// ≥ 1.0× from 32 to 35 of 36; dw3 at batch 32 on 2 threads stays at 0.92×: ours moved x and y
// at 32-37 GB/s there (39-45 counting y's read for ownership; the read probe gives 38.7, the
// triad 52), oneDNN at 34-38. Non-temporal y at stride 2, with the prefetch, 6 alternating
// pairs: 0.92-1.07×, so it is still not used. Why one row ahead, in time ÷ one row's on
// the stride-2 batch-32 cases: 2 rows ahead (2 pairs) dw3 1.07-1.26, dw7 on 2 threads
// 0.63-0.85; 3 rows ahead (3 pairs) 0.80-1.26, median ~1.1; the L2 hint (T1) instead of T0
// 1.06-1.63 in all 18 pairs.
//
// AVX-512 (16 lanes, zmm): first written with 8 lanes everywhere. Prediction on the 2-core
// AMD EPYC Zen 5 VM: its FMA rate on ymm is half that on zmm (measured there, 12 chains, 1
// thread: 117-119 against 237-240 GFLOP/s; layerbench's f32 peak is the zmm one), so 8
// lanes cap the kernel at 50 % of peak; it ran at 30-43 % of peak at batch 1
// (cache-resident, FMA-bound). The same instructions on zmm do
// twice the outputs: predicted up to 2× where FMA-bound (batch 1), ~1× where DRAM-bound on
// the same bytes (batch 32, stride 2). Measured there, 8 against 16 lanes in old and new
// builds alternately, 3 runs each, fastest repetition per run, median over runs
// (results/cpu-zen5-2core/2026-12-02_depthwise-16-lanes): 1.03-1.84× faster on all 36
// cases (batch 1 1.12-1.84×, batch 32 1.03-1.82×), conv2d.onednn.blocked in the same runs
// 0.92-1.08× (the control). Steps of 8 or 12/10 outputs instead of 5/6 (zmm has the
// registers), 2 runs: 0.14-1.2× as fast (above 1.1× on three 2-thread cases only, 0.3-0.6×
// at stride 2); non-temporal y at stride 2, 4 runs of the batch-32 cases: 0.94-1.55×,
// against 0.98-1.13× for the controls, and slower at 1 thread on two of four: not used.
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/common.h"
#include "kernels/cpu/depthwise_lanes.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"

namespace lb::cpu {
namespace {

// What every unit shares, fixed in prepare().
struct Shape {
  int64_t N = 0, C = 0, L = 8, groups = 0;  // L channels per block (the lanes), groups = ceil(C / L)
  int64_t H = 0, W = 0, P = 0, Q = 0, S = 1, PH = 0, PW = 0;
  int64_t q_first = 0, q_end = 0;  // the interior outputs of a row: [q_first, q_end)
  // y stored non-temporally (no read for ownership of the lines it overwrites whole): at
  // stride 1 when x and y together outgrow the caches (kOutgrowsCachesBytes).
  bool stream = false;
  // The input the next output row adds prefetched as each step is computed (prefetch_step()):
  // when x and y outgrow the caches and input rows are at least kPrefetchMinRow pixels.
  bool prefetch = false;
};
constexpr int64_t kPrefetchMinRow = 16;

// Software prefetch of the S input rows that output row p + 1 adds to p's (rows p·S - PH + 3
// onwards; `next` points at the first), at the N·S columns from `col` that the step of N
// outputs at input column col reads in p's rows: one row ahead, keeping pace with the
// compute. Past the group's last row it reaches the next unit's first rows (units are
// contiguous in x), or past x's end for the last one; a prefetch never faults. Addresses are
// integers, as they may lie outside x.
template <class I, int S, int N>
inline void prefetch_step(uintptr_t next, int64_t W, int64_t col) {
  constexpr int64_t kPixel = int64_t(sizeof(float)) * I::kLanes;
  constexpr int kPixelsPerLine = kPixel >= 64 ? 1 : int(64 / kPixel);
  for (int r = 0; r < S; ++r)
    for (int c = 0; c < N * S; c += kPixelsPerLine)
      _mm_prefetch(reinterpret_cast<const char*>(next + uintptr_t(kPixel * (W * r + col + c))), _MM_HINT_T0);
}

// One output whose taps may reach outside the row (input column col0 + s for tap s): the
// taps outside skipped.
template <class I, bool STREAM>
inline void edge_output(const float* const (&rows)[3], int64_t col0, int64_t W,
                        const typename I::V (&wv)[3][3], const float* bias, bool relu, float* out) {
  constexpr int L = I::kLanes;
  typename I::V acc = I::load(bias);
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s)
      if (col0 + s >= 0 && col0 + s < W) acc = I::fma(I::load(rows[r] + L * (col0 + s)), wv[r][s], acc);
  const typename I::V v = relu ? I::max0(acc) : acc;
  if constexpr (STREAM)
    I::stream(out, v);
  else
    I::store(out, v);
}

// One image's group of L channels: x is its H×W×L block, y its P×Q×L block, wg / bg the
// group's packed weights and bias, zero a row of W zero pixels.
template <class I, int S, bool STREAM>
inline void group(const Shape& sh, const float* x, float* y, const float* wg, const float* bg, bool relu,
                  const float* zero) {
  constexpr int L = I::kLanes, kStep = I::kStep[S - 1];
  const int64_t W = sh.W, Q = sh.Q;
  typename I::V wv[3][3];
  lane_weights<I>(wg, wv);
  for (int64_t p = 0; p < sh.P; ++p) {
    const float* rows[3];
    for (int r = 0; r < 3; ++r) {
      const int64_t h = p * S - sh.PH + r;
      rows[r] = h >= 0 && h < sh.H ? x + L * W * h : zero;
    }
    float* out = y + L * Q * p;
    int64_t q = 0;
    for (; q < std::min(sh.q_first, Q); ++q)
      edge_output<I, STREAM>(rows, q * S - sh.PW, W, wv, bg, relu, out + L * q);
    const uintptr_t next =
        reinterpret_cast<uintptr_t>(x) + uintptr_t(int64_t(sizeof(float)) * L * W * (p * S - sh.PH + 3));
    for (; q + kStep <= sh.q_end; q += kStep) {
      if (sh.prefetch) prefetch_step<I, S, kStep>(next, W, q * S - sh.PW);
      lane_outputs<I, S, kStep, STREAM>(rows, q * S - sh.PW, wv, bg, relu, out + L * q);
    }
    if (q < sh.q_end) {
      lane_last_outputs<I, S, kStep - 1, STREAM>(rows, q * S - sh.PW, wv, bg, relu, out + L * q,
                                                 sh.q_end - q);
      q = sh.q_end;
    }
    for (; q < Q; ++q)
      edge_output<I, STREAM>(rows, q * S - sh.PW, W, wv, bg, relu, out + L * q);
  }
}

// Units [first, last) of the N·groups (image n, group g).
template <class I>
inline void units(const Shape& sh, const float* x, float* y, const float* wpack, const float* bpack,
                  bool relu, const float* zero, int64_t first, int64_t last) {
  constexpr int L = I::kLanes;
  const int64_t in = L * sh.H * sh.W, out = L * sh.P * sh.Q;
  for (int64_t u = first; u < last; ++u) {
    const int64_t g = u % sh.groups;
    const float* xu = x + u * in;
    float* yu = y + u * out;
    const float *wg = wpack + 9 * L * g, *bg = bpack + L * g;
    if (sh.S == 2)
      group<I, 2, false>(sh, xu, yu, wg, bg, relu, zero);
    else if (sh.stream)
      group<I, 1, true>(sh, xu, yu, wg, bg, relu, zero);
    else
      group<I, 1, false>(sh, xu, yu, wg, bg, relu, zero);
  }
  if (sh.stream) I::fence();  // the non-temporal stores ordered before run() returns
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma"), flatten)) void units_avx512(
    const Shape& sh, const float* x, float* y, const float* wpack, const float* bpack, bool relu,
    const float* zero, int64_t first, int64_t last) {
  units<Lanes16>(sh, x, y, wpack, bpack, relu, zero, first, last);
}
__attribute__((target("avx2,fma"), flatten)) void units_avx2(const Shape& sh, const float* x, float* y,
                                                             const float* wpack, const float* bpack,
                                                             bool relu, const float* zero, int64_t first,
                                                             int64_t last) {
  units<Lanes8>(sh, x, y, wpack, bpack, relu, zero, first, last);
}

// NCHW (C channels) ↔ nChwLc (groups of L, the lanes past C zero) of `plane` = H·W pixels each.
void to_blocked(const float* src, float* dst, int64_t N, int64_t C, int64_t L, int64_t groups,
                int64_t plane) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const float* s = src + (n * C + c) * plane;
      float* d = dst + (n * groups + c / L) * L * plane + c % L;
      for (int64_t i = 0; i < plane; ++i)
        d[L * i] = s[i];
    }
}
void from_blocked(const float* src, float* dst, int64_t N, int64_t C, int64_t L, int64_t groups,
                  int64_t plane) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const float* s = src + (n * groups + c / L) * L * plane + c % L;
      float* d = dst + (n * C + c) * plane;
      for (int64_t i = 0; i < plane; ++i)
        d[i] = s[L * i];
    }
}

class CpuConv2dDepthwiseBlocked final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32}); !why.empty()) return why;
    const Conv2d& c = p.conv();
    if (!c.depthwise()) return "takes depthwise convolutions (g = ic = oc) only";
    if (c.kh != 3 || c.kw != 3 || c.dh != 1 || c.dw != 1 || c.sh != c.sw || (c.sh != 1 && c.sh != 2))
      return "3x3, stride 1 or 2 both ways, dilation 1 only (conv2d.cpu.depthwise takes the rest)";
    if (best_isa() == Isa::scalar) return "needs AVX2 (best ISA here: scalar)";
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    const Conv2d& c = p.conv();
    relu_ = p.relu;
    const int64_t L = best_isa() == Isa::avx512 ? Lanes16::kLanes : Lanes8::kLanes;
    sh_ = Shape{.N = c.mb,
                .C = c.ic,
                .L = L,
                .groups = ceil_div(c.ic, L),
                .H = c.ih,
                .W = c.iw,
                .P = c.oh(),
                .Q = c.ow(),
                .S = c.sh,
                .PH = c.ph,
                .PW = c.pw};
    // Interior outputs: tap columns q·S - PW .. q·S - PW + 2 all inside [0, W).
    sh_.q_first = std::min(sh_.Q, ceil_div(sh_.PW, sh_.S));
    sh_.q_end = sh_.W + sh_.PW < 3 ? 0 : std::min(sh_.Q, (sh_.W + sh_.PW - 3) / sh_.S + 1);
    sh_.q_end = std::max(sh_.q_end, sh_.q_first);
    const bool outgrows = int64_t(sizeof(float)) * sh_.N * L * sh_.groups * (sh_.H * sh_.W + sh_.P * sh_.Q) >
                          kOutgrowsCachesBytes;
    sh_.stream = sh_.S == 1 && outgrows;
    sh_.prefetch = outgrows && sh_.W >= kPrefetchMinRow;
    pool_ = std::make_unique<Pool>(std::max(1, ctx.threads));
    const int64_t blocks = sh_.N * sh_.groups;
    x_ = AlignedBuffer<float>(size_t(blocks * L * sh_.H * sh_.W));
    y_ = AlignedBuffer<float>(size_t(blocks * L * sh_.P * sh_.Q));
    if (relu_ == Relu::separate) r_ = AlignedBuffer<float>(y_.size());
    zero_ = AlignedBuffer<float>(size_t(L * sh_.W));
    wpack_ = AlignedBuffer<float>(size_t(9 * L * sh_.groups));
    bpack_ = AlignedBuffer<float>(size_t(L * sh_.groups));
    lane_pack(ts.at(Arg::wei).as<float>(), ts.at(Arg::bias).as<float>(), sh_.C, sh_.groups, int(L),
              wpack_.data(), bpack_.data());
    to_blocked(ts.at(Arg::src).as<float>(), x_.data(), sh_.N, sh_.C, L, sh_.groups, sh_.H * sh_.W);
  }

  void run(TensorSet&) override {
    const int64_t units = sh_.N * sh_.groups;
    const bool fused = relu_ == Relu::fused;
    pool_->run([&](int tid, int n) {
      const Range range = split(units, 1, tid, n);
      if (range.first >= range.last) return;
      (sh_.L == Lanes16::kLanes ? units_avx512 : units_avx2)(sh_, x_.data(), y_.data(), wpack_.data(),
                                                             bpack_.data(), fused, zero_.data(), range.first,
                                                             range.last);
    });
    if (relu_ != Relu::inplace && relu_ != Relu::separate) return;
    // The ReLU pass over the blocked y, as relu_pass() does over a tensor (NaN kept).
    float* dst = relu_ == Relu::inplace ? y_.data() : r_.data();
    const float* src = y_.data();
    const int64_t n = int64_t(y_.size());
    pool_->run([&](int tid, int threads) {
      const Range part = split(n, 1024, tid, threads);
      for (int64_t i = part.first; i < part.last; ++i)
        dst[i] = src[i] > 0.0f ? src[i] : (src[i] != src[i] ? src[i] : 0.0f);
    });
  }

  void finish(TensorSet& ts) override {
    const int64_t plane = sh_.P * sh_.Q;
    from_blocked(y_.data(), ts.at(Arg::dst).as<float>(), sh_.N, sh_.C, sh_.L, sh_.groups, plane);
    if (relu_ == Relu::separate)
      from_blocked(r_.data(), ts.at(Arg::relu_dst).as<float>(), sh_.N, sh_.C, sh_.L, sh_.groups, plane);
  }

  void release() override {
    pool_.reset();
    for (AlignedBuffer<float>* b : {&x_, &y_, &r_, &zero_, &wpack_, &bpack_})
      *b = AlignedBuffer<float>();
  }

  std::string details() const override {
    return std::string(sh_.L == Lanes16::kLanes ? "avx512, x and y nChw16c" : "avx2, x and y nChw8c") +
           (sh_.stream ? ", y non-temporal" : "") + (sh_.prefetch ? ", x prefetched a row ahead" : "");
  }

  size_t scratch_bytes() const override {
    return x_.bytes() + y_.bytes() + r_.bytes() + zero_.bytes() + wpack_.bytes() + bpack_.bytes();
  }

 private:
  Relu relu_ = Relu::none;
  Shape sh_;
  // x and y (and relu_dst) in nChwLc, a row of zeros, packed weights and bias.
  AlignedBuffer<float> x_, y_, r_, zero_, wpack_, bpack_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace

std::unique_ptr<Kernel> make_depthwise_blocked_conv2d() {
  return std::make_unique<CpuConv2dDepthwiseBlocked>();
}

}  // namespace lb::cpu
