// The eigen backend's kernels as factories; register.cpp gives each its id and description.
#pragma once

#include <memory>

#include "kernels/kernel.h"

namespace lb::eigen {

std::unique_ptr<Kernel> make_dense();
std::unique_ptr<Kernel> make_dense_backward();  // dense_backward.cpp: its backward passes
std::unique_ptr<Kernel> make_conv2d();
std::unique_ptr<Kernel> make_conv2d_backward();  // conv2d_backward.cpp: its backward passes
std::unique_ptr<Kernel> make_depthwise_conv2d();
std::unique_ptr<Kernel> make_lstm();
std::unique_ptr<Kernel> make_pool2d();
std::unique_ptr<Kernel> make_add();
std::unique_ptr<Kernel> make_softmax();

}  // namespace lb::eigen
