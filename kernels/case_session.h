// The one lifecycle of a case — allocate, fill, digest inputs, poison outputs, prepare,
// run, finish, verify, release — used by `check`, the timed benchmark cases, their
// warm-up and the GPU peak probe. Whoever runs a kernel on a problem does it through
// a CaseSession, so the order (and what each step may touch) is written once:
//
//   CaseSession s(kernel, problem, Context{threads});
//   s.allocate(seed);   // every argument; inputs filled (seeded) and digested; outputs poisoned
//   s.prepare();        // the kernel's untimed set-up (a GPU kernel uploads, poison included)
//   s.run();            // the timed work: kernel.run()
//   s.rearm(); s.run(); // untimed, then timed again (Kernel::rearm)
//   s.finish();         // untimed: wait, copy outputs back to the host tensors
//   s.verify(macs);     // inputs untouched, every output written, within tolerance of ref
//   s.release();        // also done by the destructor
//
// Consecutive cases of one problem and seed — its kernels, thread counts and ReLU modes —
// read the same inputs. So a session that ends lends its inputs on, if they are still
// untouched (digests as filled), and the next session of the same problem (ReLU mode
// aside: it changes outputs only) and seed takes them instead of making and filling its
// own: the same values, without a pass of page clearing, filling and digesting that cost
// about a fifth of a sweep's set-up. Its outputs go with them, to be poisoned again: on a
// VM that takes freed memory back, new pages cost 1.1-1.5 s of system time per GiB
// (kernels/host_memory.h). Tensors taken so were resident before the case's memory
// baseline; reused_bytes() says how many bytes, for the memory figures.
//
// Outputs are poisoned before prepare() because a GPU kernel uploads its outputs there,
// poison included: an element the kernel never writes comes back as poison.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.h"
#include "kernels/verify.h"

namespace lb {

class CaseSession {
 public:
  CaseSession(const KernelEntry& kernel, Problem problem, Context ctx = {});
  ~CaseSession();
  CaseSession(const CaseSession&) = delete;
  CaseSession& operator=(const CaseSession&) = delete;

  // Allocates every argument, fills the inputs from `seed`, digests them and poisons
  // the outputs.
  void allocate(uint64_t seed);
  // Instead of allocate(): the given inputs (the reference run on a sample of another
  // case's inputs); outputs are allocated and poisoned.
  void adopt_inputs(TensorSet inputs);
  void prepare();  // makes the kernel and prepares it (untimed)
  // The same, with `configure` called on the kernel between making and preparing it (the
  // reference's only_rows()).
  void prepare(const std::function<void(Kernel&)>& configure);
  void run();     // the timed work
  void rearm();   // untimed, before each run() after the first (Kernel::rearm)
  void finish();  // untimed: outputs visible in tensors()
  // The verdict on the outputs of the last run (verify_outputs in kernels/verify.h).
  Verdict verify(int64_t max_reference_macs = kDefaultReferenceMacs) const;
  void release();  // the kernel's release(); tensors stay until the session ends

  // Cold cases on the host: `copies` more sets of the inputs, rotated into place
  // before each run (rotate_inputs()), so that every timed run reads inputs that the
  // last several runs did not touch — benchdnn's cold-cache method, at no cost per run.
  void make_input_copies(int copies);
  void rotate_inputs();
  int input_copies() const { return int(copies_.size()); }
  // The bytes of inputs and outputs lent by the previous session (0 if it made its own).
  size_t reused_bytes() const { return reused_bytes_; }

  const Problem& problem() const { return problem_; }
  const KernelEntry& entry() const { return entry_; }
  TensorSet& tensors() { return ts_; }
  Kernel& kernel() { return *kernel_; }
  bool prepared() const { return kernel_ != nullptr; }

 private:
  const KernelEntry& entry_;
  Problem problem_;
  Context ctx_;
  TensorSet ts_;
  InputDigests digests_{};
  std::unique_ptr<Kernel> kernel_;
  bool rounds_before_bias_ = false;  // the prepared kernel's word, kept for verify() after release()
  std::vector<TensorSet> copies_;
  size_t next_copy_ = 0;
  std::string lend_key_;          // the inputs' problem and seed, if they may be lent on; else ""
  std::optional<uint64_t> seed_;  // allocate()'s; none for adopted inputs
  size_t reused_bytes_ = 0;

  void poison_outputs();
};

// Drops tensors kept from an earlier session unless they are those of `p` and `seed`, and
// kept outputs `p` does not have: called before a memory baseline is taken, so that no
// memory is freed inside a case.
void keep_inputs_only_for(const Problem& p, uint64_t seed);

// The full check of one kernel on one problem through a CaseSession. Never throws: a
// kernel that throws fails, an allocation that fails is out_of_memory, a problem the
// kernel (or the reference) declines is unsupported, with the reason.
Verdict check_kernel(const KernelEntry& k, const Problem& p, uint64_t seed, const Context& ctx = {},
                     int64_t max_reference_macs = kDefaultReferenceMacs);

}  // namespace lb
