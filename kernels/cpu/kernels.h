// The cpu backend's kernels as factories; register.cpp gives each its id and description.
#pragma once

#include <memory>

#include "kernels/cpu/gemm.h"
#include "kernels/kernel.h"

namespace lb::cpu {

std::unique_ptr<Kernel> make_naive_dense();               // dense_1_naive.cpp
std::unique_ptr<Kernel> make_blocked_dense();             // dense_2_blocked.cpp
std::unique_ptr<Kernel> make_packed_dense(Isa isa);       // dense.cpp: the micro-kernel of one ISA
std::unique_ptr<Kernel> make_dense();                     // dense.cpp: the best micro-kernel by CPUID
std::unique_ptr<Kernel> make_dense_backward();            // dense_backward.cpp: its backward passes
std::unique_ptr<Kernel> make_conv2d();                    // conv2d.cpp: f32 (bf16 and int8 handed on)
std::unique_ptr<Kernel> make_conv2d_backward();           // conv2d_backward.cpp: its backward passes
std::unique_ptr<Kernel> make_lowp_conv2d();               // conv2d_lowp.cpp: bf16 and int8
std::unique_ptr<Kernel> make_depthwise_conv2d();          // conv2d_depthwise.cpp: NCHW
std::unique_ptr<Kernel> make_depthwise_blocked_conv2d();  // conv2d_depthwise_blocked.cpp: nChw8c
std::unique_ptr<Kernel> make_lstm();
std::unique_ptr<Kernel> make_pool2d();   // pool2d.cpp: max and average, NCHW
std::unique_ptr<Kernel> make_add();      // elementwise.cpp
std::unique_ptr<Kernel> make_softmax();  // elementwise.cpp: over the channels

}  // namespace lb::cpu
