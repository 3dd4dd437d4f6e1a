// Host side of backend `cuda` (our own kernels): the Kernel classes' factories, which
// register.cpp pairs with their ids, and the size rule every one of them applies.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "cuda/own/launch.h"
#include "kernels/kernel.h"

namespace lb::cuda::own {

// Empty when every count is below 2^31 (the kernels index with int), else why not.
std::string too_big_for_int(std::initializer_list<int64_t> element_counts);

using GemmLauncher = void (*)(const Gemm&);
std::unique_ptr<Kernel> make_sgemm_dense(GemmLauncher launch);  // steps 01..07, f32
std::unique_ptr<Kernel> make_mma_dense();                       // step 08, f16/bf16
std::unique_ptr<Kernel> make_implicit_gemm_conv2d();
std::unique_ptr<Kernel> make_depthwise_conv2d();
std::unique_ptr<Kernel> make_lstm();
std::unique_ptr<Kernel> make_pool2d();   // elementwise.cpp
std::unique_ptr<Kernel> make_add();      // elementwise.cpp
std::unique_ptr<Kernel> make_softmax();  // elementwise.cpp

}  // namespace lb::cuda::own
