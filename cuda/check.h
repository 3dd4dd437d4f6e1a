// One check macro per API family. Each failure becomes an lb::Error naming the call,
// file:line and the library's own reason; callers turn it into a failed case.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "kernels/common.h"

namespace lb::cuda {

[[noreturn]] inline void fail(const char* call, const char* file, int line, const std::string& why) {
  throw ::lb::Error(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " + why);
}

}  // namespace lb::cuda

#define LB_CUDA_CHECK(call)                                                                               \
  do {                                                                                                    \
    const cudaError_t lb_err_ = (call);                                                                   \
    if (lb_err_ != cudaSuccess) ::lb::cuda::fail(#call, __FILE__, __LINE__, cudaGetErrorString(lb_err_)); \
  } while (0)

#define LB_CUBLAS_CHECK(call)                                                                       \
  do {                                                                                              \
    const cublasStatus_t lb_err_ = (call);                                                          \
    if (lb_err_ != CUBLAS_STATUS_SUCCESS)                                                           \
      ::lb::cuda::fail(#call, __FILE__, __LINE__, "cuBLAS status " + std::to_string(int(lb_err_))); \
  } while (0)

#define LB_CUDNN_CHECK(call)                                                     \
  do {                                                                           \
    const cudnnStatus_t lb_err_ = (call);                                        \
    if (lb_err_ != CUDNN_STATUS_SUCCESS)                                         \
      ::lb::cuda::fail(#call, __FILE__, __LINE__, cudnnGetErrorString(lb_err_)); \
  } while (0)
