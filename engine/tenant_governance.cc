// The engine's side of the resource governor (engine/resource_governor.h):
// admitting writes under a tenant's quota, rate limit and memtable share;
// charging memtable bytes to tenants as memtables fill, switch, flush and
// are dropped; switching an over-share tenant's largest memtable; counting
// each tenant's live SSTable bytes; tenant options and stats. See "Tenants
// and their budgets" in engine/README.md.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>

#include "common/clock.h"
#include "common/coding.h"
#include "engine/engine_core.h"
#include "engine/resource_governor.h"

namespace strata::engine {

Status EngineCore::AdmitWrite(const TableState& table, uint64_t bytes, bool adds_data,
                              std::shared_lock<SharedGate>* gate) {
  TenantBudget* budget = table.budget.get();
  // The quota comes first: a refused write should not wait before failing.
  if (adds_data) STRATA_RETURN_IF_ERROR(budget->CheckDiskQuota(bytes));
  const uint64_t wait_micros = budget->ReserveWriteBytes(bytes);
  if (wait_micros > 0) {
    budget->CountRateLimitStall(wait_micros);
    // Sleep without the close gate, so a slow tenant holds up neither Close
    // nor drops; then check again what the gate protects.
    gate->unlock();
    Clock::Default()->SleepMicros(wait_micros);
    gate->lock();
    if (closed_) return ClosedError();
    STRATA_RETURN_IF_ERROR(CheckLive(table));
  }
  // The waits for flushes and compactions below let go of the gate too:
  // held, it would keep a drop, alter, split or Close waiting, and every
  // other tenant's calls behind that (the gate lets no reader pass a
  // waiting writer) until this tenant's backlog clears.
  bool released = false;
  STRATA_RETURN_IF_ERROR(WaitToWrite(table, gate, &released));
  STRATA_RETURN_IF_ERROR(WaitForTenantShare(table, gate, &released));
  if (released) {
    if (closed_) return ClosedError();
    STRATA_RETURN_IF_ERROR(CheckLive(table));
  }
  return Status::OK();
}

Status EngineCore::WaitForTenantShare(const TableState& table, std::shared_lock<SharedGate>* gate,
                                      bool* released) {
  TenantBudget* budget = table.budget.get();
  if (!budget->ImmutableOverShare()) return Status::OK();
  Clock* clock = Clock::Default();
  const uint64_t start = clock->NowNanos();
  budget->StartMemtableStall();
  GateReleased unlocked(gate, released);
  {
    // The flush thread signals bg_cv_ after each flush, which is what
    // brings the tenant's immutable bytes down.
    MutexLock l(&bg_mu_);
    while (bg_error_.ok() && !bg_stop_ && !table.dropped.load(std::memory_order_relaxed) &&
           budget->ImmutableOverShare()) {
      bg_cv_.WaitFor(100 * 1000);
    }
    if (!bg_error_.ok()) {
      budget->EndMemtableStall((clock->NowNanos() - start) / 1000);
      return bg_error_;
    }
  }
  budget->EndMemtableStall((clock->NowNanos() - start) / 1000);
  return Status::OK();
}

void EngineCore::ChargeMemTable(LocalityGroupState* group) {
  std::shared_ptr<const GroupView> view = group->current();
  // An empty memtable is charged nothing (not even its index's head), so a
  // tenant without data holds no memtable bytes.
  if (view->mem->num_entries() == 0) return;
  const uint64_t size = view->mem->ApproximateDataSize();
  if (size > group->memtable_charge) {
    group->tablet->table->budget->ChargeActive(size - group->memtable_charge);
    group->memtable_charge = size;
  }
}

void EngineCore::ChargeRecoveredMemTables() {
  MutexLock apply(&apply_mu_);
  std::vector<LocalityGroupState*> groups;
  {
    MutexLock l(&mu_);
    for (const auto& [id, tablet] : tablets_by_id_) {
      for (const auto& g : tablet->groups) groups.push_back(g.get());
    }
  }
  // Tablets stay put: no call can drop a table before Open returns.
  for (LocalityGroupState* g : groups) ChargeMemTable(g);
}

void EngineCore::EnforceMemtableShares(const std::vector<LocalityGroupState*>& touched,
                                       SequenceNumber last_sequence) {
  std::vector<TenantBudget*> over;
  for (LocalityGroupState* g : touched) {
    TenantBudget* b = g->tablet->table->budget.get();
    if (b->ShouldSwitchMemtable() && std::find(over.begin(), over.end(), b) == over.end()) {
      over.push_back(b);
    }
  }
  for (TenantBudget* b : over) {
    // The writers of this group hold the close gate shared, so no table can
    // be dropped (which takes it exclusively) while these pointers are used.
    std::vector<LocalityGroupState*> groups;
    {
      MutexLock l(&mu_);
      for (auto it = tables_.lower_bound(std::make_pair(b->tenant_id(), std::string()));
           it != tables_.end() && it->first.first == b->tenant_id(); ++it) {
        for (const auto& tablet : it->second->tablets) {
          for (const auto& g : tablet->groups) groups.push_back(g.get());
        }
      }
    }
    // Each switch empties one active memtable, so this ends.
    while (b->ShouldSwitchMemtable()) {
      LocalityGroupState* largest = nullptr;
      for (LocalityGroupState* g : groups) {
        if (g->memtable_charge > 0 &&
            (largest == nullptr || g->memtable_charge > largest->memtable_charge)) {
          largest = g;
        }
      }
      if (largest == nullptr || largest->current()->mem->num_entries() == 0) break;
      SwitchMemTable(largest, last_sequence);
      b->CountEarlyFlush();
    }
  }
}

void EngineCore::ReleaseMemTableCharges(LocalityGroupState* group, const GroupView& view) {
  uint64_t immutable = 0;
  for (const ImmutableMemTable& imm : view.imms) immutable += imm.charge;
  group->tablet->table->budget->ReleaseMemtables(group->memtable_charge, immutable);
  group->memtable_charge = 0;
}

void EngineCore::RefreshTenantDiskUsage() {
  // One refresh at a time, so an older count never overwrites a newer one.
  MutexLock usage(&disk_usage_mu_);
  std::map<uint64_t, uint64_t> bytes;  // by tenant id
  std::vector<std::shared_ptr<TenantBudget>> budgets;
  {
    MutexLock l(&mu_);
    std::unordered_set<uint64_t> counted;
    for (const auto& [key, table] : tables_) {
      uint64_t& n = bytes[key.first];
      for (const auto& tablet : table->tablets) {
        for (const auto& g : tablet->groups) {
          std::shared_ptr<const GroupView> view = g->current();
          if (view == nullptr) continue;  // closed
          for (const auto& level : view->levels) {
            for (const auto& f : level) {
              // A file shared by split tablets counts once.
              if (counted.insert(f->meta.number).second) n += f->meta.size;
            }
          }
        }
      }
    }
    for (const auto& [name, tenant] : tenants_) budgets.push_back(tenant->budget);
  }
  for (const auto& b : budgets) {
    auto it = bytes.find(b->tenant_id());
    b->SetSstableBytes(it == bytes.end() ? 0 : it->second);
  }
}

Status EngineCore::SetTenantOptions(std::string_view name, const TenantOptions& options) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(ValidateTenantOptions(options));
  {
    MutexLock l(&mu_);
    auto it = tenants_.find(name);
    if (it == tenants_.end()) return Status::NotFound("no tenant '" + EscapeBytes(name) + "'");
    VersionEdit edit;
    edit.tenant_options.push_back({it->second->id, options});
    STRATA_RETURN_IF_ERROR(AppendEdit(edit));
    STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
    governor_.SetOptions(it->second->budget.get(), options);
  }
  // Writers waiting for their share look again: shares may have grown.
  MutexLock l(&bg_mu_);
  bg_cv_.SignalAll();
  return Status::OK();
}

Result<TenantOptions> EngineCore::GetTenantOptions(std::string_view name) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  MutexLock l(&mu_);
  auto it = tenants_.find(name);
  if (it == tenants_.end()) return Status::NotFound("no tenant '" + EscapeBytes(name) + "'");
  return it->second->budget->options();
}

Result<TenantStats> EngineCore::GetTenantStats(const TenantState& tenant) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  TenantStats s = tenant.budget->Stats();
  s.block_cache_bytes = block_cache_->TenantUsage(tenant.budget->cache_id());
  return s;
}

}  // namespace strata::engine
