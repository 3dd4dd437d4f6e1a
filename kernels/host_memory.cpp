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
constexpr size_t kResidentMin = size_t(1) << 20;  // smaller arrays come from malloc's heap

thread_local bool t_in_scope = false;

// The blocks handed out (by address) and those kept for the next (by size).
struct Pool {
  std::mutex mutex;
  std::unordered_map<std::byte*, size_t> held;
  std::multimap<size_t, std::byte*> kept;
  size_t kept_bytes = 0;
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

}  // namespace

Mapping map_populated(size_t bytes) {
  if (bytes < kHugePage) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return {static_cast<std::byte*>(p), bytes};
  }
  // Over-map by a huge page, then unmap the unaligned head and the tail.
  const size_t len = size_t(round_up(int64_t(bytes), int64_t(kHugePage)));
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

ResidentScope::ResidentScope() : outer_(t_in_scope) {
  t_in_scope = true;
}

ResidentScope::~ResidentScope() {
  t_in_scope = outer_;
}

void* take_resident(size_t bytes) {
  if (!t_in_scope || bytes < kResidentMin) return nullptr;
  const size_t len = size_t(round_up(int64_t(bytes), int64_t(kHugePage)));
  Pool& p = pool();
  {
    const std::lock_guard<std::mutex> lock(p.mutex);
    // The smallest kept block that fits, unless it is more than twice the size: a large
    // block kept for the next large array is worth more than the mapping it saves here.
    if (auto it = p.kept.lower_bound(len); it != p.kept.end() && it->first <= 2 * len) {
      std::byte* block = it->second;
      p.held.emplace(block, it->first);
      p.kept_bytes -= it->first;
      p.kept.erase(it);
      return block;
    }
  }
  const Mapping m = map_populated(len);
  const std::lock_guard<std::mutex> lock(p.mutex);
  p.held.emplace(m.data, m.bytes);
  return m.data;
}

bool give_back_resident(void* ptr) {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  const auto it = p.held.find(static_cast<std::byte*>(ptr));
  if (it == p.held.end()) return false;
  p.kept.emplace(it->second, it->first);
  p.kept_bytes += it->second;
  p.held.erase(it);
  while (p.kept_bytes > kept_cap()) {
    const auto largest = std::prev(p.kept.end());
    munmap(largest->second, largest->first);
    p.kept_bytes -= largest->first;
    p.kept.erase(largest);
  }
  return true;
}

void drop_resident() {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  for (const auto& [bytes, block] : p.kept)
    munmap(block, bytes);
  p.kept.clear();
  p.kept_bytes = 0;
}

size_t kept_resident_bytes() {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  return p.kept_bytes;
}

}  // namespace lb
