// Host memory for large buffers: mappings populated at once, and the resident blocks that
// verification works in.
//
// A case's host peak is the growth of the process's resident set over a baseline taken
// just before it (bench/harness/runner.cpp), so a case's own buffers must be new pages.
// Verification's are not the case's: the reference's copies of the inputs, its outputs and
// their bounds in double. On a VM that hands freed memory back to its hypervisor (the
// 2-core Zen 5 VM: every freed 2 MiB block is reported at once), a page touched again
// faults through the hypervisor: new memory cost 1.1-1.5 s of system time per GiB there,
// and verification's buffers took a third of a sweep's system time (AlexNet's and
// MobileNet's batch-32 layers, 1,934 cases: 16.8 of 48 s; kept, 3.2 s). So what verification
// allocates while a ResidentScope is open comes from blocks the process keeps: taken
// once, handed out again, and resident before any later case's baseline, which they
// therefore never enter. Their growth shows in the case that first needed them as memory
// verification left resident (runner.cpp's verify_bytes), not as the kernel's.
//
// Kept (unused) blocks are capped at min(physical memory / 8, 4 GiB); the largest go back
// first. drop_resident() gives back every kept block, for a case that needs the memory.
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

// While one is open on a thread, take_resident() on that thread hands out resident blocks.
class ResidentScope {
 public:
  ResidentScope();
  ~ResidentScope();
  ResidentScope(const ResidentScope&) = delete;
  ResidentScope& operator=(const ResidentScope&) = delete;

 private:
  bool outer_;
};

// A resident block of at least `bytes`, 2 MiB-aligned; nullptr outside a ResidentScope or
// below 1 MiB (malloc's heap serves those). Throws std::bad_alloc.
void* take_resident(size_t bytes);
// Keeps p for the next take_resident() if it came from one (true), from any thread.
bool give_back_resident(void* p);
// Unmaps the kept blocks; those in use stay.
void drop_resident();
// Bytes of kept (unused) blocks.
size_t kept_resident_bytes();

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

}  // namespace lb
