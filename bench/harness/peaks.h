// The machine's peak rates, measured, not taken from a data sheet. CPU: loops of
// independent FMA (AVX-512, else AVX2; AVX-512 FP16), bf16 dot-product (vdpbf16ps), int8
// dot-product (vpdpbusd) and AMX tile (tdpbf16ps, tdpbusd — where Linux grants the tiles)
// instructions on 1..N threads, where the CPU has them; and memory
// bandwidth: read, non-temporal write and triad streams over buffers far beyond the
// last-level cache, and a read of a buffer held in L2, per thread count. GPU: the best of
// ten 8192x8192x8192 cuBLASLt products per dtype, and a large device-to-device copy (bytes
// read + written). Measured once per machine and cached (see peaks_cache_path()); "% of
// peak" divides by the fastest engine for the dtype, "% of bandwidth" by the ceiling of
// the memory level a case's data lives in.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/dtype.h"

namespace lb::bench {

// Where a case's data lives between its timed runs, for the bandwidth ceiling it meets.
enum class MemoryLevel { l2, dram };

struct Peak {
  // "<dtype>_<engine>": "f32_fma", "f16_fma", "bf16_dot", "i8_dot", "i8_maddubs" (AVX2),
  // "bf16_amx", "i8_amx"; bandwidths "bw_dram_read", "bw_dram_write", "bw_dram_triad",
  // "bw_l2_read"; GPU "gpu_<dtype>_gemm", "gpu_d2d_copy"
  std::string kind;
  int threads = 1;
  double ops_per_second = 0;  // FLOP/s (int8: multiply-add ops/s, 2 per product); bandwidths B/s
  std::string how;            // e.g. "AVX-512 vfmadd231ps zmm, 24 independent chains, best of 5 uncontended"
  bool contended = false;     // no repetition had every core to itself (how says so too)
  int cores = 0;              // the cores this process could run on when it was measured (CPU peaks)
  int64_t measured_unix = 0;  // when it was measured, seconds since 1970 (0: a cache older than that)
};

class Peaks {
 public:
  // Loads the cache or measures what is missing for these thread counts — and the GPU's
  // peaks when `gpu` — and saves. A cached peak that is not plausible (not positive, or
  // above what the CPU's instructions allow at 6 GHz on every core) is measured again,
  // as is one on fewer threads well below its share of one on more, and a compute peak on
  // more threads well below as many times the rate per thread on fewer, kept as contended
  // where it stays so (remeasure_inconsistent); a compute peak on fewer threads still below
  // its share of an uncontended one on more is raised to that share (raise_to_share);
  // a cache that cannot be written is written to the temporary directory instead, with
  // one warning. Thread counts above the cores are warned of (check_oversubscription).
  // A contended cached peak is measured again when the machine is quiet now, and a CPU
  // peak cached over an hour ago always, unless `resuming` (a resumed run keeps its peaks). Once `stop()`
  // says so (a signal: the run is ending), no further peak is measured; those measured are kept and cached.
  static Peaks for_threads(const std::vector<int>& threads, bool gpu, bool remeasure, bool resuming = false,
                           const std::function<bool()>& stop = {});
  // The compute peak for a case of this dtype on this many threads or on the GPU: the
  // fastest engine measured for the dtype; nullptr when none applies (tf32 and f8 have no
  // CPU peak loop, f16 and bf16 none where the CPU lacks their instructions).
  const Peak* find(DType dt, int threads, bool gpu = false) const;
  // The bandwidth ceiling of a memory level on this many threads (DRAM: the fastest of
  // read, write and triad), or the GPU's device-memory copy; nullptr when not measured.
  const Peak* bandwidth(MemoryLevel level, int threads, bool gpu = false) const;
  const std::vector<Peak>& all() const { return peaks_; }
  // The cache file the peaks were read from or written to, "none" when neither (also
  // noted as the context's layerbench_peaks_cache).
  const std::string& cache_path() const { return path_; }

 private:
  std::vector<Peak> peaks_;
  std::string path_;
};

// How steady the machine is (--steadiness): one core's f32 FMA throughput (the peak loop,
// independent chains) and its clock (a dependent chain of scalar multiply-adds:
// latency-bound, so only the clock moves it), each timed in ~20 ms windows, alternating —
// for a while before the cases and once before each case, so that the spread covers the
// whole run. On a core of its own both stay within a few per cent; where another workload
// shares the core (a VM's SMT sibling) the throughput moves and the clock does not.
// Spreads are robust standard deviations (1.4826 x MAD) of log(window time), as fractions.
struct Steadiness {
  int windows = 0;
  double window_seconds = 0;  // the throughput probe's median window time
  double fma_spread = 0;      // throughput windows' robust SD
  double fma_slowest = 0;     // the slowest window over the median (>= 1)
  double fma_fastest = 0;     // the fastest window over the median (<= 1)
  double clock_spread = 0;    // clock windows' robust SD
  std::string how;
};

class SteadinessProbe {
 public:
  static constexpr double kWindowSeconds = 0.02;  // per probe per window
  SteadinessProbe();                              // calibrates both probes (~0.1 s)
  // Windows for about `seconds` (at least 8), before the cases; stops once stop() says so.
  void probe(double seconds, const std::function<bool()>& stop = {});
  void window();  // one window of each probe (~40 ms)
  Steadiness summary() const;

 private:
  std::function<float(long)> throughput_;
  std::function<float(long)> clock_probe_;
  std::string fma_how_;
  long fma_iters_ = 0, clock_iters_ = 0;
  std::vector<double> fma_, clock_;  // window times (s)
  int start_windows_ = 0;
};

std::string peaks_cache_path();
bool is_bandwidth(const std::string& kind);  // a bandwidth peak (B/s), not an operation rate  //
                                             // $LAYERBENCH_PEAKS, else ~/.cache/layerbench/peaks-<host>.json

}  // namespace lb::bench
