// conv2d.cuda.depthwise — direct depthwise convolution (G = C = K), aimed at memory bandwidth.
//
// A depthwise layer does R·S MACs per output (9 at 3×3): far too little arithmetic for
// a GEMM formulation to pay (implicit GEMM would run 1-column tiles). The cost is
// moving x and y, so the goal is to read every input once and write every output once.
// One block computes a TILE_H×TILE_W tile of one (image, channel) plane: it copies the
// input window the tile needs (tile + halo, zero-padded at the borders) and the
// channel's R×S filter into shared memory, then each thread computes ROWS outputs of a
// column from there.
// Why NCHW (the problem's layout, problem.h): each channel's plane is one contiguous
// H×W block, so the window is read as row segments of consecutive floats (coalesced),
// every thread of a block shares one filter and one bias, and no layout conversion
// pass is needed (it would move as many bytes as the layer itself). NHWC would instead
// vectorise across channels; with NCHW the halo re-read is the only overhead:
// (TILE_H+2)(TILE_W+2)/(TILE_H·TILE_W) ≈ 1.2x of x at 3×3, stride 1, mostly from L2.
// Predicted: 60-80 % of the copy bandwidth on large planes (dw112, dw56), less on small
// planes (dw7, dw14), where a 7×7 plane fills only a quarter of a 16×32 tile.
// Edges: the window copy zero-fills outside the image; outputs past P, Q are not stored.
#include "cuda/own/common.cuh"

namespace lb::cuda::own {
namespace {

constexpr int TILE_W = 32;  // output tile width: one warp per tile row (coalesced stores)
constexpr int TILE_H = 16;  // output tile height
constexpr int ROWS = 2;     // outputs per thread: one column, rows TILE_H/ROWS apart
constexpr int THREADS_Y = TILE_H / ROWS;
constexpr int THREADS = TILE_W * THREADS_Y;
static_assert(TILE_W == 32, "a warp covers one row of the tile");
static_assert(TILE_H % ROWS == 0, "ROWS must divide TILE_H");
static_assert(THREADS <= 1024, "a block holds at most 1024 threads");

struct Window {
  long long h, w;  // input rows and columns a TILE_H×TILE_W output tile needs
};
Window window(const Conv& c) {
  return {(TILE_H - 1) * (long long)c.sh + (c.r - 1) * (long long)c.dh + 1,
          (TILE_W - 1) * (long long)c.sw + (c.s - 1) * (long long)c.dw + 1};
}

__global__ void __launch_bounds__(THREADS)
    depthwise_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                     float* __restrict__ y, Conv cv, int win_h, int win_w) {
  extern __shared__ float smem[];  // the input window (win_h×win_w), then the filter (R×S)
  float* tile = smem;
  float* filt = smem + win_h * win_w;
  const int plane = blockIdx.x;  // image·C + channel
  const int ch = plane % cv.c;
  const int p0 = blockIdx.y * TILE_H, q0 = blockIdx.z * TILE_W;
  const int h0 = p0 * cv.sh - cv.ph, w0 = q0 * cv.sw - cv.pw;  // window corner in the input plane
  const int tid = threadIdx.y * TILE_W + threadIdx.x;
  const float* xp = x + plane * cv.h * cv.w_;  // this plane of x (H×W)

  for (int i = tid; i < win_h * win_w; i += THREADS) {
    const int h = h0 + i / win_w, wi = w0 + i % win_w;
    tile[i] = (h >= 0 && h < cv.h && wi >= 0 && wi < cv.w_) ? xp[h * cv.w_ + wi] : 0.0f;
  }
  const int taps = cv.r * cv.s;
  for (int i = tid; i < taps; i += THREADS)
    filt[i] = w[ch * taps + i];
  __syncthreads();

  const int q = q0 + threadIdx.x;
#pragma unroll
  for (int j = 0; j < ROWS; ++j) {
    const int ly = threadIdx.y + j * THREADS_Y;  // row within the tile; a warp stores 32 consecutive q of it
    const int p = p0 + ly;
    if (p >= cv.p || q >= cv.q) continue;
    float acc = 0.0f;
    for (int r = 0; r < cv.r; ++r) {
      const float* row = tile + (ly * cv.sh + r * cv.dh) * win_w + threadIdx.x * cv.sw;
      for (int s = 0; s < cv.s; ++s)
        acc = fmaf(row[s * cv.dw], filt[r * cv.s + s], acc);
    }
    y[(plane * cv.p + p) * cv.q + q] = epilogue(acc, bias, ch, cv.relu);
  }
}

}  // namespace

int conv2d_depthwise_smem_bytes(const Conv& c) {
  const Window win = window(c);
  const long long bytes = (long long)sizeof(float) * (win.h * win.w + (long long)c.r * c.s);
  return bytes > kDepthwiseMaxSmem ? kDepthwiseMaxSmem + 1
                                   : int(bytes);  // clamped: over the limit stays over it
}
int conv2d_depthwise_tiles_h(const Conv& c) {
  return ceil_div(c.p, TILE_H);
}
int conv2d_depthwise_tiles_w(const Conv& c) {
  return ceil_div(c.q, TILE_W);
}

void conv2d_depthwise(const Conv& c) {
  const Window win = window(c);
  const dim3 grid(c.n * c.c, conv2d_depthwise_tiles_h(c), conv2d_depthwise_tiles_w(c));
  check_grid(grid.x, grid.y, grid.z, "conv2d.cuda.depthwise");
  if (conv2d_depthwise_smem_bytes(c) > kDepthwiseMaxSmem)
    throw Error("conv2d.cuda.depthwise: the input window needs more than 48 KiB of shared memory");
  depthwise_kernel<<<grid, dim3(TILE_W, THREADS_Y), conv2d_depthwise_smem_bytes(c)>>>(
      c.x, c.w, c.bias, c.y, c, int(win.h), int(win.w));
  LB_OWN_LAUNCHED();
}

}  // namespace lb::cuda::own
