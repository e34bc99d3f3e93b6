#include "engine/version_set.h"

#include <algorithm>
#include <unordered_set>

#include "common/coding.h"
#include "engine/test_hooks.h"
#include "wal/log_reader.h"

namespace strata::engine {

VersionSet::VersionSet(FileSystem* fs, std::string dir, uint64_t write_buffer_size,
                       ResourceGovernor* governor, LiveFiles* files)
    : fs_(fs),
      dir_(std::move(dir)),
      write_buffer_size_(write_buffer_size),
      governor_(governor),
      files_(files) {}

// ---- Open and close ----

std::shared_ptr<TableState> VersionSet::MakeTable(
    const VersionEdit::NewTable& table, const std::vector<VersionEdit::NewTablet>& tablets) const {
  auto t = std::make_shared<TableState>();
  t->id = table.id;
  t->tenant_id = table.tenant_id;
  t->name = table.name;
  auto schema = std::make_shared<const Schema>(table.schema);
  {
    MutexLock l(&t->schema_mu);
    t->current_schema = schema;
  }
  for (const auto& tab : tablets) {
    auto ts = std::make_unique<TabletState>();
    ts->id = tab.id;
    ts->table = t.get();
    ts->start_row = tab.start_row;
    ts->end_row = tab.end_row;
    for (uint32_t g = 0; g < schema->locality_groups().size(); g++) {
      ts->groups.push_back(
          NewGroupState(ts.get(), g, schema->locality_groups()[g], write_buffer_size_));
    }
    t->tablets.push_back(std::move(ts));
  }
  std::sort(t->tablets.begin(), t->tablets.end(),
            [](const auto& a, const auto& b) { return a->start_row < b->start_row; });
  return t;
}

Status VersionSet::Recover() {
  MutexLock l(&mu_);
  STRATA_RETURN_IF_ERROR(Manifest::Open(fs_, dir_, /*create=*/true, &catalog_, &manifest_));
  for (const auto& [id, tenant] : catalog_.tenants) {
    auto t = std::make_shared<TenantState>();
    t->id = id;
    t->name = tenant.name;
    auto options = catalog_.tenant_options.find(id);
    t->budget = governor_->AddTenant(
        id, tenant.name,
        options == catalog_.tenant_options.end() ? TenantOptions() : options->second);
    tenants_[tenant.name] = std::move(t);
  }
  // A file shared by the tablets of a split has one TableFile, so it is
  // deleted only once no tablet holds it.
  std::unordered_map<uint64_t, std::shared_ptr<TableFile>> files_by_number;
  for (const auto& [id, table] : catalog_.tables) {
    std::vector<VersionEdit::NewTablet> tablets;
    for (const auto& [tid, tablet] : catalog_.tablets) {
      if (tablet.table_id == id) tablets.push_back(tablet);
    }
    if (tablets.empty()) {
      return Status::Corruption(dir_ + "/MANIFEST: table " + table.name + " has no tablets");
    }
    auto state = MakeTable(table, tablets);
    auto tenant = catalog_.tenants.find(table.tenant_id);
    if (tenant == catalog_.tenants.end()) {
      return Status::Corruption(dir_ + "/MANIFEST: table " + table.name + " has no tenant");
    }
    state->tenant = tenants_.at(tenant->second.name);
    state->budget = state->tenant->budget;
    for (const auto& tab : state->tablets) {
      tablets_by_id_[tab->id] = tab.get();
      for (auto& g : tab->groups) {
        auto it = catalog_.files.find({tab->id, g->index});
        if (it == catalog_.files.end()) continue;
        MutexLock gl(&g->mu);
        auto view = std::make_shared<GroupView>(*g->view);
        for (size_t level = 0; level < it->second.levels.size() && level < kNumLevels; level++) {
          for (const auto& meta : it->second.levels[level]) {
            std::shared_ptr<TableFile>& f = files_by_number[meta.number];
            if (f == nullptr) f = files_->NewTableFile(meta);
            view->levels[level].push_back(f);
          }
        }
        g->view = std::move(view);
        g->flushed = it->second.flushed;
      }
    }
    tables_[{table.tenant_id, table.name}] = std::move(state);
  }
  return Status::OK();
}

Status VersionSet::Close() {
  MutexLock l(&mu_);
  Status result;
  if (manifest_ != nullptr) result = manifest_->Close();
  // Handles may keep table states alive; their memory goes now.
  for (auto& [key, t] : tables_) {
    for (auto& tab : t->tablets) {
      for (auto& g : tab->groups) {
        MutexLock gl(&g->mu);
        g->view.reset();
      }
    }
  }
  return result;
}

SequenceNumber VersionSet::log_floor() const {
  MutexLock l(&mu_);
  return catalog_.log_floor;
}

SequenceNumber VersionSet::last_sequence() const {
  MutexLock l(&mu_);
  return catalog_.last_sequence;
}

std::set<uint64_t> VersionSet::LiveFileNumbers() const {
  MutexLock l(&mu_);
  std::set<uint64_t> live;
  for (const auto& [key, g] : catalog_.files) {
    for (const auto& level : g.levels) {
      for (const auto& f : level) live.insert(f.number);
    }
  }
  return live;
}

TabletState* VersionSet::ReplayTablet(uint64_t id, bool* retired) const {
  MutexLock l(&mu_);
  auto it = tablets_by_id_.find(id);
  *retired = it == tablets_by_id_.end() && catalog_.retired_tablets.count(id) != 0;
  return it == tablets_by_id_.end() ? nullptr : it->second;
}

// ---- The log's segments and floor ----

Status VersionSet::RecordLogSegment(uint64_t number) {
  MutexLock l(&mu_);
  VersionEdit e;
  e.log_segment = number;
  return LogAndApply(e);
}

Status VersionSet::RecordKeptLogSegment(uint64_t number) {
  MutexLock l(&mu_);
  if (catalog_.log_segment == 0) return Status::OK();
  VersionEdit e;
  e.log_segment = number;
  return LogAndApply(e);
}

Status VersionSet::CheckLogSegment(const std::string& log_dir, bool point_in_time) const {
  MutexLock l(&mu_);
  // A point-in-time recovery takes what the log still has.
  if (catalog_.log_segment == 0 || point_in_time) return Status::OK();
  // The writer makes a segment's header durable before the segment is named
  // anywhere, so a bad header is no crash's doing either.
  Status s = wal::CheckSegmentFile(fs_, log_dir, catalog_.log_segment);
  if (s.IsNotFound() || s.IsCorruption()) {
    return Status::Corruption(
        std::string(s.message()) +
        ": the manifest names it as the log's newest segment, so it held "
        "the newest records (WalRecoveryMode::kPointInTime skips this check)");
  }
  return s;
}

SequenceNumber VersionSet::LogFloor(SequenceNumber visible) const {
  SequenceNumber floor = visible + 1;
  MutexLock l(&mu_);
  for (const auto& [id, tablet] : tablets_by_id_) {
    for (const auto& g : tablet->groups) {
      MutexLock gl(&g->mu);
      if (g->view->imms.empty() && g->view->mem->num_entries() == 0) continue;
      floor = std::min(floor, g->flushed + 1);
    }
  }
  return floor;
}

Status VersionSet::RaiseLogFloor(SequenceNumber floor) {
  MutexLock l(&mu_);
  if (floor <= catalog_.log_floor) return Status::OK();
  VersionEdit e;
  e.log_floor = floor;
  return LogAndApply(e);
}

Status VersionSet::LogAndApply(const VersionEdit& edit) {
  Status s = manifest_->Append(edit);
  if (!s.ok() && !s.IsInvalidArgument()) {
    MutexLock l(&error_mu_);
    if (error_.ok()) error_ = s.WithContext("manifest write failed; reopen the engine");
    failed_.store(true, std::memory_order_relaxed);
  }
  STRATA_RETURN_IF_ERROR(s);
  return catalog_.Apply(edit);
}

Status VersionSet::error() const {
  MutexLock l(&error_mu_);
  return error_;
}

// ---- Tenants and tables ----

Status VersionSet::CreateTenant(std::string_view name, const TenantOptions& options) {
  MutexLock l(&mu_);
  if (tenants_.count(name) != 0) {
    return Status::AlreadyExists("tenant '" + std::string(name) + "' already exists");
  }
  VersionEdit edit;
  VersionEdit::NewTenant t;
  t.id = catalog_.next_id;
  t.name = std::string(name);
  edit.tenants.push_back(t);
  // Default budgets are not written, so an engine that never sets one keeps
  // a manifest older versions can read.
  if (!(options == TenantOptions())) edit.tenant_options.push_back({t.id, options});
  edit.next_id = catalog_.next_id + 1;
  STRATA_RETURN_IF_ERROR(LogAndApply(edit));
  auto state = std::make_shared<TenantState>();
  state->id = t.id;
  state->name = t.name;
  state->budget = governor_->AddTenant(t.id, t.name, options);
  tenants_[t.name] = std::move(state);
  return Status::OK();
}

Result<std::shared_ptr<TenantState>> VersionSet::FindTenant(std::string_view name) const {
  MutexLock l(&mu_);
  auto it = tenants_.find(name);
  if (it == tenants_.end()) return Status::NotFound("no tenant '" + EscapePrefix(name) + "'");
  return it->second;
}

std::vector<std::string> VersionSet::ListTenants() const {
  MutexLock l(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, t] : tenants_) names.push_back(name);
  return names;
}

