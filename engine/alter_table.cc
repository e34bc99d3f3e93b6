// Schema changes: EngineCore::AlterTable and GetSchema. See "Schema changes"
// in engine/README.md for the rules and engine/schema.h for the ids.
//
// The steps (AlterTable), one schema change at a time (alter_mu_):
//   1. With the close gate held exclusively (no call in flight: no write sits
//      between the schema it checked and its apply), work out the new schema
//      (Schema::Alter) and check that nothing it takes away holds data.
//   2. Sync the log, so every sequence up to the change is durable in it and
//      later writes get higher ones (families that move skip older records
//      on replay), then, under mu_, record one manifest edit (tag 14), add
//      the new group slots to every tablet and swap the schema in. Each
//      group's `resident` flag follows its in_memory option.
//   3. Without the gate, make the files of groups that turned in_memory
//      resident, and let go of those of groups that turned it off.
// A crash before the edit is durable leaves the old schema, after it the new.
#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "common/coding.h"
#include "engine/engine_core.h"

namespace strata::engine {

namespace {

// The family id of a cell key; false for a malformed key.
bool FamilyOf(const Slice& key, uint16_t* family) {
  Slice rest = key;
  if (!SkipMemcomparable(&rest) || rest.size() < 2) return false;
  *family = DecodeBigEndian16(rest.data());
  return true;
}

// Whether `it`, from its first entry on, holds a key of `family` in the rows
// [lo, hi) (encoded row prefixes; empty: unbounded).
Result<bool> IteratorHoldsFamily(InternalIterator* it, uint16_t family, const std::string& lo,
                                 const std::string& hi) {
  if (lo.empty()) {
    it->SeekToFirst();
  } else {
    it->Seek(lo);
  }
  for (; it->Valid(); it->Next()) {
    const Slice key = it->key();
    if (!hi.empty() && key.compare(hi) >= 0) break;
    uint16_t f;
    if (!FamilyOf(key, &f)) {
      return Status::Corruption("malformed cell key " + HexBytes(key));
    }
    if (f == family) return true;
  }
  STRATA_RETURN_IF_ERROR(it->status());
  return false;
}

std::string RowPrefix(const std::string& row) {
  std::string p;
  if (!row.empty()) AppendRowPrefix(&p, row);
  return p;
}

}  // namespace

Result<TableSchema> EngineCore::GetSchema(const TableState& table) const {
  std::shared_lock<SharedGate> gate(close_mu_);
  if (closed_) return ClosedError();
  STRATA_RETURN_IF_ERROR(CheckLive(table));
  return table.schema()->ToUser();
}

Result<bool> EngineCore::GroupHoldsFamily(const TabletState& tablet, const GroupView& view,
                                          uint16_t family) const {
  // Memtables hold only the tablet's rows.
  std::vector<const memtable::MemTable*> mems{view.mem.get()};
  for (const ImmutableMemTable& imm : view.imms) mems.push_back(imm.mem.get());
  for (const memtable::MemTable* mem : mems) {
    if (mem->num_entries() == 0) continue;
    std::unique_ptr<InternalIterator> it = mem->NewIterator();
    Result<bool> held = IteratorHoldsFamily(it.get(), family, "", "");
    if (!held.ok() || *held) return held;
  }
  // Files say which families they hold (sstable property 33). A file shared
  // with a split sibling, or one written before files said so, is read over
  // the tablet's rows.
  const std::string lo = RowPrefix(tablet.start_row);
  const std::string hi = RowPrefix(tablet.end_row);
  for (const auto& level : view.levels) {
    for (const auto& f : level) {
      Result<std::shared_ptr<sstable::TableReader>> reader =
          table_cache_->Get(f->meta.number, tablet.table->budget->cache_id());
      if (!reader.ok()) return reader.status();
      const sstable::TableProperties& p = (*reader)->properties();
      if (p.has_family_ids &&
          !std::binary_search(p.family_ids.begin(), p.family_ids.end(), family)) {
        continue;
      }
      const bool within = (lo.empty() || Slice(f->meta.smallest).compare(lo) >= 0) &&
                          (hi.empty() || Slice(f->meta.largest).compare(hi) < 0);
      if (p.has_family_ids && within) return true;
      std::unique_ptr<InternalIterator> it = (*reader)->NewIterator(/*fill_cache=*/false);
      Result<bool> held = IteratorHoldsFamily(it.get(), family, lo, hi);
      if (!held.ok()) {
        return held.status().WithContext("file " + std::to_string(f->meta.number));
      }
      if (*held) return true;
    }
  }
  return false;
}

Status EngineCore::CheckNothingLost(const TableState& table, const Schema& current,
                                    const SchemaChange& change) const {
  auto group_name = [&](uint32_t slot) { return current.locality_groups()[slot].name; };
  // The gate keeps the tablet list still.
  for (const auto& tablet : table.tablets) {
    for (const SchemaChange::Family& f : change.families) {
      std::shared_ptr<const GroupView> view = tablet->groups[f.old_group]->current();
      Result<bool> held = GroupHoldsFamily(*tablet, *view, f.id);
      if (!held.ok()) return held.status();
      if (*held) {
        return Status::FailedPrecondition(
            "table '" + table.name + "': cannot " + (f.removed ? "remove" : "move") +
            " column family '" + f.name + "' (locality group '" + group_name(f.old_group) +
            "'): it holds cells or delete markers; only a family without data can be removed "
            "or moved (delete its cells, then Engine::Compact drops them and their markers)");
      }
    }
    for (uint32_t slot : change.removed_groups) {
      std::shared_ptr<const GroupView> view = tablet->groups[slot]->current();
      bool empty = view->mem->num_entries() == 0 && view->imms.empty();
      for (const auto& level : view->levels) empty = empty && level.empty();
      if (!empty) {
        return Status::FailedPrecondition(
            "table '" + table.name + "': cannot remove locality group '" + group_name(slot) +
            "': it still holds cells or delete markers (row deletes included); "
            "Engine::Compact drops what nothing can see any more");
      }
    }
  }
  return Status::OK();
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
    {
      MutexLock l(&mu_);
      auto it = tables_.find(std::make_pair(tenant.id, std::string(name)));
      if (it == tables_.end()) {
        return Status::NotFound("no table '" + EscapeBytes(name) + "' in tenant '" +
                                tenant.name + "'");
      }
      table = it->second;
    }
    const std::shared_ptr<const Schema> current = table->schema();
    // No write is in flight: everything up to here is applied.
    const SequenceNumber sequence = visible_sequence_.load(std::memory_order_acquire);
    SchemaChange change;
    Result<Schema> altered = Schema::Alter(*current, new_schema, sequence, &change);
    if (!altered.ok()) {
      return altered.status().WithContext("table '" + std::string(name) + "'");
    }
    if (*altered == *current) return Status::OK();  // nothing to record
    STRATA_RETURN_IF_ERROR(CheckNothingLost(*table, *current, change));
    auto schema = std::make_shared<const Schema>(std::move(altered.value()));

    // A family that moves skips its log records up to `sequence` on replay;
    // they must all be in the log before the edit says so, and no later
    // write may take a sequence at or below it, even after a crash.
    STRATA_RETURN_IF_ERROR(log_->Sync());
    VersionEdit edit;
    edit.altered_tables.push_back({table->id, *schema});
    edit.last_sequence = sequence;
    MutexLock l(&mu_);
    STRATA_RETURN_IF_ERROR(AppendEdit(edit));
    STRATA_RETURN_IF_ERROR(catalog_.Apply(edit));
    const auto& slots = schema->locality_groups();
    for (const auto& tablet : table->tablets) {
      while (tablet->groups.size() < slots.size()) {
        const uint32_t index = static_cast<uint32_t>(tablet->groups.size());
        tablet->groups.push_back(
            NewGroupState(tablet.get(), index, slots[index], options_.write_buffer_size));
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
        // Files shown from now on follow the flag (ShowNewFiles); the ones
        // shown already are this call's to pin or let go.
        g->resident = resident;
        for (const auto& level : g->view->levels) {
          for (const auto& f : level) residency[f->meta.number] = {f, resident};
        }
      }
    }
  }
  // Without the gate: loading a large group takes a while. The references
  // keep the files on disk meanwhile.
  Status s;
  for (const auto& [number, entry] : residency) {
    if (!entry.second) {
      Unpin(number);
    } else if (s.ok()) {
      // Blocks read while the group was on disk may be cached as ordinary
      // entries, which a lookup would find (and the cache later evict):
      // they go first, so that all of them come back resident.
      block_cache_->EraseFile(number);
      s = MakeResident(*table, number);
    }
  }
  if (!s.ok()) {
    return s.WithContext("table '" + std::string(name) +
                         "': the schema change is made, but loading the files of its in-memory "
                         "groups failed");
  }
  return Status::OK();
}

}  // namespace strata::engine
