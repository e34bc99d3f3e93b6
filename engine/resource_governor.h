// ResourceGovernor and TenantBudget: the per-tenant resource budgets of one
// engine — each tenant's share of the engine-wide memtable memory
// (EngineOptions::total_write_buffer_size), its write rate limit and its disk
// quota — and the per-tenant counters behind Tenant::GetStats.
//
// The governor only keeps accounts and answers questions ("is this tenant
// over its share?", "may this write go in under the quota?"); the engine
// acts on the answers (switches memtables, makes writes wait or fail). See
// "Tenants and their budgets" in engine/README.md.
//
// Both classes are thread-safe. Invariants:
//   - the shares of all registered tenants add up to total_write_buffer_size
//     (less the rounding of integer division);
//   - immutable_bytes() <= memtable_bytes() for every budget, as long as the
//     engine releases no more than it charged;
//   - cache ids are unique among the budgets of one governor and never 0
//     (BlockCache::kNoOwner).
#ifndef STRATA_ENGINE_RESOURCE_GOVERNOR_H_
#define STRATA_ENGINE_RESOURCE_GOVERNOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/rate_limiter.h"
#include "sstable/block_cache.h"
#include "strata/engine.h"
#include "strata/options.h"
#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata::engine {

// Bounds of TenantOptions::write_buffer_weight.
constexpr uint32_t kMinWriteBufferWeight = 1;
constexpr uint32_t kMaxWriteBufferWeight = 10000;

// InvalidArgument naming the field when `options` is out of range.
Status ValidateTenantOptions(const TenantOptions& options);

// The payload bytes of a row mutation, as rate limits and quotas count them:
// the row key plus the family, qualifier and value bytes of every entry.
uint64_t MutationPayloadBytes(std::string_view row, const RowMutation& mutation);
// Whether the mutation holds a put (a mutation of deletes only frees space).
bool MutationAddsData(const RowMutation& mutation);

class ResourceGovernor;

// The accounts of one tenant. The engine charges and releases memtable
// bytes as memtables fill, switch and flush; memtable byte counts are the
// memtables' data sizes (MemTable::ApproximateDataSize).
class TenantBudget {
 public:
  TenantBudget(uint64_t tenant_id, std::string name, sstable::BlockCache::OwnerId cache_id,
               const TenantOptions& options);
  TenantBudget(const TenantBudget&) = delete;
  TenantBudget& operator=(const TenantBudget&) = delete;

  uint64_t tenant_id() const { return tenant_id_; }
  const std::string& name() const { return name_; }
  // The id the block cache charges the tenant's blocks to.
  sstable::BlockCache::OwnerId cache_id() const { return cache_id_; }
  TenantOptions options() const LOCKS_EXCLUDED(mu_);

  // Memtable accounting. ChargeActive adds bytes the tenant's active
  // memtables grew by; MemtableSwitched moves a switched memtable's bytes to
  // the immutable ones; ImmutableFlushed releases a flushed one;
  // ReleaseMemtables releases memtables dropped with their table.
  void ChargeActive(uint64_t bytes);
  void MemtableSwitched(uint64_t bytes);
  void ImmutableFlushed(uint64_t bytes);
  void ReleaseMemtables(uint64_t active_bytes, uint64_t immutable_bytes);

  // Relaxed loads: gauges that callers act on as hints and re-check.
  uint64_t memtable_bytes() const { return memtable_bytes_.load(std::memory_order_relaxed); }
  uint64_t immutable_bytes() const { return immutable_bytes_.load(std::memory_order_relaxed); }
  uint64_t share() const { return share_.load(std::memory_order_relaxed); }

  // Whether the tenant's largest active memtable should be switched early:
  // its memtables hold more than its share and at least half the share is
  // in active memtables (so a flush backlog alone does not cause a stream of
  // tiny flushes).
  bool ShouldSwitchMemtable() const;
  // Whether the tenant's writes must wait: its immutable memtables alone
  // hold more than its share.
  bool ImmutableOverShare() const;

  // Level-0 files of the tenant's fullest locality group, as the engine last
  // counted them (after every flush and compaction). The tenant's writes
  // meet level-0 backpressure by this count, not another tenant's.
  void SetLevel0Files(uint64_t files) { level0_files_.store(files, std::memory_order_relaxed); }
  uint64_t level0_files() const { return level0_files_.load(std::memory_order_relaxed); }

