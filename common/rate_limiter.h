// RateLimiter: paces a stream of bytes (compaction output, later a tenant's
// writes) to a configured rate, with a burst allowance.
//
// It keeps a virtual finish time: each request pushes it forward by
// bytes / rate and waits until the wall of time catches up with it, less the
// burst credit. Idle time earns credit up to the burst, never more, so a
// long pause does not buy an unbounded burst. Requests are served in the
// order they reserve, so a stream of small requests cannot starve a large one.
//
// Thread-safe.
#ifndef STRATA_COMMON_RATE_LIMITER_H_
#define STRATA_COMMON_RATE_LIMITER_H_

#include <atomic>
#include <cstdint>

#include "common/clock.h"
#include "common/mutex.h"

namespace strata {

class RateLimiter {
 public:
  // `bytes_per_second` 0 means unlimited. `burst_micros` is how much idle
  // time may be spent at once: up to rate * burst bytes go without waiting.
  explicit RateLimiter(uint64_t bytes_per_second, Clock* clock = Clock::Default(),
                       uint64_t burst_micros = 100'000);
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Takes `bytes` from the budget, sleeping (on the clock) as long as the
  // rate requires. Returns the microseconds slept.
  uint64_t Request(uint64_t bytes) LOCKS_EXCLUDED(mu_);

  // Takes `bytes` from the budget without sleeping; returns how long the
  // caller should wait before going on, in microseconds.
  uint64_t Reserve(uint64_t bytes) LOCKS_EXCLUDED(mu_);

  // 0 makes it unlimited. Takes effect for the next request, which also
  // owes what earlier ones reserved beyond now at the new rate; a request
  // already asleep sleeps out what it was told.
  void SetBytesPerSecond(uint64_t bytes_per_second) LOCKS_EXCLUDED(mu_);
  uint64_t bytes_per_second() const LOCKS_EXCLUDED(mu_);

  // Totals since construction. Relaxed: statistics.
  uint64_t total_bytes() const { return total_bytes_.load(std::memory_order_relaxed); }
  uint64_t total_wait_micros() const { return total_wait_micros_.load(std::memory_order_relaxed); }

 private:
  Clock* const clock_;
  const uint64_t burst_nanos_;
  mutable Mutex mu_;
  uint64_t bytes_per_second_ GUARDED_BY(mu_);
  // Monotonic time at which everything reserved so far has been paid for.
  uint64_t finish_nanos_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> total_bytes_{0};
  std::atomic<uint64_t> total_wait_micros_{0};
};

}  // namespace strata

#endif  // STRATA_COMMON_RATE_LIMITER_H_
