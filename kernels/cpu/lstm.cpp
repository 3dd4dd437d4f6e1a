// lstm.cpu.default — stacked unidirectional LSTM (f32; bf16 storage) on the cpu backend's
// GEMM: the input projection hoisted out of the time loop, the recurrent product and the
// cell fused per thread, one barrier per step.
//
// Per layer l (gates i, f, g, o; equations and layouts in kernels/ref/lstm.cpp), with the
// suite's letters (T steps, N batch, I input, H hidden):
//   A = X · W_x[l]ᵀ + b[l]                     A is T·N × 4H, X is T·N × I (H above layer 0)
//   for t = 0 .. T-1:
//     A_t += h_{t-1} · W_h[l]ᵀ                 A_t: rows t·N .. t·N+N-1 of A, h is N × H
//     c_t = σ(A_f) ⊙ c_{t-1} + σ(A_i) ⊙ tanh(A_g),  h_t = σ(A_o) ⊙ tanh(c_t)
// The input half is hoisted out of the recurrence into GEMMs over several steps at once
// (M = steps·N rows, W_x packed once in prepare(), bias in the epilogue), leaving only the
// h·W_hᵀ product (W_h packed once; Epilogue::accumulate into A_t) on the sequential path.
// The projection runs in chunks of ≤ kChunkRows rows just before their steps, so the chunk
// of A is still in cache when the steps accumulate into it (measured below).
//
// Gate-interleaved columns. The 4H columns of A (rows of W_x, W_h and b) are permuted in
// prepare() into blocks of U hidden units (U = the vector width): block k holds
// i, f, g, o of units kU .. kU+U-1 side by side (4U columns). Each thread owns a range of
// whole blocks — all four gates of its units — so it computes its columns of A with its
// own slices of W_x and W_h (gemm_f32_serial), then the cell of its units, and needs no
// other thread's columns: the only synchronisation is one barrier per step, after which
// every thread reads the whole h_t for the next product. The cell reads each gate as one
// vector and writes h and c in the original unit order.
//
// Prediction (per layer): FLOPs = 2·T·N·4H·(I + H); the cell adds ~30·T·N·H.
//   N = 1: each step is a matrix-vector product that reads all of W_h, 16·H² bytes (4 MB at
//   H = 512) — more than L2 (2 MB a core here) — for 2·4H·H FLOPs: bound by the bandwidth
//   W_h streams at from L3, not by arithmetic. Measured: ~65 µs a step on one thread
//   (4 MB at ~65 GB/s); on two each streams its 2 MB half, which nearly fits its own L2:
//   ~30 µs a step.
//   N = 64: each W_h panel is reused by 64 rows: compute-bound at the GEMM's rate (M = 64
//   is 4 full 14-row tiles and one of 8). Measured one thread: 13.4 GFLOP in ~61 ms
//   (~220 GFLOP/s, ~82 % of the measured f32 peak); the GEMM alone reaches ~240 on these
//   shapes when W is cache-hot, and the cell takes ~3 %.
// The cell: σ and tanh from one vectorised exp (kernels/cpu/vmath.h: Cody-Waite reduction to |r| ≤ ln2/2, a
// degree-7 Taylor polynomial, error < 2 ulp); tanh below |x| = 0.5 is its odd Taylor
// series instead, which keeps its relative error small where 1 - 2/(e^2x + 1) cancels.
// bf16 (AVX512_BF16): x, W, h0 and y stored as bf16, c and bias f32, as oneDNN has them.
// The products run on AMX's tdpbf16ps where the CPU and Linux allow it, else vdpbf16ps
// (gemm_lowp, f32 results; lowp_path()); h·W_hᵀ goes to its own buffer Z,
// which the cell adds (gemm_lowp does not accumulate), and h_t is rounded to bf16 each
// step, being the next step's bf16 operand.
// Buffers (prepare()): the A chunk, Z (bf16), c, and two T·N × H sequences that layers
// write in turn (the last layer writes dst, or for relu=fused h to a sequence and
// max(h, 0) to dst in the same pass); relu=inplace/separate is relu_pass() afterwards.
// Inputs are never written.
// Training passes (f32; dir=fwd_train, bwd, train). The forward keeps, per layer, step and
// sample, the gates after their nonlinearities (in A's gate-interleaved columns), c, tanh(c)
// and h: 7·H floats (saved_bytes(); the model's saved_elements counts 5·H and the lower
// layers' h: we keep tanh(c) rather than compute it again, and the last layer's h, which y
// may not be under a ReLU). bwd's forward runs once in prepare() (untimed), as oneDNN's does.
// The backward, per layer from the last down (equations in kernels/ref/lstm.cpp):
//   per step t = T-1 .. 0: the cell's backward, elementwise with no transcendental
//     (rows split over the pool): da_t (N × 4H, gates in the original order), dc for t-1;
//     dh for t-1 = da_t · W_h                       (the GEMM, M = N, K = 4H)
//   then over all T·N rows at once, DA = every step's da:
//     dW_x = DAᵀ · X,  dW_h = DAᵀ · [h0; h_0 .. h_{T-2}],  db = Σ rows of DA,  dX = DA · W_x
// W_x and W_h packed once in prepare() as the B operands over the gates.
// Prediction: the backward's products are twice the forward's (the per-step dh product is
// the forward's recurrent one; dW_x, dW_h and dX each as many MACs as a forward
// projection), at the GEMM's rate, the cell's backward a few %: about 2× the forward's
// time, as oneDNN's. Measured on the 2-core AMD EPYC Zen 5 VM (one thread, one run of
// `layerbench run --dir fwd,fwd_train,bwd,train`, 50 ms DeepBench LSTM: T = 25, N = 64,
// I = H = 512, 2026-12-07): forward 32.1 ms, fwd_train 31.3, bwd 70.3 (2.2× the forward,
// 191 GFLOP/s), train 102.1; oneDNN 2.6's 30.1, 33.4, 71.8, 100.5: ours 1.02× its speed in
// bwd, 0.98× in train, with 91 MB of host memory against its 199 MB in bwd.
// ISA: the GEMM's (best_isa(); AVX-512, AVX2 or scalar; bf16 needs AVX-512), the cell's
// vector code compiled per ISA with target attributes. Threads: the pool, one job per
// run(), unit blocks split evenly. Tunables: kChunkRows, Barrier::kSpins.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/vmath.h"

