// lstm.eigen.hoisted — stacked unidirectional LSTM with Eigen contractions, the input
// projection hoisted out of the time loop.
//
// Per layer l (gates i, f, g, o; equations in kernels/ref/lstm.cpp), with the suite's letters:
//   A = X · W_x[l]ᵀ + b[l]        (T·N × 4H): one contraction over all T steps at once, since
//                                 the layer's input sequence X (T·N × I, or T·N × H above
//                                 layer 0) is known before the recurrence starts;
//   for t = 0 .. T-1:  Z = h_{t-1} · W_h[l]ᵀ  (N × 4H), then the cell, element-wise per row n:
//     c_t = σ(A_f + Z_f) ⊙ c_{t-1} + σ(A_i + Z_i) ⊙ tanh(A_g + Z_g),  h_t = σ(A_o + Z_o) ⊙ tanh(c_t).
// Why hoist: the input half of the work becomes one large GEMM (T·N rows) instead of T thin
// ones, leaving only the h·W_hᵀ product on the sequential path. Layers run one after
// another (layer l+1 needs all of layer l's outputs for its own hoisted product). With one
// row (N = 1, or T·N = 1 for A) a product is row_gemv()'s matrix-vector product instead of
// a contraction, whose matrix-vector path reads W across its rows (kernels/eigen/common.h).
// Buffers (prepare()): A, Z, c, and two T·N × H sequences that layers write in turn; the last
// layer writes dst directly, except for relu=fused, where it writes h to a sequence (the
// recurrence needs h itself) and max(h, 0) to dst in the same pass. relu=inplace/separate is
// a pass over dst afterwards. The inputs are never written: step 0 reads src_iter and
// src_iter_c. f32 only. Threads: Eigen's thread pool, for the contractions and the cell's
// rows (kernels/eigen/common.h).
#include "kernels/eigen/common.h"
#include "kernels/eigen/kernels.h"

namespace lb::eigen {
namespace {

using Column = Eigen::Array<float, Eigen::Dynamic, 1>;

class EigenLstm final : public Kernel {
 public:
  std::string supports(const Problem& p) const override { return dtype_reason(p); }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    s_ = p.lstm();
    relu_ = p.relu;
    threads_ = std::make_unique<Threads>(ctx.threads);
    const size_t TN = size_t(s_.t * s_.mb), G = size_t(4 * s_.hc), H = size_t(s_.hc);
    a_ = AlignedBuffer<float>(TN * G);
    z_ = AlignedBuffer<float>(size_t(s_.mb) * G);
    c_ = AlignedBuffer<float>(size_t(s_.mb) * H);
    if (s_.l > 1 || relu_ == Relu::fused) seq_[0] = AlignedBuffer<float>(TN * H);
    if (s_.l > 1) seq_[1] = AlignedBuffer<float>(TN * H);
    // One contraction of each shape run() uses fills the cache with Eigen's packing buffers;
    // they write only into our own A and Z.
    for (int64_t l = 0; l < std::min<int64_t>(s_.l, 2); ++l)
      project(ts, l, l == 0 ? ts.at(Arg::src).as<float>() : seq_[0].data());
    recur(ts, 0, c_.data());
  }

  void run(TensorSet& ts) override {
    const int64_t N = s_.mb, H = s_.hc;
    float* dst = ts.at(Arg::dst).as<float>();
    const float* input = ts.at(Arg::src).as<float>();
    for (int64_t l = 0; l < s_.l; ++l) {
      const bool last = l + 1 == s_.l;
      float* h_seq = last && relu_ != Relu::fused ? dst : seq_[l % 2].data();  // T·N × H
      project(ts, l, input);
      cell_.c_prev = ts.at(Arg::src_iter_c).as<float>() + l * N * H;
      cell_.relu_out = last && relu_ == Relu::fused ? dst : nullptr;
      for (int64_t t = 0; t < s_.t; ++t) {
        const float* h_prev = t == 0 ? ts.at(Arg::src_iter).as<float>() + l * N * H : h_seq + (t - 1) * N * H;
        recur(ts, l, h_prev);
        cell_.a = a_.data() + t * N * 4 * H;
        cell_.h = h_seq + t * N * H;
        if (cell_.relu_out) cell_.relu_out = dst + t * N * H;
        threads_->parallel_for(N, 4.0 * 10 * double(H), 80.0 * double(H),
                               [this](Eigen::Index first, Eigen::Index last) { cell(first, last); });
        cell_.c_prev = c_.data();
      }
      input = h_seq;
    }
    relu_pass(relu_, ts, *threads_);
  }

