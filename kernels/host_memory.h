// Host memory for large buffers: mappings populated at once, and the resident blocks that
// verification and each case's own buffers are made in.
//
// A case's host peak is the growth of the process's resident set over a baseline taken
// just before it (bench/harness/runner.cpp), plus what it uses that was resident before.
// On a VM that hands freed memory back to its hypervisor (the 2-core Zen 5 VM: every freed
// 2 MiB block is reported at once), a page touched again faults through the hypervisor:
// new memory cost 1.1-1.5 s of system time per GiB there. So large buffers come from
// blocks the process keeps, taken once and handed out again:
// - verification's (a ResidentScope: the reference's copies of the inputs, its outputs and
//   their bounds in double), which are not the case's memory: resident before any later
//   case's baseline, they never enter it; their growth shows in the case that first needed
//   them as memory verification left resident (runner.cpp's verify_bytes). They took a
//   third of a sweep's system time (AlexNet's and MobileNet's batch-32 layers, 1,934
//   cases: 16.8 of 48 s; kept, 3.2 s).
// - the case's own (a CaseMemoryScope: its tensors, a kernel's AlignedBuffers, oneDNN's
//   reorders), which are: a dense.onednn case of AlexNet's fc6 populated its 144 MiB of
//   packed weights anew. The resident set does not see a block that was resident before
//   the baseline, so the pool counts it instead (case_resident_peak()), as the 4 KiB pages
//   of the bytes asked for (the block may be up to twice that); a block the pool maps
//   during the case is new memory, counted by the resident set (2 MiB-rounded from 2 MiB)
//   and not here.
//
// Kept (unused) blocks are capped at min(physical memory / 8, 4 GiB); the largest go back
// first, never inside a CaseMemoryScope (a block given back to the host would lower the
// resident set under the case's baseline and hide its growth): begin_case_memory() trims.
// drop_resident() gives back every kept block, for a case that needs the memory.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace lb {

// An anonymous mapping of at least `bytes`, every page taken now (MADV_POPULATE_WRITE); of
// 2 MiB and more, 2 MiB-aligned and on transparent huge pages where the host allows them.
// Throws std::bad_alloc.
struct Mapping {
  std::byte* data;
  size_t bytes;  // the length mapped, to unmap
};
Mapping map_populated(size_t bytes);

enum class Residence { none, verification, case_memory };

// While one is open on a thread, take_resident() on that thread hands out resident blocks:
// verification's (uncounted), or the case's (CaseMemoryScope: counted).
class ResidentScope {
 public:
  explicit ResidentScope(Residence r = Residence::verification);
  ~ResidentScope();
  ResidentScope(const ResidentScope&) = delete;
  ResidentScope& operator=(const ResidentScope&) = delete;

 private:
  Residence outer_;
};
struct CaseMemoryScope : ResidentScope {
  CaseMemoryScope() : ResidentScope(Residence::case_memory) {}
};

// A resident block of at least `bytes`, as map_populated() maps it; nullptr outside a ResidentScope or
// below 128 KiB (malloc's heap serves those: glibc's mmap threshold, probes.h). Its contents are what the
// last user left. Throws std::bad_alloc.
void* take_resident(size_t bytes);
// Keeps p for the next take_resident() if it came from one (true), from any thread.
bool give_back_resident(void* p);
// Unmaps the kept blocks; those in use stay.
void drop_resident();
// Bytes of kept (unused) blocks.
size_t kept_resident_bytes();

// Before a case's baseline: trims the kept blocks to their cap and starts the case's count.
void begin_case_memory();
// The most bytes of blocks that were resident before begin_case_memory() lent at once to
// the case's CaseMemoryScopes since.
size_t case_resident_peak();

// std::allocator, except under a ResidentScope, where large arrays are resident blocks.
template <class T>
struct ResidentAllocator {
  using value_type = T;
  ResidentAllocator() = default;
  template <class U>
  ResidentAllocator(const ResidentAllocator<U>&) {}
  T* allocate(size_t n) {
    if (void* p = take_resident(n * sizeof(T))) return static_cast<T*>(p);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    if (!give_back_resident(p)) std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const ResidentAllocator<U>&) const {
    return true;
  }
};

// The reference's values in double (ref kernels, Expected).
using Doubles = std::vector<double, ResidentAllocator<double>>;

// Memory a kernel needs only inside run() — an activation reordered into a library's layout,
// a scratchpad — where kernels run one after another (a graph's layers, GraphSession): while
// a pool is current on a thread (a TemporaryScope), take_temporary() there hands each kernel
// its temporaries from the pool's start (next_kernel() starts the next one there again), so
// they overlap those of the kernels before it and the pool holds the largest kernel's, not
// the sum. The pool is address space reserved without memory (MAP_NORESERVE): a page becomes
// memory when a run first touches it. Outside a scope, take_temporary() is nullptr and the
// kernel allocates its own.
class TemporaryPool {
 public:
  TemporaryPool();  // reserves the machine's physical memory's size of address space
  ~TemporaryPool();
  TemporaryPool(const TemporaryPool&) = delete;
  TemporaryPool& operator=(const TemporaryPool&) = delete;
  void next_kernel() { used_ = 0; }
  // 64-byte aligned, or nullptr when the reservation cannot hold it.
  void* take(size_t bytes);
  size_t bytes() const { return largest_; }  // the largest kernel's temporaries

 private:
  std::byte* base_ = nullptr;
  size_t reserved_ = 0, used_ = 0, largest_ = 0;
};
class TemporaryScope {
 public:
  explicit TemporaryScope(TemporaryPool& pool);
  ~TemporaryScope();
  TemporaryScope(const TemporaryScope&) = delete;
  TemporaryScope& operator=(const TemporaryScope&) = delete;

 private:
  TemporaryPool* outer_;
};
void* take_temporary(size_t bytes);

}  // namespace lb
