#include "engine/tablet.h"

#include <algorithm>

#include "common/coding.h"

namespace strata::engine {

TabletState* TableState::FindTablet(const Slice& row) const {
  // Tablets are sorted by start_row and cover the whole key space.
  auto it = std::upper_bound(tablets.begin(), tablets.end(), row,
                             [](const Slice& r, const std::unique_ptr<TabletState>& t) {
                               return r.compare(t->start_row) < 0;
                             });
  if (it == tablets.begin()) return nullptr;
  TabletState* t = std::prev(it)->get();
  return RowInRange(row, t->start_row, t->end_row) ? t : nullptr;
}

std::shared_ptr<memtable::MemTable> NewGroupMemTable(uint64_t write_buffer_size) {
  return std::make_shared<memtable::MemTable>(static_cast<size_t>(write_buffer_size / 64));
}

std::unique_ptr<LocalityGroupState> NewGroupState(TabletState* tablet, uint32_t index,
                                                  const LocalityGroupOptions& options,
                                                  uint64_t engine_write_buffer_size) {
  auto group = std::make_unique<LocalityGroupState>();
  group->index = index;
  group->tablet = tablet;
  group->write_buffer_size.store(options.write_buffer_size, std::memory_order_relaxed);
  auto view = std::make_shared<GroupView>();
  view->mem = NewGroupMemTable(GroupWriteBufferSize(*group, engine_write_buffer_size));
  view->levels.resize(kNumLevels);
  MutexLock l(&group->mu);
  group->view = std::move(view);
  group->resident = options.in_memory;
  return group;
}

std::shared_ptr<const GroupView> EmptyGroupView() {
  auto view = std::make_shared<GroupView>();
  view->mem = std::make_shared<memtable::MemTable>();
  view->levels.resize(kNumLevels);
  return view;
}

void InsertEntries(const TabletState& tablet, const Schema& schema, const Slice& row,
                   const std::vector<CellEntry>& entries, SequenceNumber first_sequence,
                   bool replay, std::vector<LocalityGroupState*>* touched) {
  auto insert = [&](LocalityGroupState* g, SequenceNumber seq, const CellEntry& e,
                    uint16_t family) NO_THREAD_SAFETY_ANALYSIS {
    std::shared_ptr<const GroupView> view;
    {
      MutexLock l(&g->mu);
      if (replay && seq <= g->flushed) return;  // already in the group's files
      view = g->view;
    }
    view->mem->Add(seq, e.type, row, family, e.qualifier, e.timestamp, e.value);
    if (touched != nullptr &&
        std::find(touched->begin(), touched->end(), g) == touched->end()) {
      touched->push_back(g);
    }
  };
  SequenceNumber seq = first_sequence;
  const size_t slots = std::min(schema.locality_groups().size(), tablet.groups.size());
  for (const auto& e : entries) {
    if (e.type == CellType::kDeleteRow) {
      // A row marker goes to every group that holds a family, so each
      // group's reads see it; it has nothing to hide in the others.
      for (uint32_t g = 0; g < slots; g++) {
        if (schema.GroupHasFamilies(g)) insert(tablet.groups[g].get(), seq, e, kRowMarkerFamily);
      }
    } else {
      const FamilyInfo* f = schema.FamilyById(e.family);
      // Only replay meets these: an entry of a family removed since, or
      // logged before the family moved to its group (engine/schema.h).
      if (f != nullptr && !(replay && seq <= f->moved_at)) {
        insert(tablet.groups[f->locality_group].get(), seq, e, e.family);
      }
    }
    seq++;
  }
}

TabletStats StatsOf(const TabletState& tablet) {
  TabletStats t;
  t.start_row = tablet.start_row;
  t.end_row = tablet.end_row;
  t.level_files.assign(kNumLevels, 0);
  for (const auto& g : tablet.groups) {
    std::shared_ptr<const GroupView> v = g->current();
    t.memtable_bytes += v->mem->ApproximateMemoryUsage();
    for (const auto& imm : v->imms) t.memtable_bytes += imm.mem->ApproximateMemoryUsage();
    for (size_t n = 0; n < v->levels.size(); n++) {
      t.level_files[n] += v->levels[n].size();
      t.table_files += v->levels[n].size();
      for (const auto& f : v->levels[n]) t.table_bytes += f->meta.size;
    }
  }
  return t;
}

void ChargeMemTable(LocalityGroupState* group) {
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

void ReleaseMemTableCharges(LocalityGroupState* group, const GroupView& view) {
  uint64_t immutable = 0;
  for (const ImmutableMemTable& imm : view.imms) immutable += imm.charge;
  group->tablet->table->budget->ReleaseMemtables(group->memtable_charge, immutable);
  group->memtable_charge = 0;
}

std::shared_ptr<CompactionFilter> CompactionFilterOf(const TableState& table,
                                                     const EngineOptions& options) {
  std::shared_ptr<CompactionFilter> f =
      table.tenant != nullptr ? table.tenant->compaction_filter() : nullptr;
  return f != nullptr ? f : options.compaction_filter;
}

bool RowInRange(const Slice& row, const std::string& start, const std::string& end) {
  return (start.empty() || row.compare(start) >= 0) && (end.empty() || row.compare(end) < 0);
}

std::string RowBound(const std::string& row) {
  std::string key;
  if (!row.empty()) AppendRowPrefix(&key, row);
  return key;
}

Slice EncodedRowOf(const Slice& key) {
  Slice rest = key;
  if (!SkipMemcomparable(&rest)) return key;
  return Slice(key.data(), key.size() - rest.size());
}

bool FileMeetsRows(const FileMeta& f, const std::string& start, const std::string& end) {
  const std::string lo = RowBound(start);
  const std::string hi = RowBound(end);
  return (lo.empty() || EncodedRowOf(f.largest).compare(Slice(lo)) >= 0) &&
         (hi.empty() || EncodedRowOf(f.smallest).compare(Slice(hi)) < 0);
}

bool FileWithinRows(const FileMeta& f, const std::string& start, const std::string& end) {
  const std::string lo = RowBound(start);
  const std::string hi = RowBound(end);
  return (lo.empty() || EncodedRowOf(f.smallest).compare(Slice(lo)) >= 0) &&
         (hi.empty() || EncodedRowOf(f.largest).compare(Slice(hi)) < 0);
}

}  // namespace strata::engine
