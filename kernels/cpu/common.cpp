#include "kernels/cpu/common.h"

#include "kernels/cpu/ukernel.h"

namespace lb::cpu {

void pixel_rows_to_channels(Isa isa, const float* ct, int64_t K, int64_t P, int64_t k0, int64_t k1,
                            float* y) {
  if (isa == Isa::avx512) return transpose_f32_avx512(ct, K, P, k0, k1, y, P);
  pixel_rows_to_channels<float>(ct, K, P, k0, k1, y);
}

void relu_pass(Relu relu, TensorSet& ts, Pool* pool) {
  if (relu != Relu::inplace && relu != Relu::separate) return;
  const Tensor& y = ts.at(Arg::dst);
  Tensor& r = relu == Relu::inplace ? ts.at(Arg::dst) : ts.at(Arg::relu_dst);
  const int64_t n = y.elements();
  const bool bf16 = y.storage() == Storage::bf16;
  const void* src = y.data();
  void* dst = r.data();
  auto body = [&](int tid, int threads) {
    const Range part = split(n, 1024, tid, threads);
    if (bf16) {
      // bf16 is a sign bit on top: max(x, 0) keeps x unless its sign bit is set (NaN stays).
      const auto* s = static_cast<const uint16_t*>(src);
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = part.first; i < part.last; ++i)
        d[i] = (s[i] & 0x8000) && (s[i] & 0x7fff) <= 0x7f80 ? 0 : s[i];
    } else {
      const auto* s = static_cast<const float*>(src);
      auto* d = static_cast<float*>(dst);
      for (int64_t i = part.first; i < part.last; ++i)
        d[i] = s[i] > 0.0f ? s[i] : (s[i] != s[i] ? s[i] : 0.0f);
    }
  };
  if (pool)
    pool->run(body);
  else
    body(0, 1);
}

}  // namespace lb::cpu
