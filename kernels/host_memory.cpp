#include "kernels/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>

#include "kernels/common.h"

namespace lb {
namespace {

// Tensors are written (filled or poisoned) right after they are made, and taking their
// pages in one call costs a fraction of a page fault each. Mappings of 2 MiB and more are
// aligned to 2 MiB and asked for transparent huge pages (where the host allows them, see
// huge_pages_policy()): a batch-64 case maps hundreds of megabytes, and populating them
// 4 KiB at a time was a quarter of a sweep's CPU time on a 2-core VM (perf, the kernel's
// fault and accounting paths), the page clearing itself a sixth of that.
constexpr size_t kHugePage = size_t(2) << 20;
constexpr int64_t kPage = 4096;
// Smaller arrays come from malloc's heap: below glibc's mmap threshold as the harness sets
// it (bench/harness/probes.h), where freed memory stays in the process.
constexpr size_t kResidentMin = size_t(128) << 10;

thread_local Residence t_residence = Residence::none;

struct Block {
  std::byte* data;
  uint64_t mapped_in;  // the case count (Pool::count) it was mapped in
};
struct Held {
  size_t bytes;
  uint64_t mapped_in;
  size_t counted;  // lent to the current case from before its baseline: bytes in Pool::lent
};

// The blocks handed out (by address) and those kept for the next (by size); the current
// case's count.
struct Pool {
  std::mutex mutex;
  std::unordered_map<std::byte*, Held> held;
  std::multimap<size_t, Block> kept;
  size_t kept_bytes = 0;
  uint64_t count = 0;  // begin_case_memory() calls so far
  size_t lent = 0, lent_peak = 0;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: blocks may come back during exit
  return *p;
}

size_t kept_cap() {
  static const size_t cap = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const size_t physical = pages > 0 && page > 0 ? size_t(pages) * size_t(page) : 0;
    return std::min(physical / 8, size_t(4) << 30);
  }();
  return cap;
}

// The bytes map_populated(bytes) maps.
size_t mapped_length(size_t bytes) {
  return size_t(round_up(int64_t(bytes), bytes < kHugePage ? kPage : int64_t(kHugePage)));
}

// Unmaps the largest kept blocks until the rest fit the cap.
void trim_kept(Pool& p) {
  while (p.kept_bytes > kept_cap()) {
    const auto largest = std::prev(p.kept.end());
    munmap(largest->second.data, largest->first);
    p.kept_bytes -= largest->first;
    p.kept.erase(largest);
  }
}

}  // namespace

Mapping map_populated(size_t bytes) {
  const size_t len = mapped_length(bytes);
  if (bytes < kHugePage) {
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return {static_cast<std::byte*>(p), len};
  }
  // Over-map by a huge page, then unmap the unaligned head and the tail.
  void* raw = mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto* base = static_cast<std::byte*>(raw);
  auto* aligned =
      reinterpret_cast<std::byte*>(round_up(int64_t(reinterpret_cast<uintptr_t>(base)), int64_t(kHugePage)));
  if (aligned > base) munmap(base, size_t(aligned - base));
  if (const size_t tail = size_t(base + len + kHugePage - (aligned + len)); tail) munmap(aligned + len, tail);
  madvise(aligned, len, MADV_HUGEPAGE);  // advice: refused where THP is off, and then 4 KiB pages
  // Take the pages now, as MAP_POPULATE would (MADV_POPULATE_WRITE, Linux 5.14); on an
  // older kernel the first write takes them instead.
#ifdef MADV_POPULATE_WRITE
  madvise(aligned, len, MADV_POPULATE_WRITE);
#endif
  return {aligned, len};
}

ResidentScope::ResidentScope(Residence r) : outer_(t_residence) {
  t_residence = r;
}

ResidentScope::~ResidentScope() {
  t_residence = outer_;
}

void* take_resident(size_t bytes) {
  if (t_residence == Residence::none || bytes < kResidentMin) return nullptr;
  const size_t len = mapped_length(bytes);
  const bool for_case = t_residence == Residence::case_memory;
  Pool& p = pool();
  {
    const std::lock_guard<std::mutex> lock(p.mutex);
    // The smallest kept block that fits, unless it is more than twice the size: a large
    // block kept for the next large array is worth more than the mapping it saves here.
    if (auto it = p.kept.lower_bound(len); it != p.kept.end() && it->first <= 2 * len) {
      const Block block = it->second;
      const bool counted = for_case && block.mapped_in < p.count;
      // Counted as the pages the bytes asked for take, as a program allocating them would
      // touch them, though the block may be up to twice that.
      const size_t pages = counted ? size_t(round_up(int64_t(bytes), kPage)) : 0;
      p.held.emplace(block.data, Held{it->first, block.mapped_in, pages});
      p.kept_bytes -= it->first;
      p.kept.erase(it);
      if (counted) {
        p.lent += pages;
        p.lent_peak = std::max(p.lent_peak, p.lent);
      }
      return block.data;
    }
  }
  const Mapping m = map_populated(bytes);
  const std::lock_guard<std::mutex> lock(p.mutex);
  p.held.emplace(m.data, Held{m.bytes, p.count, 0});
  return m.data;
}

bool give_back_resident(void* ptr) {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  const auto it = p.held.find(static_cast<std::byte*>(ptr));
  if (it == p.held.end()) return false;
  const Held h = it->second;
  p.lent -= h.counted;
  p.kept.emplace(h.bytes, Block{it->first, h.mapped_in});
  p.kept_bytes += h.bytes;
  p.held.erase(it);
  if (t_residence != Residence::case_memory) trim_kept(p);  // see the header
  return true;
}

void drop_resident() {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  for (const auto& [bytes, block] : p.kept)
    munmap(block.data, bytes);
  p.kept.clear();
  p.kept_bytes = 0;
}

size_t kept_resident_bytes() {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  return p.kept_bytes;
}

void begin_case_memory() {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  trim_kept(p);
  ++p.count;
  p.lent = p.lent_peak = 0;
  // Blocks still held (lent on with a case's inputs) are counted by the case that gets them.
  for (auto& [data, h] : p.held)
    h.counted = 0;
}

size_t case_resident_peak() {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  return p.lent_peak;
}

namespace {
thread_local TemporaryPool* current_pool = nullptr;
}  // namespace

TemporaryPool::TemporaryPool() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  reserved_ = pages > 0 && page > 0 ? size_t(pages) * size_t(page) : size_t(1) << 34;
  void* p =
      mmap(nullptr, reserved_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    reserved_ = 0;
    return;
  }
  base_ = static_cast<std::byte*>(p);
  madvise(base_, reserved_,
          MADV_HUGEPAGE);  // as our tensors: large reorders on 2 MiB pages where the host allows
}

TemporaryPool::~TemporaryPool() {
  if (base_) munmap(base_, reserved_);
}

void* TemporaryPool::take(size_t bytes) {
  const size_t at = size_t(round_up(int64_t(used_), 64));
  if (!base_ || at + bytes > reserved_) return nullptr;
  used_ = at + bytes;
  largest_ = std::max(largest_, used_);
  return base_ + at;
}

TemporaryScope::TemporaryScope(TemporaryPool& pool) : outer_(current_pool) {
  current_pool = &pool;
}

TemporaryScope::~TemporaryScope() {
  current_pool = outer_;
}

void* take_temporary(size_t bytes) {
  return current_pool ? current_pool->take(bytes) : nullptr;
}

}  // namespace lb
