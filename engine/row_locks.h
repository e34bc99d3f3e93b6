// RowLocks: a fixed table of striped reader/writer locks keyed by (table id,
// row), which orders the writers of one row against each other.
//
// Table::Mutate holds its row's stripe shared, so plain writes to one row
// still share group commits; CheckAndMutate holds its rows' stripes
// exclusively from the read of its conditions until its write is applied and
// published, so no other writer of those rows comes between check and write.
// Two rows may share a stripe; that costs some concurrency, never
// correctness. Readers (ReadRow, Scan) take no stripe: they read a published
// snapshot.
//
// Fairness: a waiting exclusive holder stops new shared holders from
// entering, and when it releases, the shared holders that were waiting go
// first, ahead of the next exclusive holder; so neither kind starves the
// other on a busy row.
//
// Deadlock freedom: a thread holds stripes of one call only, never waits for
// a stripe while holding one it did not take in ascending order
// (ExclusiveRowLocks sorts and deduplicates), and takes them after the
// engine's close gate, never before.
//
// Thread-safe.
#ifndef STRATA_ENGINE_ROW_LOCKS_H_
#define STRATA_ENGINE_ROW_LOCKS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/mutex.h"
#include "strata/slice.h"

namespace strata::engine {

class RowLocks {
 public:
  // 4096 stripes of 128 bytes: 512 KiB per engine. With 16 threads on
  // distinct rows, two of them share a stripe about 3% of the time.
  static constexpr size_t kStripes = 4096;

  RowLocks();
  RowLocks(const RowLocks&) = delete;
  RowLocks& operator=(const RowLocks&) = delete;

  // The stripe that guards `row` of table `table_id`.
  static size_t StripeOf(uint64_t table_id, const Slice& row);

  void LockShared(size_t stripe);
  void UnlockShared(size_t stripe);
  void LockExclusive(size_t stripe);
  void UnlockExclusive(size_t stripe);

 private:
  struct alignas(64) Stripe {
    Mutex mu;
    CondVar cv{&mu};
    uint32_t readers GUARDED_BY(mu) = 0;          // shared holders
    bool writer GUARDED_BY(mu) = false;           // an exclusive holder
    uint32_t readers_waiting GUARDED_BY(mu) = 0;  // shared lockers blocked
    uint32_t writers_waiting GUARDED_BY(mu) = 0;  // exclusive lockers blocked
    // Shared lockers let in ahead of waiting exclusive lockers: set to
    // readers_waiting when an exclusive holder releases.
    uint32_t reader_pass GUARDED_BY(mu) = 0;
  };
  std::unique_ptr<Stripe[]> stripes_;
};

// Holds one stripe shared for its lifetime.
class SharedRowLock {
 public:
  SharedRowLock(RowLocks* locks, uint64_t table_id, const Slice& row)
      : locks_(locks), stripe_(RowLocks::StripeOf(table_id, row)) {
    locks_->LockShared(stripe_);
  }
  ~SharedRowLock() { locks_->UnlockShared(stripe_); }
  SharedRowLock(const SharedRowLock&) = delete;
  SharedRowLock& operator=(const SharedRowLock&) = delete;

 private:
  RowLocks* const locks_;
  const size_t stripe_;
};

// Holds a set of stripes exclusively for its lifetime; takes them in
// ascending order, each once.
class ExclusiveRowLocks {
 public:
  ExclusiveRowLocks(RowLocks* locks, std::vector<size_t> stripes);
  ~ExclusiveRowLocks();
  ExclusiveRowLocks(const ExclusiveRowLocks&) = delete;
  ExclusiveRowLocks& operator=(const ExclusiveRowLocks&) = delete;

 private:
  RowLocks* const locks_;
  std::vector<size_t> stripes_;  // sorted, distinct
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_ROW_LOCKS_H_
