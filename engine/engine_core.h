// EngineCore: everything behind the public Engine, Tenant and Table handles —
// the catalog (tenants, tables, tablets, locality groups), the write path
// (validate, log with group commit, apply to memtables, publish), the read
// path and recovery.
//
// Thread-safe. Handles keep the core alive with a shared_ptr, so a handle
// used after Close gets an error instead of a dangling pointer.
//
// Invariants:
//   - Every entry in a memtable has a sequence number; readers see exactly the
//     entries with sequence <= visible_sequence_, and visible_sequence_ only
//     moves after all entries of every row mutation up to it are in their
//     memtables, so a reader sees a row mutation whole or not at all (its
//     views are taken with no memtable switch between them and its
//     snapshot: memtable_switches_).
//   - Memtable inserts happen only in the log's apply function (which never
//     runs concurrently with itself) or during recovery, before the log opens.
//   - A writer holds its row's stripe in row_locks_ (Mutate shared,
//     CheckAndMutate exclusive) from before its record is logged until the
//     record is visible, so an exclusive holder's read sees every write of
//     the row that returned or was in flight when it took the stripe.
#ifndef STRATA_ENGINE_ENGINE_CORE_H_
#define STRATA_ENGINE_ENGINE_CORE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/cell_key.h"
#include "common/file_system.h"
#include "common/mutex.h"
#include "common/rate_limiter.h"
#include "engine/compaction.h"
#include "engine/file_meta.h"
#include "engine/log_record.h"
#include "engine/manifest.h"
#include "engine/read_session.h"
#include "engine/resource_governor.h"
#include "engine/row_locks.h"
#include "engine/row_reader.h"
#include "engine/schema.h"
#include "memtable/memtable.h"
#include "sstable/block_cache.h"
#include "sstable/table_cache.h"
#include "strata/engine.h"
#include "strata/iterator.h"
#include "strata/options.h"
#include "strata/row_mutation.h"
#include "wal/log_writer.h"

namespace strata::engine {

struct TableState;
class DeeperFiles;

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
  std::vector<ImmutableMemTable> imms;       // newest first
  // kNumLevels levels; level 0 newest first, deeper levels by smallest key
  // with disjoint ranges.
  std::vector<std::vector<std::shared_ptr<TableFile>>> levels;
};

struct TabletState;

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
  // (EngineCore::MakeResident). Set from the schema when the group state is
  // made, and by AlterTable, which then makes the files resident (or lets
  // them go); a flush or compaction that shows new files checks it when it
  // does (EngineCore::ShowNewFiles).
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
  // held exclusively and the engine's mu_, so it is read under either (or
  // before the core is shared); a group's address and index never change.
  std::vector<std::unique_ptr<LocalityGroupState>> groups;
  // Set under the engine's mu_ once the tablet is split away, before its
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
  // the close gate held exclusively and the engine's mu_). Every operation
  // takes its own reference once, at its start, and uses only that one; a
  // call holding the close gate shared therefore sees the schema of the
  // whole call.
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
  // split only with the close gate held exclusively (and mu_), so calls that
  // hold the gate shared read it freely.
  std::vector<std::unique_ptr<TabletState>> tablets;

  TabletState* FindTablet(const Slice& row) const;

  // The tenant's budget; set at creation, never changed.
  std::shared_ptr<TenantBudget> budget;

  // Set once, like TenantState::dropped; handles then get NotFound.
  std::atomic<bool> dropped{false};

  // The prefetch predictor and counters of the table's read sessions.
  TableReadState reads;
};

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

struct TenantState {
  uint64_t id = 0;
  std::string name;
  // Set once, under the engine's close gate held exclusively: calls that
  // hold the gate shared read it without a race. Relaxed for that reason.
  std::atomic<bool> dropped{false};
  // Set at creation, never changed; its options change through the governor.
  std::shared_ptr<TenantBudget> budget;
};

class EngineCore : public std::enable_shared_from_this<EngineCore> {
 public:
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;
  ~EngineCore();

  static Status Open(const std::string& dir, const EngineOptions& options,
                     std::shared_ptr<EngineCore>* result);