Status VersionSet::SetTenantOptions(std::string_view name, const TenantOptions& options) {
  MutexLock l(&mu_);
  auto it = tenants_.find(name);
  if (it == tenants_.end()) return Status::NotFound("no tenant '" + EscapePrefix(name) + "'");
  VersionEdit edit;
  edit.tenant_options.push_back({it->second->id, options});
  STRATA_RETURN_IF_ERROR(LogAndApply(edit));
  governor_->SetOptions(it->second->budget.get(), options);
  return Status::OK();
}

Status VersionSet::DropTenant(std::string_view name,
                              std::vector<std::shared_ptr<TableState>>* dropped) {
  std::shared_ptr<TenantState> tenant;
  {
    MutexLock l(&mu_);
    auto it = tenants_.find(name);
    if (it == tenants_.end()) return Status::NotFound("no tenant '" + EscapePrefix(name) + "'");
    tenant = it->second;
    VersionEdit edit;
    for (const auto& [key, t] : tables_) {
      if (key.first == tenant->id) {
        edit.dropped_tables.push_back(t->id);
        dropped->push_back(t);
      }
    }
    edit.dropped_tenants.push_back(tenant->id);
    STRATA_RETURN_IF_ERROR(LogAndApply(edit));
    for (const auto& t : *dropped) tables_.erase({tenant->id, t->name});
    UnlinkTables(*dropped);
    tenants_.erase(it);
    // Relaxed: see TenantState::dropped.
    tenant->dropped.store(true, std::memory_order_relaxed);
  }
  governor_->RemoveTenant(tenant->budget.get());
  return Status::OK();
}

