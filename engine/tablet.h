// The runtime state of what the catalog holds: tenants, tables, the tablets
// of a table, the locality groups of a tablet, and GroupView, the immutable
// snapshot of a group's memtables and files that readers and background
// jobs take.
//
// These are plain state: the engine (EngineCore) and the catalog
// (VersionSet) change them under the locks each member names. A GroupView is
// immutable once published and may be read by any thread that holds it.
//
// Invariants:
//   - A table's tablets are sorted by start_row and cover every row.
//   - A tablet has one group state per slot of its table's schema
//     (Schema::locality_groups()), free slots included; slots are only ever
//     appended, so a group's address and index never change.
//   - A group's `view` is replaced, never changed in place.
#ifndef STRATA_ENGINE_TABLET_H_
#define STRATA_ENGINE_TABLET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/mutex.h"
#include "engine/file_meta.h"
#include "engine/log_record.h"
#include "engine/read_session.h"
#include "engine/resource_governor.h"
#include "engine/schema.h"
#include "engine/table_file.h"
#include "memtable/memtable.h"
#include "strata/compaction_filter.h"
#include "strata/engine.h"
#include "strata/options.h"
#include "strata/slice.h"

namespace strata::engine {

struct TableState;
struct TabletState;
struct TenantState;

// A memtable that no longer takes writes, waiting to be flushed.
struct ImmutableMemTable {
  std::shared_ptr<memtable::MemTable> mem;
  // Every entry of the group with sequence <= this is in this memtable or
  // older data; every later one is in newer memtables.
  SequenceNumber last_sequence = 0;
  // Its bytes counted in the tenant's budget (its data size when switched).
  uint64_t charge = 0;
};

// What a reader of one locality group merges: an immutable snapshot of its
// memtables and files, replaced (never changed) when they change.
struct GroupView {
  std::shared_ptr<memtable::MemTable> mem;
  std::vector<ImmutableMemTable> imms;  // newest first
  // kNumLevels levels; level 0 newest first, deeper levels by smallest key
  // with disjoint ranges.
  std::vector<std::vector<std::shared_ptr<TableFile>>> levels;
};

// One locality group of one tablet.
struct LocalityGroupState {
  uint32_t index = 0;
  TabletState* tablet = nullptr;  // owns this group
  mutable Mutex mu;
  std::shared_ptr<const GroupView> view GUARDED_BY(mu);
  // Every entry with sequence <= flushed is in the group's files.
  SequenceNumber flushed GUARDED_BY(mu) = 0;
  // Bytes of the active memtable counted in the tenant's budget. Read and
  // written only under EngineCore::apply_mu_ (or before the log opens).
  uint64_t memtable_charge = 0;
  // The group is in_memory: every file `view` shows has been made resident
  // (LiveFiles::MakeResident). Set from the schema when the group state is
  // made, and by AlterTable, which then makes the files resident (or lets
  // them go); a flush or compaction that shows new files checks it when it
  // does (LiveFiles::ShowNewFiles).
  bool resident GUARDED_BY(mu) = false;
  // LocalityGroupOptions::write_buffer_size, or 0 for the engine's. Set
  // from the schema when the group state is made and by AlterTable.
  std::atomic<uint64_t> write_buffer_size{0};

  std::shared_ptr<const GroupView> current() const LOCKS_EXCLUDED(mu) {
    MutexLock l(&mu);
    return view;
  }
};

// A contiguous row range of one table.
struct TabletState {
  uint64_t id = 0;
  TableState* table = nullptr;  // owns this tablet
  std::string start_row;        // inclusive; empty = unbounded
  std::string end_row;          // exclusive; empty = unbounded
  // One per slot of the table's schema (Schema::locality_groups()), free
  // slots included. Only grows: AlterTable appends slots with the close gate
  // held exclusively and the catalog's mutex (VersionSet), so it is read
  // under either (or before the engine is shared); a group's address and
  // index never change.
  std::vector<std::unique_ptr<LocalityGroupState>> groups;
  // Set under the catalog's mutex once the tablet is split away, before its
  // views are emptied; background work checks it there before recording
  // anything for it, and under a group's mu before showing a result that
  // was recorded first. Relaxed.
  std::atomic<bool> retired{false};
};

struct TableState {
  uint64_t id = 0;
  uint64_t tenant_id = 0;
  std::string name;

  // The current schema: an immutable snapshot that AlterTable replaces (with
  // the close gate held exclusively and the catalog's mutex). Every
  // operation takes its own reference once, at its start, and uses only that
  // one; a call holding the close gate shared therefore sees the schema of
  // the whole call.
  std::shared_ptr<const Schema> schema() const LOCKS_EXCLUDED(schema_mu) {
    MutexLock l(&schema_mu);
    return current_schema;
  }
  // Whether `s` is the current schema, without taking a reference.
  bool SchemaIs(const Schema* s) const LOCKS_EXCLUDED(schema_mu) {
    MutexLock l(&schema_mu);
    return current_schema.get() == s;
  }
  mutable Mutex schema_mu;
  std::shared_ptr<const Schema> current_schema GUARDED_BY(schema_mu);
  // Sorted by start_row, covering every row; never empty. Replaced by a
  // split only with the close gate held exclusively (and the catalog's
  // mutex), so calls that hold the gate shared read it freely.
  std::vector<std::unique_ptr<TabletState>> tablets;

