#include "kernels/eigen/common.h"

#include <algorithm>
#include <cstring>

#include "kernels/common.h"
#include "kernels/ops/traits.h"

namespace lb::eigen {

std::string dtype_reason(const Problem& p) {
  const std::string why = require_dtypes(p, {DType::f32});
  switch (p.dt) {
    case DType::f32:
      return why;
    case DType::bf16:
      // Measured: K = 1023 gives error 0.085 against a tolerance of 0.02, at ~13 GFLOP/s.
      return why + ": Eigen's bf16 products accumulate in bf16, far outside tolerance";
    case DType::f16:
      return why + ": Eigen's half products accumulate in half";
    case DType::i8:
      return why + ": Eigen 3.4 has no u8 x s8 -> s32 product";
    case DType::tf32:
      return why + ": no tf32 arithmetic on CPU";
    case DType::f8:
      return why + ": Eigen has no fp8 type";
  }
  return why;
}

Range valid_range(int64_t n_in, int64_t n_out, int64_t stride, int64_t pad, int64_t offset) {
  // o·stride >= pad - offset  and  o·stride <= n_in - 1 + pad - offset.
  const int64_t lo = pad - offset, hi = n_in - 1 + pad - offset;
  const int64_t first = std::min(lo <= 0 ? 0 : ceil_div(lo, stride), n_out);
  const int64_t last = hi < 0 ? 0 : std::min(hi / stride + 1, n_out);
  return {first, std::max(first, last)};
}

void* BlockCache::allocate(size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  Block* best = nullptr;  // the smallest free block that holds `bytes`
  for (Block& b : blocks_)
    if (!b.used && b.memory.bytes() >= bytes && (!best || b.memory.bytes() < best->memory.bytes())) best = &b;
  if (!best) {
    blocks_.push_back({AlignedBuffer<std::byte>(bytes), false});
    best = &blocks_.back();
  }
  best->used = true;
  return best->memory.data();
}

void BlockCache::deallocate(void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (Block& b : blocks_)
    if (b.memory.data() == p) b.used = false;
}

size_t BlockCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t total = 0;
  for (const Block& b : blocks_)
    total += b.memory.bytes();
  return total;
}

Threads::Threads(int n) : pool_(std::max(n, 1)), device_(&pool_, std::max(n, 1), &cache_) {}

void Threads::parallel_for(int64_t n, double bytes_per_item, double cycles_per_item,
                           const std::function<void(Eigen::Index, Eigen::Index)>& f) const {
  device_.parallelFor(n, Eigen::TensorOpCost(bytes_per_item, 0, cycles_per_item), f);
}

void row_gemv(const Threads& threads, const float* w, int64_t n, int64_t k, const float* x, const float* bias,
              bool relu, float* y) {
  struct Args {
    const float *w, *x, *bias;
    float* y;
    int64_t k;
    bool relu;
  } a{w, x, bias, y, k, relu};
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Vector = Eigen::Matrix<float, Eigen::Dynamic, 1>;
  threads.parallel_for(n, 4.0 * double(k), 2.0 * double(k), [&a](Eigen::Index first, Eigen::Index last) {
    const Eigen::Index rows = last - first;
    Eigen::Map<Vector> out(a.y + first, rows);
    out.noalias() =
        Eigen::Map<const Matrix>(a.w + first * a.k, rows, a.k) * Eigen::Map<const Vector>(a.x, a.k);
    if (a.bias) out += Eigen::Map<const Vector>(a.bias + first, rows);
    if (a.relu) out = out.cwiseMax(0.0f);
  });
}

void relu_pass(Relu relu, TensorSet& ts, const Threads& threads) {
  if (relu != Relu::inplace && relu != Relu::separate) return;
  Tensor& dst = ts.at(Arg::dst);
  const float* y = dst.as<float>();
  float* out = (relu == Relu::inplace ? dst : ts.at(Arg::relu_dst)).as<float>();
  // A plain loop split over the pool: a tensor expression here would be evaluated in
  // blocks through per-thread scratch buffers, memory the case would hold but not report.
  threads.device().parallelFor(dst.elements(), Eigen::TensorOpCost(4, 4, 1),
                               [y, out](Eigen::Index first, Eigen::Index last) {
                                 for (Eigen::Index i = first; i < last; ++i)
                                   out[i] = std::max(y[i], 0.0f);
                               });
}

