// LocalLockService: the in-memory LockService.
//
// Keys are spread over kNumShards shards by hash, each a mutex and a hash
// table from the encoded key to its holder and lease deadline, so workers
// locking different rows rarely contend. Lease deadlines are monotonic time
// (Clock::NowNanos).
//
// Thread-safe.
//
// Invariants:
//   * A shard's table holds at most one entry per key; an entry whose
//     deadline has passed is treated as absent and is erased when its key is
//     next touched or when its shard is swept (a sweep runs when a shard's
//     table has doubled since the last one, so memory stays proportional to
//     the locks held, amortized).
#ifndef STRATA_TXN_LOCAL_LOCK_SERVICE_H_
#define STRATA_TXN_LOCAL_LOCK_SERVICE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/mutex.h"
#include "strata/status.h"
#include "txn/lock_service.h"

namespace strata::txn {

struct LocalLockServiceOptions {
  // The monotonic clock (NowNanos) leases run on; nullptr means
  // Clock::Default(). Must outlive the service.
  Clock* clock = nullptr;
};

class LocalLockService final : public LockService {
 public:
  static constexpr int kNumShards = 16;

  explicit LocalLockService(const LocalLockServiceOptions& options = {});
  ~LocalLockService() override;
  LocalLockService(const LocalLockService&) = delete;
  LocalLockService& operator=(const LocalLockService&) = delete;

  Status TryLock(const LockKey& key, uint64_t owner, uint64_t lease_micros) override;
  Status Renew(const LockKey& key, uint64_t owner, uint64_t lease_micros) override;
  Status Unlock(const LockKey& key, uint64_t owner) override;

  // Entries in all tables, expired ones not yet erased included.
  size_t TrackedLocks() const;

 private:
  struct Lease {
    uint64_t owner;
    uint64_t deadline_nanos;  // held while NowNanos() < deadline_nanos
  };
  struct Shard {
    mutable Mutex mu;
    std::unordered_map<std::string, Lease> locks GUARDED_BY(mu);
    size_t sweep_at GUARDED_BY(mu) = 64;
  };

  // Checks the arguments and encodes the key.
  static Status Prepare(const LockKey& key, uint64_t owner, std::string* encoded);
  static Status CheckLease(uint64_t lease_micros);
  Shard& ShardFor(const std::string& encoded);
  // Erases expired entries of `shard`.
  static void SweepLocked(Shard* shard, uint64_t now_nanos) EXCLUSIVE_LOCKS_REQUIRED(shard->mu);

  Clock* const clock_;
  std::array<Shard, kNumShards> shards_;
};

}  // namespace strata::txn

#endif  // STRATA_TXN_LOCAL_LOCK_SERVICE_H_
