// Clock: the source of time for everything in Strata, replaceable so tests can
// freeze time or step it backwards.
//
// Implementations must be thread-safe.
#ifndef STRATA_COMMON_CLOCK_H_
#define STRATA_COMMON_CLOCK_H_

#include <cstdint>

namespace strata {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time in microseconds since the Unix epoch; may step backwards.
  virtual uint64_t NowMicros() = 0;
  // Monotonic time in nanoseconds, for measuring intervals.
  virtual uint64_t NowNanos() = 0;
  virtual void SleepMicros(uint64_t micros) = 0;

  // The process-wide real clock.
  static Clock* Default();
};

}  // namespace strata

#endif  // STRATA_COMMON_CLOCK_H_