namespace lb::cpu {
namespace {

// f32 -> bf16, rounded to nearest even (as Tensor::store; no NaNs arise here).
inline uint16_t to_bf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

LB_TARGET_AVX512 inline void store_bf16(uint16_t* p, __m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
}

// The cell of one step for batch rows 0..N-1 and unit blocks [b0, b1) (see the header).
struct Cell {
  const float* a = nullptr;       // A_t, N × 4H, gate-interleaved
  const float* z = nullptr;       // bf16 problems: h_{t-1} · W_hᵀ, N × 4H, added to A_t here
  const float* c_prev = nullptr;  // c_{t-1}, N × H
  float* c = nullptr;             // c_t, N × H (may be c_prev)
  float* h = nullptr;             // h_t, N × H (f32 problems)
  float* relu_out = nullptr;      // max(h_t, 0), N × H, or null
  uint16_t* h16 = nullptr;        // bf16 problems: h_t and max(h_t, 0) (or null) as bf16
  uint16_t* relu16 = nullptr;
  float* act = nullptr;          // training: σ(A_i), σ(A_f), tanh(A_g), σ(A_o), N × 4H as A_t (or null)
  float* tc = nullptr;           // training: tanh(c_t), N × H (or null)
  int64_t n = 0, hc = 0, u = 0;  // N, H, U
};

// Units [k·U, k·U + count) of batch row n, scalar (the last, partial block; the scalar ISA).
inline void cell_scalar(const Cell& cl, int64_t n, int64_t k, int64_t count) {
  const int64_t row = n * 4 * cl.hc + 4 * k * cl.u;  // i, f, g, o: count each
  const int64_t at = n * cl.hc + k * cl.u;
  const auto pre = [&](int64_t j) { return cl.a[row + j] + (cl.z ? cl.z[row + j] : 0.0f); };
  for (int64_t j = 0; j < count; ++j) {
    const float i = 1.0f / (1.0f + std::exp(-pre(j))), f = 1.0f / (1.0f + std::exp(-pre(count + j)));
    const float g = std::tanh(pre(2 * count + j)), o = 1.0f / (1.0f + std::exp(-pre(3 * count + j)));
    const float c = f * cl.c_prev[at + j] + i * g;
    const float tc = std::tanh(c), h = o * tc;
    cl.c[at + j] = c;
    if (cl.act) {
      cl.act[row + j] = i, cl.act[row + count + j] = f;
      cl.act[row + 2 * count + j] = g, cl.act[row + 3 * count + j] = o;
    }
    if (cl.tc) cl.tc[at + j] = tc;
    if (cl.h) cl.h[at + j] = h;
    if (cl.relu_out) cl.relu_out[at + j] = std::max(h, 0.0f);
    if (cl.h16) cl.h16[at + j] = to_bf16(h);
    if (cl.relu16) cl.relu16[at + j] = to_bf16(std::max(h, 0.0f));
  }
}

template <class I, bool BF16>
inline void cell_vector(const Cell& cl, int64_t b0, int64_t b1) {
  using V = typename I::V;
  constexpr int64_t U = I::kLanes;
  const int64_t H = cl.hc, full = H / U;  // blocks of U units; block `full` is partial
  for (int64_t n = 0; n < cl.n; ++n)
    for (int64_t k = b0; k < b1; ++k) {
      if (k >= full) {
        cell_scalar(cl, n, k, H - k * U);
        continue;
      }
      const int64_t row = n * 4 * H + 4 * k * U, at = n * H + k * U;
      V pre[4];
      for (int q = 0; q < 4; ++q)
        pre[q] = BF16 ? I::add(I::load(cl.a + row + q * U), I::load(cl.z + row + q * U))
                      : I::load(cl.a + row + q * U);
      const V i = vsigmoid<I>(pre[0]), f = vsigmoid<I>(pre[1]), g = vtanh<I>(pre[2]), o = vsigmoid<I>(pre[3]);
      const V c = I::fma(f, I::load(cl.c_prev + at), I::mul(i, g));
      const V tc = vtanh<I>(c), h = I::mul(o, tc);
      I::store(cl.c + at, c);
      if (cl.act) {
        I::store(cl.act + row, i);
        I::store(cl.act + row + U, f);
        I::store(cl.act + row + 2 * U, g);
        I::store(cl.act + row + 3 * U, o);
      }
      if (cl.tc) I::store(cl.tc + at, tc);
      if constexpr (BF16) {
        store_bf16(cl.h16 + at, h);
        if (cl.relu16) store_bf16(cl.relu16 + at, I::max0(h));
      } else {
        I::store(cl.h + at, h);
        if (cl.relu_out) I::store(cl.relu_out + at, I::max0(h));
      }
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma"), flatten)) void cell_avx512(const Cell& cl,
                                                                                            int64_t b0,
                                                                                            int64_t b1) {
  if (cl.h16)
    cell_vector<Avx512, true>(cl, b0, b1);
  else
    cell_vector<Avx512, false>(cl, b0, b1);
}

__attribute__((target("avx2,fma"), flatten)) void cell_avx2(const Cell& cl, int64_t b0, int64_t b1) {
  cell_vector<Avx2, false>(cl, b0, b1);
}

// bf16 problems run on AVX-512 only (supports()).
void cell_blocks(Isa isa, const Cell& cl, int64_t b0, int64_t b1) {
  switch (isa) {
    case Isa::avx512:
      return cell_avx512(cl, b0, b1);
    case Isa::avx2:
      return cell_avx2(cl, b0, b1);
    case Isa::scalar:
      for (int64_t n = 0; n < cl.n; ++n)
        for (int64_t k = b0; k < b1; ++k)
          cell_scalar(cl, n, k, std::min(cl.u, cl.hc - k * cl.u));
      return;
  }
}

// A reusable barrier for the pool's threads inside one job: spins a few µs (balanced steps
// arrive together), then yields, so that on an oversubscribed machine the thread it waits
// for gets the core (pure spinning made two threads 5× slower than one there).
class Barrier {
 public:
  static constexpr int kSpins = 512;
  void reset(int threads) {
    threads_ = threads;
    count_.store(0);
  }
  void wait() {
    if (threads_ <= 1) return;
    const uint32_t gen = generation_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
      count_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    for (int spin = 0; generation_.load(std::memory_order_acquire) == gen; ++spin) {
      if (spin < kSpins)
        _mm_pause();
      else
        std::this_thread::yield();  // cheap when the core is ours; hands it over when it is not
    }
  }

 private:
  int threads_ = 1;
  std::atomic<int> count_{0};
  std::atomic<uint32_t> generation_{0};
};

// At most this many rows (steps × batch) of the input projection per GEMM. Small chunks
// keep the chunk of A the steps accumulate into (≤ kChunkRows × 4H floats) in L2 and the
// GEMM's C tiles in cache between its K slices. Measured at T = 50, N = 64, H = 512, one
// thread: 64-256 rows 60-61 ms, 512 rows 64 ms, all 3200 rows at once 65 ms (C is 26 MB).
constexpr int64_t kChunkRows = 128;

// Steps per projection GEMM: the count ≤ kChunkRows / N whose chunks waste the fewest rows
// in partial MR-row tiles over the whole sequence (N = 64, MR = 14: 7 steps, 448 rows, no
// partial tile), the longest of equals.
int64_t chunk_steps(int64_t T, int64_t N, int64_t mr) {
  const auto padded = [&](int64_t rows) { return round_up(rows, mr); };
  int64_t best = 1, best_rows = INT64_MAX;
  for (int64_t steps = 1; steps <= std::min(T, std::max<int64_t>(1, kChunkRows / N)); ++steps) {
    const int64_t rows = T / steps * padded(steps * N) + padded(T % steps * N);
    if (rows <= best_rows) best = steps, best_rows = rows;
  }
  return best;
}

class CpuLstm final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32, DType::bf16}); !why.empty()) return why;
    if (p.pass != Pass::fwd && p.dt != DType::f32)
      return "dt=" + std::string(name(p.dt)) + " in dir=" + std::string(name(p.pass)) +
             ": the training passes are f32 only for now";
    if (p.dt == DType::bf16) return elem_reason(Elem::bf16);
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    s_ = p.lstm();
    relu_ = p.relu;
    pass_ = p.pass;
    bf16_ = p.dt == DType::bf16;
    isa_ = bf16_ ? Isa::avx512 : best_isa();  // bf16: vdpbf16ps and the AVX-512 cell
    threads_ = std::max(1, ctx.threads);
    pool_ = std::make_unique<Pool>(threads_);
    barrier_.reset(threads_);
    u_ = isa_ == Isa::avx512 ? Avx512::kLanes : Avx2::kLanes;
    const int64_t T = s_.t, N = s_.mb, H = s_.hc, G = 4 * H;
    const int64_t blocks = ceil_div(H, u_);

    // Thread tid owns unit blocks part_[tid] .. part_[tid+1]-1, columns column(part_[tid]) ..
    part_.assign(threads_ + 1, 0);
    for (int tid = 0; tid < threads_; ++tid)
      part_[tid + 1] = split(blocks, 1, tid, threads_).last;

    // Column j of the permuted order is row perm[j] of W_x, W_h and b.
    std::vector<int64_t> perm(G);
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t count = std::min(u_, H - k * u_);
      for (int64_t g = 0; g < 4; ++g)
        for (int64_t j = 0; j < count; ++j)
          perm[4 * k * u_ + g * count + j] = g * H + k * u_ + j;
    }
    const std::byte* wx = static_cast<const std::byte*>(ts.at(Arg::wei).data());
    const std::byte* wh = static_cast<const std::byte*>(ts.at(Arg::wei_iter).data());
    const size_t elem = bf16_ ? 2 : 4;
    const float* bias = ts.at(Arg::bias).as<float>();
    layers_.clear();
    layers_.resize(s_.l);
    for (int64_t l = 0; l < s_.l; ++l) {
      Layer& ly = layers_[l];
      ly.width = l == 0 ? s_.ic : H;
      ly.bias = AlignedBuffer<float>(G);
      for (int64_t j = 0; j < G; ++j)
        ly.bias.data()[j] = bias[l * G + perm[j]];
      // W_x is stacked: layer 0 is 4H×I, every later layer 4H×H.
      const int64_t wx_at = l == 0 ? 0 : G * s_.ic + (l - 1) * G * H;
      ly.wx = pack_slices(wx + wx_at * elem, ly.width, perm);
      ly.wh = pack_slices(wh + l * G * H * elem, H, perm);
    }
    // bf16: the low-precision path's tile (AVX-512 keeps f32's 14 rows, AMX has 32).
    chunk_ = chunk_steps(T, N, bf16_ ? lowp_tile(lowp_path(Elem::bf16)).mr : f32_tile(isa_).mr);
    a_ = AlignedBuffer<float>(size_t(chunk_ * N * G));
    c_ = AlignedBuffer<float>(size_t(N * H));
    const size_t seq = size_t(T * N * H);
    if (bf16_) {
      for (int tid = 0; tid < threads_; ++tid)  // gemm_lowp runs on thread 0's part of a workspace
        thread_ws_.emplace_back(isa_, 1, true, false);
      z_ = AlignedBuffer<float>(size_t(N * G));
      if (s_.l > 1 || relu_ == Relu::fused) seq16_[0] = AlignedBuffer<uint16_t>(seq);
      if (s_.l > 1) seq16_[1] = AlignedBuffer<uint16_t>(seq);
    } else {
      ws_ = Workspace(isa_, threads_, true, false);
      if (pass_ == Pass::fwd && (s_.l > 1 || relu_ == Relu::fused)) seq_[0] = AlignedBuffer<float>(seq);
      if (pass_ == Pass::fwd && s_.l > 1) seq_[1] = AlignedBuffer<float>(seq);
    }
    if (pass_ == Pass::fwd) return;
    // Training (f32): what the forward keeps for the backward, every layer and step.
    const size_t layers = size_t(s_.l);
    act_ = AlignedBuffer<float>(layers * seq * 4);
    cs_ = AlignedBuffer<float>(layers * seq);
    tcs_ = AlignedBuffer<float>(layers * seq);
    hs_ = AlignedBuffer<float>(layers * seq);
    if (runs_backward(pass_)) {
      da_ = AlignedBuffer<float>(seq * 4);
      dcn_ = AlignedBuffer<float>(size_t(N * H));
      dhn_ = AlignedBuffer<float>(size_t(N * H));
      if (s_.l > 1) up_[1] = AlignedBuffer<float>(seq);  // layer l > 0 writes up_[l % 2]
      if (s_.l > 2) up_[0] = AlignedBuffer<float>(seq);
      if (relu_ == Relu::fused) dz_ = AlignedBuffer<float>(seq);
      // B operands over the gates (K = 4H, in the original gate order): W_h for dh = da·W_h,
      // W_x for dx = da·W_x.
      const float* wxf = ts.at(Arg::wei).as<float>();
      const float* whf = ts.at(Arg::wei_iter).as<float>();
      for (int64_t l = 0; l < s_.l; ++l) {
        Layer& ly = layers_[l];
        ly.wh_back = Packed(isa_, false, H, G, {whf + l * G * H, 1, H});
        ly.wx_back = Packed(isa_, false, ly.width, G, {wxf + x_weights_at(l), 1, ly.width});
      }
      back_ws_ = Workspace(isa_, threads_);
      if (pass_ == Pass::bwd) forward(ts, false);  // the forward the backward reads, once, untimed
    }
  }

  void run(TensorSet& ts) override {
    if (runs_forward(pass_)) forward(ts, true);
    if (runs_backward(pass_)) backward(ts);
  }

  void release() override {
    pool_.reset();
    layers_.clear();
    ws_ = Workspace();
    thread_ws_.clear();
    back_ws_ = Workspace();
    for (AlignedBuffer<float>* b : {&a_, &z_, &c_, &seq_[0], &seq_[1], &act_, &cs_, &tcs_, &hs_, &da_, &dcn_,
                                    &dhn_, &up_[0], &up_[1], &dz_})
      *b = AlignedBuffer<float>();
    seq16_[0] = AlignedBuffer<uint16_t>();
    seq16_[1] = AlignedBuffer<uint16_t>();
  }

  std::string details() const override {
    return std::string(bf16_ ? lowp_instruction(Elem::bf16, lowp_path(Elem::bf16)) : name(isa_)) + ", " +
           std::to_string(u_) + "-unit gate blocks, " + std::to_string(chunk_) + " steps per input GEMM";
  }

  size_t scratch_bytes() const override {
    size_t bytes = ws_.bytes() + a_.bytes() + z_.bytes() + c_.bytes() + seq_[0].bytes() + seq_[1].bytes() +
                   seq16_[0].bytes() + seq16_[1].bytes() + saved_bytes() + back_ws_.bytes() + da_.bytes() +
                   dcn_.bytes() + dhn_.bytes() + up_[0].bytes() + up_[1].bytes() + dz_.bytes();
    for (const Workspace& w : thread_ws_)
      bytes += w.bytes();
    for (const Layer& ly : layers_) {
      bytes += ly.bias.bytes();
      for (const Packed& pk : ly.wx)
        bytes += pk.bytes();
      for (const Packed& pk : ly.wh)
        bytes += pk.bytes();
      bytes += ly.wh_back.bytes() + ly.wx_back.bytes();
    }
    return bytes;
  }

  // Every layer's gates, c, tanh(c) and h for every step: 7·H floats per step, sample and
  // layer (the model's saved_elements counts 5·H, and h of the layers below the last).
  size_t saved_bytes() const override { return act_.bytes() + cs_.bytes() + tcs_.bytes() + hs_.bytes(); }

 private:
  struct Layer {
    int64_t width = 0;           // I for layer 0, else H
    AlignedBuffer<float> bias;   // 4H, permuted
    std::vector<Packed> wx, wh;  // per thread: its columns of W_xᵀ (width × cols), W_hᵀ (H × cols)
    Packed wx_back, wh_back;     // training: W_x and W_h as B over the 4H gates, original order
  };

  // Element offset of layer l's W_x in the stacked weights: 4H×I for layer 0, then 4H×H each.
  int64_t x_weights_at(int64_t l) const {
    const int64_t G = 4 * s_.hc;
    return l == 0 ? 0 : G * s_.ic + (l - 1) * G * s_.hc;
  }

  // Training caches of layer l, T·N rows: gates (4H, A's gate-interleaved columns) and c,
  // tanh(c), h (H each).
  float* cache(AlignedBuffer<float>& b, int64_t l, int64_t width) {
    return b.data() + l * s_.t * s_.mb * width;
  }

  // The forward on the pool; `write` hands dst (and the ReLU's output) over, which bwd's
  // forward in prepare() does not (its dst, where it has one, is an input).
  void forward(TensorSet& ts, bool write) {
    const void* src = ts.at(Arg::src).data();
    const void* h0 = ts.at(Arg::src_iter).data();
    const float* c0 = ts.at(Arg::src_iter_c).as<float>();
    void* dst = write ? ts.at(Arg::dst).data() : nullptr;
    pool_->run([&](int tid, int) {
      if (bf16_)
        thread_work<uint16_t>(tid, static_cast<const uint16_t*>(src), static_cast<const uint16_t*>(h0), c0,
                              static_cast<uint16_t*>(dst));
      else
        thread_work<float>(tid, static_cast<const float*>(src), static_cast<const float*>(h0), c0,
                           static_cast<float*>(dst));
    });
    if (!write) return;
    if (pass_ != Pass::fwd && relu_ != Relu::fused)  // the last layer's h, kept, is y
      std::memcpy(dst, cache(hs_, s_.l - 1, s_.hc), size_t(s_.t * s_.mb * s_.hc) * sizeof(float));
    relu_pass(relu_, ts, pool_.get());
  }

  // Backpropagation through time (f32), the layers from the last down (equations in
  // kernels/ref/lstm.cpp). Per step the cell's backward (elementwise, rows split over the
  // pool) writes da_t (N × 4H, gates in the original order i, f, g, o) and dc for the step
  // before, then dh for the step before = da_t · W_h (the GEMM, M = N). After the steps,
  // with DA = every step's da (T·N × 4H): dW_x = DAᵀ · X, dW_h = DAᵀ · [h0; h_0 .. h_{T-2}],
  // db = the column sums of DA, dX = DA · W_x (the layer below's incoming gradient, or dx).
  void backward(TensorSet& ts) {
    const int64_t T_ = s_.t, N = s_.mb, H = s_.hc, G = 4 * H, U = u_;
    const float* dz = gradient_at_output(relu_, ts, *pool_);
    if (!dz) {  // relu=fused: dy where the forward's y > 0
      const float* dy = ts.at(Arg::diff_dst).as<float>();
      const float* y = ts.at(Arg::dst).as<float>();
      float* m = dz_.data();
      const int64_t n = T_ * N * H;
      pool_->run([&](int tid, int nt) {
        for (int64_t i = n * tid / nt; i < n * (tid + 1) / nt; ++i)
          m[i] = y[i] > 0.0f ? dy[i] : 0.0f;
      });
      dz = m;
    }
    const float* c0 = ts.at(Arg::src_iter_c).as<float>();
    const float* h0 = ts.at(Arg::src_iter).as<float>();
    float* dh0 = ts.at(Arg::diff_src_iter).as<float>();
    float* dc0 = ts.at(Arg::diff_src_iter_c).as<float>();
    float* dwx = ts.at(Arg::diff_wei).as<float>();
    float* dwh = ts.at(Arg::diff_wei_iter).as<float>();
    float* db = ts.at(Arg::diff_bias).as<float>();
    const float* up = dz;  // the gradient arriving at this layer's h_t, T·N × H
    for (int64_t l = s_.l - 1; l >= 0; --l) {
      const Layer& ly = layers_[l];
      const float *act = cache(act_, l, G), *cs = cache(cs_, l, H), *tcs = cache(tcs_, l, H);
      const float* c_init = c0 + l * N * H;
      float* da = da_.data();
      float* dcn = dcn_.data();
      float* dhn = dhn_.data();
      for (int64_t t = T_ - 1; t >= 0; --t) {
        const bool first = t == T_ - 1;  // no gradient from a later step yet
        const float* act_t = act + t * N * G;
        const float* c_prev = t > 0 ? cs + (t - 1) * N * H : c_init;
        float* da_t = da + t * N * G;
        pool_->run([&](int tid, int nt) {
          for (int64_t n = N * tid / nt; n < N * (tid + 1) / nt; ++n)
            for (int64_t k = 0; k * U < H; ++k) {
              const int64_t cnt = std::min(U, H - k * U), base = n * G + 4 * k * U, at = n * H + k * U;
              const float* ga = act_t + base;
              const float* tc = tcs + t * N * H + at;
              const float* cp = c_prev + at;
              const float* u = up + t * N * H + at;
              float* dcv = dcn + at;
              const float* dhv = dhn + at;
              float* out = da_t + n * G + k * U;
              for (int64_t j = 0; j < cnt; ++j) {
                const float i = ga[j], f = ga[cnt + j], g = ga[2 * cnt + j], o = ga[3 * cnt + j];
                const float dh = u[j] + (first ? 0.0f : dhv[j]);
                const float dc = (first ? 0.0f : dcv[j]) + dh * o * (1.0f - tc[j] * tc[j]);
                out[j] = dc * g * i * (1.0f - i);
                out[H + j] = dc * cp[j] * f * (1.0f - f);
                out[2 * H + j] = dc * i * (1.0f - g * g);
                out[3 * H + j] = dh * tc[j] * o * (1.0f - o);
                dcv[j] = dc * f;
              }
            }
        });
        // dh for step t-1 (after step 0: diff_src_iter) = da_t · W_h.
        Operand a, b;
        a.strided = {da_t, G, 1};
        b.packed = &ly.wh_back;
        gemm_f32(isa_, N, H, G, a, b, t > 0 ? dhn : dh0 + l * N * H, H, Epilogue{}, back_ws_, pool_.get());
      }
      std::memcpy(dc0 + l * N * H, dcn, size_t(N * H) * sizeof(float));
      const int64_t width = ly.width;
      const float* x = l == 0 ? ts.at(Arg::src).as<float>() : cache(hs_, l - 1, H);
      Operand dat;  // DAᵀ: A(gate, row) = DA[row][gate]
      dat.strided = {da, 1, G};
      Operand xb;  // X: B(column, row) = X[row][column]
      xb.strided = {x, 1, width};
      gemm_f32(isa_, G, width, T_ * N, dat, xb, dwx + x_weights_at(l), width, Epilogue{}, back_ws_,
               pool_.get());
      Operand hb;
      hb.strided = {h0 + l * N * H, 1, H};
      gemm_f32(isa_, G, H, N, dat, hb, dwh + l * G * H, H, Epilogue{}, back_ws_, pool_.get());
      if (T_ > 1) {
        Operand dat1;
        dat1.strided = {da + N * G, 1, G};
        hb.strided = {cache(hs_, l, H), 1, H};
        Epilogue add;
        add.accumulate = true;
        gemm_f32(isa_, G, H, (T_ - 1) * N, dat1, hb, dwh + l * G * H, H, add, back_ws_, pool_.get());
      }
      float* dbl = db + l * G;
      const int64_t rows = T_ * N;
      pool_->run([&](int tid, int nt) {
        const int64_t g0 = G * tid / nt, g1 = G * (tid + 1) / nt;
        std::fill(dbl + g0, dbl + g1, 0.0f);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t g = g0; g < g1; ++g)
            dbl[g] += da[r * G + g];
      });
      float* dx = l == 0 ? ts.at(Arg::diff_src).as<float>() : up_[l % 2].data();
      Operand dar;
      dar.strided = {da, G, 1};
      Operand wb;
      wb.packed = &ly.wx_back;
      gemm_f32(isa_, rows, width, G, dar, wb, dx, width, Epilogue{}, back_ws_, pool_.get());
      up = dx;
    }
  }

  // W (4H × width, row-major, f32 or bf16 as the problem) with rows permuted, packed as the
  // B operand of each thread's columns.
  std::vector<Packed> pack_slices(const std::byte* w, int64_t width, const std::vector<int64_t>& perm) const {
    const int64_t G = int64_t(perm.size());
    const size_t elem = bf16_ ? 2 : 4, row = size_t(width) * elem;
    std::vector<std::byte> rows(size_t(G) * row);
    for (int64_t j = 0; j < G; ++j)
      std::memcpy(rows.data() + j * row, w + perm[j] * row, row);
    std::vector<Packed> slices(threads_);
    for (int tid = 0; tid < threads_; ++tid) {
      const int64_t first = column(part_[tid]), last = column(part_[tid + 1]);
      if (last <= first) continue;
      const std::byte* at = rows.data() + first * row;
      if (bf16_)
        slices[tid] = pack_lowp_b(Elem::bf16, last - first, width, at, width, 1);
      else
        slices[tid] =
            Packed(isa_, false, last - first, width, {reinterpret_cast<const float*>(at), width, 1});
    }
    return slices;
  }

  // First column of unit block k in the permuted order.
  int64_t column(int64_t k) const { return std::min(4 * k * u_, 4 * s_.hc); }

  // C (rows × this thread's columns, row stride 4H) = X · W[l]ᵀ (+ bias), X rows × width
  // (T: the storage, float or bf16). `c` points at the thread's first column.
  template <class T>
  void product(int tid, int64_t rows, int64_t width, const T* x, const Packed& w, const float* bias,
               float* c) {
    const int64_t cols = w.n(), G = 4 * s_.hc;
    Epilogue ep;
    ep.bias_col = bias;
    if constexpr (std::is_same_v<T, uint16_t>) {
      // f32 result: with no bf16 output given, the micro-kernel's last K slice writes f32 C.
      gemm_lowp(Elem::bf16, rows, cols, width, x, width, w, 1.0f, c, G, nullptr, 0, ep, thread_ws_[tid],
                nullptr);
    } else {
      Operand a, b;
      a.strided = {x, width, 1};
      b.packed = &w;
      ep.accumulate = bias == nullptr;  // the recurrent product adds to the projection
      gemm_f32_serial(isa_, rows, cols, width, a, b, c, G, ep, ws_, tid);
    }
  }

  template <class T>
  void thread_work(int tid, const T* src, const T* h0, const float* c0, T* dst) {
    const int64_t T_ = s_.t, N = s_.mb, H = s_.hc, G = 4 * H;
    const int64_t first = column(part_[tid]), cols = column(part_[tid + 1]) - first;
    const T* input = src;
    for (int64_t l = 0; l < s_.l; ++l) {
      const Layer& ly = layers_[l];
      const bool last = l + 1 == s_.l;
      T* h_seq = last && relu_ != Relu::fused ? dst : sequence<T>(l % 2);  // T·N × H
      const bool keep = pass_ != Pass::fwd;                                // training: f32
      if constexpr (std::is_same_v<T, float>)
        if (keep) h_seq = cache(hs_, l, H);
      Cell cell;
      cell.n = N;
      cell.hc = H;
      cell.u = u_;
      cell.c = c_.data();
      cell.z = bf16_ ? z_.data() : nullptr;
      for (int64_t t0 = 0; t0 < T_; t0 += chunk_) {
        const int64_t steps = std::min(chunk_, T_ - t0);
        // This thread's columns of A (steps·N × 4H) = X[t0·N ..] · W_xᵀ + b.
        if (cols > 0)
          product(tid, steps * N, ly.width, input + t0 * N * ly.width, ly.wx[tid], ly.bias.data() + first,
                  a_.data() + first);
        for (int64_t t = t0; t < t0 + steps; ++t) {
          const T* h_prev = t == 0 ? h0 + l * N * H : h_seq + (t - 1) * N * H;
          float* a_t = a_.data() + (t - t0) * N * G;
          if (cols > 0) {
            // f32: A_t += h_{t-1} · W_hᵀ in place; bf16: into Z, which the cell adds.
            product(tid, N, H, h_prev, ly.wh[tid], nullptr, bf16_ ? z_.data() + first : a_t + first);
            cell.a = a_t;
            cell.c_prev = t == 0 ? c0 + l * N * H : c_.data();
            if (keep) {  // every step's c, tanh(c) and gates kept
              cell.c = cache(cs_, l, H) + t * N * H;
              cell.c_prev = t == 0 ? c0 + l * N * H : cell.c - N * H;
              cell.tc = cache(tcs_, l, H) + t * N * H;
              cell.act = cache(act_, l, G) + t * N * G;
            }
            T* relu = last && relu_ == Relu::fused && dst ? dst + t * N * H : nullptr;
            if constexpr (std::is_same_v<T, uint16_t>) {
              cell.h16 = h_seq + t * N * H;
              cell.relu16 = relu;
            } else {
              cell.h = h_seq + t * N * H;
              cell.relu_out = relu;
            }
            cell_blocks(isa_, cell, part_[tid], part_[tid + 1]);
          }
          barrier_.wait();  // h_t complete before any thread's next product reads it
        }
      }
      input = h_seq;
    }
  }

  template <class T>
  T* sequence(int i) {
    if constexpr (std::is_same_v<T, uint16_t>)
      return seq16_[i].data();
    else
      return seq_[i].data();
  }

  Lstm s_;
  Relu relu_ = Relu::none;
  Pass pass_ = Pass::fwd;
  bool bf16_ = false;
  Isa isa_ = Isa::scalar;
  int threads_ = 1;
  int64_t u_ = 8;              // units per gate block
  int64_t chunk_ = 1;          // steps per input-projection GEMM
  std::vector<int64_t> part_;  // thread tid owns unit blocks part_[tid] .. part_[tid+1]-1
  std::vector<Layer> layers_;
  Workspace ws_;                             // f32: one for all threads (gemm_f32_serial, by tid)
  std::vector<Workspace> thread_ws_;         // bf16: one per thread (gemm_lowp on the caller)
  AlignedBuffer<float> a_, z_, c_, seq_[2];  // A chunk, Z (bf16), c, f32 sequences
  AlignedBuffer<uint16_t> seq16_[2];         // bf16 sequences
  // Training (f32): the forward's caches (saved_bytes()), and the backward's DA (T·N × 4H),
  // dc and dh carried to the step before (N × H), the gradients passed down between layers,
  // relu=fused's masked dy, and the packing buffers of its GEMMs.
  AlignedBuffer<float> act_, cs_, tcs_, hs_, da_, dcn_, dhn_, up_[2], dz_;
  Workspace back_ws_;
  std::unique_ptr<Pool> pool_;
  Barrier barrier_;
};

}  // namespace

std::unique_ptr<Kernel> make_lstm() {
  return std::make_unique<CpuLstm>();
}

}  // namespace lb::cpu
