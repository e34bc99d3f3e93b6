// EngineCore's tenant and table entry points (engine_core.h): create,
// list, drop and alter tenants and tables behind the close gate, and the
// per-tenant settings. The rest of EngineCore is in engine_core.cc.
#include "engine/alter_table.h"
#include "engine/engine_core.h"

namespace strata::engine {

// ---- Tenants and tables ----

Status EngineCore::ClosedError() const {
  return Status::InvalidArgument("engine " + dir_ + " is closed");
}

Status EngineCore::CheckLive(const TenantState& tenant) {
  // Relaxed: see TenantState::dropped.
  if (tenant.dropped.load(std::memory_order_relaxed)) {
    return Status::NotFound("tenant '" + tenant.name + "' was dropped");
  }
  return Status::OK();
}

Status EngineCore::CheckLive(const TableState& table) {
  // Relaxed: see TenantState::dropped.
  if (table.dropped.load(std::memory_order_relaxed)) {
    return Status::NotFound("table '" + table.name + "' was dropped");
  }
  return Status::OK();
}

Status EngineCore::CreateTenant(std::string_view name, const TenantOptions& options) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(ValidateName("tenant", name));
  STRATA_RETURN_IF_ERROR(ValidateTenantOptions(options));
  return versions_->CreateTenant(name, options);
}

Result<std::shared_ptr<TenantState>> EngineCore::FindTenant(std::string_view name) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  return versions_->FindTenant(name);
}

Result<std::vector<std::string>> EngineCore::ListTenants() const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  return versions_->ListTenants();
}

Status EngineCore::SetTenantOptions(std::string_view name, const TenantOptions& options) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(ValidateTenantOptions(options));
  STRATA_RETURN_IF_ERROR(versions_->SetTenantOptions(name, options));
  // Writers waiting for their share look again: shares may have grown.
  MutexLock l(&bg_mu_);
  bg_cv_.SignalAll();
  return Status::OK();
}

Result<TenantOptions> EngineCore::GetTenantOptions(std::string_view name) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  Result<std::shared_ptr<TenantState>> tenant = versions_->FindTenant(name);
  if (!tenant.ok()) return tenant.status();
  return (*tenant)->budget->options();
}

Result<TenantStats> EngineCore::GetTenantStats(const TenantState& tenant) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  TenantStats s = tenant.budget->Stats();
  s.block_cache_bytes = files_->block_cache()->OwnerUsage(tenant.budget->cache_id());
  return s;
}

Status EngineCore::SetCompactionFilter(const TenantState& tenant,
                                       std::shared_ptr<CompactionFilter> filter) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  tenant.set_compaction_filter(std::move(filter));
  return Status::OK();
}

Status EngineCore::DropTenant(std::string_view name) {
  // Exclusive, as in DropTable.
  std::unique_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  std::vector<std::shared_ptr<TableState>> dropped;
  STRATA_RETURN_IF_ERROR(versions_->DropTenant(name, &dropped));
  RetireTables(dropped);
  UpdateLevel0Count();  // for EngineStats::max_level0_files
  return Status::OK();
}

Status EngineCore::CreateTable(const TenantState& tenant, std::string_view name,
                               const TableSchema& schema) {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  STRATA_RETURN_IF_ERROR(ValidateName("table", name));
  Result<Schema> resolved = Schema::FromUser(schema);
  if (!resolved.ok()) {
    return resolved.status().WithContext("table '" + std::string(name) + "'");
  }
  return versions_->CreateTable(tenant, name, std::move(resolved.value()));
}

Result<std::shared_ptr<TableState>> EngineCore::FindTable(const TenantState& tenant,
                                                          std::string_view name) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  return versions_->FindTable(tenant, name);
}

Result<std::vector<std::string>> EngineCore::ListTables(const TenantState& tenant) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  return versions_->ListTables(tenant);
}

Status EngineCore::DropTable(const TenantState& tenant, std::string_view name) {
  // Exclusive: every call in flight finishes first, so no write to the table
  // sits between its liveness check and its apply, and later calls see the
  // drop.
  std::unique_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(tenant));
  std::vector<std::shared_ptr<TableState>> dropped;
  STRATA_RETURN_IF_ERROR(versions_->DropTable(tenant, name, &dropped));
  RetireTables(dropped);
  versions_->RefreshSstableBytes();
  UpdateLevel0Count();  // the table's level 0 no longer holds its tenant's writes
  return Status::OK();
}

void EngineCore::RetireTables(const std::vector<std::shared_ptr<TableState>>& tables) {
  {
    MutexLock apply(&apply_mu_);  // memtable charges
    for (const auto& t : tables) {
      for (const auto& tablet : t->tablets) {
        for (const auto& g : tablet->groups) {
          MutexLock l(&g->mu);
          ReleaseMemTableCharges(g.get(), *g->view);
          for (const auto& level : g->view->levels) {
            for (const auto& f : level) f->obsolete.store(true, std::memory_order_relaxed);
          }
          // Memtables and files go as soon as no reader holds the old view.
          g->view = EmptyGroupView();
        }
      }
    }
  }
  files_->PurgeObsolete();
}

Result<TableSchema> EngineCore::GetSchema(const TableState& table) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  return table.schema()->ToUser();
}

Status EngineCore::AlterTable(const TenantState& tenant, std::string_view name,
                              const TableSchema& new_schema) {
  MutexLock alter(&alter_mu_);
  std::shared_ptr<TableState> table;
  // Files whose group turned in_memory on (pin) or off, by number.
  std::map<uint64_t, std::pair<std::shared_ptr<TableFile>, bool>> residency;
  {
    // Exclusive, as for DropTable: every call in flight finishes first, so
    // none straddles the change, and every later one takes the new schema.
    std::unique_lock<SharedGate> gate(close_mu_);
    if (closed_) return ClosedError();
    STRATA_RETURN_IF_ERROR(CheckLive(tenant));
    STRATA_RETURN_IF_ERROR(ValidateName("table", name));
    Result<std::shared_ptr<TableState>> found = versions_->FindTable(tenant, name);
    if (!found.ok()) return found.status();
    table = std::move(found.value());
    const std::shared_ptr<const Schema> current = table->schema();
    // No write is in flight: everything up to here is applied.
    const SequenceNumber sequence = visible_sequence_.load(std::memory_order_acquire);
    SchemaChange change;
    Result<Schema> altered = Schema::Alter(*current, new_schema, sequence, &change);
    if (!altered.ok()) {
      return altered.status().WithContext("table '" + std::string(name) + "'");
    }
    if (*altered == *current) return Status::OK();  // nothing to record
    STRATA_RETURN_IF_ERROR(CheckNothingLost(*table, *current, change, files_->table_cache()));
    auto schema = std::make_shared<const Schema>(std::move(altered.value()));

    // A family that moves skips its log records up to `sequence` on replay;
    // they must all be in the log before the edit says so, and no later
    // write may take a sequence at or below it, even after a crash.
    STRATA_RETURN_IF_ERROR(log_->Sync());
    STRATA_RETURN_IF_ERROR(versions_->AlterTable(table.get(), schema, sequence, &residency));
  }
  // Without the gate: loading a large group takes a while. The references
  // keep the files on disk meanwhile.
  Status s = files_->ChangeResidency(*table, residency);
  if (!s.ok()) {
    return s.WithContext("table '" + std::string(name) +
                         "': the schema change is made, but loading the files of its in-memory "
                         "groups failed");
  }
  return Status::OK();
}

}  // namespace strata::engine