void relu_backward_pass(Relu relu, TensorSet& ts, const Threads& threads) {
  if (relu != Relu::inplace && relu != Relu::separate) return;
  const bool separate = relu == Relu::separate;
  const float* out = ts.at(separate ? Arg::relu_dst : Arg::dst).as<float>();
  const float* dy = ts.at(separate ? Arg::diff_relu_dst : Arg::diff_dst).as<float>();
  float* dz = ts.at(Arg::diff_dst).as<float>();
  threads.device().parallelFor(ts.at(Arg::diff_dst).elements(), Eigen::TensorOpCost(8, 4, 1),
                               [out, dy, dz](Eigen::Index first, Eigen::Index last) {
                                 for (Eigen::Index i = first; i < last; ++i)
                                   dz[i] = out[i] > 0.0f ? dy[i] : 0.0f;
                               });
}

std::string fused_backward_reason(const Problem& p) {
  if (!runs_backward(p.pass) || p.relu != Relu::fused) return {};
  return "relu=fused in dir=" + std::string(name(p.pass)) +
         ": the Eigen kernels' backward takes the mask from a ReLU pass (relu=inplace or separate)";
}

std::string im2col_reason(const Problem& p) {
  if (std::string why = dtype_reason(p); !why.empty()) return why;
  if (p.conv().depthwise()) return "depthwise convolutions are conv2d.eigen.depthwise's";
  const Conv2d& c = p.conv();
  const long double columns = (long double)c.ic * c.kh * c.kw * c.oh() * c.ow();
  if (columns > 0x1p48L)
    return "the im2col matrix would have " + power_of_two(columns) + " elements (more than 2^48)";
  return {};
}

void im2col_rows(const Conv2d& c, const float* x, float* col, int64_t first, int64_t last) {
  const int64_t H = c.ih, W = c.iw, P = c.oh(), Q = c.ow(), R = c.kh, S = c.kw;
  for (int64_t row = first; row < last; ++row) {
    const int64_t ch = row / (R * S), r = row / S % R, s = row % S;
    const float* plane = x + ch * H * W;
    float* out = col + row * P * Q;
    const Range ps = valid_range(H, P, c.sh, c.ph, r * c.dh);
    const Range qs = valid_range(W, Q, c.sw, c.pw, s * c.dw);
    std::memset(out, 0, sizeof(float) * size_t(ps.first * Q));
    for (int64_t p = ps.first; p < ps.last; ++p) {
      float* o = out + p * Q;
      const int64_t in = (p * c.sh - c.ph + r * c.dh) * W - c.pw + s * c.dw;  // plane[in + q·SW] feeds q
      std::memset(o, 0, sizeof(float) * size_t(qs.first));
      if (c.sw == 1) {
        std::memcpy(o + qs.first, plane + in + qs.first, sizeof(float) * size_t(qs.last - qs.first));
      } else {
        for (int64_t q = qs.first; q < qs.last; ++q)
          o[q] = plane[in + q * c.sw];
      }
      std::memset(o + qs.last, 0, sizeof(float) * size_t(Q - qs.last));
    }
    std::memset(out + ps.last * Q, 0, sizeof(float) * size_t((P - ps.last) * Q));
  }
}

void col2im_channels(const Conv2d& c, const float* col, float* x, int64_t first, int64_t last) {
  const int64_t H = c.ih, W = c.iw, Q = c.ow(), R = c.kh, S = c.kw;
  for (int64_t ch = first; ch < last; ++ch) {
    float* plane = x + ch * H * W;
    std::fill(plane, plane + H * W, 0.0f);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t s = 0; s < S; ++s) {
        const float* row = col + ((ch * R + r) * S + s) * c.oh() * Q;
        const Range ps = valid_range(H, c.oh(), c.sh, c.ph, r * c.dh);
        const Range qs = valid_range(W, Q, c.sw, c.pw, s * c.dw);
        for (int64_t p = ps.first; p < ps.last; ++p) {
          const int64_t in = (p * c.sh - c.ph + r * c.dh) * W - c.pw + s * c.dw;
          for (int64_t q = qs.first; q < qs.last; ++q)
            plane[in + q * c.sw] += row[p * Q + q];
        }
      }
  }
}

}  // namespace lb::eigen
