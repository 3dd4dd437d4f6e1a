// The main() of the GPU test binaries: exit 77 (ctest: SKIPPED) where no GPU is usable, so
// that a GPU test never passes without having run; else GoogleTest as usual.
#include <gtest/gtest.h>

#include <cstdio>

#include "cuda/runtime.h"

int main(int argc, char** argv) {
  if (const std::string& why = lb::cuda::why_no_gpu(); !why.empty()) {
    std::printf("SKIPPED: %s\n", why.c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
