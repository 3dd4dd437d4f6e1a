// The pointwise cell of lstm.cuda.default: one fused kernel per step for all N×H units.
//
// Gates (kernels/ref/lstm.cpp, order i, f, g, o): a = gx + gh, where gx holds the
// input projection with the bias (one GEMM for all steps) and gh the recurrent product
// (one GEMM per step), both N×4H row-major; then
//   c = σ(a_f)⊙c_prev + σ(a_i)⊙tanh(a_g),  h = σ(a_o)⊙tanh(c).
// One thread per unit (n, j) reads its 4 gate pre-activations from each input and
// writes c, h and the layer output: the five small element-wise passes an unfused
// LSTM would make over N×4H values become one. Accurate expf/tanhf (not the fast
// intrinsics): the f32 tolerance is a few ulps times sqrt of the accumulation length.
#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int THREADS = 256;  // threads per block, one unit each
static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");

__device__ __forceinline__ float sigmoid(float v) {
  return 1.0f / (1.0f + expf(-v));
}

__global__ void __launch_bounds__(THREADS) cell_kernel(LstmCell a) {
  const int u = blockIdx.x * THREADS + threadIdx.x;  // unit n·H + j
  if (u >= a.n * a.h) return;
  const int n = u / a.h, j = u % a.h, H = a.h;
  const float* gx = a.gx + n * 4 * H;  // row n of the N×4H pre-activations
  const float* gh = a.gh + n * 4 * H;
  const float i = sigmoid(gx[j] + gh[j]);
  const float f = sigmoid(gx[H + j] + gh[H + j]);
  const float g = tanhf(gx[2 * H + j] + gh[2 * H + j]);
  const float o = sigmoid(gx[3 * H + j] + gh[3 * H + j]);
  const float c = fmaf(f, a.c_in[u], i * g);
  const float h = o * tanhf(c);
  a.c_out[u] = c;  // c_in may be c_out: this thread alone reads and writes u
  a.h_state[u] = h;
  a.out[u] = a.relu ? fmaxf(h, 0.0f) : h;
}

}  // namespace

void lstm_cell(const LstmCell& a) {
  const long long units = (long long)a.n * a.h;
  const long long blocks = ceil_div(units, THREADS);
  check_grid(blocks, 1, 1, "lstm.cuda.default (cell)");
  cell_kernel<<<unsigned(blocks), THREADS>>>(a);
  LB_OWN_LAUNCHED();
}

}  // namespace lb::cuda::own