Status VersionSet::CreateTable(const TenantState& tenant, std::string_view name, Schema schema) {
  MutexLock l(&mu_);
  if (tables_.count({tenant.id, std::string(name)}) != 0) {
    return Status::AlreadyExists("table '" + std::string(name) + "' already exists in tenant '" +
                                 tenant.name + "'");
  }
  VersionEdit edit;
  VersionEdit::NewTable t;
  t.tenant_id = tenant.id;
  t.id = catalog_.next_id;
  t.name = std::string(name);
  t.schema = std::move(schema);
  VersionEdit::NewTablet tab;
  tab.table_id = t.id;
  tab.id = catalog_.next_id + 1;
  edit.tables.push_back(t);
  edit.tablets.push_back(tab);
  edit.next_id = catalog_.next_id + 2;
  STRATA_RETURN_IF_ERROR(LogAndApply(edit));
  auto state = MakeTable(t, {tab});
  state->budget = tenant.budget;
  auto it = tenants_.find(tenant.name);
  if (it != tenants_.end()) state->tenant = it->second;
  for (const auto& ts : state->tablets) tablets_by_id_[ts->id] = ts.get();
  tables_[{tenant.id, t.name}] = std::move(state);
  return Status::OK();
}

Result<std::shared_ptr<TableState>> VersionSet::FindTable(const TenantState& tenant,
                                                          std::string_view name) const {
  MutexLock l(&mu_);
  auto it = tables_.find(std::make_pair(tenant.id, std::string(name)));
  if (it == tables_.end()) {
    return Status::NotFound("no table '" + EscapePrefix(name) + "' in tenant '" + tenant.name +
                            "'");
  }
  return it->second;
}

