// What the CUDA build decides on the host, without a GPU (label unit, runs everywhere
// the CUDA code is built): the reasons supports() gives before any device is touched,
// the cuDNN math type of each dtype, the context entries a results file carries, and
// cuBLASLt opened at its first use only.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cuda/cublas/library.h"
#include "cuda/cudnn/common.h"
#include "cuda/runtime.h"
#include "kernels/registry.h"

namespace lb {
namespace {

bool mapped(const std::string& what) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str().find(what) != std::string::npos;
}

// First in this file (gtest runs a file's tests in order): nothing before it has opened
// cuBLASLt. Without a GPU, neither the registry's reasons nor the results' context open it
// (it is not linked: its initialisers cost every process start 0.35 s); asked for, it
// opens, with every function layerbench calls, and names its file and version.
TEST(CudaHost, CublasLtOpenedAtItsFirstUseOnly) {
  ASSERT_FALSE(cuda::cublaslt_opened());
  EXPECT_FALSE(mapped("libcublasLt")) << "libcublasLt is mapped before its first use";
  (void)registry().find("dense.cublas.lt")->supports(parse_problem("dense mb=4 ic=16 oc=16"));
  (void)cuda::gpu_context();
  EXPECT_EQ(cuda::cublaslt_opened(), cuda::why_no_gpu().empty());
  ASSERT_EQ(cuda::why_no_cublaslt(), "");
  const cuda::CublasLt& lt = cuda::cublaslt();
  EXPECT_TRUE(cuda::cublaslt_opened());
  EXPECT_TRUE(mapped("libcublasLt"));
#define LB_EXPECT_RESOLVED(f) EXPECT_NE(lt.f, nullptr) << #f;
  LB_CUBLASLT_FUNCTIONS(LB_EXPECT_RESOLVED)
#undef LB_EXPECT_RESOLVED
  EXPECT_NE(lt.file.find("libcublasLt.so"), std::string::npos) << lt.file;
  EXPECT_EQ(lt.cublasLtGetVersion() / 10000, size_t(CUBLAS_VER_MAJOR));
}

std::string reason(const char* id, const char* line) {
  const KernelEntry* k = registry().find(id);
  EXPECT_NE(k, nullptr) << id;
  return k ? k->supports(parse_problem(line)) : "";
}

// cuBLASLt's fp8 path has no algorithm for rows that are not 16-byte aligned: declined with
// the shape's reason, not thrown from prepare() as "found no algorithm".
TEST(CudaHost, CublasF8NeedsSixteenAlignedShapes) {
  for (const char* line :
       {"dense mb=4 ic=17 oc=16 dt=f8", "dense mb=4 ic=1023 oc=3 dt=f8", "dense mb=4 ic=32 oc=1 dt=f8"}) {
    const std::string why = reason("dense.cublas.lt", line);
    EXPECT_NE(why.find("multiples of 16"), std::string::npos) << line << ": " << why;
  }
  // Aligned shapes and other dtypes are not declined for their shape.
  for (const char* line : {"dense mb=3 ic=32 oc=16 dt=f8", "dense mb=4 ic=17 oc=3 dt=bf16"}) {
    const std::string why = reason("dense.cublas.lt", line);
    EXPECT_EQ(why.find("multiples of 16"), std::string::npos) << line << ": " << why;
  }
}

TEST(CudaHost, CudnnMathTypePerDtype) {
  EXPECT_EQ(cuda::cudnn_math(DType::f32), CUDNN_FMA_MATH);  // strict fp32: no TF32 down-conversion
  EXPECT_EQ(cuda::cudnn_math(DType::tf32), CUDNN_DEFAULT_MATH);
  EXPECT_EQ(cuda::cudnn_math(DType::f16), CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(cuda::cudnn_math(DType::bf16), CUDNN_TENSOR_OP_MATH);
  EXPECT_STREQ(cuda::cudnn_math_name(CUDNN_DEFAULT_MATH), "CUDNN_DEFAULT_MATH");
  EXPECT_TRUE(cuda::cudnn_not_supported(CUDNN_STATUS_NOT_SUPPORTED));
  EXPECT_TRUE(cuda::cudnn_not_supported(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE));
  EXPECT_FALSE(cuda::cudnn_not_supported(CUDNN_STATUS_BAD_PARAM));
  EXPECT_FALSE(cuda::cudnn_not_supported(CUDNN_STATUS_SUCCESS));
}

// The bf16 LSTM is offered where cuDNN's RNN descriptor takes bf16 data with f32 math
// (asked on the host): cuDNN 9.19, the version built against here, does. Other reasons
// (no GPU) may follow; a "has no bf16" one must not.
TEST(CudaHost, CudnnBf16LstmWhereTheDescriptorTakesIt) {
  if (cudnnGetVersion() < 91900) GTEST_SKIP() << "cuDNN " << cudnnGetVersion() << ": not the version checked";
  const std::string why = reason("lstm.cudnn.default", "lstm mb=2 t=3 ic=16 hc=16 dt=bf16");
  EXPECT_EQ(why.find("has no bf16"), std::string::npos) << why;
}

TEST(CudaHost, ContextNamesTheLibrariesAndTheGpu) {
  std::map<std::string, std::string> c;
  for (const auto& [key, value] : cuda::gpu_context())
    c[key] = value;
  for (const char* key : {"layerbench_cuda_version", "layerbench_cublas_version", "layerbench_cudnn_version",
                          "layerbench_gpu_model", "layerbench_gpu_driver"})
    EXPECT_FALSE(c[key].empty()) << key;
  EXPECT_NE(c["layerbench_cublas_version"].find("libcublasLt"), std::string::npos)
      << c["layerbench_cublas_version"];
  EXPECT_NE(c["layerbench_cudnn_version"].find("libcudnn"), std::string::npos)
      << c["layerbench_cudnn_version"];
  if (!cuda::why_no_gpu().empty()) {
    EXPECT_EQ(c["layerbench_gpu_model"].rfind("none (", 0), 0u) << c["layerbench_gpu_model"];
  }
  EXPECT_EQ(cuda::dotted_version(91900), "9.19.0");
}

}  // namespace
}  // namespace lb
