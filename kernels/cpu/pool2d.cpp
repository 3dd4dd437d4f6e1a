// pool2d.cpu.default — max and average pooling (kernels/ops/pool2d.h), NCHW, f32 and bf16.
//
// Separable, per plane: a window's max (or sum) is the max over its K rows of each row's
// max over its K columns. So each input row the output reads is reduced once across
// (row[q] = max_s x[h][q·S - P + s], the taps outside the row left out), into a K-row ring
// of reduced rows; an output row is then the element-wise max (sum) of the K rows of the
// ring its window covers, contiguous and vectorised. Windows overlap when S < K (AlexNet's
// 3×3 stride 2: each input row serves up to two output rows, reduced across once, not
// twice). Rows of padding are left out of a max and are zeros in a sum; an average
// divides by K² (PyTorch's count_include_pad). bf16 is read into f32 a row at a time and
// rounded once at the store. relu=fused is a max with 0 in the store (relu6 a clip to
// [0, 6]); inplace and separate
// are relu_pass() after. Threads: planes (image × channel) split evenly.
//
// Prediction: no products; every input read once from memory and every output written
// once, so time ≥ (x + y bytes) / bandwidth, with x K²/S² times y (AlexNet pool1: 3×3 s2
// on 64×55×55 f32 at batch 1, 775 KB read + 187 KB written: ~10 µs at the 100 GB/s an L2-
// and L3-resident plane streams at on one Zen 5 core; batch 32: 31 MB, DRAM's ~35 GB/s,
// ~0.9 ms). The across pass costs K loads per reduced value (strided where S > 1), the
// down pass K per output: (K·Q·rows + K·Q·P) loads per plane, about 1.5 loads per input
// element for 3×3 stride 2, so one core's two loads a cycle keep up with L2.
// A global pool (K = H = W) is one contiguous reduction per plane, in 16 partial results.
//
// Measured (AMD EPYC Zen 5 VM, 1 thread, 2026-12-07, `layerbench run` means, with another
// single-threaded run on the other core): against pool2d.onednn.default (NCHW as given),
// speed ours / oneDNN's, f32 then bf16, batch 1 / 32 — AlexNet pool1 (64×55×55, 3×3 s2)
// 0.51 / 0.92 and 0.27 / 0.34; ResNet-50's first (64×112×112, 3×3 s2 p1) 0.72 / 1.24 and
// 0.51 / 0.64; ResNet-50's global 7×7 over 2048 channels 0.53 / 0.67 and 0.38 / 0.38.
// Behind oneDNN but at batch 32 in f32: the per-plane work (a row ring, a call per row) is
// what costs at batch 1 and on 7×7 planes; bf16 widens each row before reducing it. The
// first version (scalar across the window, dtype.h's out-of-line bf16 conversions) read
// 0.07-0.64×.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/pool.h"

