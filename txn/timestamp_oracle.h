// TimestampOracle: the source of transaction timestamps (start_ts, commit_ts).
//
// An abstract interface, so that a remote oracle can replace the in-process
// one (local_timestamp_oracle.h) without touching its callers.
//
// Guarantees every implementation gives:
//   * Timestamps are unique and strictly increase: if one call returns
//     before another begins (in particular, two calls in one thread), every
//     timestamp of the second is greater than every timestamp of the first.
//     This holds across threads and across restarts and crashes of the
//     process that hands them out.
//   * A timestamp carries physical milliseconds in its high bits
//     (txn/timestamp.h); the physical part is never below the oracle's wall
//     clock reading at the time of the call, and moves on by itself when the
//     clock stands still or steps back.
//   * An error is returned rather than a timestamp that could violate the
//     above (for example when the oracle cannot make its state durable).
//     Timestamps skipped because of an error are never handed out.
//
// Implementations are thread-safe.
#ifndef STRATA_TXN_TIMESTAMP_ORACLE_H_
#define STRATA_TXN_TIMESTAMP_ORACLE_H_

#include <cstdint>

#include "strata/status.h"

namespace strata::txn {

class TimestampOracle {
 public:
  // The most timestamps one GetTimestamps call hands out: one millisecond's
  // worth of logical counter.
  static constexpr uint32_t kMaxBatch = 1u << 18;

  virtual ~TimestampOracle() = default;

  // One timestamp.
  virtual Result<uint64_t> GetTimestamp() = 0;

  // `n` consecutive timestamps: *first, *first + 1, ..., *first + n - 1, all
  // of them the caller's. Cheaper than n calls of GetTimestamp.
  // REQUIRES: 1 <= n <= kMaxBatch (otherwise InvalidArgument).
  virtual Status GetTimestamps(uint32_t n, uint64_t* first) = 0;
};

}  // namespace strata::txn

#endif  // STRATA_TXN_TIMESTAMP_ORACLE_H_
