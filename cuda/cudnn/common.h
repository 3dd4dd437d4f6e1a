// What the cuDNN kernels share: the handle, data types, and a bias converted to the
// output's type on the device.
#pragma once

#include "cuda/check.h"
#include "cuda/memory.h"
#include "kernels/kernel.h"
#include "kernels/tensor.h"

namespace lb::cuda {

cudnnHandle_t cudnn_handle();
cudnnDataType_t cudnn_type(Storage s);

// A device copy of a host f32 tensor in another storage (bias and cell state must be of
// the data type cuDNN computes in).
DeviceBuffer converted_copy(const Tensor& host, Storage to);

// Empty when the cuDNN kernels offer p's dtype, else require_dtypes()' reason and what
// cuDNN lacks.
std::string cudnn_dtype_reason(const Problem& p);

}  // namespace lb::cuda
