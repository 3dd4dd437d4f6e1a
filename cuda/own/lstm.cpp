// lstm.cuda.default — stacked LSTM from our own kernels, f32 (equations and layouts:
// kernels/ref/lstm.cpp; gate order i, f, g, o).
//
// Per layer l (T steps, batch N, input width I_l, hidden H):
//  1. gx = X·W_x[l]ᵀ + b[l] for all T·N rows at once (X is T·N×I_l, W_x[l] is 4H×I_l):
//     one big GEMM (sgemm_07_warptile), the part of the layer that does not depend on h;
//  2. per step t: gh = h_{t-1}·W_h[l]ᵀ (N×4H; W_h[l] is 4H×H), the recurrent GEMM: for
//     N < kTiledRecurrentFrom with one warp per output (sgemm_02_coalesced: a 128×128
//     tile would leave most of the GPU idle at N = 1..31), else sgemm_07_warptile;
//  3. per step t: the fused cell (lstm_cell.cu) reads gx[t] and gh, updates c, writes
//     h to the recurrent state and to the layer's output sequence.
// Layer l's output sequence is the next layer's X (one T×N×H scratch buffer: the next
// layer's input GEMM has read it before its first cell overwrites it, stream order);
// the last layer writes dst. h_{-1} and c_{-1} are read from src_iter/src_iter_c and
// never written: run() may be called again. relu=fused clips only what the last layer
// writes to dst (h itself feeds the recurrence unclipped); =inplace/=separate are the
// element-wise pass after the layers.
// Not done: persistent kernels that keep W_h on chip across steps (cuDNN's trick for
// small batches), tensor cores, streams overlapping independent work.
// Predicted: 30-60 % of cuDNN f32 at batch 64 (lstm512b64), well under that at batch 1
// (lstm512b1), where each step is a W_h-sized read from L2 plus two launches.
#include "cuda/gpu_kernel.h"
#include "cuda/own/host.h"

namespace lb::cuda::own {
namespace {

constexpr int64_t kTiledRecurrentFrom = 32;  // batch from which the recurrent GEMM uses 07's tiles

class OwnLstm final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32}); !why.empty()) return why;
    const Lstm& s = p.lstm();
    const int64_t G = 4 * s.hc;
    if (std::string why = too_big_for_int({s.t * s.mb * s.ic, s.t * s.mb * G, G * s.ic, G * s.hc * s.l,
                                           G * (s.ic + s.hc * s.l), s.l * s.mb * s.hc});
        !why.empty())
      return why;
    if (G > int64_t(65535) * 32) return "4·hc > 65535·32: more column tiles than grid.y allows";
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    const Lstm& s = p.lstm();
    gx_ = DeviceBuffer(sizeof(float) * s.t * s.mb * 4 * s.hc);
    gh_ = DeviceBuffer(sizeof(float) * s.mb * 4 * s.hc);
    h_ = DeviceBuffer(sizeof(float) * s.mb * s.hc);
    c_ = DeviceBuffer(sizeof(float) * s.mb * s.hc);
    if (s.l > 1) seq_ = DeviceBuffer(sizeof(float) * s.t * s.mb * s.hc);
    extra_bytes_ = gx_.bytes() + gh_.bytes() + h_.bytes() + c_.bytes() + seq_.bytes();
    recurrent_ = s.mb < kTiledRecurrentFrom ? sgemm_02_coalesced : sgemm_07_warptile;
    details_ = std::string("input GEMM 07_warptile, recurrent GEMM ") +
               (s.mb < kTiledRecurrentFrom ? "02_coalesced" : "07_warptile") + ", scratch " +
               std::to_string(extra_bytes_) + " B";
  }

  void run(TensorSet&) override {
    const Lstm& s = problem_.lstm();
    const int T = int(s.t), N = int(s.mb), H = int(s.hc), G = 4 * H, L = int(s.l);
    const auto* src = static_cast<const float*>(dev(Arg::src));
    const auto* wx = static_cast<const float*>(dev(Arg::wei));
    const auto* wh = static_cast<const float*>(dev(Arg::wei_iter));
    const auto* bias = static_cast<const float*>(dev(Arg::bias));
    const auto* h0 = static_cast<const float*>(dev(Arg::src_iter));
    const auto* c0 = static_cast<const float*>(dev(Arg::src_iter_c));
    auto* dst = static_cast<float*>(dev(Arg::dst));
    float* gx = gx_.as<float>();
    float* gh = gh_.as<float>();
    float* h = h_.as<float>();
    float* c = c_.as<float>();

    const float* x = src;  // this layer's input sequence, T·N×width
    int width = int(s.ic);
    for (int l = 0; l < L; ++l) {
      float* out = l == L - 1 ? dst : seq_.as<float>();
      Gemm input;  // gx = x·W_x[l]ᵀ + b[l]
      input.a = x, input.b = wx, input.bias = bias + l * G, input.c = gx;
      input.m = T * N, input.n = G, input.k = width;
      sgemm_07_warptile(input);
      for (int t = 0; t < T; ++t) {
        Gemm rec;  // gh = h_{t-1}·W_h[l]ᵀ
        rec.a = t == 0 ? h0 + l * N * H : h, rec.b = wh + l * G * H, rec.c = gh;
        rec.m = N, rec.n = G, rec.k = H;
        recurrent_(rec);
        LstmCell cell;
        cell.gx = gx + t * N * G, cell.gh = gh;
        cell.c_in = t == 0 ? c0 + l * N * H : c, cell.c_out = c;
        cell.h_state = h, cell.out = out + t * N * H;
        cell.n = N, cell.h = H;
        cell.relu = problem_.relu == Relu::fused && l == L - 1;
        lstm_cell(cell);
      }
      wx += G * width;
      width = H;
      x = out;
    }
    relu_pass();
  }

  void release() override {
    for (DeviceBuffer* b : {&gx_, &gh_, &h_, &c_, &seq_})
      *b = DeviceBuffer();
    GpuKernel::release();
  }

  std::string details() const override { return details_; }

 private:
  DeviceBuffer gx_, gh_, h_, c_, seq_;
  GemmLauncher recurrent_ = sgemm_07_warptile;
  std::string details_;
};

}  // namespace

std::unique_ptr<Kernel> make_lstm() {
  return std::make_unique<OwnLstm>();
}

}  // namespace lb::cuda::own
