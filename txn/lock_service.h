// LockService: advisory row locks with leases, keyed by (tenant, table, row).
//
// Used by observer scanners so that two workers do not run observers on the
// same row at once. The locks are advisory: they protect nothing by
// themselves (the transaction an observer runs in does), they only keep
// workers from duplicating effort, so a lock whose holder vanished simply
// expires with its lease. Not persisted: a restart frees every lock.
//
// Guarantees every implementation gives:
//   * At most one owner holds a key at any time; a holder's claim ends when
//     it unlocks or when its lease runs out, whichever comes first.
//   * An expired lease is gone: Renew and Unlock by its former holder fail,
//     even if nobody has taken the key since.
//   * Only the holder can renew or release a lock.
//
// An abstract interface, so that a remote service can replace the local one
// (local_lock_service.h). Implementations are thread-safe.
#ifndef STRATA_TXN_LOCK_SERVICE_H_
#define STRATA_TXN_LOCK_SERVICE_H_

#include <cstdint>
#include <string_view>

#include "strata/status.h"

namespace strata::txn {

// The name of a lockable row. Views: the bytes must stay valid during the
// call that takes the key, not longer. Intentionally copyable.
struct LockKey {
  std::string_view tenant;
  std::string_view table;
  std::string_view row;
};

class LockService {
 public:
  // The longest lease one call grants.
  static constexpr uint64_t kMaxLeaseMicros = 3'600'000'000;

  virtual ~LockService() = default;

  // Takes `key` for `owner` until `lease_micros` from now. Busy if another
  // owner holds an unexpired lease on it. If `owner` holds it already, the
  // lease is renewed (so a retried call is harmless).
  // REQUIRES: non-empty tenant, table and row; owner != 0;
  // 1 <= lease_micros <= kMaxLeaseMicros (otherwise InvalidArgument).
  virtual Status TryLock(const LockKey& key, uint64_t owner, uint64_t lease_micros) = 0;

  // Extends `owner`'s lease on `key` to `lease_micros` from now.
  // FailedPrecondition if `owner` does not hold `key` (never took it, released
  // it, its lease expired, or another owner holds it). REQUIRES: as TryLock.
  virtual Status Renew(const LockKey& key, uint64_t owner, uint64_t lease_micros) = 0;

  // Releases `owner`'s lock on `key`. FailedPrecondition, and the lock stays,
  // if another owner holds it; NotFound if nobody holds it (including when
  // `owner`'s lease already expired). REQUIRES: as TryLock, without a lease.
  virtual Status Unlock(const LockKey& key, uint64_t owner) = 0;
};

}  // namespace strata::txn

#endif  // STRATA_TXN_LOCK_SERVICE_H_
