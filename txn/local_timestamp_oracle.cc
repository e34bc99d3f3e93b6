#include "txn/local_timestamp_oracle.h"

#include <algorithm>
#include <utility>

#include "txn/timestamp.h"

namespace strata::txn {

Status LocalTimestampOracle::Open(const std::string& dir,
                                  const LocalTimestampOracleOptions& options,
                                  std::unique_ptr<LocalTimestampOracle>* result) {
  if (options.window_millis == 0 || options.window_millis > kMaxWindowMillis) {
    return Status::InvalidArgument("timestamp oracle window_millis " +
                                   std::to_string(options.window_millis) + " not in [1, " +
                                   std::to_string(kMaxWindowMillis) + "]");
  }
  FileSystem* fs = options.fs != nullptr ? options.fs : FileSystem::Default();
  Clock* clock = options.clock != nullptr ? options.clock : Clock::Default();

  STRATA_RETURN_IF_ERROR(fs->CreateDirIfMissing(dir));
  std::unique_ptr<FileLock> lock;
  STRATA_RETURN_IF_ERROR(fs->LockFile(JoinPath(dir, kLockFileName), &lock));
  std::unique_ptr<CeilingFile> file;
  Status s = CeilingFile::Open(fs, JoinPath(dir, kCeilingFileName), &file);
  if (!s.ok()) {
    fs->UnlockFile(std::move(lock)).PermitUncheckedError();  // the open error matters more
    return s;
  }
  std::unique_ptr<LocalTimestampOracle> oracle(
      new LocalTimestampOracle(options, fs, clock, std::move(lock), std::move(file)));
  {
    // The first window, so the first caller does not wait for an fsync.
    MutexLock l(&oracle->mu_);
    STRATA_RETURN_IF_ERROR(oracle->RefillLocked(oracle->last_.load(std::memory_order_relaxed)));
  }
  *result = std::move(oracle);
  return Status::OK();
}

LocalTimestampOracle::LocalTimestampOracle(const LocalTimestampOracleOptions& options,
                                           FileSystem* fs, Clock* clock,
                                           std::unique_ptr<FileLock> lock,
                                           std::unique_ptr<CeilingFile> file)
    : window_millis_(options.window_millis),
      fs_(fs),
      clock_(clock),
      dir_lock_(std::move(lock)),
      file_(std::move(file)) {
  // Everything at or below the persisted ceiling may have been handed out
  // before: start above it. No other thread can see the object yet.
  const uint64_t ceiling = file_->ceiling();
  last_.store(ceiling, std::memory_order_relaxed);
  ceiling_.store(ceiling, std::memory_order_relaxed);
  refill_at_.store(ceiling, std::memory_order_relaxed);
}

LocalTimestampOracle::~LocalTimestampOracle() {
  {
    MutexLock l(&mu_);
    file_.reset();
  }
  fs_->UnlockFile(std::move(dir_lock_)).PermitUncheckedError();  // released by close anyway
}

Result<uint64_t> LocalTimestampOracle::GetTimestamp() {
  uint64_t ts = 0;
  STRATA_RETURN_IF_ERROR(GetTimestamps(1, &ts));
  return ts;
}

Status LocalTimestampOracle::GetTimestamps(uint32_t n, uint64_t* first) {
  if (n == 0 || n > kMaxBatch) {
    return Status::InvalidArgument("GetTimestamps: batch of " + std::to_string(n) + " not in [1, " +
                                   std::to_string(kMaxBatch) + "]");
  }
  uint64_t floor = 0;
  STRATA_RETURN_IF_ERROR(ClockFloor(&floor));
  const uint64_t last = Reserve(n, floor);
  if (last == 0) {
    return Status::ResourceExhausted("timestamp oracle: no timestamps left for a batch of " +
                                     std::to_string(n));
  }
  // Acquire: pairs with the release store in RefillLocked (see ceiling_).
  if (last > ceiling_.load(std::memory_order_acquire)) {
    STRATA_RETURN_IF_ERROR(WaitForCeiling(last));
  } else if (last > refill_at_.load(std::memory_order_relaxed)) {
    RefillAhead();
  }
  *first = last - (n - 1);
  return Status::OK();
}

Status LocalTimestampOracle::ClockFloor(uint64_t* floor) {
  const uint64_t millis = clock_->NowMicros() / 1000;
  if (millis > kMaxPhysicalMillis) {
    return Status::FailedPrecondition("timestamp oracle: clock reads " + std::to_string(millis) +
                                      " ms, beyond the timestamp range");
  }
  *floor = ComposeTimestamp(millis, 0);
  return Status::OK();
}

uint64_t LocalTimestampOracle::Reserve(uint32_t n, uint64_t floor) {
  // Relaxed: see last_.
  uint64_t cur = last_.load(std::memory_order_relaxed);
  while (cur + 1 < floor) {
    // The clock has moved past every reservation: jump to it.
    const uint64_t want = floor + (n - 1);
    if (last_.compare_exchange_weak(cur, want, std::memory_order_relaxed)) return want;
  }
  // Far below the top of the range, fetch_add cannot wrap however many
  // callers race past this check (each adds at most kMaxBatch).
  constexpr uint64_t kFetchAddBelow = kMaxTimestamp - (uint64_t{1} << 40);
  if (cur < kFetchAddBelow) {
    // last_ only grows, so what fetch_add returns is >= cur >= floor - 1.
    return last_.fetch_add(n, std::memory_order_relaxed) + n;
  }
  // Near the top: reserve only what stays below kMaxTimestamp (never handed
  // out), so last_ never wraps and goes back to the clock. 0: none left.
  for (;;) {
    if (cur >= kMaxTimestamp - n) return 0;
    if (last_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed)) return cur + n;
  }
}

