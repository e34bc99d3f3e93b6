#include "txn/local_liveness_registry.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "txn/instance_id_file.h"

namespace strata::txn {

Status LocalLivenessRegistry::Open(const std::string& dir,
                                   const LocalLivenessRegistryOptions& options,
                                   std::unique_ptr<LocalLivenessRegistry>* result) {
  if (options.timeout_micros == 0 || options.timeout_micros > kMaxTimeoutMicros) {
    return Status::InvalidArgument("liveness registry timeout_micros " +
                                   std::to_string(options.timeout_micros) + " not in [1, " +
                                   std::to_string(kMaxTimeoutMicros) + "]");
  }
  FileSystem* fs = options.fs != nullptr ? options.fs : FileSystem::Default();
  Clock* clock = options.clock != nullptr ? options.clock : Clock::Default();

  STRATA_RETURN_IF_ERROR(fs->CreateDirIfMissing(dir));
  std::unique_ptr<FileLock> lock;
  STRATA_RETURN_IF_ERROR(fs->LockFile(JoinPath(dir, kLockFileName), &lock));
  const std::string path = JoinPath(dir, kInstanceFileName);
  Status s;
  uint64_t id = 0;
  Result<uint64_t> previous = ReadInstanceIdFile(fs, path);
  if (!previous.ok()) {
    s = previous.status();
  } else if (*previous == std::numeric_limits<uint64_t>::max()) {
    s = Status::ResourceExhausted(path + ": instance ids exhausted");
  } else {
    id = *previous + 1;
    s = WriteInstanceIdFile(fs, path, id);
  }
  if (!s.ok()) {
    fs->UnlockFile(std::move(lock)).PermitUncheckedError();  // the open error matters more
    return s;
  }
  result->reset(new LocalLivenessRegistry(options, fs, clock, std::move(lock), id));
  return Status::OK();
}

LocalLivenessRegistry::LocalLivenessRegistry(const LocalLivenessRegistryOptions& options,
                                             FileSystem* fs, Clock* clock,
                                             std::unique_ptr<FileLock> lock, uint64_t instance_id)
    : timeout_nanos_(options.timeout_micros * 1000),
      fs_(fs),
      clock_(clock),
      dir_lock_(std::move(lock)),
      instance_id_(instance_id) {}

LocalLivenessRegistry::~LocalLivenessRegistry() {
  fs_->UnlockFile(std::move(dir_lock_)).PermitUncheckedError();  // released by close anyway
}

bool LocalLivenessRegistry::ExpiredLocked(uint64_t last_nanos, uint64_t now_nanos) const {
  return now_nanos > last_nanos && now_nanos - last_nanos > timeout_nanos_;
}

std::unordered_map<uint64_t, uint64_t>::iterator LocalLivenessRegistry::FindAliveLocked(
    const Owner& owner, uint64_t now_nanos) {
  if (owner.instance_id != instance_id_) return tokens_.end();
  auto it = tokens_.find(owner.token);
  if (it != tokens_.end() && ExpiredLocked(it->second, now_nanos)) {
    tokens_.erase(it);  // dead for good
    return tokens_.end();
  }
  return it;
}

void LocalLivenessRegistry::SweepLocked(uint64_t now_nanos) {
  std::erase_if(tokens_, [&](const auto& entry) {
    mu_.AssertHeld();
    return ExpiredLocked(entry.second, now_nanos);
  });
  sweep_at_ = std::max<size_t>(64, 2 * tokens_.size());
}

Result<Owner> LocalLivenessRegistry::Register() {
  MutexLock l(&mu_);
  // Read under mu_, so that `now` follows the order in which calls take effect.
  const uint64_t now = clock_->NowNanos();
  if (tokens_.size() >= sweep_at_) SweepLocked(now);
  const uint64_t token = next_token_++;
  tokens_.emplace(token, now);
  return Owner{instance_id_, token};
}

Status LocalLivenessRegistry::Heartbeat(const Owner& owner) {
  MutexLock l(&mu_);
  const uint64_t now = clock_->NowNanos();
  auto it = FindAliveLocked(owner, now);
  if (it == tokens_.end()) {
    return Status::Aborted("liveness: owner " + owner.ToString() + " is dead (instance " +
                           std::to_string(instance_id_) + ")");
  }
  it->second = std::max(it->second, now);
  return Status::OK();
}

Status LocalLivenessRegistry::Unregister(const Owner& owner) {
  MutexLock l(&mu_);
  const uint64_t now = clock_->NowNanos();
  auto it = FindAliveLocked(owner, now);
  if (it == tokens_.end()) {
    return Status::NotFound("liveness: owner " + owner.ToString() + " is not alive");
  }
  tokens_.erase(it);
  return Status::OK();
}

Result<bool> LocalLivenessRegistry::IsAlive(const Owner& owner) {
  MutexLock l(&mu_);
  const uint64_t now = clock_->NowNanos();
  return FindAliveLocked(owner, now) != tokens_.end();
}

size_t LocalLivenessRegistry::TrackedTokens() const {
  MutexLock l(&mu_);
  return tokens_.size();
}

}  // namespace strata::txn
