// The GPU smoke test: the toolchain produced code this GPU runs, and it computes — our
// element-wise ReLU kernel (cuda/elementwise.cu) on a length that is not a multiple of
// its block size, through the tracking allocator.
// Exit 77 (ctest: SKIPPED) where there is no usable GPU, 0 on success, 1 on a wrong result.
#include <cstdio>
#include <vector>

#include "cuda/check.h"
#include "cuda/elementwise.h"
#include "cuda/memory.h"
#include "cuda/runtime.h"

int main() {
  if (const std::string& why = lb::cuda::why_no_gpu(); !why.empty()) {
    std::printf("SKIPPED: %s\n", why.c_str());
    return 77;
  }
  try {
    const lb::cuda::DeviceFacts& f = lb::cuda::device_facts();
    std::printf("device: %s (sm_%d%d)\n", f.name.c_str(), f.major, f.minor);
    const int n = (1 << 20) + 3;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i)
      x[i] = float(i % 97) - 48.0f;
    const size_t bytes = sizeof(float) * x.size();
    lb::cuda::DeviceBuffer in(bytes), out(bytes);
    LB_CUDA_CHECK(cudaMemcpy(in.get(), x.data(), bytes, cudaMemcpyHostToDevice));
    lb::cuda::relu(in.get(), out.get(), n, lb::Storage::f32);
    LB_CUDA_CHECK(cudaMemcpy(y.data(), out.get(), bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      if (y[i] != (x[i] > 0.0f ? x[i] : 0.0f)) {
        std::printf("FAILED: relu(%g) = %g at %d\n", x[i], y[i], i);
        return 1;
      }
    std::printf("passed: relu on %d elements\n", n);
    return 0;
  } catch (const lb::Error& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
}
