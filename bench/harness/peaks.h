// The machine's peak rates, measured, not taken from a data sheet. CPU: loops of
// independent AVX-512 (else AVX2) FMA, bf16 dot-product (vdpbf16ps) and int8
// dot-product (vpdpbusd) instructions on 1..N threads. GPU: the best of ten
// 8192x8192x8192 cuBLASLt products per dtype, and a large device-to-device copy (bytes
// read + written). Measured once per machine and cached (see peaks_cache_path()); "% of
// peak" divides by these.
#pragma once

#include <string>
#include <vector>

#include "kernels/dtype.h"

namespace lb::bench {

struct Peak {
  std::string kind;  // "f32_fma", "bf16_dot", "i8_dot"; GPU "gpu_<dtype>_gemm", "gpu_d2d_copy"
  int threads = 1;
  double ops_per_second = 0;  // FLOP/s (int8: multiply-add ops/s, 2 per product)
  std::string how;            // e.g. "AVX-512 vfmadd231ps zmm, 12 chains, 0.25 s"
  bool contended = false;     // no repetition had every core to itself (how says so too)
  int cores = 0;              // the cores this process could run on when it was measured (CPU peaks)
};

class Peaks {
 public:
  // Loads the cache or measures what is missing for these thread counts — and the GPU's
  // peaks when `gpu` — and saves. A cached peak that is not plausible (not positive, or
  // above what the CPU's instructions allow at 6 GHz on every core) is measured again;
  // a cache that cannot be written is written to the temporary directory instead, with
  // one warning. Thread counts above the cores are warned of (check_oversubscription).
  static Peaks for_threads(const std::vector<int>& threads, bool gpu, bool remeasure);
  // The peak for a case of this dtype on this many threads or on the GPU; nullptr when
  // none applies (tf32, f16 and f8 have no CPU peak loop).
  const Peak* find(DType dt, int threads, bool gpu = false) const;
  const std::vector<Peak>& all() const { return peaks_; }
  // The cache file the peaks were read from or written to, "none" when neither (also
  // noted as the context's layerbench_peaks_cache).
  const std::string& cache_path() const { return path_; }

 private:
  std::vector<Peak> peaks_;
  std::string path_;
};

std::string peaks_cache_path();  // $LAYERBENCH_PEAKS, else ~/.cache/layerbench/peaks-<host>.json

}  // namespace lb::bench
