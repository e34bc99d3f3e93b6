// LocalTimestampOracle: the in-process TimestampOracle, persisting a ceiling
// in a directory of its own.
//
// How it works. The oracle keeps `last_`, the highest timestamp reserved so
// far, and `ceiling_`, the highest timestamp it may hand out: a value made
// durable in the ceiling file (txn/ceiling_file.h) before it is published.
// A call reads the wall clock once, reserves its timestamps with one atomic
// read-modify-write of `last_` (a compare-and-swap when the clock has moved
// past `last_`, a fetch_add otherwise), and returns them if they are at or
// below `ceiling_`. That is the whole fast path: no lock, no I/O.
//
// The ceiling is refilled to `window_millis` ahead of the clock (or ahead
// of `last_` when timestamps run ahead of the clock), under `mu_`:
//   * ahead of need: the first caller that reserves past the middle of the
//     window tries the mutex and, if it is free, writes the next ceiling while
//     everyone else keeps taking timestamps below the current one;
//   * on need: a caller whose reservation lies above the ceiling waits for the
//     mutex; one refill covers every reservation made before it started, so
//     callers that queued behind it return without I/O of their own
//     (they share the refill, and its error if it failed).
// Reserved timestamps whose ceiling could not be made durable are returned
// to nobody: the caller gets the error and they are skipped forever.
//
// After a restart the oracle starts above the persisted ceiling, so nothing
// handed out before a crash is handed out again; the price is a jump of at
// most `window_millis` of physical time ahead of the clock.
//
// Thread-safe. The directory is locked (TSO_LOCK) while the oracle is open:
// a second Open of the same directory, in this process or another, fails
// with Busy.
//
// Invariants:
//   * last_ never decreases; every timestamp handed out is <= last_ and
//     <= ceiling_.
//   * ceiling_ never decreases, and each value it takes was durable in the
//     ceiling file before it was stored.
#ifndef STRATA_TXN_LOCAL_TIMESTAMP_ORACLE_H_
#define STRATA_TXN_LOCAL_TIMESTAMP_ORACLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/mutex.h"
#include "strata/status.h"
#include "txn/ceiling_file.h"
#include "txn/timestamp_oracle.h"

namespace strata::txn {

struct LocalTimestampOracleOptions {
  // How far ahead of the clock each persisted ceiling reaches. Larger means
  // fewer ceiling writes (about two fsyncs per window while timestamps follow
  // the clock) but a larger jump of the physical part ahead of the clock after
  // a crash. Between 1 and kMaxWindowMillis.
  uint64_t window_millis = 3000;
  // Where the ceiling file lives and how it is written; nullptr means
  // FileSystem::Default(). Must outlive the oracle.
  FileSystem* fs = nullptr;
  // The wall clock the physical part follows (NowMicros); nullptr means
  // Clock::Default(). Must outlive the oracle.
  Clock* clock = nullptr;
};

class LocalTimestampOracle final : public TimestampOracle {
 public:
  static constexpr uint64_t kMaxWindowMillis = 3'600'000;
  // File names inside the oracle's directory.
  static constexpr const char* kCeilingFileName = "TSO_CEILING";
  static constexpr const char* kLockFileName = "TSO_LOCK";

  // Opens (creating if needed) the oracle in `dir`: locks the directory, reads
  // the ceiling and persists the first window above it and above the clock.
  static Status Open(const std::string& dir, const LocalTimestampOracleOptions& options,
                     std::unique_ptr<LocalTimestampOracle>* result);

  ~LocalTimestampOracle() override;
  LocalTimestampOracle(const LocalTimestampOracle&) = delete;
  LocalTimestampOracle& operator=(const LocalTimestampOracle&) = delete;

  Result<uint64_t> GetTimestamp() override;
  Status GetTimestamps(uint32_t n, uint64_t* first) override;

  // The durable ceiling: no timestamp above it has been handed out.
  uint64_t persisted_ceiling() const {
    // Acquire: pairs with the release store in RefillLocked, as in the fast
    // path; callers compare it with timestamps they were handed.
    return ceiling_.load(std::memory_order_acquire);
  }

  struct Stats {
    uint64_t ceiling_writes = 0;         // successful ceiling writes (one fsync each)
    uint64_t failed_ceiling_writes = 0;  // ceiling writes that returned an error
  };
  Stats GetStats() const LOCKS_EXCLUDED(mu_);

 private:
  LocalTimestampOracle(const LocalTimestampOracleOptions& options, FileSystem* fs, Clock* clock,
                       std::unique_ptr<FileLock> lock, std::unique_ptr<CeilingFile> file);

  // The smallest timestamp the clock allows now: its millisecond, logical 0.
  Status ClockFloor(uint64_t* floor);
  // Reserves n timestamps, all >= floor, and returns the highest.
  uint64_t Reserve(uint32_t n, uint64_t floor);
  // Slow path: waits until the ceiling covers `last`, refilling if no one else has.
  Status WaitForCeiling(uint64_t last) LOCKS_EXCLUDED(mu_);
  // Early refill by whichever caller first reserves past refill_at_.
  void RefillAhead() LOCKS_EXCLUDED(mu_);
  // Persists a ceiling covering `need`, every reservation made so far and a
  // window ahead of the clock, then publishes it.
  Status RefillLocked(uint64_t need) EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t window_millis_;
  FileSystem* const fs_;
  Clock* const clock_;
  std::unique_ptr<FileLock> dir_lock_;

  // Highest timestamp reserved. Relaxed everywhere: uniqueness and order need
  // only the atomicity of the read-modify-writes on this one variable, whose
  // modification order is total and, by coherence, agrees with the order of
  // calls in a thread and with any happens-before between calls in different
  // threads. Nothing else is published through it.
  std::atomic<uint64_t> last_{0};
  // Durable ceiling. Stored with release under mu_ after the write that made
  // it durable returned; loaded with acquire, so a caller that sees a value
  // also sees that write as having completed before its own return.
  std::atomic<uint64_t> ceiling_{0};
  // Reservations above this start an early refill. Relaxed: a hint only; a
  // stale value makes one refill start a little early or late, while
  // correctness rests on ceiling_.
  std::atomic<uint64_t> refill_at_{0};

  mutable Mutex mu_;
  std::unique_ptr<CeilingFile> file_ PT_GUARDED_BY(mu_);
  // The outcome of the last refill attempt and the reservation it was to
  // cover: a waiter at or below it shares a failure instead of retrying.
  Status last_refill_status_ GUARDED_BY(mu_);
  uint64_t last_refill_need_ GUARDED_BY(mu_) = 0;
  Stats stats_ GUARDED_BY(mu_);
};

}  // namespace strata::txn

#endif  // STRATA_TXN_LOCAL_TIMESTAMP_ORACLE_H_
