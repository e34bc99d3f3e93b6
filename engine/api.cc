// The public handles (Engine, Tenant, Table): argument checks and forwarding
// to EngineCore.
#include "engine/engine_core.h"
#include "engine/read_session.h"
#include "strata/engine.h"
#include "strata/table.h"

namespace strata {

namespace {
Status EmptyHandle(const char* what) {
  return Status::InvalidArgument(std::string("empty ") + what + " handle");
}
}  // namespace

// ----------------------------------------------------------------------------
// Engine

Engine::~Engine() {
  if (core_ != nullptr) core_->Close().PermitUncheckedError();  // Close() reports errors
}

Result<std::unique_ptr<Engine>> Engine::Open(const std::string& dir, const EngineOptions& options) {
  std::shared_ptr<engine::EngineCore> core;
  STRATA_RETURN_IF_ERROR(engine::EngineCore::Open(dir, options, &core));
  return std::unique_ptr<Engine>(new Engine(std::move(core)));
}

Status Engine::CreateTenant(std::string_view name) {
  return core_->CreateTenant(name, TenantOptions());
}

Status Engine::CreateTenant(std::string_view name, const TenantOptions& options) {
  return core_->CreateTenant(name, options);
}

Status Engine::SetTenantOptions(std::string_view name, const TenantOptions& options) {
  return core_->SetTenantOptions(name, options);
}

Result<TenantOptions> Engine::GetTenantOptions(std::string_view name) const {
  return core_->GetTenantOptions(name);
}

Result<Tenant> Engine::OpenTenant(std::string_view name) const {
  Result<std::shared_ptr<engine::TenantState>> t = core_->FindTenant(name);
  if (!t.ok()) return t.status();
  return Tenant(core_, std::move(t.value()));
}

Result<std::vector<std::string>> Engine::ListTenants() const { return core_->ListTenants(); }

Status Engine::DropTenant(std::string_view name) { return core_->DropTenant(name); }

EngineStats Engine::GetStats() const { return core_->GetStats(); }

Status Engine::Flush() { return core_->Flush(); }

Status Engine::Compact() { return core_->Compact(); }

Status Engine::Close() { return core_->Close(); }

// ----------------------------------------------------------------------------
// Tenant

std::string Tenant::name() const { return state_ ? state_->name : std::string(); }

Status Tenant::CreateTable(std::string_view name, const TableSchema& schema) {
  if (!state_) return EmptyHandle("tenant");
  return core_->CreateTable(*state_, name, schema);
}

Status Tenant::AlterTable(std::string_view name, const TableSchema& new_schema) {
  if (!state_) return EmptyHandle("tenant");
  return core_->AlterTable(*state_, name, new_schema);
}

Status Tenant::SetCompactionFilter(std::shared_ptr<CompactionFilter> filter) {
  if (!state_) return EmptyHandle("tenant");
  return core_->SetCompactionFilter(*state_, std::move(filter));
}

Result<Table> Tenant::OpenTable(std::string_view name) const {
  if (!state_) return EmptyHandle("tenant");
  Result<std::shared_ptr<engine::TableState>> t = core_->FindTable(*state_, name);
  if (!t.ok()) return t.status();
  return Table(core_, std::move(t.value()));
}

Result<std::vector<std::string>> Tenant::ListTables() const {
  if (!state_) return EmptyHandle("tenant");
  return core_->ListTables(*state_);
}

Status Tenant::DropTable(std::string_view name) {
  if (!state_) return EmptyHandle("tenant");
  return core_->DropTable(*state_, name);
}

Result<TenantStats> Tenant::GetStats() const {
  if (!state_) return EmptyHandle("tenant");
  return core_->GetTenantStats(*state_);
}

// ----------------------------------------------------------------------------
// Table

std::string Table::name() const { return state_ ? state_->name : std::string(); }

RowStoreLimits Table::GetLimits() const {
  const EngineOptions defaults;
  const EngineOptions& o = core_ != nullptr ? core_->options() : defaults;
  RowStoreLimits limits;
  limits.max_row_key_size = o.max_row_key_size;
  limits.max_qualifier_size = o.max_qualifier_size;
  limits.max_value_size = o.max_value_size;
  return limits;
}

bool Table::dropped() const {
  // Relaxed: a hint, as any answer may be stale by the time it is used.
  return state_ && state_->dropped.load(std::memory_order_relaxed);
}

Status Table::Mutate(const WriteOptions& options, std::string_view row,
                     const RowMutation& mutation) {
  if (!state_) return EmptyHandle("table");
  return core_->Mutate(*state_, options, row, mutation);
}

Result<CheckAndMutateResult> Table::CheckAndMutate(const WriteOptions& options,
                                                   std::string_view row,
                                                   const std::vector<Condition>& conditions,
                                                   const RowMutation& mutation) {
  if (!state_) return EmptyHandle("table");
  return core_->CheckAndMutate(*state_, options, row, conditions, mutation);
}

Result<std::vector<CheckAndMutateResult>> Table::CheckAndMutateBatch(
    const WriteOptions& options, const std::vector<ConditionalMutation>& batch) {
  if (!state_) return EmptyHandle("table");
  return core_->CheckAndMutateBatch(*state_, options, batch);
}

Result<std::vector<CheckAndMutateResult>> Table::CheckAndMutateAll(
    const WriteOptions& options, const std::vector<ConditionalMutation>& batch) {
  if (!state_) return EmptyHandle("table");
  return core_->CheckAndMutateBatch(*state_, options, batch, /*all_or_nothing=*/true);
}

Result<std::vector<Cell>> Table::ReadRow(const ReadOptions& options, std::string_view row,
                                         const RowFilter& filter) const {
  if (!state_) return EmptyHandle("table");
  return core_->ReadRow(*state_, options, row, filter);
}

Result<std::unique_ptr<RowIterator>> Table::Scan(const ReadOptions& options,
                                                 const ScanSpec& spec) const {
  if (!state_) return EmptyHandle("table");
  return core_->Scan(state_, options, spec);
}

Result<std::unique_ptr<ReadSession>> Table::NewReadSession(
    const ReadSessionOptions& options) const {
  if (!state_) return EmptyHandle("table");
  return engine::NewReadSession(core_, state_, options);
}

Result<ReadStats> Table::GetReadStats() const {
  if (!state_) return EmptyHandle("table");
  STRATA_RETURN_IF_ERROR(core_->CheckUsable(*state_));
  return state_->reads.Totals();
}

Result<std::vector<TabletStats>> Table::GetTabletStats() const {
  if (!state_) return EmptyHandle("table");
  return core_->GetTabletStats(*state_);
}

Result<TableSchema> Table::GetSchema() const {
  if (!state_) return EmptyHandle("table");
  return core_->GetSchema(*state_);
}

}  // namespace strata
