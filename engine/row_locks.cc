#include "engine/row_locks.h"

#include <algorithm>

#include "common/hash.h"

namespace strata::engine {

static_assert((RowLocks::kStripes & (RowLocks::kStripes - 1)) == 0,
              "kStripes must be a power of two");

RowLocks::RowLocks() : stripes_(new Stripe[kStripes]) {}

size_t RowLocks::StripeOf(uint64_t table_id, const Slice& row) {
  return static_cast<size_t>(Hash64(row, table_id)) & (kStripes - 1);
}

void RowLocks::LockShared(size_t stripe) {
  Stripe& s = stripes_[stripe];
  MutexLock l(&s.mu);
  auto admitted = [&s]() NO_THREAD_SAFETY_ANALYSIS {
    return !s.writer && (s.writers_waiting == 0 || s.reader_pass > 0);
  };
  if (!admitted()) {
    s.readers_waiting++;
    do {
      s.cv.Wait();
    } while (!admitted());
    s.readers_waiting--;
  }
  if (s.reader_pass > 0) s.reader_pass--;
  s.readers++;
}

void RowLocks::UnlockShared(size_t stripe) {
  Stripe& s = stripes_[stripe];
  MutexLock l(&s.mu);
  s.readers--;
  if (s.readers == 0 && s.writers_waiting > 0) s.cv.SignalAll();
}

void RowLocks::LockExclusive(size_t stripe) {
  Stripe& s = stripes_[stripe];
  MutexLock l(&s.mu);
  // A pass only holds back this locker while a shared locker is still
  // waiting to use it; each such locker was woken and uses or loses it.
  auto blocked = [&s]() NO_THREAD_SAFETY_ANALYSIS {
    return s.writer || s.readers > 0 || (s.reader_pass > 0 && s.readers_waiting > 0);
  };
  if (blocked()) {
    s.writers_waiting++;
    do {
      s.cv.Wait();
    } while (blocked());
    s.writers_waiting--;
  }
  s.reader_pass = 0;
  s.writer = true;
}

void RowLocks::UnlockExclusive(size_t stripe) {
  Stripe& s = stripes_[stripe];
  MutexLock l(&s.mu);
  s.writer = false;
  s.reader_pass = s.readers_waiting;
  if (s.readers_waiting > 0 || s.writers_waiting > 0) s.cv.SignalAll();
}

ExclusiveRowLocks::ExclusiveRowLocks(RowLocks* locks, std::vector<size_t> stripes)
    : locks_(locks), stripes_(std::move(stripes)) {
  std::sort(stripes_.begin(), stripes_.end());
  stripes_.erase(std::unique(stripes_.begin(), stripes_.end()), stripes_.end());
  for (size_t s : stripes_) locks_->LockExclusive(s);
}

ExclusiveRowLocks::~ExclusiveRowLocks() {
  for (auto it = stripes_.rbegin(); it != stripes_.rend(); ++it) locks_->UnlockExclusive(*it);
}

}  // namespace strata::engine
