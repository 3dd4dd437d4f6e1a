// The cudnn backend's kernels as factories; register.cpp gives each its id and description.
#pragma once

#include <memory>

#include "kernels/kernel.h"

namespace lb::cuda {

// find: the algorithm from cuDNN's exhaustive search in prepare(), else its heuristics.
std::unique_ptr<Kernel> make_cudnn_conv2d(bool find);
std::unique_ptr<Kernel> make_cudnn_lstm();
std::unique_ptr<Kernel> make_cudnn_pool2d();
std::unique_ptr<Kernel> make_cudnn_softmax();

}  // namespace lb::cuda
