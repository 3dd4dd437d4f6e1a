// What the cpu backend's kernels share: the pool and workspace a kernel holds from
// prepare() on, the ReLU passes for relu=inplace/separate, and the dtype checks.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/pool.h"
#include "kernels/kernel.h"

namespace lb::cpu {

// Empty when the problem's dtype is one of `dtypes`, else the reason ("cpu: dense.cpu.naive
// supports f32 only").
std::string dtype_reason(const Problem& p, std::initializer_list<DType> dtypes, std::string_view kernel);

// relu=inplace: dst := max(dst, 0); relu=separate: relu_dst := max(dst, 0) (f32 or bf16
// storage); else nothing. Split across the pool.
void relu_pass(Relu relu, TensorSet& ts, Pool* pool);

// A 64-byte aligned buffer of T, zeroed (which maps its pages before timing).
template <class T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) : data_(static_cast<T*>(alloc(n * sizeof(T)))), n_(n) {}
  T* data() const { return data_.get(); }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

 private:
  static void* alloc(size_t bytes);
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data_;
  size_t n_ = 0;
};

void* aligned_zeroed(size_t bytes);  // 64-byte aligned, zeroed; std::free() releases it
template <class T>
void* Buffer<T>::alloc(size_t bytes) {
  return aligned_zeroed(bytes);
}

}  // namespace lb::cpu
