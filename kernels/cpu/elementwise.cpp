// add.cpu.default and softmax.cpu.default — the element-wise ops (kernels/ops/add.h,
// softmax.h), f32 and bf16 (read into f32, rounded once at the store), NCHW as given.
//
// add: y = x + x₁ in one pass, relu=fused a max with 0 in the same pass (a ResNet block's
// add then ReLU; relu6 a clip to [0, 6]); f32's loop is the compiler's to vectorise, bf16's AVX-512 where the
// CPU has it (the compiler's scalar rounding read 0.53x oneDNN's time at batch 1). Threads: the elements
// split evenly. softmax over the channels at each position, in three passes over a row of C values: their max
// m, then e = exp(x - m) (kernels/cpu/vmath.h's vectorised exp, AVX-512 or AVX2 by CPUID; std::exp on the
// scalar path) written to the output (f32) or a row of scratch (bf16) while summing, then e · (1 / Σ e).
// Where the positions are more than one (IH·IW > 1) the C values of a position are strided; the passes then
// run down the channels on a vector of adjacent positions at once (each lane its own softmax), so every load
// is contiguous. Exponentials below e^-87 are those of -87 (f32's normal range), as the allowance for softmax
// says (verify.cpp). Threads: rows (samples × position blocks).
//
// Prediction: no products; both ops are memory's, their bytes once each way where they fit
// the caches: add reads 2 and writes 1 value per element (ResNet-50's last add at batch 32:
// 2 × 3.2 MB read + 3.2 MB written, about 0.3 ms at ~35 GB/s of DRAM on one Zen 5 core);
// softmax reads its input twice and its output (or scratch) once more, with about 20
// vector operations per element for exp, so a 1000-class classifier row is a few hundred
// ns.
// Measured (AMD EPYC Zen 5 VM, 1 thread, 2026-12-08, `layerbench run` medians; this VM's
// times vary by a fifth run to run), speed against oneDNN's (add.onednn.default,
// softmax.onednn.default): add with its ReLU on ResNet-50's first stage (256×56×56) f32
// 1.00 at batch 1 (92 µs each), 0.97 at 32; bf16 0.91-0.94 at 1, 1.13-1.23 at 32 (the
// stores past the caches); its last stage (2048×7×7, batch 32) bf16 0.82-0.97. softmax of
// 1000 classes 1.6× at batch 1 (0.34 against 0.56 µs), 1.5× at 32; over 21 channels of
// 64×64 positions at batch 8, 0.47 ms against oneDNN's 48 ms (its softmax along axis 1 of
// NCHW: a strided axis).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/vmath.h"
#include "kernels/dtype.h"

namespace lb::cpu {
namespace {

// bf16 y = a + b (clipped to [0, top] where relu) on AVX-512: 16 values widened by a shift, added in f32,
// rounded to nearest even by the integer trick (as f32_to_bf16; the sums of finite inputs are
// never NaN); the tail element by element.
LB_TARGET_AVX512 void add_bf16_avx512(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t first,
                                      int64_t last, bool relu, float top, bool stream) {
  auto widen = [](const uint16_t* p) LB_TARGET_AVX512 {
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
  };
  const __m512i half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  int64_t i = first;
  stream = stream && reinterpret_cast<uintptr_t>(y + i) % 32 == 0;  // then every 16 values stay aligned
  for (; i + 16 <= last; i += 16) {
    __m512 v = _mm512_add_ps(widen(a + i), widen(b + i));
    if (relu) v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(top));
    const __m512i u = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(half, odd)), 16);
    if (stream)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtepi32_epi16(r));
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtepi32_epi16(r));
  }
  if (stream) _mm_sfence();
  for (; i < last; ++i) {
    const float v = bf16_to_f32(a[i]) + bf16_to_f32(b[i]);
    y[i] = f32_to_bf16(relu ? std::min(std::max(v, 0.0f), top) : v);
  }
}

