#include "kernels/eigen/common.h"

#include <algorithm>

#include "kernels/common.h"

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

}  // namespace lb::eigen
