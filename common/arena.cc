#include "common/arena.h"

#include <cassert>

namespace strata {

char* Arena::AllocateFallback(size_t bytes) {
  if (bytes > kBlockSize / 4) {
    // Large objects get a block of their own so the current block's tail is not wasted.
    return AllocateNewBlock(bytes);
  }
  ptr_ = AllocateNewBlock(kBlockSize);
  remaining_ = kBlockSize;
  char* r = ptr_;
  ptr_ += bytes;
  remaining_ -= bytes;
  return r;
}

char* Arena::AllocateAligned(size_t bytes) {
  constexpr size_t kAlign = alignof(std::max_align_t);
  static_assert((kAlign & (kAlign - 1)) == 0, "alignment must be a power of two");
  static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= kAlign, "new[] must return max-aligned blocks");
  size_t mod = reinterpret_cast<uintptr_t>(ptr_) & (kAlign - 1);
  size_t slop = mod == 0 ? 0 : kAlign - mod;
  size_t needed = bytes + slop;
  char* r;
  if (needed <= remaining_) {
    r = ptr_ + slop;
    ptr_ += needed;
    remaining_ -= needed;
  } else {
    r = AllocateFallback(bytes);  // new blocks come from new[], which is max-aligned
  }
  assert((reinterpret_cast<uintptr_t>(r) & (kAlign - 1)) == 0);
  return r;
}

char* Arena::AllocateNewBlock(size_t bytes) {
  blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes));
  // Relaxed: see MemoryUsage().
  memory_usage_.fetch_add(bytes + sizeof(void*), std::memory_order_relaxed);
  return blocks_.back().get();
}

}  // namespace strata
