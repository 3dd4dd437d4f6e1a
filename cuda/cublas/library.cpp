#include "cuda/cublas/library.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <atomic>

#include "kernels/common.h"

#ifndef LB_CUBLASLT_CONFIGURED_PATH
#define LB_CUBLASLT_CONFIGURED_PATH ""
#endif

namespace lb::cuda {
namespace {

#define LB_STR2(x) #x
#define LB_STR(x) LB_STR2(x)
constexpr const char* kSoname = "libcublasLt.so." LB_STR(CUBLAS_VER_MAJOR);

std::atomic<bool> opened{false};

struct Opened {
  CublasLt api;
  std::string why_not;
};

Opened open_library() {
  Opened o;
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  std::string tried = kSoname + std::string(": ") + (handle ? "" : dlerror());
  if (!handle && *LB_CUBLASLT_CONFIGURED_PATH) {
    handle = dlopen(LB_CUBLASLT_CONFIGURED_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!handle) tried += "; " + std::string(LB_CUBLASLT_CONFIGURED_PATH) + ": " + dlerror();
  }
  if (!handle) {
    o.why_not = "cuBLASLt cannot be opened (" + tried + ")";
    return o;
  }
  std::string lacking;
#define LB_CUBLASLT_RESOLVE(f)                                   \
  o.api.f = reinterpret_cast<decltype(&::f)>(dlsym(handle, #f)); \
  if (!o.api.f) lacking += std::string(lacking.empty() ? "" : ", ") + #f;
  LB_CUBLASLT_FUNCTIONS(LB_CUBLASLT_RESOLVE)
#undef LB_CUBLASLT_RESOLVE
  Dl_info info{};
  if (o.api.cublasLtGetVersion && dladdr(reinterpret_cast<void*>(o.api.cublasLtGetVersion), &info) &&
      info.dli_fname) {
    char resolved[PATH_MAX];
    o.api.file = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
  }
  if (!lacking.empty()) {
    o.why_not =
        "cuBLASLt (" + (o.api.file.empty() ? std::string(kSoname) : o.api.file) + ") lacks " + lacking;
    dlclose(handle);
    o.api = {};
    return o;
  }
  opened = true;
  return o;
}

const Opened& library() {
  static const Opened o = open_library();
  return o;
}

}  // namespace

const CublasLt& cublaslt() {
  const Opened& o = library();
  if (!o.why_not.empty()) throw Error(o.why_not);
  return o.api;
}

const std::string& why_no_cublaslt() {
  return library().why_not;
}

bool cublaslt_opened() {
  return opened;
}

const char* cublaslt_soname() {
  return kSoname;
}

}  // namespace lb::cuda
