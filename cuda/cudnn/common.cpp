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