namespace lb::cpu {
namespace {

class Pool2dKernel final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    return require_dtypes(p, {DType::f32, DType::bf16});
  }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    q_ = p.pool();
    relu_ = p.relu;
    bf16_ = p.dt == DType::bf16;
    threads_ = std::max(1, ctx.threads);
    pool_ = std::make_unique<Pool>(threads_);
    // Per thread: the ring of K reduced rows, one output row, and (bf16) one input row in
    // f32, or for a global pool the plane.
    const int64_t Q = q_.ow();
    per_thread_ = size_t(q_.k * Q + Q + (bf16_ ? q_.ih * q_.iw : 0));
    scratch_ = AlignedBuffer<float>(per_thread_ * size_t(threads_));
  }

  void run(TensorSet& ts) override {
    const int64_t planes = q_.mb * q_.ic;
    const Tensor& src = ts.at(Arg::src);
    Tensor& dst = ts.at(Arg::dst);
    pool_->run([&](int tid, int n) {
      const int64_t first = planes * tid / n, last = planes * (tid + 1) / n;
      float* scratch = scratch_.data() + per_thread_ * size_t(tid);
      for (int64_t plane = first; plane < last; ++plane)
        run_plane(src, dst, plane, scratch);
    });
    relu_pass(relu_, ts, pool_.get());
  }

  size_t scratch_bytes() const override { return scratch_.size() * sizeof(float); }
  void release() override {
    pool_.reset();
    scratch_ = AlignedBuffer<float>();
  }

 private:
  // Row reductions across the window's K columns, columns [c0, c1) whose windows lie inside
  // the row. K and S are std::integral_constant for the common windows, so that the loop
  // is unrolled and vectorised (strided loads for S = 2), or int64_t for the others.
  template <bool Avg, class Kv, class Sv>
  static void across(const float* x, float* r, int64_t c0, int64_t c1, int64_t pad, Kv K, Sv S) {
    for (int64_t c = c0; c < c1; ++c) {
      const float* w = x + c * int64_t(S) - pad;
      float acc = w[0];
      for (int64_t s = 1; s < int64_t(K); ++s)
        acc = Avg ? acc + w[s] : std::max(acc, w[s]);
      r[c] = acc;
    }
  }
  template <bool Avg>
  void across_inside(const float* x, float* r, int64_t c0, int64_t c1) const {
    using Three = std::integral_constant<int64_t, 3>;
    using Two = std::integral_constant<int64_t, 2>;
    using One = std::integral_constant<int64_t, 1>;
    const int64_t K = q_.k, S = q_.s, pad = q_.p;
    if (K == 3 && S == 2) return across<Avg>(x, r, c0, c1, pad, Three{}, Two{});
    if (K == 2 && S == 2) return across<Avg>(x, r, c0, c1, pad, Two{}, Two{});
    if (K == 3 && S == 1) return across<Avg>(x, r, c0, c1, pad, Three{}, One{});
    across<Avg>(x, r, c0, c1, pad, K, S);
  }

  // The plane's values in f32: the tensor's own where it is f32, else widened into `buf`.
  const float* plane_f32(const Tensor& src, int64_t first, int64_t n, float* buf) const {
    if (!bf16_) return src.as<float>() + first;
    const uint16_t* b = src.as<uint16_t>() + first;
    for (int64_t i = 0; i < n; ++i)
      buf[i] = bf16_to_f32(b[i]);
    return buf;
  }

  void store(Tensor& dst, int64_t at, const float* out, int64_t n, float scale) const {
    const bool fused = fused_relu(relu_);
    const float top = relu_ == Relu::relu6 ? 6.0f : INFINITY;
    if (bf16_) {
      uint16_t* y = dst.as<uint16_t>() + at;
      for (int64_t c = 0; c < n; ++c)
        y[c] = f32_to_bf16(fused ? std::min(std::max(out[c] * scale, 0.0f), top) : out[c] * scale);
    } else {
      float* y = dst.as<float>() + at;
      for (int64_t c = 0; c < n; ++c)
        y[c] = fused ? std::min(std::max(out[c] * scale, 0.0f), top) : out[c] * scale;
    }
  }

  // A global pool (the window is the whole plane): one reduction of H·W contiguous values,
  // in 16 running partial results (vectorised; an average's sum in another order than the
  // reference's, which its allowance covers).
  void run_global(const Tensor& src, Tensor& dst, int64_t plane, float* scratch) const {
    const int64_t n = q_.ih * q_.iw;
    const bool avg = q_.alg == Pool2d::Alg::avg;
    const float* x = plane_f32(src, plane * n, n, scratch);
    constexpr int kLanes = 16;
    float part[kLanes];
    int64_t i = 0;
    if (n >= kLanes) {
      std::copy(x, x + kLanes, part);
      for (i = kLanes; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j)
          part[j] = avg ? part[j] + x[i + j] : std::max(part[j], x[i + j]);
    } else {
      std::fill(part, part + kLanes, avg ? 0.0f : x[0]);
    }
    float acc = part[0];
    for (int j = 1; j < kLanes; ++j)
      acc = avg ? acc + part[j] : std::max(acc, part[j]);
    for (; i < n; ++i)
      acc = avg ? acc + x[i] : std::max(acc, x[i]);
    store(dst, plane, &acc, 1, avg ? 1.0f / float(n) : 1.0f);
  }

  void run_plane(const Tensor& src, Tensor& dst, int64_t plane, float* scratch) const {
    const Pool2d& q = q_;
    const int64_t H = q.ih, W = q.iw, P = q.oh(), Q = q.ow(), K = q.k, S = q.s, pad = q.p;
    if (K == H && K == W && pad == 0) return run_global(src, dst, plane, scratch);
    const bool avg = q.alg == Pool2d::Alg::avg;
    float* ring = scratch;      // K reduced rows of Q, input row h at slot h % K
    float* out = ring + K * Q;  // one output row
    float* widened = out + Q;   // bf16: one input row in f32
    // The columns whose window stays inside the row (no bounds checks there): from the
    // first whose window starts at or after column 0 to the last that ends before W.
    const int64_t q_lo = std::min(Q, (pad + S - 1) / S);
    const int64_t q_hi = W + pad - K < 0 ? q_lo : std::clamp((W + pad - K) / S + 1, q_lo, Q);
    auto reduce_across = [&](int64_t h) {
      float* r = ring + (h % K) * Q;
      const float* x = plane_f32(src, (plane * H + h) * W, W, widened);
      auto edge = [&](int64_t c) {
        float acc = avg ? 0.0f : -std::numeric_limits<float>::infinity();
        for (int64_t s = 0; s < K; ++s) {
          const int64_t w = c * S - pad + s;
          if (w < 0 || w >= W) continue;
          acc = avg ? acc + x[w] : std::max(acc, x[w]);
        }
        r[c] = acc;
      };
      for (int64_t c = 0; c < q_lo; ++c)
        edge(c);
      if (avg)
        across_inside<true>(x, r, q_lo, q_hi);
      else
        across_inside<false>(x, r, q_lo, q_hi);
      for (int64_t c = q_hi; c < Q; ++c)
        edge(c);
    };
    const float scale = avg ? 1.0f / float(K * K) : 1.0f;
    // Input rows are reduced in order, each once: the rows a window needs that an earlier
    // one reduced are still in the ring (at most K rows apart, their slots not reused).
    int64_t next = 0;  // the first input row not reduced yet
    for (int64_t p = 0; p < P; ++p) {
      const int64_t h0 = std::max<int64_t>(0, p * S - pad), h1 = std::min(H, p * S - pad + K);
      for (int64_t h = std::max(h0, next); h < h1; ++h)
        reduce_across(h);
      next = std::max(next, h1);
      // Down the window's rows (at least one: the padding is at most half the window).
      const float* first = ring + (h0 % K) * Q;
      std::copy(first, first + Q, out);
      for (int64_t h = h0 + 1; h < h1; ++h) {
        const float* r = ring + (h % K) * Q;
        if (avg)
          for (int64_t c = 0; c < Q; ++c)
            out[c] += r[c];
        else
          for (int64_t c = 0; c < Q; ++c)
            out[c] = std::max(out[c], r[c]);
      }
      store(dst, (plane * P + p) * Q, out, Q, scale);
    }
  }

  Pool2d q_;
  Relu relu_ = Relu::none;
  bool bf16_ = false;
  int threads_ = 1;
  std::unique_ptr<Pool> pool_;
  size_t per_thread_ = 0;
  AlignedBuffer<float> scratch_;
};

}  // namespace

std::unique_ptr<Kernel> make_pool2d() {
  return std::make_unique<Pool2dKernel>();
}

}  // namespace lb::cpu
