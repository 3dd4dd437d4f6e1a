// AlignedBuffer: the scratch memory a CPU kernel holds from prepare() on (packed or
// transposed weights, partial sums, padded images, recurrent state), in one type.
//
// 64-byte aligned, so a row starts on a cache line and AVX-512 loads of it are aligned;
// zeroed when allocated, which also maps its pages in prepare() rather than in the timed
// run(). Inside a case's set-up (a CaseMemoryScope), one of 128 KiB or more is a block the
// process keeps (kernels/host_memory.h), zeroed here. Tensors keep their own storage
// (kernels/tensor.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "kernels/common.h"
#include "kernels/host_memory.h"

namespace lb {

template <class T>
class AlignedBuffer {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>,
                "an AlignedBuffer holds plain values: zeroed bytes must be valid Ts");

 public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  // n zeroed values of T.
  explicit AlignedBuffer(size_t n) : bytes_(checked_bytes(n)), n_(n) {
    if (void* block = take_resident(bytes_)) {
      data_.reset(static_cast<T*>(block));
    } else {
      // aligned_alloc wants a multiple of the alignment: the size is rounded up to one.
      data_.reset(static_cast<T*>(std::aligned_alloc(kAlignment, bytes_)));
      if (!data_) throw std::bad_alloc();
    }
    std::memset(static_cast<void*>(data_.get()), 0, bytes_);
  }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::move(o.data_)), bytes_(std::exchange(o.bytes_, 0)), n_(std::exchange(o.n_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    data_ = std::move(o.data_);
    bytes_ = std::exchange(o.bytes_, 0);
    n_ = std::exchange(o.n_, 0);
    return *this;
  }

  // Like a pointer member, constness does not reach the values: a const kernel method may
  // hand out the buffer it owns to the threads that write it.
  T* data() const { return data_.get(); }
  T& operator[](size_t i) const { return data_.get()[i]; }
  size_t size() const { return n_; }
  // Bytes held, alignment padding included (what a kernel reports in scratch_bytes()).
  size_t bytes() const { return bytes_; }

 private:
  // n·sizeof(T) rounded up to the alignment; a count whose bytes overflow is a failed
  // allocation (bad_alloc), never a small buffer.
  static size_t checked_bytes(size_t n) {
    if (n > (size_t(1) << 62) / sizeof(T)) throw std::bad_alloc();
    return size_t(round_up(int64_t(std::max<size_t>(n * sizeof(T), 1)), kAlignment));
  }
  struct Free {
    void operator()(T* p) const {
      if (!give_back_resident(p)) std::free(p);
    }
  };
  std::unique_ptr<T[], Free> data_;
  size_t bytes_ = 0;
  size_t n_ = 0;
};

}  // namespace lb
