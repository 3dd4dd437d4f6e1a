// The AVX2 indirect pixel tile of conv2d.cpu.default (ukernel.h) against a plain sum, on
// any CPU with AVX2 — including AVX-512 ones, where conv2d itself takes the AVX-512 path and
// the conformance test would not reach this tile: consecutive and scattered pixels, fewer
// pixels and channels than the tile, K slices (load_c), bias and ReLU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/ukernel.h"

namespace lb {
namespace {

using cpu::IndirectPixelsArgs;
constexpr int T = cpu::kPixelsAvx2, R = cpu::kChannelsAvx2;

TEST(CpuConvAvx2, IndirectPixelTileMatchesPlainSums) {
  if (!cpu::isa_supported(cpu::Isa::avx2)) GTEST_SKIP() << "this CPU has no AVX2";
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const int64_t kc = 37, ldc = 101, image = 400;
  std::vector<float> x(image), bias(R);
  for (float& v : x)
    v = d(rng);
  for (float& v : bias)
    v = d(rng);
  AlignedBuffer<float> a(size_t(2 * kc * R));  // two K slices
  for (size_t i = 0; i < a.size(); ++i)
    a.data()[i] = d(rng);
  std::vector<int64_t> off(size_t(2 * kc));
  for (int64_t& o : off)
    o = int64_t(rng() % 300);
  for (const bool consecutive : {true, false})
    for (const int n : {T, 4, 1})
      for (const int m : {R, 9, 3})
        for (const bool relu : {false, true}) {
          std::vector<float> c(size_t(R * ldc), 0.0f);
          int64_t px[T];  // pixel j's place in the image and column in C
          for (int j = 0; j < T; ++j)
            px[j] = consecutive ? 10 + j : 7 + 13 * j;
          IndirectPixelsArgs u;
          u.ldc = ldc;
          u.m = m;
          u.n = n;
          u.relu = relu;
          u.bias_row = bias.data();
          for (int j = 0; j < T; ++j) {
            u.x[j] = x.data() + px[j < n ? j : 0];
            u.c[j] = c.data() + px[j < n ? j : 0];
          }
          for (int slice = 0; slice < 2; ++slice) {
            u.kc = kc;
            u.a = a.data() + slice * kc * R;
            u.off = off.data() + slice * kc;
            u.load_c = slice > 0;
            u.last = slice == 1;
            cpu::ukr_f32_indirect_pixels_avx2(u);
          }
          for (int i = 0; i < R; ++i)
            for (int64_t col = 0; col < ldc; ++col) {
              float want = 0.0f;
              int j = -1;
              for (int q = 0; q < n; ++q)
                if (px[q] == col) j = q;
              if (i < m && j >= 0) {
                double s = bias[size_t(i)];
                for (int64_t k = 0; k < 2 * kc; ++k)
                  s += double(a.data()[k * R + i]) * x[size_t(px[j] + off[size_t(k)])];
                want = relu && s < 0 ? 0.0f : float(s);
              }
              EXPECT_NEAR(c[size_t(i * ldc + col)], want, 1e-4)
                  << "channel " << i << " column " << col << " m=" << m << " n=" << n
                  << (consecutive ? " consecutive" : " scattered") << (relu ? " relu" : "");
            }
        }
}

}  // namespace
}  // namespace lb