std::vector<std::string> VersionSet::ListTables(const TenantState& tenant) const {
  MutexLock l(&mu_);
  std::vector<std::string> names;
  for (const auto& [key, t] : tables_) {
    if (key.first == tenant.id) names.push_back(key.second);
  }
  return names;
}

Status VersionSet::DropTable(const TenantState& tenant, std::string_view name,
                             std::vector<std::shared_ptr<TableState>>* dropped) {
  MutexLock l(&mu_);
  auto it = tables_.find(std::make_pair(tenant.id, std::string(name)));
  if (it == tables_.end()) {
    return Status::NotFound("no table '" + EscapePrefix(name) + "' in tenant '" + tenant.name +
                            "'");
  }
  VersionEdit edit;
  edit.dropped_tables.push_back(it->second->id);
  STRATA_RETURN_IF_ERROR(LogAndApply(edit));
  dropped->push_back(it->second);
  tables_.erase(it);
  UnlinkTables(*dropped);
  return Status::OK();
}

void VersionSet::UnlinkTables(const std::vector<std::shared_ptr<TableState>>& tables) {
  for (const auto& t : tables) {
    // Relaxed: see TenantState::dropped. Background work checks it under
    // mu_ before recording anything for the table.
    t->dropped.store(true, std::memory_order_relaxed);
    for (const auto& tablet : t->tablets) tablets_by_id_.erase(tablet->id);
    dropped_tables_.push_back(t);
  }
}

Status VersionSet::AlterTable(
    TableState* table, std::shared_ptr<const Schema> schema, SequenceNumber sequence,
    std::map<uint64_t, std::pair<std::shared_ptr<TableFile>, bool>>* residency) {
  VersionEdit edit;
  edit.altered_tables.push_back({table->id, *schema});
  edit.last_sequence = sequence;
  MutexLock l(&mu_);
  STRATA_RETURN_IF_ERROR(LogAndApply(edit));
  const auto& slots = schema->locality_groups();
  for (const auto& tablet : table->tablets) {
    while (tablet->groups.size() < slots.size()) {
      const uint32_t index = static_cast<uint32_t>(tablet->groups.size());
      tablet->groups.push_back(
          NewGroupState(tablet.get(), index, slots[index], write_buffer_size_));
    }
  }
  {
    MutexLock sl(&table->schema_mu);
    table->current_schema = schema;
  }
  for (const auto& tablet : table->tablets) {
    for (const auto& g : tablet->groups) {
      if (!schema->IsFreeSlot(g->index)) {
        g->write_buffer_size.store(slots[g->index].write_buffer_size, std::memory_order_relaxed);
      }
      const bool resident = !schema->IsFreeSlot(g->index) && slots[g->index].in_memory;
      MutexLock gl(&g->mu);
      if (g->resident == resident) continue;
      // Files shown from now on follow the flag (LiveFiles::ShowNewFiles);
      // the ones shown already are the caller's to pin or let go.
      g->resident = resident;
      for (const auto& level : g->view->levels) {
        for (const auto& f : level) (*residency)[f->meta.number] = {f, resident};
      }
    }
  }
  return Status::OK();
}

