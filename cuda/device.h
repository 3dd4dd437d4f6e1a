// The first piece of the GPU half: find out whether a usable GPU is here, and say why
// not when it is not. Device buffers, timing, NVML and the vendor backends build on it.
#pragma once

#include <string>
#include <vector>

namespace lb::cuda {

// Empty when device 0 can run kernels, else one line saying why not
// ("no CUDA driver", "no CUDA device", ...). Never throws.
std::string why_no_device();

// The device's name and compute capability, e.g. "NVIDIA H200 (sm_90)".
std::string describe_device();

// y = a·x + y on the device, copying in and out; for the smoke test. Throws lb::Error
// with file:line on a CUDA error.
void saxpy(float a, const std::vector<float>& x, std::vector<float>& y);

}  // namespace lb::cuda
