// The GPU backends on a GPU: every GPU kernel verified against the reference on the
// smoke suite and awkward shapes in every dtype it claims, or declined with a one-line
// reason (check_conforms(), kernels/tests/conformance.h); the tracking allocator; the
// event timer in both waiting modes. Exit 77 (ctest: SKIPPED) where no GPU is usable
// (gpu_test_main.cpp) — these tests never pass without having run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "cuda/elementwise.h"
#include "cuda/memory.h"
#include "cuda/runtime.h"
#include "kernels/data.h"
#include "kernels/tests/conformance.h"

namespace lb {
namespace {

std::vector<const KernelEntry*> gpu_kernels() {
  std::vector<const KernelEntry*> out;
  for (const auto& k : registry().kernels())
    if (k.info.device == Device::gpu) out.push_back(&k);
  return out;
}

void check_all(const std::vector<Problem>& problems) {
  int checked = 0;
  for (const KernelEntry* k : gpu_kernels())
    for (Problem p : problems)
      for (DType dt : kAllDTypes) {
        p.dt = dt;
        checked += check_conforms(*k, p);
      }
  EXPECT_GT(checked, 0) << "no GPU kernel checked anything";
}

TEST(GpuBackends, SmokeSuite) {
  check_all(load_suite("smoke"));
}

TEST(GpuBackends, AwkwardShapes) {
  std::vector<Problem> problems;
  for (const char* line :
       {"dense mb=1 ic=1 oc=1", "dense mb=17 ic=1023 oc=3 relu=fused",
        "dense mb=3 ic=17 oc=1023 relu=separate", "conv2d mb=1 ic=3 ih=17 iw=13 oc=7 kh=3 kw=3 sh=2 ph=1",
        "conv2d mb=2 ic=13 ih=9 iw=9 oc=13 kh=3 kw=3 ph=1 g=13",
        "conv2d mb=1 ic=8 ih=12 iw=12 oc=8 kh=3 kw=3 ph=2 dh=2 relu=inplace",
        "conv2d mb=3 ic=6 ih=7 iw=7 oc=9 kh=1 kw=1 g=3 relu=fused", "lstm mb=1 t=1 ic=3 hc=5",
        "lstm mb=3 t=4 ic=17 hc=8 l=2 relu=separate", "lstm mb=5 t=7 ic=16 hc=16 l=3 relu=inplace"})
    problems.push_back(parse_problem(line));
  check_all(problems);
}

// Every GPU kernel in the training passes it declares (KernelInfo::passes) beyond the
// forward, on small shapes with every ReLU mode.
TEST(GpuBackends, TrainingPasses) {
  int checked = 0;
  for (const KernelEntry* k : gpu_kernels())
    for (Pass pass : k->info.passes) {
      if (pass == Pass::fwd) continue;
      for (const char* line : {"dense mb=5 ic=33 oc=17", "dense mb=64 ic=256 oc=128 relu=separate",
                               "dense mb=3 ic=1023 oc=7 relu=inplace",
                               "conv2d mb=2 ic=4 ih=9 iw=9 oc=6 kh=3 kw=3 ph=1 relu=inplace",
                               "lstm mb=3 t=4 ic=8 hc=8 l=2 relu=inplace", "lstm mb=2 t=5 ic=6 hc=16"})
        for (DType dt : {DType::f32, DType::tf32, DType::f16, DType::bf16}) {
          Problem p = parse_problem(line);
          if (k->op_name() != name(p.op())) continue;
          p.dt = dt;
          p.pass = pass;
          checked += check_conforms(*k, p);
        }
    }
  EXPECT_GT(checked, 0) << "no GPU kernel checked a training pass";
}

TEST(GpuRuntime, TrackerCountsBuffersAndPeaks) {
  const size_t before = cuda::device_bytes_in_use();
  cuda::reset_device_peak();
  {
    cuda::DeviceBuffer a(1 << 20), b(3 << 20);
    EXPECT_EQ(cuda::device_bytes_in_use() - before, size_t(4) << 20);
  }
  EXPECT_EQ(cuda::device_bytes_in_use(), before);
  EXPECT_EQ(cuda::device_bytes_peak() - before, size_t(4) << 20);
}

TEST(GpuRuntime, EventTimerMeasuresDeviceWork) {
  for (bool blocking : {false, true}) {
    cuda::EventTimer timer(blocking);
    cuda::DeviceBuffer a(size_t(256) << 20);
    timer.start();
    cuda::flush_l2();
    const double t = timer.stop();
    EXPECT_GT(t, 0.0);
    EXPECT_LT(t, 1.0);
  }
}

// The hold keeps launch overhead out of the event pair: a one-element ReLU (a launch of
// a few µs, device work under that) times shorter with it than without, medians of 51.
TEST(GpuRuntime, HoldKeepsLaunchOverheadOutOfTheEvents) {
  cuda::DeviceBuffer x(sizeof(float));
  auto median = [&](bool hold) {
    cuda::EventTimer timer(false, hold);
    std::vector<double> t;
    for (int i = 0; i < 51; ++i) {
      timer.start();
      cuda::relu(x.get(), x.get(), 1, Storage::f32);
      t.push_back(timer.stop());
    }
    std::nth_element(t.begin(), t.begin() + 25, t.end());
    return t[25];
  };
  median(true);  // the first launches load the module
  const double held = median(true), plain = median(false);
  EXPECT_LT(held, plain) << "held " << held * 1e6 << " us, plain " << plain * 1e6 << " us";
}

// A run() that waits for the device inside waits for the hold, which ends by its timeout;
// the timer then times without it, so the next round does not wait again.
TEST(GpuRuntime, HoldEndsByItsTimeoutWhenTheRunWaitsInside) {
  cuda::EventTimer timer(false, true);
  auto round = [&] {
    const auto start = std::chrono::steady_clock::now();
    timer.start();
    cuda::synchronize();
    EXPECT_GE(timer.stop(), 0.0);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double first = round(), second = round();
  EXPECT_GE(first, cuda::EventTimer::kHoldTimeoutNs * 1e-9);
  EXPECT_LT(second, first);
}

}  // namespace
}  // namespace lb
