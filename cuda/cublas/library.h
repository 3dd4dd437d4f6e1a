// cuBLASLt, opened at its first use (dlopen) rather than linked.
//
// Linked, libcublasLt's static initialisers ran in every process that layerbench or a test
// binary started, GPU or not: 0.35 s of a `layerbench --help` of 0.38 s on the 2-core
// AMD EPYC Zen 5 VM (perf: its init code and the page faults it takes, 2026-12-06), and
// twice a `run` or `check`, which starts itself again with glibc's malloc tunables. Opened
// here, it costs that once, in the process that uses it: a run on a GPU (a cuBLASLt case,
// the GPU peaks, the context's version), never a run without one.
//
// The functions are cuBLASLt's own, by their own names and types (decltype of the
// declarations in cublasLt.h), resolved all at once: a library without one of them is not
// opened. It is looked for as libcublasLt.so.<major of the headers built against> where
// the loader looks (LD_LIBRARY_PATH, the binary's RUNPATH, ld.so.cache), then at the path
// CMake found at configure time.
#pragma once

#include <cublasLt.h>

#include <string>

// Every cuBLASLt function layerbench calls.
#define LB_CUBLASLT_FUNCTIONS(X)          \
  X(cublasLtGetVersion)                   \
  X(cublasLtCreate)                       \
  X(cublasLtMatmul)                       \
  X(cublasLtMatmulAlgoConfigGetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)

namespace lb::cuda {

struct CublasLt {
#define LB_CUBLASLT_POINTER(f) decltype(&::f) f = nullptr;
  LB_CUBLASLT_FUNCTIONS(LB_CUBLASLT_POINTER)
#undef LB_CUBLASLT_POINTER
  std::string file;  // the library opened, its real path
};

// The library, opened on the first call (thread-safe); throws lb::Error with the loader's
// reason where it cannot be opened or lacks a function.
const CublasLt& cublaslt();
// "" once cublaslt() can be had (opening it if not yet), else why not, in one line.
const std::string& why_no_cublaslt();
// Whether it has been opened by this process: nothing opens it but the two above.
bool cublaslt_opened();
// The soname looked for first: libcublasLt.so.<CUBLAS_VER_MAJOR>.
const char* cublaslt_soname();

}  // namespace lb::cuda