class AddKernel final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    return require_dtypes(p, {DType::f32, DType::bf16});
  }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    relu_ = p.relu;
    bf16_ = p.dt == DType::bf16;
    avx512_ = best_isa() == Isa::avx512;
    n_ = p.add().elements();
    // Past the caches, stores that bypass them (no read of the lines they overwrite first):
    // a third less traffic. Below, the next layer reads y from the cache.
    stream_ = n_ * 2 > kStreamFrom;
    pool_ = std::make_unique<Pool>(std::max(1, ctx.threads));
  }

  void run(TensorSet& ts) override {
    const void* a = ts.at(Arg::src).data();
    const void* b = ts.at(Arg::src_1).data();
    void* y = ts.at(Arg::dst).data();
    const bool fused = fused_relu(relu_);
    const float top = relu_ == Relu::relu6 ? 6.0f : INFINITY;
    pool_->run([&](int tid, int threads) {
      const Range part = split(n_, 4096, tid, threads);
      if (bf16_ && avx512_)
        add_bf16_avx512(static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b),
                        static_cast<uint16_t*>(y), part.first, part.last, fused, top, stream_);
      else if (bf16_)
        sum(static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), static_cast<uint16_t*>(y), part,
            fused, top);
      else
        sum(static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(y), part, fused,
            top);
    });
    relu_pass(relu_, ts, pool_.get());
  }

  void release() override { pool_.reset(); }

 private:
  static void sum(const float* a, const float* b, float* y, Range part, bool fused, float top) {
    if (fused)
      for (int64_t i = part.first; i < part.last; ++i)
        y[i] = std::min(std::max(a[i] + b[i], 0.0f), top);
    else
      for (int64_t i = part.first; i < part.last; ++i)
        y[i] = a[i] + b[i];
  }
  static void sum(const uint16_t* a, const uint16_t* b, uint16_t* y, Range part, bool fused, float top) {
    for (int64_t i = part.first; i < part.last; ++i) {
      const float v = bf16_to_f32(a[i]) + bf16_to_f32(b[i]);
      y[i] = f32_to_bf16(fused ? std::min(std::max(v, 0.0f), top) : v);
    }
  }

  Relu relu_ = Relu::none;
  static constexpr int64_t kStreamFrom = int64_t(16) << 20;  // bytes of y
  bool bf16_ = false, avx512_ = false, stream_ = false;
  int64_t n_ = 0;
  std::unique_ptr<Pool> pool_;
};

// One softmax job: the rows (positions) it takes are given by where they start in a
// sample; `stride` is the distance between a position's channels (1 when IH·IW = 1).
struct SoftmaxRows {
  const float* x;  // f32 input, or nullptr when bf16
  const uint16_t* xb;
  float* y;  // f32 output, or nullptr when bf16
  uint16_t* yb;
  float* scratch;  // bf16: C·lanes floats
  int64_t channels, stride;
  bool fused;
};

inline float load(const SoftmaxRows& r, int64_t i) {
  return r.x ? r.x[i] : bf16_to_f32(r.xb[i]);
}