// ---- Tablets and their groups ----

std::vector<LocalityGroupState*> VersionSet::AllGroups() const {
  MutexLock l(&mu_);
  std::vector<LocalityGroupState*> groups;
  for (const auto& [id, tablet] : tablets_by_id_) {
    for (const auto& g : tablet->groups) groups.push_back(g.get());
  }
  return groups;
}

std::vector<LocalityGroupState*> VersionSet::GroupsOf(const TabletState& tablet) const {
  MutexLock l(&mu_);
  std::vector<LocalityGroupState*> groups;
  groups.reserve(tablet.groups.size());
  for (const auto& g : tablet.groups) groups.push_back(g.get());
  return groups;
}

std::vector<LocalityGroupState*> VersionSet::TenantGroups(uint64_t tenant_id) const {
  MutexLock l(&mu_);
  std::vector<LocalityGroupState*> groups;
  for (auto it = tables_.lower_bound(std::make_pair(tenant_id, std::string()));
       it != tables_.end() && it->first.first == tenant_id; ++it) {
    for (const auto& tablet : it->second->tablets) {
      for (const auto& g : tablet->groups) groups.push_back(g.get());
    }
  }
  return groups;
}

void VersionSet::ForEachTablet(const std::function<void(TabletState*)>& fn) const {
  MutexLock l(&mu_);
  for (const auto& [id, tablet] : tablets_by_id_) fn(tablet);
}

