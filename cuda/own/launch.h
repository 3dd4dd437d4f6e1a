// The launchers of our own CUDA kernels (backend `cuda`), one per kernel file. Plain
// pointers and ints only: this header is read by nvcc (C++17, the .cu files) and by the
// C++20 host code (the Kernel classes in dense.cpp, conv2d.cpp, lstm.cpp). Every
// launcher runs on the default stream, returns at once, and throws lb::Error (file:line)
// when the launch fails. Sizes are int: the Kernel classes' supports() keeps every tensor
// under 2^31 elements, and every kernel computes an index only inside its bounds check.
#pragma once

namespace lb::cuda::own {

// C = A·Bᵀ + bias, optionally clipped at 0 (relu = fused). A is M×K row-major, B is N×K
// row-major (dense: A = x, B = W, so both operands are K-contiguous), C is M×N
// row-major, bias has N values or is null. f32 for sgemm_*, f16/bf16 for hgemm_08_mma.
struct Gemm {
  const void* a = nullptr;
  const void* b = nullptr;
  const float* bias = nullptr;
  void* c = nullptr;
  int m = 0, n = 0, k = 0;
  bool relu = false;
};

void sgemm_01_naive(const Gemm& g);
void sgemm_02_coalesced(const Gemm& g);
void sgemm_03_smem(const Gemm& g);
void sgemm_04_reg1d(const Gemm& g);
void sgemm_05_reg2d(const Gemm& g);
void sgemm_06_vec(const Gemm& g);
void sgemm_07_warptile(const Gemm& g);

// Tensor cores: bf16 = true for bf16 operands, else f16; K must be a multiple of 8
// (16-byte rows for cp.async). hgemm_08_setup() raises the kernel's dynamic shared
// memory limit; call it once (untimed) before the first launch.
inline constexpr int kMmaKMultiple = 8;
void hgemm_08_setup();
void hgemm_08_mma(const Gemm& g, bool bf16);

// conv2d, NCHW (kernels/problem.h): x N×C×H×W, w K×(C/G)×R×S, bias K, y N×K×P×Q.
struct Conv {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* y = nullptr;
  int n = 0, c = 0, h = 0, w_ = 0, k = 0, r = 0, s = 0, p = 0, q = 0;
  int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, g = 1;
  bool relu = false;
};

// Implicit GEMM; `table` holds (C/G)·R·S Taps on the device (built once, in prepare()).
// Entry i of the table describes reduction index i = (c·R + r)·S + s of a group (the
// order of W's rows), so the kernel needs no division to find a tap.
struct Tap {
  int plane;   // c·H·W: offset of input channel c (within the group) in an image of x
  int dy, dx;  // r·DH and s·DW: the tap's row and column within the receptive window
};
inline constexpr int kMaxTapsPerGroup = 1 << 24;  // (C/G)·R·S, so the table stays small
void conv2d_implicit_gemm(const Conv& c, const Tap* table);

// Depthwise (G = C = K): shared memory the launch needs, to be checked in supports().
int conv2d_depthwise_smem_bytes(const Conv& c);
inline constexpr int kDepthwiseMaxSmem = 48 * 1024;
inline constexpr int kDepthwiseMaxTilesPerAxis = 65535;  // grid.y and grid.z limits
int conv2d_depthwise_tiles_h(const Conv& c);
int conv2d_depthwise_tiles_w(const Conv& c);
void conv2d_depthwise(const Conv& c);

// One LSTM step's pointwise cell for N×H (kernels/ref/lstm.cpp): gates a = gx + gh, both
// N×4H in gate order i, f, g, o; c_out = f⊙c_in + i⊙g (c_in may equal c_out);
// h = o⊙tanh(c_out) is written to h_state and to out, the latter clipped when relu.
struct LstmCell {
  const float* gx = nullptr;
  const float* gh = nullptr;
  const float* c_in = nullptr;
  float* c_out = nullptr;
  float* h_state = nullptr;
  float* out = nullptr;
  int n = 0, h = 0;
  bool relu = false;
};
void lstm_cell(const LstmCell& a);

// The element-wise ops (kernels/ops/add.h, softmax.h; elementwise.cu), on a floating
// storage, arithmetic in f32; relu = fused clips what they store.
enum class Floats { f32, f16, bf16 };
struct AddRun {  // y = a + b, n elements
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
  long long n = 0;
  Floats type = Floats::f32;
  bool relu = false;
};
void add(const AddRun& a);
struct SoftmaxRun {  // over the channels: x and y are samples × channels × positions
  const void* x = nullptr;
  void* y = nullptr;
  int samples = 0, channels = 0, positions = 1;
  Floats type = Floats::f32;
  bool relu = false;
};
void softmax(const SoftmaxRun& s);

// Max or average pooling (kernels/ops/pool2d.h; pool2d.cu): planes × IH×IW to OH×OW.
struct Pool {
  const void* x = nullptr;
  void* y = nullptr;
  int planes = 0, ih = 0, iw = 0, oh = 0, ow = 0, k = 1, s = 1, p = 0;
  bool avg = false;
  Floats type = Floats::f32;
  bool relu = false;
};
void pool2d(const Pool& q);

}  // namespace lb::cuda::own