// A row of C contiguous values (IH·IW = 1), vectorised along it.
template <class I>
inline void softmax_row(const SoftmaxRows& r, int64_t base, float* e) {
  using V = typename I::V;
  constexpr int L = I::kLanes;
  const int64_t C = r.channels;
  // bf16: the row widened into e first; f32: read in place.
  const float* x = r.x ? r.x + base : e;
  if (!r.x)
    for (int64_t c = 0; c < C; ++c)
      e[c] = bf16_to_f32(r.xb[base + c]);
  float* out = r.y ? r.y + base : e;
  float top = -INFINITY;
  int64_t c = 0;
  if (C >= L) {
    V m = I::load(x);
    for (c = L; c + L <= C; c += L)
      m = I::max(m, I::load(x + c));
    alignas(64) float lanes[L];
    I::store(lanes, m);
    for (int j = 0; j < L; ++j)
      top = std::max(top, lanes[j]);
  }
  for (; c < C; ++c)
    top = std::max(top, x[c]);
  const V vtop = I::set1(top);
  V vsum = I::set1(0.0f);
  float sum = 0.0f;
  for (c = 0; c + L <= C; c += L) {
    const V v = vexp<I>(I::sub(I::load(x + c), vtop));
    vsum = I::add(vsum, v);
    I::store(out + c, v);
  }
  if (c < C) {  // the tail, one lane at a time through the same exp
    alignas(64) float in[L], res[L];
    std::fill(in, in + L, -INFINITY);
    std::copy(x + c, x + C, in);
    I::store(res, vexp<I>(I::sub(I::load(in), vtop)));
    for (int64_t k = c; k < C; ++k) {
      out[k] = res[k - c];
      sum += res[k - c];
    }
  }
  alignas(64) float lanes[L];
  I::store(lanes, vsum);
  for (int j = 0; j < L; ++j)
    sum += lanes[j];
  const float scale = 1.0f / sum;
  if (r.y) {
    for (int64_t k = 0; k < C; ++k)
      out[k] = r.fused ? std::max(out[k] * scale, 0.0f) : out[k] * scale;
  } else {
    for (int64_t k = 0; k < C; ++k)
      r.yb[base + k] = f32_to_bf16(out[k] * scale);
  }
}

// L adjacent positions from `base`, each a softmax over C channels `stride` apart.
template <class I>
inline void softmax_positions(const SoftmaxRows& r, int64_t base, float* e) {
  using V = typename I::V;
  constexpr int L = I::kLanes;
  const int64_t C = r.channels, S = r.stride;
  alignas(64) float widened[L];
  auto at = [&](int64_t c) -> V {
    if (r.x) return I::load(r.x + base + c * S);
    for (int j = 0; j < L; ++j)
      widened[j] = bf16_to_f32(r.xb[base + c * S + j]);
    return I::load(widened);
  };
  V m = at(0);
  for (int64_t c = 1; c < C; ++c)
    m = I::max(m, at(c));
  V sum = I::set1(0.0f);
  for (int64_t c = 0; c < C; ++c) {
    const V v = vexp<I>(I::sub(at(c), m));
    sum = I::add(sum, v);
    I::store(r.y ? r.y + base + c * S : e + c * L, v);
  }
  const V scale = I::div(I::set1(1.0f), sum);
  for (int64_t c = 0; c < C; ++c) {
    if (r.y) {
      float* y = r.y + base + c * S;
      const V v = I::mul(I::load(y), scale);
      I::store(y, r.fused ? I::max0(v) : v);
    } else {
      alignas(64) float lanes[L];
      I::store(lanes, I::mul(I::load(e + c * L), scale));
      for (int j = 0; j < L; ++j)
        r.yb[base + c * S + j] = f32_to_bf16(lanes[j]);
    }
  }
}

// One position (or a row) the plain way: the scalar path, and the positions left over
// after the vectors.
inline void softmax_scalar(const SoftmaxRows& r, int64_t base) {
  const int64_t C = r.channels, S = r.stride;
  float top = -INFINITY, sum = 0.0f;
  for (int64_t c = 0; c < C; ++c)
    top = std::max(top, load(r, base + c * S));
  for (int64_t c = 0; c < C; ++c)
    sum += std::exp(std::max(load(r, base + c * S) - top, kExpMin));
  const float scale = 1.0f / sum;
  for (int64_t c = 0; c < C; ++c) {
    const float v = std::exp(std::max(load(r, base + c * S) - top, kExpMin)) * scale;
    if (r.y)
      r.y[base + c * S] = r.fused ? std::max(v, 0.0f) : v;
    else
      r.yb[base + c * S] = f32_to_bf16(v);
  }
}