Status LocalTimestampOracle::WaitForCeiling(uint64_t last) {
  MutexLock l(&mu_);
  // Relaxed under mu_: ceiling_ is only stored with mu_ held.
  if (last <= ceiling_.load(std::memory_order_relaxed)) return Status::OK();  // shared a refill
  if (!last_refill_status_.ok() && last <= last_refill_need_) {
    // The refill that was to cover this reservation failed while we waited.
    return last_refill_status_;
  }
  return RefillLocked(last);
}

void LocalTimestampOracle::RefillAhead() {
  if (!mu_.TryLock()) return;  // a refill is under way
  // Relaxed: last_ and refill_at_ are hints here; RefillLocked rechecks.
  if (last_.load(std::memory_order_relaxed) > refill_at_.load(std::memory_order_relaxed)) {
    if (!RefillLocked(0).ok()) {
      // Do not retry ahead of need on every call; the caller that reaches
      // the ceiling retries and gets the error.
      refill_at_.store(ceiling_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
  }
  mu_.Unlock();
}

Status LocalTimestampOracle::RefillLocked(uint64_t need) {
  // Relaxed: see last_. Reservations made after this load are covered by the
  // window added below, or wait for the next refill.
  need = std::max(need, last_.load(std::memory_order_relaxed));
  const uint64_t now_millis = clock_->NowMicros() / 1000;
  const uint64_t base_millis = std::max(now_millis, PhysicalMillis(need));
  // The ceiling stays below kMaxTimestamp, which is never handed out.
  if (base_millis >= kMaxPhysicalMillis - window_millis_) {
    return Status::ResourceExhausted("timestamp oracle: no timestamps left above " +
                                     std::to_string(need));
  }
  const uint64_t ceiling_millis = base_millis + window_millis_;
  const uint64_t target = ComposeTimestamp(ceiling_millis, kLogicalMask);

  last_refill_need_ = need;
  last_refill_status_ = file_->Write(target);
  if (!last_refill_status_.ok()) {
    stats_.failed_ceiling_writes++;
    return last_refill_status_;
  }
  stats_.ceiling_writes++;
  // Relaxed: a hint, see refill_at_.
  refill_at_.store(ComposeTimestamp(ceiling_millis - window_millis_ / 2, 0),
                   std::memory_order_relaxed);
  // Release: see ceiling_.
  ceiling_.store(target, std::memory_order_release);
  return Status::OK();
}

LocalTimestampOracle::Stats LocalTimestampOracle::GetStats() const {
  MutexLock l(&mu_);
  return stats_;
}

}  // namespace strata::txn
