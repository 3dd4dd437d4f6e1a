// What the cuDNN kernels share: the handle, data types, math types, and a bias converted
// to the output's type on the device.
#pragma once

#include "cuda/check.h"
#include "cuda/memory.h"
#include "kernels/kernel.h"
#include "kernels/tensor.h"

namespace lb::cuda {

cudnnHandle_t cudnn_handle();
cudnnDataType_t cudnn_type(Storage s);

// The math type a dtype runs in, as PyTorch sets it: f32 is strict fp32
// (CUDNN_FMA_MATH: FMA kernels only, no tensor-core down-conversion), tf32 is
// CUDNN_DEFAULT_MATH (tensor cores allowed, TF32 for float data), f16 and bf16
// CUDNN_TENSOR_OP_MATH. Named in details().
cudnnMathType_t cudnn_math(DType dt);
const char* cudnn_math_name(cudnnMathType_t m);

// cuDNN 9's status codes are categories with sub-codes (NOT_SUPPORTED = 3000,
// NOT_SUPPORTED_SHAPE = 3002, ...): true for any of the NOT_SUPPORTED category.
bool cudnn_not_supported(cudnnStatus_t s);

// A device copy of a host f32 tensor in another storage (bias and cell state must be of
// the data type cuDNN computes in).
DeviceBuffer converted_copy(const Tensor& host, Storage to);

// Empty when the cuDNN kernels offer p's dtype, else require_dtypes()' reason and what
// cuDNN lacks.
std::string cudnn_dtype_reason(const Problem& p);

}  // namespace lb::cuda
