#include "common/rate_limiter.h"

#include <algorithm>

namespace strata {

RateLimiter::RateLimiter(uint64_t bytes_per_second, Clock* clock, uint64_t burst_micros)
    : clock_(clock), burst_nanos_(burst_micros * 1000), bytes_per_second_(bytes_per_second) {}

uint64_t RateLimiter::Reserve(uint64_t bytes) {
  total_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  const uint64_t now = clock_->NowNanos();
  uint64_t wait_nanos = 0;
  {
    MutexLock l(&mu_);
    if (bytes_per_second_ == 0) return 0;
    // Idle time counts as credit, but only up to the burst.
    const uint64_t floor = now > burst_nanos_ ? now - burst_nanos_ : 0;
    const uint64_t start = std::max(finish_nanos_, floor);
    const auto cost = static_cast<uint64_t>(static_cast<long double>(bytes) * 1e9L /
                                            static_cast<long double>(bytes_per_second_));
    finish_nanos_ = start + cost;
    // Whatever the credit did not cover is paid for by waiting.
    if (finish_nanos_ > now) wait_nanos = finish_nanos_ - now;
  }
  const uint64_t micros = (wait_nanos + 999) / 1000;
  total_wait_micros_.fetch_add(micros, std::memory_order_relaxed);
  return micros;
}

uint64_t RateLimiter::Request(uint64_t bytes) {
  const uint64_t micros = Reserve(bytes);
  if (micros > 0) clock_->SleepMicros(micros);
  return micros;
}

void RateLimiter::SetBytesPerSecond(uint64_t bytes_per_second) {
  const uint64_t now = clock_->NowNanos();
  MutexLock l(&mu_);
  // What is reserved but not yet reached is owed at the new rate; nothing
  // is owed when either rate is unlimited.
  if (bytes_per_second == 0 || bytes_per_second_ == 0) {
    finish_nanos_ = 0;
  } else if (finish_nanos_ > now) {
    const long double owed = static_cast<long double>(finish_nanos_ - now) *
                             static_cast<long double>(bytes_per_second_) /
                             static_cast<long double>(bytes_per_second);
    finish_nanos_ = now + static_cast<uint64_t>(std::min<long double>(owed, 1e18L));
  }
  bytes_per_second_ = bytes_per_second;
}

uint64_t RateLimiter::bytes_per_second() const {
  MutexLock l(&mu_);
  return bytes_per_second_;
}

}  // namespace strata