Status VersionSet::SplitTablet(TabletState* tablet, const std::string& split_row, bool* split) {
  *split = false;
  TableState* table = tablet->table;
  const std::string parent_start = tablet->start_row;
  const std::string parent_end = tablet->end_row;
  std::vector<std::unique_ptr<TabletState>> children;
  Status s;
  {
    MutexLock l(&mu_);
    VersionEdit edit;
    edit.retired_tablets.push_back(tablet->id);
    const uint64_t first_id = catalog_.next_id;
    edit.next_id = first_id + 2;
    // One TableFile per file for both children: a file is deleted when its
    // last TableFile marked obsolete goes, so two for one file would let one
    // child's compaction delete a file the other still reads.
    std::unordered_map<uint64_t, std::shared_ptr<TableFile>> live;
    for (int c = 0; c < 2; c++) {
      auto child = std::make_unique<TabletState>();
      child->id = first_id + c;
      child->table = table;
      child->start_row = c == 0 ? parent_start : split_row;
      child->end_row = c == 0 ? split_row : parent_end;
      edit.tablets.push_back({table->id, child->id, child->start_row, child->end_row});
      for (const auto& parent_group : tablet->groups) {
        auto group = std::make_unique<LocalityGroupState>();
        group->index = parent_group->index;
        group->tablet = child.get();
        group->write_buffer_size.store(
            parent_group->write_buffer_size.load(std::memory_order_relaxed),
            std::memory_order_relaxed);
        auto view = std::make_shared<GroupView>();
        view->mem = NewGroupMemTable(GroupWriteBufferSize(*group, write_buffer_size_));
        view->levels.resize(kNumLevels);
        std::shared_ptr<const GroupView> parent_view;
        SequenceNumber flushed;
        bool resident;
        {
          MutexLock gl(&parent_group->mu);
          parent_view = parent_group->view;
          flushed = parent_group->flushed;
          resident = parent_group->resident;
        }
        // The catalog, not the view, says which files the parent holds: a
        // compaction may have recorded its result and not yet shown it, so
        // its outputs may be in no view yet (and in the view read for the
        // second child but not the first).
        for (const auto& level : parent_view->levels) {
          for (const auto& f : level) live.try_emplace(f->meta.number, f);
        }
        auto listed = catalog_.files.find({tablet->id, parent_group->index});
        for (uint32_t n = 0; n < kNumLevels; n++) {
          if (listed == catalog_.files.end() || n >= listed->second.levels.size()) break;
          for (const FileMeta& meta : listed->second.levels[n]) {
            if (!FileMeetsRows(meta, child->start_row, child->end_row)) continue;
            std::shared_ptr<TableFile>& f = live[meta.number];
            if (f == nullptr) f = files_->NewTableFile(meta);
            view->levels[n].push_back(f);
          }
          // Level 0 is listed oldest first, as replay puts each file in front.
          const auto& kept = view->levels[n];
          for (size_t i = 0; i < kept.size(); i++) {
            const auto& f = n == 0 ? kept[kept.size() - 1 - i] : kept[i];
            edit.new_files.push_back({child->id, group->index, n, f->meta});
          }
        }
        edit.flushed.push_back({child->id, group->index, flushed});
        {
          MutexLock gl(&group->mu);
          group->view = std::move(view);
          group->flushed = flushed;
          group->resident = resident;
        }
        child->groups.push_back(std::move(group));
      }
      children.push_back(std::move(child));
    }
    s = LogAndApply(edit);
    if (s.ok()) {
      // Relaxed: background work reads it under mu_, held here.
      tablet->retired.store(true, std::memory_order_relaxed);
      tablets_by_id_.erase(tablet->id);
      auto pos = std::find_if(table->tablets.begin(), table->tablets.end(),
                              [&](const auto& t) { return t.get() == tablet; });
      retired_tablets_.push_back(std::move(*pos));
      pos = table->tablets.erase(pos);
      for (auto& child : children) tablets_by_id_[child->id] = child.get();
      table->tablets.insert(pos, std::make_move_iterator(children.begin()),
                            std::make_move_iterator(children.end()));
      *split = true;
    }
  }
  if (s.ok()) {
    // The parent's view goes; the files it shares live on in the children.
    for (const auto& g : tablet->groups) {
      MutexLock gl(&g->mu);
      g->view = EmptyGroupView();
    }
  }
  return s;
}

// ---- Files ----

uint64_t VersionSet::NewFileNumber() {
  MutexLock l(&mu_);
  return catalog_.next_id++;
}

bool VersionSet::Stale(const TabletState& tablet) const {
  // Relaxed: set under mu_ (see UnlinkTables and SplitTablet).
  return tablet.table->dropped.load(std::memory_order_relaxed) ||
         tablet.retired.load(std::memory_order_relaxed);
}

Status VersionSet::InstallFlush(LocalityGroupState* group, const ImmutableMemTable& imm,
                                const FileMeta& meta, bool pinned, SequenceNumber visible,
                                bool* recorded, bool* popped) {
  const TabletState& tablet = *group->tablet;
  *recorded = false;
  *popped = false;
  VersionEdit edit;
  if (meta.entries > 0) edit.new_files.push_back({tablet.id, group->index, 0, meta});
  edit.flushed.push_back({tablet.id, group->index, imm.last_sequence});
  edit.last_sequence = visible;
  {
    MutexLock l(&mu_);
    if (Stale(tablet)) {
      if (meta.entries > 0) files_->Discard(meta.number);  // pinned, if resident
      return Status::OK();
    }
    edit.next_id = catalog_.next_id;
    STRATA_RETURN_IF_ERROR(LogAndApply(edit));
  }
  *recorded = true;
  bool orphaned = false;
  std::vector<FileMeta> shown;
  if (meta.entries > 0) shown.push_back(meta);
  Status s = files_->ShowNewFiles(group, shown, pinned, [&]() NO_THREAD_SAFETY_ANALYSIS {
    auto view = std::make_shared<GroupView>(*group->view);
    // A drop that came after the check above has emptied the view already
    // (or is about to); the file then belongs to no table.
    if (!view->imms.empty() && view->imms.back().mem == imm.mem) {
      view->imms.pop_back();
      *popped = true;
    }
    // Relaxed: see TableState::dropped; set before the view is emptied.
    orphaned = !*popped || tablet.table->dropped.load(std::memory_order_relaxed);
    if (meta.entries > 0 && !orphaned) {
      view->levels[0].insert(view->levels[0].begin(), files_->NewTableFile(meta));
    }
    group->view = std::move(view);
    group->flushed = std::max(group->flushed, imm.last_sequence);
  });
  if (orphaned && meta.entries > 0) files_->Discard(meta.number);
  return s;
}

