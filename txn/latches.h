// Latches: the in-memory claims a one-phase commit (txn/FORMAT.md, "One-phase
// commit") holds on the keys it writes, from before it takes its commit_ts
// until its writes are visible, and that readers consult. A one-phase commit
// writes its data and commit records at commit_ts in one all-or-nothing
// batch, with no lock a reader could meet in between; a reader whose
// start_ts came after that commit_ts must see the commit all the same, so it
// waits for the latch of every key it reads whose commit may fall below its
// start_ts: one whose commit_ts is not known yet, or is below start_ts.
//
// Thread-safe. Latches are per TxnDB: one-phase commits are used only where
// every writer of the tables is this TxnDB's (TransactionDBOptions).
#ifndef STRATA_TXN_LATCHES_H_
#define STRATA_TXN_LATCHES_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "txn/lock_resolver.h"

namespace strata::txn {

class Latches {
 public:
  Latches() = default;
  Latches(const Latches&) = delete;
  Latches& operator=(const Latches&) = delete;

  // Claims every key of `keys` for one commit, commit_ts not known yet; false,
  // with nothing claimed, when another commit holds any of them (commits
  // never wait for each other here: the caller falls back to two phases).
  bool TryAcquire(const std::vector<TxnKey>& keys) LOCKS_EXCLUDED(mu_);
  // The commit_ts the holder of `keys` took: readers at or below it need
  // not wait for them.
  void SetCommitTs(const std::vector<TxnKey>& keys, uint64_t commit_ts) LOCKS_EXCLUDED(mu_);
  // Lets `keys` go and wakes the readers waiting for them.
  void Release(const std::vector<TxnKey>& keys) LOCKS_EXCLUDED(mu_);

  // Waits until no latch a reader at start_ts must wait for is held on
  // `key`.
  void WaitForKey(const TxnKey& key, uint64_t start_ts) LOCKS_EXCLUDED(mu_);
  // The same for every key of `table` whose row is in [start_row, end_row)
  // (an empty end_row: no end).
  void WaitForRange(std::string_view table, std::string_view start_row, std::string_view end_row,
                    uint64_t start_ts) LOCKS_EXCLUDED(mu_);

  size_t held() const { return held_count_.load(); }

 private:
  // Whether a latch with `commit_ts` (0: not known yet) hides a commit a
  // reader at start_ts must see.
  static bool MustWait(uint64_t commit_ts, uint64_t start_ts) {
    return commit_ts == 0 || commit_ts <= start_ts;
  }

  Mutex mu_;
  CondVar released_{&mu_};
  std::map<TxnKey, uint64_t> held_ GUARDED_BY(mu_);  // key -> commit_ts, 0 while unknown
  // held_.size(), read without the mutex: a reader that finds 0 (sequentially
  // consistent with the claim's increment, which comes before the holder
  // takes commit_ts) got its start_ts before any commit_ts a latch could
  // carry, so it has nothing to wait for.
  std::atomic<size_t> held_count_{0};
};

}  // namespace strata::txn

#endif  // STRATA_TXN_LATCHES_H_