  void release() override {
    threads_.reset();
    for (AlignedBuffer<float>* b : {&a_, &z_, &c_, &seq_[0], &seq_[1]})
      *b = AlignedBuffer<float>();
  }

  size_t scratch_bytes() const override {
    if (!threads_) return 0;
    return threads_->cached_bytes() + a_.bytes() + z_.bytes() + c_.bytes() + seq_[0].bytes() +
           seq_[1].bytes();
  }

 private:
  // A (T·N × 4H) = X (T·N × width) · W_x[l]ᵀ + b[l].
  void project(const TensorSet& ts, int64_t l, const float* x_in) {
    const int64_t TN = s_.t * s_.mb, G = 4 * s_.hc, width = l == 0 ? s_.ic : s_.hc;
    // W_x is stacked: layer 0 is 4H×I, every later layer 4H×H.
    const int64_t offset = l == 0 ? 0 : G * s_.ic + (l - 1) * G * s_.hc;
    if (TN == 1) {
      row_gemv(*threads_, ts.at(Arg::wei).as<float>() + offset, G, width, x_in,
               ts.at(Arg::bias).as<float>() + l * G, false, a_.data());
      return;
    }
    const ConstView<2> x(x_in, TN, width);
    const ConstView<2> w(ts.at(Arg::wei).as<float>() + offset, G, width);
    View<2> a(a_.data(), TN, G);
    const BiasRelu bias{ts.at(Arg::bias).as<float>() + l * G, true, false};
    a.device(threads_->device()) = x.contract(w, contract_dims(1, 1), bias);
  }

  // Z (N × 4H) = h_prev (N × H) · W_h[l]ᵀ.
  void recur(const TensorSet& ts, int64_t l, const float* h_prev) {
    const int64_t N = s_.mb, H = s_.hc, G = 4 * s_.hc;
    if (N == 1) {
      row_gemv(*threads_, ts.at(Arg::wei_iter).as<float>() + l * G * H, G, H, h_prev, nullptr, false,
               z_.data());
      return;
    }
    const ConstView<2> h(h_prev, N, H);
    const ConstView<2> w(ts.at(Arg::wei_iter).as<float>() + l * G * H, G, H);
    View<2> z(z_.data(), N, G);
    z.device(threads_->device()) = h.contract(w, contract_dims(1, 1));
  }

  // The cell for batch rows first .. last-1 of one step (pointers in cell_).
  void cell(int64_t first, int64_t last) {
    const int64_t H = s_.hc;
    for (int64_t n = first; n < last; ++n) {
      const float* a = cell_.a + n * 4 * H;
      const float* z = z_.data() + n * 4 * H;
      auto gate = [&](int k) {
        return Eigen::Map<const Column>(a + k * H, H) + Eigen::Map<const Column>(z + k * H, H);
      };
      Eigen::Map<Column> c(c_.data() + n * H, H);
      const Eigen::Map<const Column> c_prev(cell_.c_prev + n * H, H);
      c = gate(1).logistic() * c_prev + gate(0).logistic() * gate(2).tanh();
      Eigen::Map<Column> h(cell_.h + n * H, H);
      h = gate(3).logistic() * c.tanh();
      if (cell_.relu_out) Eigen::Map<Column>(cell_.relu_out + n * H, H) = h.max(0.0f);
    }
  }

  Lstm s_;
  Relu relu_ = Relu::none;
  std::unique_ptr<Threads> threads_;
  AlignedBuffer<float> a_, z_, c_, seq_[2];
  // The current step's operands for cell(), set by run() (cell() is called from the pool).
  struct {
    const float* a = nullptr;       // A's rows of step t
    const float* c_prev = nullptr;  // c_{t-1}: src_iter_c at t = 0, then c_
    float* h = nullptr;             // h_t
    float* relu_out = nullptr;      // max(h_t, 0) for relu=fused on the last layer
  } cell_;
};

}  // namespace

std::unique_ptr<Kernel> make_lstm() {
  return std::make_unique<EigenLstm>();
}

}  // namespace lb::eigen