Status VersionSet::InstallTrivialMove(const Compaction& c, bool* moved) {
  LocalityGroupState* group = c.group;
  const TabletState& tablet = *group->tablet;
  const int out_level = c.level + 1;
  const std::shared_ptr<TableFile>& f = c.inputs[0].front();
  *moved = false;
  VersionEdit edit;
  edit.deleted_files.push_back(
      {tablet.id, group->index, static_cast<uint32_t>(c.level), f->meta.number});
  edit.new_files.push_back({tablet.id, group->index, static_cast<uint32_t>(out_level), f->meta});
  {
    MutexLock l(&mu_);
    if (Stale(tablet)) return Status::OK();
    STRATA_RETURN_IF_ERROR(LogAndApply(edit));
  }
  if (auto* hook = test_hooks::after_compaction_edit.load(std::memory_order_relaxed)) hook();
  MutexLock l(&group->mu);
  // A drop since the check above has emptied the view, marking f obsolete
  // with the rest, or is about to; a split has emptied it or is about to,
  // and its children took f from the manifest, moved. Moving f into the
  // emptied view would keep it alive (and on disk) as long as the engine.
  // Relaxed: see TableState::dropped and TabletState::retired; both are
  // set before the view is emptied.
  if (tablet.table->dropped.load(std::memory_order_relaxed) ||
      tablet.retired.load(std::memory_order_relaxed)) {
    return Status::OK();
  }
  auto view = std::make_shared<GroupView>(*group->view);
  auto& from = view->levels[c.level];
  from.erase(std::remove(from.begin(), from.end(), f), from.end());
  auto& to = view->levels[out_level];
  to.insert(std::upper_bound(to.begin(), to.end(), f,
                             [](const auto& a, const auto& b) {
                               return a->meta.smallest < b->meta.smallest;
                             }),
            f);
  group->view = std::move(view);
  *moved = true;
  return Status::OK();
}

