// What every Eigen kernel shares: row-major views of our tensors, Eigen's own thread pool
// with a cache for the contraction's temporaries, the output kernel that fuses bias and ReLU
// into a contraction, and the ReLU pass.
//
// Threads: each kernel owns an Eigen::ThreadPool of ctx.threads workers (created in
// prepare()) and a ThreadPoolDevice on it. Contractions and element-wise expressions are
// evaluated on that device (`.device(d) = ...`), which splits them by Eigen's cost model;
// our own loops go through parallel_for(). With one thread both run on the calling thread.
//
// Allocation: Eigen's contraction allocates its packing buffers through the device on
// every evaluation; the device here takes them from a BlockCache, which keeps every block
// once freed and hands it out again, so after a first evaluation (prepare() runs one on a
// scratch output) run() makes no large allocations. Eigen's thread pool still allocates a
// few small task objects per parallel call; that is inside Eigen and left alone.
#pragma once

// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsics (the
// _mm512_undefined_ps() operand of the masked max and broadcast that Eigen's packet math
// uses) wherever they are inlined into our code: a false positive. It is silenced for the
// intrinsic and Eigen headers only, by including them first under the pragma — GCC judges
// the warning by the state at the header line it points to.
// (Clang, which builds the fuzz targets, has no such warning and would warn of the name.)
#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#include <unsupported/Eigen/CXX11/Tensor>
#pragma GCC diagnostic pop

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/buffer.h"
#include "kernels/kernel.h"

namespace lb::eigen {

// Row-major views: Eigen's RowMajor matches our layouts (problem.h).
template <int N>
using View = Eigen::TensorMap<Eigen::Tensor<float, N, Eigen::RowMajor, Eigen::Index>>;
template <int N>
using ConstView = Eigen::TensorMap<Eigen::Tensor<const float, N, Eigen::RowMajor, Eigen::Index>>;
using Rows = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Contract dimension a of the left operand with dimension b of the right one.
inline Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> contract_dims(Eigen::Index a, Eigen::Index b) {
  return {Eigen::IndexPair<Eigen::Index>(a, b)};
}

// Empty for f32, else why not: require_dtypes() and why Eigen falls short (one line).
std::string dtype_reason(const Problem& p);

// Output positions o in [first, last) whose input o·stride - pad + offset lies in [0, n_in).
struct Range {
  int64_t first, last;
};
Range valid_range(int64_t n_in, int64_t n_out, int64_t stride, int64_t pad, int64_t offset);

class BlockCache final : public Eigen::Allocator {
 public:
  void* allocate(size_t bytes) const override;
  void deallocate(void* p) const override;
  size_t bytes() const;

 private:
  struct Block {
    AlignedBuffer<std::byte> memory;
    bool used;
  };
  mutable std::mutex mu_;  // the contraction may allocate from worker threads
  mutable std::vector<Block> blocks_;
};

class Threads {
 public:
  explicit Threads(int n);
  const Eigen::ThreadPoolDevice& device() const { return device_; }
  int count() const { return device_.numThreads(); }
  // f(first, last) over [0, n), split by Eigen's cost model (bytes read and written and
  // cycles per item); keep f's captures to two pointers so std::function does not allocate.
  void parallel_for(int64_t n, double bytes_per_item, double cycles_per_item,
                    const std::function<void(Eigen::Index, Eigen::Index)>& f) const;
  // Bytes of contraction temporaries held in the cache.
  size_t cached_bytes() const { return cache_.bytes(); }

 private:
  BlockCache cache_;
  Eigen::ThreadPool pool_;
  Eigen::ThreadPoolDevice device_;
};

// A contraction output kernel: adds a bias and optionally clamps at zero, block by block as
// each output block is final (still in cache). `per_column`: the bias runs along the columns
// of our row-major output (dense: OC; LSTM: 4H) rather than its rows (conv: K).
//
// Eigen evaluates contractions column-major; for row-major operands it swaps them
// (params.swapped_arguments) and the block it hands over is then the transpose of ours:
// its rows are our columns.
struct BiasRelu {
  const float* bias = nullptr;  // none when null
  bool per_column = true;
  bool relu = false;

  template <typename Index, typename Scalar>
  EIGEN_ALWAYS_INLINE void operator()(
      const Eigen::internal::blas_data_mapper<Scalar, Index, Eigen::ColMajor>& out,
      const Eigen::TensorContractionParams& params, Index i, Index j, Index num_rows, Index num_cols) const {
    const bool along_rows = per_column == params.swapped_arguments;  // bias index = Eigen's row
    for (Index c = 0; c < num_cols; ++c) {
      Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>> v(&out(0, c), num_rows);
      if (bias && along_rows)
        v += Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>>(bias + i, num_rows);
      if (bias && !along_rows) v += bias[j + c];
      if (relu) v = v.max(Scalar(0));
    }
  }
};

// y (N) = W (N×K, row-major) · x (K) [+ bias] [then max(y, 0)], with Eigen's row-major
// matrix-vector product (a streaming dot product per output), rows split across the pool.
// For one row of x this replaces the tensor contraction, whose matrix-vector path reads
// such a W across its rows, one strided element at a time (measured on AlexNet's fc6,
// 1×9216 · 9216×4096: 0.6 GFLOP/s against 18 GFLOP/s here, where reading W bounds it).
void row_gemv(const Threads& threads, const float* w, int64_t n, int64_t k, const float* x, const float* bias,
              bool relu, float* y);

// relu=inplace: dst := max(dst, 0); relu=separate: relu_dst := max(dst, 0); else nothing.
void relu_pass(Relu relu, TensorSet& ts, const Threads& threads);
// The ReLU's backward in front of a backward pass (kernels/ops/traits.h): relu=separate:
// diff_dst := diff_relu_dst where relu_dst > 0, else 0; relu=inplace: the same over diff_dst
// from dst; else nothing. A plain loop split over the pool, as relu_pass.
void relu_backward_pass(Relu relu, TensorSet& ts, const Threads& threads);

// Empty unless p is a backward pass with relu=fused, which the Eigen kernels decline: the
// mask as a contraction's operand (a select expression) doubled the contractions each file
// instantiates (the convolution's backward took 34 s to compile with it, 21 s without, on the
// Zen 5 VM), for a mode relu=inplace computes with the same arithmetic.
std::string fused_backward_reason(const Problem& p);

// Empty when conv2d.eigen.im2col takes p (forward and backward alike), else why not: the
// dtype, a depthwise convolution (conv2d.eigen.depthwise's), or a column matrix of one
// image, IC·KH·KW × OH·OW, too large (the problem's limits, on tensors and MACs, do not bound it).
std::string im2col_reason(const Problem& p);

// Rows [first, last) of one image's column matrix col (C·R·S × P·Q) from x (C × H × W):
// col[(c·R + r)·S + s][p·Q + q] = x[c][p·SH − PH + r·DH][q·SW − PW + s·DW], 0 outside.
void im2col_rows(const Conv2d& c, const float* x, float* col, int64_t first, int64_t last);
// Its adjoint for channels [first, last): x[c] = Σ over (r, s) of col's rows added where the
// taps land (x's planes are zeroed first).
void col2im_channels(const Conv2d& c, const float* col, float* x, int64_t first, int64_t last);

}  // namespace lb::eigen
