// Element-wise device work the vendor libraries do not do for us.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace lb::cuda {

// out[i] = max(in[i], 0) for n values of a floating storage (f32, f16, bf16) on the
// default stream; in == out is the in-place ReLU. Asynchronous; throws on a bad launch.
void relu(const void* in, void* out, int64_t n, Storage s);

}  // namespace lb::cuda