Status VersionSet::InstallCompaction(const Compaction& c, const std::vector<FileMeta>& outputs,
                                     bool pinned, bool* installed) {
  LocalityGroupState* group = c.group;
  const TabletState& tablet = *group->tablet;
  const int out_level = c.output_level;
  *installed = false;
  auto discard_outputs = [&] {
    for (const FileMeta& m : outputs) files_->Discard(m.number);  // pinned, if resident
  };
  VersionEdit edit;
  for (size_t i = 0; i < c.inputs.size(); i++) {
    for (const auto& f : c.inputs[i]) {
      edit.deleted_files.push_back(
          {tablet.id, group->index, static_cast<uint32_t>(c.level + i), f->meta.number});
    }
  }
  for (const auto& m : outputs) {
    edit.new_files.push_back({tablet.id, group->index, static_cast<uint32_t>(out_level), m});
  }
  Status s;
  bool stale = false;
  {
    MutexLock l(&mu_);
    stale = Stale(tablet);
    if (!stale) {
      edit.next_id = catalog_.next_id;
      s = LogAndApply(edit);
    }
  }
  if (!s.ok() || stale) {
    // The outputs of a dropped table's compaction go at once, as do those
    // of a refused edit (nothing written). Those of a failed append stay:
    // the edit may have reached the file (a failed sync), and the next open
    // keeps them or deletes them as leftovers.
    if (stale || s.IsInvalidArgument()) discard_outputs();
    return s;
  }
  if (auto* hook = test_hooks::after_compaction_edit.load(std::memory_order_relaxed)) hook();
  bool orphaned = false;
  s = files_->ShowNewFiles(group, outputs, pinned, [&]() NO_THREAD_SAFETY_ANALYSIS {
    // A drop since the check above has emptied the view (or is about to,
    // and takes the inputs along); the outputs then belong to no table.
    // Relaxed: see TableState::dropped; set before the view is emptied.
    if (tablet.table->dropped.load(std::memory_order_relaxed)) {
      orphaned = true;
      return;
    }
    // A split since the edit: its children took the outputs from the
    // manifest; the inputs left it with this edit. The parent's emptied view
    // keeps nothing.
    if (tablet.retired.load(std::memory_order_relaxed)) {
      for (const auto& inputs : c.inputs) {
        for (const auto& f : inputs) f->obsolete.store(true, std::memory_order_relaxed);
      }
      return;
    }
    auto view = std::make_shared<GroupView>(*group->view);
    for (size_t i = 0; i < c.inputs.size(); i++) {
      auto& level = view->levels[c.level + i];
      for (const auto& f : c.inputs[i]) {
        level.erase(std::remove(level.begin(), level.end(), f), level.end());
        f->obsolete.store(true, std::memory_order_relaxed);
      }
    }
    auto& out = view->levels[out_level];
    for (const auto& m : outputs) out.push_back(files_->NewTableFile(m));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a->meta.smallest < b->meta.smallest;
    });
    group->view = std::move(view);
  });
  if (orphaned) {
    discard_outputs();
    return s;
  }
  *installed = true;
  return s;
}

// ---- Per-tenant counts ----

void VersionSet::RefreshLevel0Files() {
  MutexLock l(&mu_);
  uint64_t most = 0;
  std::map<const TenantBudget*, uint64_t> per_tenant;
  for (const auto& [key, table] : tables_) {
    uint64_t& n = per_tenant[table->budget.get()];
    for (const auto& tablet : table->tablets) {
      for (const auto& g : tablet->groups) {
        std::shared_ptr<const GroupView> view = g->current();
        if (view == nullptr) continue;  // closed
        n = std::max<uint64_t>(n, view->levels[0].size());
      }
    }
    most = std::max(most, n);
  }
  for (const auto& [name, tenant] : tenants_) {
    auto it = per_tenant.find(tenant->budget.get());
    tenant->budget->SetLevel0Files(it == per_tenant.end() ? 0 : it->second);
  }
  // Under mu_ with the counts above, so a recount that raced this one
  // cannot leave its older figure behind.
  max_level0_files_.store(most, std::memory_order_relaxed);
}

void VersionSet::RefreshSstableBytes() {
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

void VersionSet::AddCatalogStats(EngineStats* stats) const {
  std::set<uint64_t> counted;  // file numbers
  if (stats->level_files.size() < kNumLevels) stats->level_files.resize(kNumLevels, 0);
  MutexLock l(&mu_);
  for (const auto& [key, t] : tables_) {
    stats->tablets += t->tablets.size();
    for (const auto& tab : t->tablets) {
      for (const auto& g : tab->groups) {
        std::shared_ptr<const GroupView> v = g->current();
        stats->memtable_bytes += v->mem->ApproximateMemoryUsage();
        for (const auto& imm : v->imms) stats->memtable_bytes += imm.mem->ApproximateMemoryUsage();
        for (size_t n = 0; n < v->levels.size(); n++) {
          for (const auto& f : v->levels[n]) {
            // A file shared by split tablets counts once.
            if (!counted.insert(f->meta.number).second) continue;
            stats->table_files++;
            stats->level_files[n]++;
            stats->table_bytes += f->meta.size;
          }
        }
      }
    }
  }
}

}  // namespace strata::engine
