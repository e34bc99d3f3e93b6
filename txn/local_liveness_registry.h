// LocalLivenessRegistry: the in-process LivenessRegistry, with its instance
// id persisted in a directory of its own (the instance-id file,
// txn/instance_id_file.h).
//
// Each Open reads the last instance id from the directory, makes the next one
// durable (before it returns) and keeps the directory locked (INSTANCE_LOCK)
// while open, so ids of one directory are unique and increase with every
// open, across crashes. Tokens are counted from 1 within an instance and
// never reused; each live token has the monotonic time (Clock::NowNanos) of
// its last heartbeat. Nothing about tokens is persisted: after a restart the
// instance id differs, which already makes every earlier owner dead.
//
// Thread-safe; one mutex guards the token table.
//
// Invariants:
//   * tokens_ holds only tokens of this instance below next_token_ that were
//     registered and not unregistered; an entry may outlive its timeout until
//     it is looked at or swept, but is treated as dead from then on.
//   * A token leaves tokens_ exactly when it dies, and never returns.
#ifndef STRATA_TXN_LOCAL_LIVENESS_REGISTRY_H_
#define STRATA_TXN_LOCAL_LIVENESS_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/mutex.h"
#include "strata/status.h"
#include "txn/liveness_registry.h"

namespace strata::txn {

struct LocalLivenessRegistryOptions {
  // How long a token stays alive without a Heartbeat. Coordinators should
  // heartbeat a few times per timeout. Longer: a coordinator that hangs
  // blocks readers of its locks longer; shorter: a coordinator that is merely
  // slow (a long GC pause, a stalled disk) loses its locks. Between 1 and
  // kMaxTimeoutMicros.
  uint64_t timeout_micros = 10'000'000;
  // Where the instance-id file lives; nullptr means FileSystem::Default().
  // Must outlive the registry.
  FileSystem* fs = nullptr;
  // The monotonic clock (NowNanos) token ages are measured with; nullptr
  // means Clock::Default(). Must outlive the registry.
  Clock* clock = nullptr;
};

class LocalLivenessRegistry final : public LivenessRegistry {
 public:
  static constexpr uint64_t kMaxTimeoutMicros = 24ull * 3600 * 1'000'000;
  // File names inside the registry's directory.
  static constexpr const char* kInstanceFileName = "INSTANCE_ID";
  static constexpr const char* kLockFileName = "INSTANCE_LOCK";

  // Opens the registry in `dir` (created if missing) as a new instance.
  // Corruption if the instance-id file is damaged: ids are never reset, since
  // reusing one would make owners of an earlier instance look alive.
  static Status Open(const std::string& dir, const LocalLivenessRegistryOptions& options,
                     std::unique_ptr<LocalLivenessRegistry>* result);

  ~LocalLivenessRegistry() override;
  LocalLivenessRegistry(const LocalLivenessRegistry&) = delete;
  LocalLivenessRegistry& operator=(const LocalLivenessRegistry&) = delete;

  uint64_t instance_id() const override { return instance_id_; }
  uint64_t timeout_micros() const override { return timeout_nanos_ / 1000; }
  Result<Owner> Register() override LOCKS_EXCLUDED(mu_);
  Status Heartbeat(const Owner& owner) override LOCKS_EXCLUDED(mu_);
  Status Unregister(const Owner& owner) override LOCKS_EXCLUDED(mu_);
  Result<bool> IsAlive(const Owner& owner) override LOCKS_EXCLUDED(mu_);

  // Tokens in the table, dead ones not yet swept included.
  size_t TrackedTokens() const LOCKS_EXCLUDED(mu_);

 private:
  LocalLivenessRegistry(const LocalLivenessRegistryOptions& options, FileSystem* fs, Clock* clock,
                        std::unique_ptr<FileLock> lock, uint64_t instance_id);

  // The entry of a live `owner`, or end() after erasing an expired one.
  std::unordered_map<uint64_t, uint64_t>::iterator FindAliveLocked(const Owner& owner,
                                                                   uint64_t now_nanos)
      EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ExpiredLocked(uint64_t last_nanos, uint64_t now_nanos) const EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Erases every expired token; amortized over Register calls.
  void SweepLocked(uint64_t now_nanos) EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t timeout_nanos_;
  FileSystem* const fs_;
  Clock* const clock_;
  std::unique_ptr<FileLock> dir_lock_;
  const uint64_t instance_id_;

  mutable Mutex mu_;
  uint64_t next_token_ GUARDED_BY(mu_) = 1;
  // token -> NowNanos of its registration or last heartbeat.
  std::unordered_map<uint64_t, uint64_t> tokens_ GUARDED_BY(mu_);
  // Sweep when tokens_ grows to this size.
  size_t sweep_at_ GUARDED_BY(mu_) = 64;
};

}  // namespace strata::txn

#endif  // STRATA_TXN_LOCAL_LIVENESS_REGISTRY_H_
