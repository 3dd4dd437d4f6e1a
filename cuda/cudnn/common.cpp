#include "cuda/cudnn/common.h"

namespace lb::cuda {

cudnnHandle_t cudnn_handle() {
  static cudnnHandle_t h = [] {
    cudnnHandle_t handle = nullptr;
    LB_CUDNN_CHECK(cudnnCreate(&handle));
    return handle;
  }();
  return h;
}

cudnnDataType_t cudnn_type(Storage s) {
  switch (s) {
    case Storage::f32:
      return CUDNN_DATA_FLOAT;
    case Storage::f16:
      return CUDNN_DATA_HALF;
    case Storage::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      throw Error("cudnn: no cuDNN data type for storage " + std::string(name(s)));
  }
}

cudnnMathType_t cudnn_math(DType dt) {
  switch (dt) {
    case DType::f32:
      return CUDNN_FMA_MATH;
    case DType::tf32:
      return CUDNN_DEFAULT_MATH;
    default:
      return CUDNN_TENSOR_OP_MATH;
  }
}

const char* cudnn_math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "CUDNN_DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH:
      return "CUDNN_TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH:
      return "CUDNN_FMA_MATH";
    default:
      return "?";
  }
}

bool cudnn_not_supported(cudnnStatus_t s) {
  return int(s) / 1000 * 1000 == int(CUDNN_STATUS_NOT_SUPPORTED);
}

DeviceBuffer converted_copy(const Tensor& host, Storage to) {
  Tensor t(to, host.dims());
  for (int64_t i = 0; i < host.elements(); ++i)
    t.store(i, host.load(i));
  DeviceBuffer d(t.bytes());
  LB_CUDA_CHECK(cudaMemcpy(d.get(), t.data(), t.bytes(), cudaMemcpyHostToDevice));
  return d;
}

std::string cudnn_dtype_reason(const Problem& p) {
  std::string why = require_dtypes(p, {DType::f32, DType::tf32, DType::f16, DType::bf16});
  if (p.dt == DType::i8) why += ": cuDNN's int8 convolutions take s8 activations; int8 problems are u8 x s8";
  if (p.dt == DType::f8) why += ": cuDNN's legacy API has no fp8";
  return why;
}

}  // namespace lb::cuda
