#include "engine/resource_governor.h"

#include <algorithm>

namespace strata::engine {

Status ValidateTenantOptions(const TenantOptions& options) {
  if (options.write_buffer_weight < kMinWriteBufferWeight ||
      options.write_buffer_weight > kMaxWriteBufferWeight) {
    return Status::InvalidArgument("tenant write_buffer_weight must be in [" +
                                   std::to_string(kMinWriteBufferWeight) + ", " +
                                   std::to_string(kMaxWriteBufferWeight) + "] (got " +
                                   std::to_string(options.write_buffer_weight) + ")");
  }
  return Status::OK();
}

uint64_t MutationPayloadBytes(std::string_view row, const RowMutation& mutation) {
  uint64_t bytes = row.size();
  for (const RowMutation::Entry& e : mutation.entries()) {
    bytes += e.family.size() + e.qualifier.size() + e.value.size();
  }
  return bytes;
}

bool MutationAddsData(const RowMutation& mutation) {
  return std::any_of(mutation.entries().begin(), mutation.entries().end(),
                     [](const RowMutation::Entry& e) { return e.kind == RowMutation::Kind::kPut; });
}

// ----------------------------------------------------------------------------
// TenantBudget

TenantBudget::TenantBudget(uint64_t tenant_id, std::string name,
                           sstable::BlockCache::OwnerId cache_id, const TenantOptions& options)
    : tenant_id_(tenant_id),
      name_(std::move(name)),
      cache_id_(cache_id),
      options_(options),
      disk_quota_(options.disk_quota),
      write_limiter_(options.write_rate_limit) {}

TenantOptions TenantBudget::options() const {
  MutexLock l(&mu_);
  return options_;
}

void TenantBudget::SetOptions(const TenantOptions& options) {
  MutexLock l(&mu_);
  options_ = options;
  disk_quota_.store(options.disk_quota, std::memory_order_relaxed);
  write_limiter_.SetBytesPerSecond(options.write_rate_limit);
}

void TenantBudget::ChargeActive(uint64_t bytes) {
  memtable_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

void TenantBudget::MemtableSwitched(uint64_t bytes) {
  immutable_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

void TenantBudget::ImmutableFlushed(uint64_t bytes) {
  immutable_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  memtable_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
}

void TenantBudget::ReleaseMemtables(uint64_t active_bytes, uint64_t immutable_bytes) {
  immutable_bytes_.fetch_sub(immutable_bytes, std::memory_order_relaxed);
  memtable_bytes_.fetch_sub(active_bytes + immutable_bytes, std::memory_order_relaxed);
}

bool TenantBudget::ShouldSwitchMemtable() const {
  const uint64_t total = memtable_bytes();
  const uint64_t imm = std::min(immutable_bytes(), total);
  const uint64_t limit = share();
  return total > limit && total - imm >= limit / 2 && total - imm > 0;
}

bool TenantBudget::ImmutableOverShare() const { return immutable_bytes() > share(); }

void TenantBudget::SetSstableBytes(uint64_t bytes) {
  sstable_bytes_.store(bytes, std::memory_order_relaxed);
}

Status TenantBudget::CheckDiskQuota(uint64_t bytes) {
  const uint64_t quota = disk_quota_.load(std::memory_order_relaxed);
  if (quota == 0) return Status::OK();
  const uint64_t used = sstable_bytes() + memtable_bytes();
  if (used + bytes <= quota) return Status::OK();
  quota_rejections_.fetch_add(1, std::memory_order_relaxed);
  return Status::ResourceExhausted("tenant '" + name_ + "' is over its disk quota of " +
                                   std::to_string(quota) + " bytes: it holds " +
                                   std::to_string(used) + " bytes and the write adds " +
                                   std::to_string(bytes) +
                                   "; delete data or drop tables to free space");
}

uint64_t TenantBudget::ReserveWriteBytes(uint64_t bytes) { return write_limiter_.Reserve(bytes); }

void TenantBudget::CountRateLimitStall(uint64_t micros) {
  rate_limit_stalls_.fetch_add(1, std::memory_order_relaxed);
  rate_limit_stall_micros_.fetch_add(micros, std::memory_order_relaxed);
}

void TenantBudget::StartMemtableStall() {
  memtable_stalls_.fetch_add(1, std::memory_order_relaxed);
}

void TenantBudget::EndMemtableStall(uint64_t micros) {
  memtable_stall_micros_.fetch_add(micros, std::memory_order_relaxed);
}

void TenantBudget::CountWrites(uint64_t rows, uint64_t bytes) {
  row_writes_.fetch_add(rows, std::memory_order_relaxed);
  bytes_written_.fetch_add(bytes, std::memory_order_relaxed);
}

void TenantBudget::CountRowRead() { row_reads_.fetch_add(1, std::memory_order_relaxed); }

void TenantBudget::CountScan() { scans_.fetch_add(1, std::memory_order_relaxed); }

void TenantBudget::CountEarlyFlush() { early_flushes_.fetch_add(1, std::memory_order_relaxed); }

TenantStats TenantBudget::Stats() const {
  TenantStats s;
  s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  s.row_writes = row_writes_.load(std::memory_order_relaxed);
  s.row_reads = row_reads_.load(std::memory_order_relaxed);
  s.scans = scans_.load(std::memory_order_relaxed);
  s.rate_limit_stalls = rate_limit_stalls_.load(std::memory_order_relaxed);
  s.rate_limit_stall_micros = rate_limit_stall_micros_.load(std::memory_order_relaxed);
  s.memtable_stalls = memtable_stalls_.load(std::memory_order_relaxed);
  s.memtable_stall_micros = memtable_stall_micros_.load(std::memory_order_relaxed);
  s.early_flushes = early_flushes_.load(std::memory_order_relaxed);
  s.quota_rejections = quota_rejections_.load(std::memory_order_relaxed);
  s.memtable_bytes = memtable_bytes();
  s.immutable_memtable_bytes = immutable_bytes();
  s.memtable_share = share();
  s.sstable_bytes = sstable_bytes();
  return s;
}

// ----------------------------------------------------------------------------
// ResourceGovernor

ResourceGovernor::ResourceGovernor(uint64_t total_write_buffer_size)
    : total_(total_write_buffer_size) {}

std::shared_ptr<TenantBudget> ResourceGovernor::AddTenant(uint64_t tenant_id, std::string name,
                                                          const TenantOptions& options) {
  MutexLock l(&mu_);
  auto budget =
      std::make_shared<TenantBudget>(tenant_id, std::move(name), next_cache_id_++, options);
  if (next_cache_id_ == sstable::BlockCache::kNoOwner) next_cache_id_++;  // after a wrap
  tenants_.push_back(budget);
  RecomputeShares();
  return budget;
}

void ResourceGovernor::RemoveTenant(const TenantBudget* budget) {
  MutexLock l(&mu_);
  tenants_.erase(std::remove_if(tenants_.begin(), tenants_.end(),
                                [&](const auto& b) { return b.get() == budget; }),
                 tenants_.end());
  RecomputeShares();
}

void ResourceGovernor::SetOptions(TenantBudget* budget, const TenantOptions& options) {
  MutexLock l(&mu_);
  budget->SetOptions(options);
  RecomputeShares();
}

void ResourceGovernor::RecomputeShares() {
  uint64_t weights = 0;
  for (const auto& b : tenants_) weights += b->options().write_buffer_weight;
  if (weights == 0) return;
  for (const auto& b : tenants_) {
    const uint64_t w = b->options().write_buffer_weight;
    // total * w / weights without overflow: weights and w are small.
    b->SetShare(total_ / weights * w + total_ % weights * w / weights);
  }
}

}  // namespace strata::engine