  // Live SSTable bytes, as the engine last counted them.
  void SetSstableBytes(uint64_t bytes);
  uint64_t sstable_bytes() const { return sstable_bytes_.load(std::memory_order_relaxed); }

  // OK when the tenant may add a write of `bytes` payload bytes under its
  // disk quota; otherwise ResourceExhausted naming the tenant, its usage and
  // the quota (and the rejection is counted).
  Status CheckDiskQuota(uint64_t bytes);

  // Takes `bytes` from the tenant's write rate budget; returns how long the
  // writer must wait, in microseconds (0 when the tenant has no limit).
  uint64_t ReserveWriteBytes(uint64_t bytes);

  void CountRateLimitStall(uint64_t micros);
  // A write starts to wait for the tenant's flushes (counted at once, so the
  // wait shows while it lasts), and ends its wait after `micros`.
  void StartMemtableStall();
  void EndMemtableStall(uint64_t micros);
  void CountWrites(uint64_t rows, uint64_t bytes);
  void CountRowRead();
  void CountScan();
  void CountEarlyFlush();

  // Every counter and gauge the budget keeps (block_cache_bytes is left 0:
  // the engine's block cache knows it).
  TenantStats Stats() const;

 private:
  friend class ResourceGovernor;
  void SetOptions(const TenantOptions& options) LOCKS_EXCLUDED(mu_);
  void SetShare(uint64_t share) { share_.store(share, std::memory_order_relaxed); }

  const uint64_t tenant_id_;
  const std::string name_;
  const sstable::BlockCache::OwnerId cache_id_;

  mutable Mutex mu_;
  TenantOptions options_ GUARDED_BY(mu_);
  // Copies of options_ fields for the write path. Relaxed: a write that
  // races an options change may see either value.
  std::atomic<uint64_t> disk_quota_{0};
  RateLimiter write_limiter_;

  // Relaxed: gauges and counters with no ordering duties; the engine's own
  // locks order the charges against the memtable switches they describe.
  std::atomic<uint64_t> share_{0};
  std::atomic<uint64_t> memtable_bytes_{0};
  std::atomic<uint64_t> immutable_bytes_{0};
  std::atomic<uint64_t> sstable_bytes_{0};
  std::atomic<uint64_t> level0_files_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> row_writes_{0};
  std::atomic<uint64_t> row_reads_{0};
  std::atomic<uint64_t> scans_{0};
  std::atomic<uint64_t> rate_limit_stalls_{0};
  std::atomic<uint64_t> rate_limit_stall_micros_{0};
  std::atomic<uint64_t> memtable_stalls_{0};
  std::atomic<uint64_t> memtable_stall_micros_{0};
  std::atomic<uint64_t> early_flushes_{0};
  std::atomic<uint64_t> quota_rejections_{0};
};

// The registry of an engine's live tenants' budgets; it splits the memtable
// budget among them by weight.
class ResourceGovernor {
 public:
  explicit ResourceGovernor(uint64_t total_write_buffer_size);
  ResourceGovernor(const ResourceGovernor&) = delete;
  ResourceGovernor& operator=(const ResourceGovernor&) = delete;

  // Registers a tenant and recomputes every share.
  // REQUIRES: ValidateTenantOptions(options) is OK.
  std::shared_ptr<TenantBudget> AddTenant(uint64_t tenant_id, std::string name,
                                          const TenantOptions& options) LOCKS_EXCLUDED(mu_);
  // Unregisters a (dropped) tenant and recomputes every share.
  void RemoveTenant(const TenantBudget* budget) LOCKS_EXCLUDED(mu_);
  // Replaces a tenant's options and recomputes every share.
  // REQUIRES: ValidateTenantOptions(options) is OK.
  void SetOptions(TenantBudget* budget, const TenantOptions& options) LOCKS_EXCLUDED(mu_);

  uint64_t total_write_buffer_size() const { return total_; }

 private:
  void RecomputeShares() EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t total_;
  Mutex mu_;
  std::vector<std::shared_ptr<TenantBudget>> tenants_ GUARDED_BY(mu_);
  sstable::BlockCache::OwnerId next_cache_id_ GUARDED_BY(mu_) = 1;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_RESOURCE_GOVERNOR_H_
