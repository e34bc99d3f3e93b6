// FakeClock: a Clock whose wall and monotonic readings tests set by hand, so
// they can freeze time, step the wall clock backwards, or age a lease without
// sleeping.
//
// Thread-safe: readings are atomics, so a test thread may move the clock
// while others read it.
#ifndef STRATA_TESTS_UTIL_FAKE_CLOCK_H_
#define STRATA_TESTS_UTIL_FAKE_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "common/clock.h"

namespace strata::test {

class FakeClock final : public Clock {
 public:
  // 2023-11-14 22:13:20 UTC: a wall time well inside the timestamp range.
  static constexpr uint64_t kDefaultWallMicros = 1'700'000'000'000'000;

  explicit FakeClock(uint64_t wall_micros = kDefaultWallMicros) : wall_micros_(wall_micros) {}
  FakeClock(const FakeClock&) = delete;
  FakeClock& operator=(const FakeClock&) = delete;

  // Relaxed: each reading is a single value that tests set explicitly; no
  // other memory is published through it.
  uint64_t NowMicros() override { return wall_micros_.load(std::memory_order_relaxed); }
  uint64_t NowNanos() override { return mono_nanos_.load(std::memory_order_relaxed); }
  // Advances both clocks instead of sleeping.
  void SleepMicros(uint64_t micros) override { Advance(micros); }

  // Moves the wall clock to `micros` (possibly backwards); the monotonic clock
  // stays where it is.
  void SetWallMicros(uint64_t micros) { wall_micros_.store(micros, std::memory_order_relaxed); }
  // Moves both clocks forward.
  void Advance(uint64_t micros) {
    wall_micros_.fetch_add(micros, std::memory_order_relaxed);
    mono_nanos_.fetch_add(micros * 1000, std::memory_order_relaxed);
  }
  void AdvanceMonotonicNanos(uint64_t nanos) {
    mono_nanos_.fetch_add(nanos, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> wall_micros_;
  std::atomic<uint64_t> mono_nanos_{1'000'000'000};
};

}  // namespace strata::test

#endif  // STRATA_TESTS_UTIL_FAKE_CLOCK_H_
