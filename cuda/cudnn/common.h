// What the cuDNN kernels share: the handle, data types, and a bias converted to the
// output's type on the device.
#pragma once

#include "cuda/check.h"
#include "cuda/memory.h"
#include "kernels/tensor.h"

namespace lb::cuda {

cudnnHandle_t cudnn_handle();
cudnnDataType_t cudnn_type(Storage s);

// A device copy of a host f32 tensor in another storage (bias and cell state must be of
// the data type cuDNN computes in).
DeviceBuffer converted_copy(const Tensor& host, Storage to);

// Dtypes the cuDNN kernels offer, with the reason for the others.
std::string cudnn_supports_dtype(DType dt);

}  // namespace lb::cuda
