// Element-wise device work the vendor libraries do not do for us.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace lb::cuda {

// out[i] = max(in[i], 0) for n values of a floating storage (f32, f16, bf16) on the
// default stream; in == out is the in-place ReLU. Asynchronous; throws on a bad launch.
void relu(const void* in, void* out, int64_t n, Storage s);

// The ReLU's backward from its output: dz[i] = out[i] > 0 ? dy[i] : 0, n values of a
// floating storage; dz == dy is the in-place step. Asynchronous, the default stream.
void relu_backward(const void* out, const void* dy, void* dz, int64_t n, Storage s);

}  // namespace lb::cuda
