#include "engine/alter_table.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/coding.h"
#include "common/iterator.h"

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

// Whether `view`, a view of one of the tablet's groups, holds a cell key of
// family `family` in the tablet's rows.
Result<bool> GroupHoldsFamily(const TabletState& tablet, const GroupView& view, uint16_t family,
                              sstable::TableCache* tables) {
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
  const std::string lo = RowBound(tablet.start_row);
  const std::string hi = RowBound(tablet.end_row);
  for (const auto& level : view.levels) {
    for (const auto& f : level) {
      Result<std::shared_ptr<sstable::TableReader>> reader =
          tables->Get(f->meta.number, tablet.table->budget->cache_id());
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

}  // namespace

Status CheckNothingLost(const TableState& table, const Schema& current, const SchemaChange& change,
                        sstable::TableCache* tables) {
  auto group_name = [&](uint32_t slot) { return current.locality_groups()[slot].name; };
  // The gate keeps the tablet list still.
  for (const auto& tablet : table.tablets) {
    for (const SchemaChange::Family& f : change.families) {
      std::shared_ptr<const GroupView> view = tablet->groups[f.old_group]->current();
      Result<bool> held = GroupHoldsFamily(*tablet, *view, f.id, tables);
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

}  // namespace strata::engine
