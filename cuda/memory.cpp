#include "cuda/memory.h"

#include <atomic>
#include <utility>

#include "cuda/check.h"

namespace lb::cuda {
namespace {

std::atomic<size_t> g_in_use{0}, g_peak{0};

}  // namespace

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  LB_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  const size_t now = g_in_use += bytes;
  size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (!ptr_) return;
  cudaFree(ptr_);  // no throwing from a destructor; a failed free shows in the driver's view
  g_in_use -= bytes_;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    DeviceBuffer old(std::move(*this));
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

size_t device_bytes_in_use() {
  return g_in_use.load();
}
size_t device_bytes_peak() {
  return g_peak.load();
}
void reset_device_peak() {
  g_peak = g_in_use.load();
}

size_t driver_used_bytes() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
  return total - free;
}

}  // namespace lb::cuda