// Rows [first, last) of `rows_per_sample` each: a row is one position (contiguous
// channels) or a vector of L positions.
template <class I>
void softmax_block(const SoftmaxRows& r, int64_t positions, int64_t first, int64_t last) {
  constexpr int L = I::kLanes;
  const int64_t C = r.channels;
  if (positions == 1) {
    for (int64_t n = first; n < last; ++n)
      softmax_row<I>(r, n * C, r.scratch);
    return;
  }
  const int64_t vectors = (positions + L - 1) / L;
  for (int64_t row = first; row < last; ++row) {
    const int64_t n = row / vectors, v = row % vectors, p0 = v * L;
    const int64_t base = n * C * positions + p0;
    if (p0 + L <= positions)
      softmax_positions<I>(r, base, r.scratch);
    else
      for (int64_t p = p0; p < positions; ++p)
        softmax_scalar(r, n * C * positions + p);
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma"), flatten)) void softmax_avx512(
    const SoftmaxRows& r, int64_t positions, int64_t first, int64_t last) {
  softmax_block<Avx512>(r, positions, first, last);
}
__attribute__((target("avx2,fma"), flatten)) void softmax_avx2(const SoftmaxRows& r, int64_t positions,
                                                               int64_t first, int64_t last) {
  softmax_block<Avx2>(r, positions, first, last);
}

class SoftmaxKernel final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    return require_dtypes(p, {DType::f32, DType::bf16});
  }

  void prepare(const Problem& p, TensorSet&, const Context& ctx) override {
    s_ = p.softmax();
    relu_ = p.relu;
    bf16_ = p.dt == DType::bf16;
    isa_ = best_isa();
    threads_ = std::max(1, ctx.threads);
    pool_ = std::make_unique<Pool>(threads_);
    lanes_ = isa_ == Isa::avx512 ? Avx512::kLanes : Avx2::kLanes;
    const int64_t positions = s_.ih * s_.iw;
    // Per thread: a row widened (bf16, one position) or C vectors of exponentials.
    per_thread_ = size_t(positions == 1 ? s_.ic : s_.ic * lanes_);
    scratch_ = AlignedBuffer<float>(per_thread_ * size_t(threads_));
  }

  void run(TensorSet& ts) override {
    const int64_t positions = s_.ih * s_.iw;
    const int64_t rows = positions == 1 ? s_.mb : s_.mb * ((positions + lanes_ - 1) / lanes_);
    const Tensor& src = ts.at(Arg::src);
    Tensor& dst = ts.at(Arg::dst);
    pool_->run([&](int tid, int threads) {
      SoftmaxRows r{.x = bf16_ ? nullptr : src.as<float>(),
                    .xb = bf16_ ? src.as<uint16_t>() : nullptr,
                    .y = bf16_ ? nullptr : dst.as<float>(),
                    .yb = bf16_ ? dst.as<uint16_t>() : nullptr,
                    .scratch = scratch_.data() + per_thread_ * size_t(tid),
                    .channels = s_.ic,
                    .stride = positions,
                    .fused = relu_ == Relu::fused};
      const Range part = split(rows, 1, tid, threads);
      if (isa_ == Isa::avx512) return softmax_avx512(r, positions, part.first, part.last);
      if (isa_ == Isa::avx2) return softmax_avx2(r, positions, part.first, part.last);
      // Scalar: every position of the samples this thread takes.
      const Range samples = split(s_.mb, 1, tid, threads);
      for (int64_t n = samples.first; n < samples.last; ++n)
        for (int64_t p = 0; p < positions; ++p)
          softmax_scalar(r, n * s_.ic * positions + p);
    });
    relu_pass(relu_, ts, pool_.get());
  }

  size_t scratch_bytes() const override { return scratch_.size() * sizeof(float); }
  void release() override {
    pool_.reset();
    scratch_ = AlignedBuffer<float>();
  }

 private:
  Softmax s_;
  Relu relu_ = Relu::none;
  bool bf16_ = false;
  Isa isa_ = Isa::scalar;
  int threads_ = 1, lanes_ = 8;
  std::unique_ptr<Pool> pool_;
  size_t per_thread_ = 0;
  AlignedBuffer<float> scratch_;
};

}  // namespace

std::unique_ptr<Kernel> make_add() {
  return std::make_unique<AddKernel>();
}

std::unique_ptr<Kernel> make_softmax() {
  return std::make_unique<SoftmaxKernel>();
}

}  // namespace lb::cpu