  Status CreateTenant(std::string_view name, const TenantOptions& options);
  // Engine::SetTenantOptions and GetTenantOptions, Tenant::GetStats
  // (engine/tenant_governance.cc).
  Status SetTenantOptions(std::string_view name, const TenantOptions& options);
  Result<TenantOptions> GetTenantOptions(std::string_view name) const;
  Result<TenantStats> GetTenantStats(const TenantState& tenant) const;
  Result<std::shared_ptr<TenantState>> FindTenant(std::string_view name) const;
  Result<std::vector<std::string>> ListTenants() const;
  // Drops the tenant with all its tables.
  Status DropTenant(std::string_view name);

  Status CreateTable(const TenantState& tenant, std::string_view name, const TableSchema& schema);
  // Tenant::AlterTable (engine/alter_table.cc).
  Status AlterTable(const TenantState& tenant, std::string_view name,
                    const TableSchema& new_schema);
  // Table::GetSchema.
  Result<TableSchema> GetSchema(const TableState& table) const;
  Result<std::shared_ptr<TableState>> FindTable(const TenantState& tenant,
                                                std::string_view name) const;
  Result<std::vector<std::string>> ListTables(const TenantState& tenant) const;
  Status DropTable(const TenantState& tenant, std::string_view name);

  Status Mutate(const TableState& table, const WriteOptions& options, std::string_view row,
                const RowMutation& mutation);
  // Table::CheckAndMutate and Table::CheckAndMutateBatch (engine/check_and_mutate.cc).
  Result<CheckAndMutateResult> CheckAndMutate(const TableState& table, const WriteOptions& options,
                                              std::string_view row,
                                              const std::vector<Condition>& conditions,
                                              const RowMutation& mutation);
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const TableState& table, const WriteOptions& options,
      const std::vector<ConditionalMutation>& batch);
  Result<std::vector<Cell>> ReadRow(const TableState& table, const ReadOptions& options,
                                    std::string_view row, const RowFilter& filter) const;
  // ReadRow for the engine's own readers (read sessions): the filter comes
  // resolved against `schema`, the snapshot of the table's schema the caller
  // took, and the cells go to `sink` as the walk of each locality group finds
  // them (RowSink), not sorted by family across groups. Counted as a row
  // read, as ReadRow is. When `schema` is no longer the table's (a schema
  // change came after the caller took it), nothing is read and *stale_schema
  // is set: reading a moved family's old group would miss what was written
  // to it since, while the row's other columns show those writes.
  Status ReadRowInto(const TableState& table, const Schema& schema, std::string_view row,
                     const ResolvedFilter& filter, RowSink* sink, bool* stale_schema) const;
  Result<std::unique_ptr<RowIterator>> Scan(const std::shared_ptr<TableState>& table,
                                            const ReadOptions& options,
                                            const ScanSpec& spec) const;
  // The read point of a read whose snapshot is `snapshot`, taken (with
  // ViewsThenSnapshot) before this call: the records of a synced write
  // applied before its fdatasync that the snapshot may hold (ReadPoint).
  ReadPoint ReadPointAt(SequenceNumber snapshot) const;
  // Once a read's walks are done: when they looked at undurable records,
  // waits until those are durable, or returns the log's error when their
  // fdatasync failed (a crash may lose them: the read must not hand them
  // out). Scans call both per row.
  Status AwaitDurableReads(const ReadPoint& at) const;

  // Writes every memtable with data to SSTables and waits until all are.
  Status Flush();
  // Flushes, then compacts until level 0 is empty, no level is over its
  // size and every level above the deepest one holding data is empty; waits.
  Status Compact();

  EngineStats GetStats() const;
  // OK while the engine is open and the table not dropped; the error a call
  // on the table would get otherwise.
  Status CheckUsable(const TableState& table) const;
  Result<std::vector<TabletStats>> GetTabletStats(const TableState& table) const;
  Status Close();

 private:
  // A row mutation on its way through the log. Slices point into the caller's
  // row key and RowMutation.
  struct PendingRow {
    const TabletState* tablet = nullptr;
    // The schema the entries' family ids come from; the writer holds it.
    const Schema* schema = nullptr;
    Slice row;
    std::vector<CellEntry> entries;
  };
  // What one log record carries, as WriteRequest::arg: rows in record order.
  struct PendingWrite {
    const PendingRow* rows = nullptr;
    size_t count = 0;
  };
  // One row of a check-and-mutate, pointing into the caller's arguments.
  struct ConditionalRow {
    std::string_view row;
    const std::vector<Condition>* conditions = nullptr;
    const RowMutation* mutation = nullptr;
  };

  EngineCore(std::string dir, const EngineOptions& options, FileSystem* fs);

  Status Recover();
  Status ReplayRecord(SequenceNumber first_sequence, uint64_t count, Slice payload);
  // After Recover: only a point-in-time recovery cuts the log below
  // sequences the manifest recorded (flushed data), and writes must go on
  // above those: a lower number would lose to the flushed version of its
  // cell, and the next replay would skip it as flushed. A sequence skip
  // record (engine/LOG_RECORD.md) uses up the numbers in between, so the log
  // stays contiguous, and publishes them, so reads see the flushed data.
  Status ContinueAboveRecordedSequences() LOCKS_EXCLUDED(mu_);
  // The log's apply function: inserts a group into memtables and publishes it.
  void ApplyGroup(wal::WriteRequest* const* requests, size_t n) LOCKS_EXCLUDED(apply_mu_);
  // Inserts entries; groups that received some are added to *touched (when
  // not null). With `replay`, entries a group already has in files are skipped.
  // Family ids resolve through `schema`; a row marker goes to every group
  // that holds a family.
  static void InsertEntries(const TabletState& tablet, const Schema& schema, const Slice& row,
                            const std::vector<struct CellEntry>& entries,
                            SequenceNumber first_sequence, bool replay,
                            std::vector<LocalityGroupState*>* touched);
  // Makes the group's memtable immutable and queues it for flushing.
  // REQUIRES: apply_mu_ held (no insert in progress).
  void SwitchMemTable(LocalityGroupState* group, SequenceNumber last_sequence)
      EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);

  // Background work: one thread flushes; max_background_compactions
  // threads compact.
  // Names the calling background thread and applies background_nice and
  // background_sched_batch.
  void StartBackgroundThread(const char* name) const;
  void FlushThread();
  void CompactionThread();
  // Splits tablets that have grown past tablet_split_size (engine/split.cc).
  void SplitThread();
  // Splits `tablet` in two at a row near the middle of its data. OK without
  // a split when no row boundary fits or the engine is closing.
  Status SplitTablet(TabletState* tablet);
  // A row near the middle of the tablet's largest group; false if none
  // lies strictly inside the tablet's range.
  bool PickSplitRow(const TabletState& tablet, std::string* row);
  // Flushes what the tablet's memtables hold and waits for it.
  Status FlushTabletMemtables(TabletState* tablet);
  // SSTable bytes of the tablet, all groups.
  static uint64_t TabletBytes(const TabletState& tablet);
  // A compaction: input files of two adjacent levels of one group.
  struct CompactionJob {
    LocalityGroupState* group = nullptr;
    int level = 0;  // inputs from `level` and `level + 1`; output to `level + 1`
    std::vector<std::shared_ptr<TableFile>> inputs[2];
    bool bottommost = false;
    // Unless bottommost or a trivial move: the files below the output level
    // as the inputs were picked, which hold all the older data of the
    // inputs' rows.
    std::shared_ptr<DeeperFiles> deeper;
    // One input, nothing overlapping below, no filter: the file moves down a
    // level by a manifest edit alone.
    bool trivial_move = false;
  };
  // Picks the most urgent compaction whose inputs no running compaction
  // holds, and marks its inputs as being compacted. With `force`, any
  // level-0 file is reason enough (Engine::Compact).
  bool PickCompaction(CompactionJob* job, bool force) EXCLUSIVE_LOCKS_REQUIRED(bg_mu_);
  // Fills job->inputs for a compaction of `level` of the group's view;
  // false when a running compaction holds what it would need.
  bool PickInputs(const GroupView& view, int level, CompactionJob* job)
      EXCLUSIVE_LOCKS_REQUIRED(bg_mu_);
  void ReleaseInputs(const CompactionJob& job) EXCLUSIVE_LOCKS_REQUIRED(bg_mu_);
  Status RunCompaction(CompactionJob* job);
  void PurgeObsoleteFiles();
  // Drops a table file that no view shows (any more): its reader, pinned or
  // not, its cached blocks (resident ones too) and the file itself.
  void DiscardTableFile(uint64_t number);
  // Opens a file for good and loads all of its blocks as resident, so
  // reading it never touches the disk (for in-memory groups); Unpin undoes
  // it. `table` is the owner whose tenant the blocks are charged to.
  Status MakeResident(const TableState& table, uint64_t file_number);
  void Unpin(uint64_t file_number);
  // MakeResident when the group is resident; *pinned says whether it was.
  Status MakeResidentIfNeeded(const LocalityGroupState& group, const FileMeta& meta,
                              bool* pinned) LOCKS_EXCLUDED(group.mu);
  // Runs `show` (which replaces group->view by one showing `files`) under
  // group->mu once the files' residency matches the group's, which an
  // AlterTable may have changed since they were written: pins them first if
  // the group became resident, unpins them after if it stopped being.
  // `pinned` says whether they are pinned now. A pin error is returned
  // after `show` has run (the files are recorded; only residency failed).
  Status ShowNewFiles(LocalityGroupState* group, const std::vector<FileMeta>& files, bool pinned,
                      const std::function<void()>& show) LOCKS_EXCLUDED(group->mu);
  // The tablet's groups as they are now (the list may grow).
  std::vector<LocalityGroupState*> GroupsOf(const TabletState& tablet) const LOCKS_EXCLUDED(mu_);
  // AlterTable's check that nothing `change` takes away holds data, in every
  // tablet: FailedPrecondition naming the family or group otherwise.
  // REQUIRES: close_mu_ held exclusively.
  Status CheckNothingLost(const TableState& table, const Schema& current,
                          const SchemaChange& change) const;
  // Whether `view`, a view of one of the tablet's groups, holds a cell key
  // of family `family` in the tablet's rows.
  Result<bool> GroupHoldsFamily(const TabletState& tablet, const GroupView& view,
                                uint16_t family) const;
  // Recomputes max_level0_files_ and every tenant's level-0 count
  // (TenantBudget::level0_files) and wakes writers waiting on them.
  void UpdateLevel0Count();
  // Lets go of the close gate for its lifetime (a wait for background work)
  // and sets *released; takes the gate again, shared, when it goes.
  class GateReleased {
   public:
    GateReleased(std::shared_lock<SharedGate>* gate, bool* released) : gate_(gate) {
      gate_->unlock();
      *released = true;
    }
    ~GateReleased() { gate_->lock(); }
    GateReleased(const GateReleased&) = delete;
    GateReleased& operator=(const GateReleased&) = delete;

   private:
    std::shared_lock<SharedGate>* const gate_;
  };
  // Applies backpressure to a write to `table` about to be logged: level-0
  // slowdowns and stops by its tenant's own level-0 count, and stops while
  // too many memtables (engine-wide) wait for a flush and some of them are
  // the tenant's. Waits without the close gate (*gate, held shared on entry
  // and on return), then sets *released; a wait ends if the table is
  // dropped.
  Status WaitForWriteRoom(const TableState& table, std::shared_lock<SharedGate>* gate,
                          bool* released);
  Status FlushOldest(LocalityGroupState* group);
  // Writes the entries of `it` (a memtable) to a new SSTable, as a flush
  // keeps them: `older` holds every file of the group with older data, and
  // the delete markers of rows none of them holds are dropped. Fills *meta
  // (no entries: no file is left).
  Status WriteTableFile(const TabletState& tablet, uint32_t group, InternalIterator* it,
                        DeeperFiles* older, FileMeta* meta);
  // The lowest sequence the log must keep: every group's unflushed data is at
  // or above it. `visible` is the visible sequence read before the scan.
  SequenceNumber LogFloor(SequenceNumber visible) const;
  Status DeleteObsoleteFiles();
  std::string TableDir() const;

  // Builds the runtime state of a table from its catalog entry.
  std::shared_ptr<TableState> MakeTable(const VersionEdit::NewTable& table,
                                        const std::vector<VersionEdit::NewTablet>& tablets) const;

  // A merged iterator over the view's memtables and the files that may hold
  // keys in [lo, hi) (hi empty: unbounded), for scans; tables it opens
  // charge their cached blocks to `tenant`. Point reads go through
  // ReadRowFromGroup (engine/point_read.h).
  Status NewRangeIterator(const GroupView& view, sstable::BlockCache::TenantId tenant,
                          const std::string& lo, const std::string& hi,
                          std::unique_ptr<InternalIterator>* result) const;
  Status ValidateRowKey(std::string_view row) const;
  Status ValidateMutation(const TableState& table, const Schema& schema, std::string_view row,
                          const RowMutation& mutation) const;
  // The row's tablet and the mutation's entries, names resolved to ids.
  // REQUIRES: ValidateMutation passed with `schema`, which outlives *out.
  Status MakePendingRow(const TableState& table, const Schema& schema, std::string_view row,
                        const RowMutation& mutation, PendingRow* out) const;
  // Logs `rows` as one record (one group-commit submission) and returns once
  // they are applied to the memtables and visible.
  // REQUIRES: close_mu_ held shared and !closed_; every row validated;
  // count >= 1, all rows of one table.
  Status WriteRows(const WriteOptions& options, const PendingRow* rows, size_t count);
  // Calls take_views(), which must start afresh (dropping what an earlier
  // call took), then reads the visible sequence as the snapshot; again while
  // a memtable switched in between (memtable_switches_), and past
  // kViewAttempts tries under apply_mu_, which holds switches off. `hook` is
  // a test point between the two (engine/test_hooks.h).
  template <typename TakeViews>
  SequenceNumber ViewsThenSnapshot(const std::atomic<void (*)()>& hook, TakeViews take_views) const;
  static constexpr int kViewAttempts = 4;
  // Fails with the background error once flushes or a manifest write have
  // failed; otherwise applies backpressure (WaitForWriteRoom, which may let
  // go of *gate for a while). REQUIRES: *gate holds close_mu_ shared.
  Status WaitToWrite(const TableState& table, std::shared_lock<SharedGate>* gate, bool* released);
  // Appends `edit` to the manifest. A failure other than a refused edit
  // (InvalidArgument, nothing written) leaves the manifest's tail unknown:
  // the edit may be in the file, so writes stop at once, before the
  // caller's error lets any more in, until the engine is reopened.
  Status AppendEdit(const VersionEdit& edit) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records that the log writer started segment `number` (MANIFEST.md, "The
  // log's segments").
  Status RecordLogSegment(uint64_t number) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Corruption when the manifest names a log segment that is not there: the
  // records in it, and in any later one, are gone.
  Status CheckLogSegment(const std::string& log_dir) const EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Everything a write of `bytes` payload bytes to `table` passes before its
  // row locks (engine/tenant_governance.cc): the tenant's disk quota when
  // the write adds data, its write rate limit, then WaitToWrite and the wait
  // for the tenant's flushes to bring its immutable memtables under its
  // share. Every wait goes without the close gate, which is then taken
  // again and the engine and table checked anew; so the caller must take
  // the table's schema again after this. REQUIRES: *gate holds close_mu_
  // shared and !closed_; it holds it again on return.
  Status AdmitWrite(const TableState& table, uint64_t bytes, bool adds_data,
                    std::shared_lock<SharedGate>* gate);
  // Waits while the tenant's immutable memtables exceed its share, without
  // the close gate and until the table is dropped (as WaitForWriteRoom).
  Status WaitForTenantShare(const TableState& table, std::shared_lock<SharedGate>* gate,
                            bool* released);
  // Brings the active memtable's charge in the tenant's budget up to date.
  void ChargeMemTable(LocalityGroupState* group) EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Charges the memtables recovery filled. Called once, after Recover.
  void ChargeRecoveredMemTables() LOCKS_EXCLUDED(apply_mu_, mu_);
  // Switches the largest active memtables of every tenant of `touched` that
  // is over its share, until it no longer is.
  void EnforceMemtableShares(const std::vector<LocalityGroupState*>& touched,
                             SequenceNumber last_sequence) EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Releases the memtable charges of a dropped table's group whose view is
  // being replaced. REQUIRES: group->mu held.
  void ReleaseMemTableCharges(LocalityGroupState* group, const GroupView& view)
      EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Recounts every tenant's live SSTable bytes from the current views.
  void RefreshTenantDiskUsage() LOCKS_EXCLUDED(mu_, disk_usage_mu_);
  // ReadRow without the close gate. REQUIRES: close_mu_ held shared and !closed_.
  Result<std::vector<Cell>> ReadRowOpen(const TableState& table, const Schema& schema,
                                        std::string_view row, const RowFilter& filter) const;
  // ReadRowInto without the close gate, the count or the row key check.
  // REQUIRES: as ReadRowOpen, and ValidateRowKey(row) is OK.
  Status ReadRowOpenInto(const TableState& table, const Schema& schema, std::string_view row,
                         const ResolvedFilter& filter, RowSink* sink) const;
  // Checks and applies `rows` (one per distinct row); `batch` only changes
  // error messages (they name the entry). REQUIRES: *gate holds close_mu_
  // shared and !closed_ (as for AdmitWrite).
  Status CheckAndMutateRows(const TableState& table, const WriteOptions& options,
                            const std::vector<ConditionalRow>& rows, bool batch,
                            std::shared_lock<SharedGate>* gate,
                            std::vector<CheckAndMutateResult>* results);
  Status ResolveFilter(const TableState& table, const Schema& schema, const RowFilter& filter,
                       ResolvedFilter* resolved) const;
  Status ClosedError() const;
  // NotFound when the table or its tenant was dropped. REQUIRES: close_mu_
  // held (shared is enough).
  static Status CheckLive(const TableState& table);
  static Status CheckLive(const TenantState& tenant);
  // Marks dropped tables and removes their tablets from background work, in
  // the critical section that records the drop, so no flush or compaction
  // records a file for them afterwards.
  void UnlinkTables(const std::vector<std::shared_ptr<TableState>>& tables)
      EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Then empties their views and marks their files obsolete. REQUIRES:
  // close_mu_ held exclusively.
  void RetireTables(const std::vector<std::shared_ptr<TableState>>& tables)
      LOCKS_EXCLUDED(mu_);

  const std::string dir_;
  const EngineOptions options_;
  FileSystem* const fs_;

  // Held shared by every call that uses the log or memtables; Close takes it
  // exclusively, so it waits for calls in flight and later calls see closed_.
  mutable SharedGate close_mu_;
  bool closed_ = false;  // guarded by close_mu_

  // Held by AlterTable from start to end (it lets go of the close gate
  // before it makes files resident), so schema changes come one at a time.
  // Taken before close_mu_.
  Mutex alter_mu_;

  mutable Mutex mu_;  // the catalog
  std::unique_ptr<FileLock> lock_;
  std::unique_ptr<Manifest> manifest_ GUARDED_BY(mu_);
  Catalog catalog_ GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<TenantState>, std::less<>> tenants_ GUARDED_BY(mu_);
  // Tables by (tenant id, name).
  std::map<std::pair<uint64_t, std::string>, std::shared_ptr<TableState>, std::less<>> tables_
      GUARDED_BY(mu_);
  // Dropped tables, kept for the engine's lifetime because queued flushes
  // and running compactions may still point into them.
  std::vector<std::shared_ptr<TableState>> dropped_tables_ GUARDED_BY(mu_);
  // Tablets split away, kept for the same reason.
  std::vector<std::unique_ptr<TabletState>> retired_tablets_ GUARDED_BY(mu_);
  // Every live tablet by id, for log replay and background work. Written
  // during Open and when tables are created or dropped (under mu_); replay
  // runs before any other thread can see the core.
  std::unordered_map<uint64_t, TabletState*> tablets_by_id_;

  std::unique_ptr<wal::LogWriter> log_;
  std::unique_ptr<sstable::BlockCache> block_cache_;
  std::unique_ptr<sstable::TableCache> table_cache_;
  // Per-tenant budgets: memtable shares, write rate limits, disk quotas.
  ResourceGovernor governor_;
  // Held by RefreshTenantDiskUsage, which runs on background threads and
  // after drops.
  Mutex disk_usage_mu_;

  // Orders the writers of each row: Mutate shared, CheckAndMutate exclusive.
  RowLocks row_locks_;

  // Held by the apply function while it inserts, and by whoever switches a
  // memtable from outside it, so no insert lands in a memtable being flushed.
  // A reader whose views kept going stale takes it too (no switch and no
  // publish can then come between its views and its snapshot).
  mutable Mutex apply_mu_;

  // The flush thread's queue and state.
  mutable Mutex bg_mu_;
  CondVar bg_cv_{&bg_mu_};
  // One entry per immutable memtable waiting; each flush takes a group's oldest.
  std::deque<LocalityGroupState*> flush_queue_ GUARDED_BY(bg_mu_);
  int flushes_running_ GUARDED_BY(bg_mu_) = 0;
  int compactions_running_ GUARDED_BY(bg_mu_) = 0;
  // Immutable memtables queued or being flushed, engine-wide. Written under
  // bg_mu_; read relaxed on the write path as a hint, re-checked under bg_mu_.
  std::atomic<int> immutable_memtables_{0};
  bool bg_stop_ GUARDED_BY(bg_mu_) = false;
  // bg_stop_ for code that does not hold bg_mu_: a running compaction
  // checks it to stop early when the engine closes.
  std::atomic<bool> closing_{false};
  // Set by Compact(); cleared by the background thread once it finds no work.
  bool manual_compaction_ GUARDED_BY(bg_mu_) = false;
  Status bg_error_ GUARDED_BY(bg_mu_);
  // Set once bg_error_ or manifest_error_ is; writes then fail fast.
  // Relaxed: a flag checked on the write path; the error itself is read
  // under its mutex.
  std::atomic<bool> bg_failed_{false};
  // The first failed manifest append (AppendEdit). A leaf lock: appends
  // happen under mu_, which comes after bg_mu_.
  Mutex manifest_error_mu_;
  Status manifest_error_ GUARDED_BY(manifest_error_mu_);
  std::thread flush_thread_;
  std::vector<std::thread> compaction_threads_;
  std::thread split_thread_;
  // Set by Close before it takes the close gate (a split takes the gate
  // itself, so the split thread is joined first).
  bool split_stop_ GUARDED_BY(bg_mu_) = false;
  std::once_flag split_join_once_;
  std::atomic<uint64_t> stat_splits_{0};
  // Paces compaction output; unlimited when compaction_rate_limit is 0.
  std::unique_ptr<RateLimiter> compaction_limiter_;
  std::atomic<uint64_t> stat_memtable_stops_{0};
  mutable std::atomic<uint64_t> stat_durable_waits_{0};
  std::atomic<uint64_t> stat_flushes_{0};
  std::atomic<uint64_t> stat_compactions_{0};
  std::atomic<uint64_t> stat_flush_bytes_{0};
  std::atomic<uint64_t> stat_trivial_moves_{0};
  std::atomic<uint64_t> stat_slowdowns_{0};
  std::atomic<uint64_t> stat_stops_{0};
  std::atomic<uint64_t> stat_stall_micros_{0};
  // Level-0 files of the fullest group, refreshed by the background thread
  // after each job, with each tenant's count. Relaxed: statistics and, per
  // tenant, a backpressure hint; waiting re-checks it under bg_mu_, which
  // the background thread signals after storing it.
  std::atomic<uint64_t> max_level0_files_{0};
  std::atomic<uint64_t> stat_compaction_read_{0};
  std::atomic<uint64_t> stat_compaction_written_{0};
  std::shared_ptr<ObsoleteFiles> obsolete_files_ = std::make_shared<ObsoleteFiles>();
  // Newest sequence whose row mutations are all in memtables. Stored with
  // release by the apply function after the inserts; loaded with acquire by
  // readers, so every entry up to it is visible to them.
  std::atomic<SequenceNumber> visible_sequence_{0};
  // Memtable switches so far. A reader takes its views, then its snapshot;
  // a switch in between could send a later row mutation to a memtable one
  // of its views lacks while another view holds the rest of it. Bumped with
  // release after the new view is in place (so before any write reaches the
  // new memtable); a reader that sees it change across taking its views and
  // snapshot takes both again, and after kViewAttempts takes them under
  // apply_mu_.
  std::atomic<uint64_t> memtable_switches_{0};

  // Statistics; relaxed: counters with no ordering duties.
  std::atomic<uint64_t> stat_writes_{0};
  std::atomic<uint64_t> stat_cells_{0};
};

template <typename TakeViews>
SequenceNumber EngineCore::ViewsThenSnapshot(const std::atomic<void (*)()>& hook,
                                             TakeViews take_views) const {
  for (int attempt = 1;; attempt++) {
    std::optional<MutexLock> quiet;
    if (attempt > kViewAttempts) quiet.emplace(&apply_mu_);
    const uint64_t switches = memtable_switches_.load(std::memory_order_acquire);
    take_views();
    if (auto* f = hook.load(std::memory_order_relaxed)) f();
    const SequenceNumber snapshot = visible_sequence_.load(std::memory_order_acquire);
    if (memtable_switches_.load(std::memory_order_acquire) == switches) return snapshot;
  }
}

}  // namespace strata::engine

#endif  // STRATA_ENGINE_ENGINE_CORE_H_
