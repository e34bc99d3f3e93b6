// PessimisticLocks: the in-memory locks of pessimistic transactions
// (TransactionOptions::pessimistic). GetForUpdate takes the key's lock
// before it reads; a transaction that finds the key held waits in the key's
// queue, first come first served, and is handed the lock when its holder lets
// it go: no polling. Each wait is checked for a deadlock when it starts: the
// waiter would wait for the key's holder, which may wait for a key held by
// another, and so on; if that chain comes back to the waiter, it waits for
// nothing and fails instead. A wait that outlasts its timeout leaves the
// queue and fails.
//
// Why checking each wait as it starts finds every deadlock: a transaction
// waits for one key at a time, so the waits form chains; a cycle needs a
// new wait to close it, and a key changing hands ends a wait (its new holder
// is running) rather than starting one.
//
// The locks live in memory only: a crash loses them together with the
// transactions that held them, which had written nothing (a pessimistic
// lock is not a Percolator lock; the commit still prewrites).
//
// Thread-safe. Like the latches, one set per tenant and process
// (TransactionDB::Open shares them).
#ifndef STRATA_TXN_PESSIMISTIC_LOCKS_H_
#define STRATA_TXN_PESSIMISTIC_LOCKS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "txn/lock_resolver.h"

namespace strata::txn {

class PessimisticLocks {
 public:
  PessimisticLocks() = default;
  PessimisticLocks(const PessimisticLocks&) = delete;
  PessimisticLocks& operator=(const PessimisticLocks&) = delete;

  struct Outcome {
    enum class Kind {
      kAcquired,  // the caller holds the key (it may have held it already)
      kDeadlock,  // waiting would close a cycle: nothing changed
      kTimeout,   // the wait ran out: nothing changed
    };
    Kind kind = Kind::kAcquired;
    // For kDeadlock and kTimeout: the transaction holding the key when the
    // caller gave up, and for kDeadlock the cycle, written out for an
    // error message.
    uint64_t holder = 0;
    std::string cycle;
    // The caller queued behind another transaction (however it ended).
    bool waited = false;
  };

  // Takes `key` for the transaction `owner` (its start_ts, unique among live
  // transactions), waiting at most `timeout_micros` (0: not at all) behind
  // the transactions already queued for it.
  Outcome Acquire(const TxnKey& key, uint64_t owner, uint64_t timeout_micros) LOCKS_EXCLUDED(mu_);
  // Lets go of `keys`, which `owner` holds, handing each to the first
  // transaction in its queue.
  void Release(uint64_t owner, const std::vector<TxnKey>& keys) LOCKS_EXCLUDED(mu_);

  // How many keys are held, and how many transactions wait (for tests).
  size_t held() const LOCKS_EXCLUDED(mu_);
  size_t waiting() const LOCKS_EXCLUDED(mu_);

 private:
  struct Waiter {
    explicit Waiter(Mutex* mu, uint64_t owner) : owner(owner), granted_cv(mu) {}
    const uint64_t owner;
    bool granted = false;
    CondVar granted_cv;
  };
  struct Entry {
    uint64_t holder = 0;
    std::deque<Waiter*> queue;
  };

  // The cycle a wait of `owner` for `key` would close, written out; empty
  // when there is none.
  std::string FindCycle(const TxnKey& key, uint64_t owner) const EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::map<TxnKey, Entry> keys_ GUARDED_BY(mu_);
  // What each waiting transaction waits for.
  std::map<uint64_t, TxnKey> waiting_ GUARDED_BY(mu_);
};

}  // namespace strata::txn

#endif  // STRATA_TXN_PESSIMISTIC_LOCKS_H_
