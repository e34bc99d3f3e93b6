#include "common/clock.h"

#include <chrono>
#include <thread>

namespace strata {
namespace {

class SystemClock final : public Clock {
 public:
  uint64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  uint64_t NowNanos() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void SleepMicros(uint64_t micros) override {
    std::this_thread::sleep_for(std::chrono::microseconds(micros));
  }
};

}  // namespace

Clock* Clock::Default() {
  static SystemClock clock;
  return &clock;
}

}  // namespace strata
