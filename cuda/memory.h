// Device memory through one tracking allocator: every buffer our GPU kernels hold —
// tensor copies, library workspaces — is a DeviceBuffer, so a case's device peak is
// known exactly (the driver's view, which also holds contexts and library handles, is
// read beside it by the harness).
#pragma once

#include <cstddef>

namespace lb::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // throws lb::Error (with file:line) when cudaMalloc fails
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Bytes held by live DeviceBuffers, and their high-water mark since the last reset.
size_t device_bytes_in_use();
size_t device_bytes_peak();
void reset_device_peak();

// Used device memory as the driver sees it (total - free, whole device).
size_t driver_used_bytes();

}  // namespace lb::cuda
