// The indirect tiles of conv2d.cpu.default with channels in the lanes (ukernel.h) against a
// plain sum. AVX2's on any CPU with AVX2 — including AVX-512 ones, where conv2d itself takes
// the AVX-512 paths and the conformance test would not reach it: consecutive and scattered
// pixels, fewer pixels and channels than the tile, K slices (load_c), bias and ReLU.
// AVX-512's row tile: every width it is instantiated for, fewer channels, bias and ReLU.
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

TEST(CpuConvAvx2, IndirectPixelTileMatchesPlainSums) {
  constexpr int T = cpu::kPixelsAvx2, R = cpu::kChannelsAvx2;
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

// AVX-512's row tile: up to 32 channels × 14 consecutive pixels, the whole depth in one call,
// straight into C's channel rows; everything else in C, channels past m included, left as it
// was.
TEST(CpuConvAvx512, RowTileMatchesPlainSums) {
  if (!cpu::isa_supported(cpu::Isa::avx512)) GTEST_SKIP() << "this CPU has no AVX-512";
  constexpr int W = cpu::kRowPixelsAvx512, R = cpu::kRowChannelsAvx512;
  constexpr float kUntouched = 7.0f;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const int64_t kc = 41, ldc = 70, col0 = 5, image = 400;
  std::vector<float> x(image), bias(R);
  for (float& v : x)
    v = d(rng);
  for (float& v : bias)
    v = d(rng);
  std::vector<int64_t> off(static_cast<size_t>(kc));
  for (int64_t& o : off)
    o = int64_t(rng() % 300);
  for (const int m : {R, 20, 16, 11, 1}) {
    const int width = (m + 15) / 16 * 16;  // the panel's channels, k-major
    AlignedBuffer<float> a(size_t(kc * width));
    for (size_t i = 0; i < a.size(); ++i)
      a.data()[i] = int(i % width) < m ? d(rng) : 0.0f;
    for (const int n : {W, 13, 12, 9, 6, 3, 2, 1})
      for (const bool relu : {false, true}) {
        std::vector<float> c(size_t(R * ldc), kUntouched);
        const int64_t first = 13;  // the tile's first pixel in the image
        cpu::IndirectRowArgs u;
        u.kc = kc;
        u.a = a.data();
        u.x = x.data() + first;
        u.off = off.data();
        u.c = c.data() + col0;
        u.ldc = ldc;
        u.m = m;
        u.n = n;
        u.relu = relu;
        u.bias_row = bias.data();
        cpu::ukr_f32_indirect_row_avx512(u);
        for (int i = 0; i < R; ++i)
          for (int64_t col = 0; col < ldc; ++col) {
            const int64_t j = col - col0;
            float want = kUntouched;
            if (i < m && j >= 0 && j < n) {
              double s = bias[size_t(i)];
              for (int64_t k = 0; k < kc; ++k)
                s += double(a.data()[k * width + i]) * x[size_t(first + j + off[size_t(k)])];
              want = relu && s < 0 ? 0.0f : float(s);
            }
            EXPECT_NEAR(c[size_t(i * ldc + col)], want, 1e-4)
                << "channel " << i << " column " << col << " m=" << m << " n=" << n << (relu ? " relu" : "");
          }
      }
  }
}

}  // namespace
}  // namespace lb
