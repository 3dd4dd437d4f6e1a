// The GPU smoke test: the toolchain produced code this GPU runs, and it computes.
// Exit 77 (ctest: SKIPPED) where there is no usable GPU, 0 on success, 1 on a wrong result.
#include <cmath>
#include <cstdio>
#include <vector>

#include "cuda/device.h"
#include "kernels/common.h"

int main() {
  if (const std::string why = lb::cuda::why_no_device(); !why.empty()) {
    std::printf("SKIPPED: %s\n", why.c_str());
    return 77;
  }
  try {
    std::printf("device: %s\n", lb::cuda::describe_device().c_str());
    const int n = (1 << 20) + 3;  // not a multiple of the block size
    std::vector<float> x(n), y(n), expect(n);
    for (int i = 0; i < n; ++i) {
      x[i] = float(i % 97) - 48.0f;
      y[i] = float(i % 13) + 0.5f;
      expect[i] = 3.0f * x[i] + y[i];
    }
    lb::cuda::saxpy(3.0f, x, y);
    for (int i = 0; i < n; ++i)
      if (y[i] != expect[i]) {
        std::printf("FAILED: y[%d] = %g, expected %g\n", i, y[i], expect[i]);
        return 1;
      }
    std::printf("passed: saxpy on %d elements\n", n);
    return 0;
  } catch (const lb::Error& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
}
