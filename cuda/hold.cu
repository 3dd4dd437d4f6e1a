#include "cuda/check.h"
#include "cuda/hold.h"

namespace lb::cuda {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(const volatile int* release, int* timed_out, unsigned long long timeout_ns) {
  const unsigned long long start = global_ns();
  while (*release == 0)
    if (global_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
}

}  // namespace

void queue_hold(const volatile int* release, int* timed_out, unsigned long long timeout_ns) {
  hold_kernel<<<1, 1>>>(release, timed_out, timeout_ns);
  LB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace lb::cuda
