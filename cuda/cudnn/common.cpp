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
    case Storage::f32: return CUDNN_DATA_FLOAT;
    case Storage::f16: return CUDNN_DATA_HALF;
    case Storage::bf16: return CUDNN_DATA_BFLOAT16;
    default: throw Error("cudnn: no cuDNN data type for storage " + std::string(name(s)));
  }
}

DeviceBuffer converted_copy(const Tensor& host, Storage to) {
  Tensor t(to, host.dims());
  for (int64_t i = 0; i < host.elements(); ++i) t.store(i, host.load(i));
  DeviceBuffer d(t.bytes());
  LB_CUDA_CHECK(cudaMemcpy(d.get(), t.data(), t.bytes(), cudaMemcpyHostToDevice));
  return d;
}

std::string cudnn_supports_dtype(DType dt) {
  switch (dt) {
    case DType::f32:
    case DType::tf32:
    case DType::f16:
    case DType::bf16: return {};
    case DType::i8: return "cuDNN's int8 convolutions take s8 activations; int8 problems are u8 x s8";
    case DType::f8: return "cuDNN's legacy API has no fp8";
  }
  return "unknown dtype";
}

}  // namespace lb::cuda
