// The onednn backend's kernels as factories; register.cpp gives each its id and description.
#pragma once

#include <memory>

#include "kernels/kernel.h"

namespace lb::onednn {

// The activation layouts a convolution kernel gives oneDNN (conv2d.cpp's header says why
// there are three): its own choice, reordered in run() (library); NCHW as given (nchw);
// its own choice, reordered untimed in prepare() and finish() (blocked).
enum class Layouts { library, nchw, blocked };

std::unique_ptr<Kernel> make_dense();
std::unique_ptr<Kernel> make_conv2d(Layouts layouts);
std::unique_ptr<Kernel> make_lstm();
std::unique_ptr<Kernel> make_pool2d();
std::unique_ptr<Kernel> make_add();
std::unique_ptr<Kernel> make_softmax();

}  // namespace lb::onednn
