// Arena: bump allocation from large blocks, freed all at once when the arena
// is destroyed. Used by memtables, whose memory lives exactly as long as they do.
//
// Thread-compatible: Allocate* must be externally serialized. MemoryUsage() may
// be read from any thread at any time.
#ifndef STRATA_COMMON_ARENA_H_
#define STRATA_COMMON_ARENA_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace strata {

class Arena {
 public:
  static constexpr size_t kBlockSize = 64 * 1024;

  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Returns `bytes` (> 0) bytes of uninitialized memory.
  char* Allocate(size_t bytes) {
    if (bytes <= remaining_) {
      char* r = ptr_;
      ptr_ += bytes;
      remaining_ -= bytes;
      return r;
    }
    return AllocateFallback(bytes);
  }
  // Like Allocate, aligned to alignof(std::max_align_t).
  char* AllocateAligned(size_t bytes);

  // Bytes reserved from the system, including block slack and bookkeeping.
  size_t MemoryUsage() const {
    // Relaxed: a statistic; readers need no ordering with the memory it counts.
    return memory_usage_.load(std::memory_order_relaxed);
  }
  // Bytes reserved less the unused tail of the current block: about what has
  // been allocated. REQUIRES: external serialization with Allocate*.
  size_t BytesInUse() const { return MemoryUsage() - remaining_; }

 private:
  char* AllocateFallback(size_t bytes);
  char* AllocateNewBlock(size_t bytes);

  char* ptr_ = nullptr;
  size_t remaining_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::atomic<size_t> memory_usage_{0};
};

}  // namespace strata

#endif  // STRATA_COMMON_ARENA_H_