  // The tablet holding `row`; null only if the tablets do not cover it.
  TabletState* FindTablet(const Slice& row) const;

  // The tenant's budget; set at creation, never changed.
  std::shared_ptr<TenantBudget> budget;
  // The tenant; set at creation, never changed.
  std::shared_ptr<TenantState> tenant;

  // Set once, like TenantState::dropped; handles then get NotFound.
  std::atomic<bool> dropped{false};

  // The prefetch predictor and counters of the table's read sessions.
  TableReadState reads;
};

struct TenantState {
  uint64_t id = 0;
  std::string name;
  // Set once, under the engine's close gate held exclusively: calls that
  // hold the gate shared read it without a race. Relaxed for that reason.
  std::atomic<bool> dropped{false};
  // Set at creation, never changed; its options change through the governor.
  std::shared_ptr<TenantBudget> budget;

  // Tenant::SetCompactionFilter's filter (null: none), in place of the
  // engine's for the tenant's tables.
  std::shared_ptr<CompactionFilter> compaction_filter() const LOCKS_EXCLUDED(filter_mu) {
    MutexLock l(&filter_mu);
    return filter;
  }
  // Const: the slot is synchronised on its own, apart from the tenant's
  // fixed state.
  void set_compaction_filter(std::shared_ptr<CompactionFilter> f) const LOCKS_EXCLUDED(filter_mu) {
    MutexLock l(&filter_mu);
    filter = std::move(f);
  }
  mutable Mutex filter_mu;
  mutable std::shared_ptr<CompactionFilter> filter GUARDED_BY(filter_mu);
};

// The compaction filter of `table`'s compactions: its tenant's, else the
// engine's `options.compaction_filter` (either may be null).
std::shared_ptr<CompactionFilter> CompactionFilterOf(const TableState& table,
                                                     const EngineOptions& options);

// The size at which a group's memtables fill: its own write_buffer_size, or
// the engine's.
inline uint64_t GroupWriteBufferSize(const LocalityGroupState& group,
                                     uint64_t engine_write_buffer_size) {
  const uint64_t own = group.write_buffer_size.load(std::memory_order_relaxed);
  return own != 0 ? own : engine_write_buffer_size;
}

// A memtable to write for a group whose memtables fill at
// `write_buffer_size` bytes: its row filter has a bit per 8 of those bytes
// (about 8 bits per row of 64-byte entries), 1.6% of a full memtable, made
// once the memtable is an eighth full (memtable/README.md).
std::shared_ptr<memtable::MemTable> NewGroupMemTable(uint64_t write_buffer_size);

// A new, empty group state for slot `index` of `tablet`, whose options are
// `options` (resident when in_memory), in an engine whose write buffer size
// is `engine_write_buffer_size`.
std::unique_ptr<LocalityGroupState> NewGroupState(TabletState* tablet, uint32_t index,
                                                  const LocalityGroupOptions& options,
                                                  uint64_t engine_write_buffer_size);

// The view a group is left with once its table is dropped or its tablet
// split away: nothing in it, so memtables and files go as soon as no reader
// holds the old view.
std::shared_ptr<const GroupView> EmptyGroupView();

// Inserts a row mutation's entries, the first at `first_sequence`, into the
// active memtables of the tablet's groups, family ids resolved through
// `schema`; a row marker goes to every group that holds a family. Groups
// that received some are added to *touched (when not null). With `replay`,
// entries a group already has in files are skipped, and so are entries of a
// family removed since or logged before it moved (engine/schema.h).
// REQUIRES: the engine's apply mutex held, or the engine not yet shared.
void InsertEntries(const TabletState& tablet, const Schema& schema, const Slice& row,
                   const std::vector<CellEntry>& entries, SequenceNumber first_sequence,
                   bool replay, std::vector<LocalityGroupState*>* touched);

// Tablet::GetTabletStats for one tablet: its range, memtable bytes and files
// by level. REQUIRES: the tablet's group list is stable (the close gate held).
TabletStats StatsOf(const TabletState& tablet);

// Brings the group's active-memtable charge in its tenant's budget up to the
// memtable's data size (an empty memtable is charged nothing).
// REQUIRES: the engine's apply mutex held (LocalityGroupState::memtable_charge).
void ChargeMemTable(LocalityGroupState* group);

// Releases every memtable charge of the group whose view `view` is being
// replaced (its table was dropped). REQUIRES: the apply mutex and group->mu
// held.
void ReleaseMemTableCharges(LocalityGroupState* group, const GroupView& view);

// Whether `row` lies in [start, end) (empty: unbounded).
bool RowInRange(const Slice& row, const std::string& start, const std::string& end);

// The smallest cell key of `row` (empty for an empty row: unbounded).
std::string RowBound(const std::string& row);

// Whether the file holds keys of rows in [start, end) (empty: unbounded).
bool FileMeetsRows(const FileMeta& f, const std::string& start, const std::string& end);
// Whether every key of the file is a row in [start, end) (empty: unbounded).
bool FileWithinRows(const FileMeta& f, const std::string& start, const std::string& end);

// The encoded row at the front of a cell key; encoded rows compare like
// rows. A malformed key (never written by the engine) gives the whole key.
Slice EncodedRowOf(const Slice& key);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_TABLET_H_
