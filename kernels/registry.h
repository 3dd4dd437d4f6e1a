// The registry: every kernel id, its description and a factory. Each backend has one
// explicit registration function, in its folder's register.cpp (a flat list of
// r.add({...}, factory) lines: the ids live there only), all of them called by registry()
// (backends.cpp); no self-registering statics, which a static library's linker would drop.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace lb {

struct KernelEntry {
  KernelInfo info;
  std::function<std::unique_ptr<Kernel>()> make;

  // Derived from the id: "<op>.<backend>.<variant>".
  std::string_view op_name() const;
  std::string_view backend() const;
  // Empty when the kernel handles `p`, else why not (wrong op included), as one line
  // "<backend>: <the kernel's reason>".
  std::string supports(const Problem& p) const;
};

class Registry {
 public:
  // Throws lb::Error on a malformed or duplicate id, or an op that does not exist.
  void add(KernelInfo info, std::function<std::unique_ptr<Kernel>()> make);
  const std::vector<KernelEntry>& kernels() const { return kernels_; }
  const KernelEntry* find(std::string_view id) const;
  std::vector<std::string> backends() const;
  // Facts for a results file's context that only a backend knows: its library's version,
  // the ISA it runs on. Added by the backend's registration function.
  void add_context(std::string key, std::string value) {
    context_.emplace_back(std::move(key), std::move(value));
  }
  const std::vector<std::pair<std::string, std::string>>& context() const { return context_; }

 private:
  std::vector<KernelEntry> kernels_;
  std::vector<std::pair<std::string, std::string>> context_;
};

// Registration functions, one per backend (each defined in its backend's folder).
void register_ref(Registry& r);
void register_onednn(Registry& r);  // built with LB_HAVE_ONEDNN
void register_eigen(Registry& r);   // built with LB_HAVE_EIGEN
void register_cpu(Registry& r);     // built with LB_HAVE_CPU (x86-64)
void register_cublas(Registry& r);  // built with LB_HAVE_CUDA (cuda/)
void register_cudnn(Registry& r);   // built with LB_HAVE_CUDA (cuda/)
void register_cuda(Registry& r);    // built with LB_HAVE_CUDA (cuda/own/): our own CUDA kernels

// The registry with every backend built into this binary: kernels/backends.cpp, in the
// lb_backends library, which links every backend (the GPU ones live in cuda/, which
// itself builds on lb_kernels, so this one function sits above both).
const Registry& registry();

// The ref backend alone (the oracle verification uses; needs no other backend).
const Registry& reference_registry();

}  // namespace lb
