#include "txn/local_lock_service.h"

#include <algorithm>

#include "common/coding.h"
#include "common/hash.h"

namespace strata::txn {
namespace {

std::string DescribeKey(const LockKey& key) {
  return "(" + EscapePrefix(key.tenant) + ", " + EscapePrefix(key.table) + ", " +
         EscapePrefix(key.row) + ")";
}

}  // namespace

LocalLockService::LocalLockService(const LocalLockServiceOptions& options)
    : clock_(options.clock != nullptr ? options.clock : Clock::Default()) {}

LocalLockService::~LocalLockService() = default;

Status LocalLockService::Prepare(const LockKey& key, uint64_t owner, std::string* encoded) {
  if (key.tenant.empty() || key.table.empty() || key.row.empty()) {
    return Status::InvalidArgument("lock key " + DescribeKey(key) +
                                   ": tenant, table and row must be non-empty");
  }
  if (owner == 0) return Status::InvalidArgument("lock owner 0 is reserved");
  // Length-prefixed tenant and table, then the row: distinct keys never
  // encode alike.
  encoded->clear();
  PutLengthPrefixedSlice(encoded, key.tenant);
  PutLengthPrefixedSlice(encoded, key.table);
  encoded->append(key.row);
  return Status::OK();
}

Status LocalLockService::CheckLease(uint64_t lease_micros) {
  if (lease_micros == 0 || lease_micros > kMaxLeaseMicros) {
    return Status::InvalidArgument("lock lease " + std::to_string(lease_micros) +
                                   " us not in [1, " + std::to_string(kMaxLeaseMicros) + "]");
  }
  return Status::OK();
}

LocalLockService::Shard& LocalLockService::ShardFor(const std::string& encoded) {
  return shards_[Hash64(encoded) % kNumShards];
}

void LocalLockService::SweepLocked(Shard* shard, uint64_t now_nanos) {
  std::erase_if(shard->locks, [now_nanos](const auto& entry) {
    return entry.second.deadline_nanos <= now_nanos;
  });
  shard->sweep_at = std::max<size_t>(64, 2 * shard->locks.size());
}

Status LocalLockService::TryLock(const LockKey& key, uint64_t owner, uint64_t lease_micros) {
  std::string encoded;
  STRATA_RETURN_IF_ERROR(Prepare(key, owner, &encoded));
  STRATA_RETURN_IF_ERROR(CheckLease(lease_micros));
  Shard& shard = ShardFor(encoded);
  MutexLock l(&shard.mu);
  const uint64_t now = clock_->NowNanos();
  const uint64_t deadline = now + lease_micros * 1000;
  auto it = shard.locks.find(encoded);
  if (it != shard.locks.end()) {
    Lease& lease = it->second;
    if (lease.deadline_nanos > now && lease.owner != owner) {
      return Status::Busy("lock " + DescribeKey(key) + " is held by owner " +
                          std::to_string(lease.owner));
    }
    // Free (expired) or ours: take or renew it.
    lease = Lease{owner, deadline};
    return Status::OK();
  }
  if (shard.locks.size() >= shard.sweep_at) SweepLocked(&shard, now);
  shard.locks.emplace(std::move(encoded), Lease{owner, deadline});
  return Status::OK();
}

Status LocalLockService::Renew(const LockKey& key, uint64_t owner, uint64_t lease_micros) {
  std::string encoded;
  STRATA_RETURN_IF_ERROR(Prepare(key, owner, &encoded));
  STRATA_RETURN_IF_ERROR(CheckLease(lease_micros));
  Shard& shard = ShardFor(encoded);
  MutexLock l(&shard.mu);
  const uint64_t now = clock_->NowNanos();
  auto it = shard.locks.find(encoded);
  if (it == shard.locks.end() || it->second.deadline_nanos <= now || it->second.owner != owner) {
    if (it != shard.locks.end() && it->second.deadline_nanos <= now) shard.locks.erase(it);
    return Status::FailedPrecondition("lock " + DescribeKey(key) + " is not held by owner " +
                                      std::to_string(owner));
  }
  it->second.deadline_nanos = now + lease_micros * 1000;
  return Status::OK();
}

Status LocalLockService::Unlock(const LockKey& key, uint64_t owner) {
  std::string encoded;
  STRATA_RETURN_IF_ERROR(Prepare(key, owner, &encoded));
  Shard& shard = ShardFor(encoded);
  MutexLock l(&shard.mu);
  const uint64_t now = clock_->NowNanos();
  auto it = shard.locks.find(encoded);
  if (it == shard.locks.end() || it->second.deadline_nanos <= now) {
    if (it != shard.locks.end()) shard.locks.erase(it);
    return Status::NotFound("lock " + DescribeKey(key) + " is not held");
  }
  if (it->second.owner != owner) {
    return Status::FailedPrecondition("lock " + DescribeKey(key) + " is held by owner " +
                                      std::to_string(it->second.owner) + ", not " +
                                      std::to_string(owner));
  }
  shard.locks.erase(it);
  return Status::OK();
}

size_t LocalLockService::TrackedLocks() const {
  size_t n = 0;
  for (const Shard& shard : shards_) {
    MutexLock l(&shard.mu);
    n += shard.locks.size();
  }
  return n;
}

}  // namespace strata::txn
