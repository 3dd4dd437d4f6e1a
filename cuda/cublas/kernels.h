// The cublas backend's kernels as factories; register.cpp gives each its id and description.
#pragma once

#include <memory>

#include "kernels/kernel.h"

namespace lb::cuda {

std::unique_ptr<Kernel> make_cublas_dense();

}  // namespace lb::cuda
