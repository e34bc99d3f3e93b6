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
//     memtables, so a reader sees a row mutation whole or not at all.
//   - Memtable inserts happen only in the log's apply function (which never
//     runs concurrently with itself) or during recovery, before the log opens.
#ifndef STRATA_ENGINE_ENGINE_CORE_H_
#define STRATA_ENGINE_ENGINE_CORE_H_

#include <atomic>
#include <deque>
#include <thread>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/cell_key.h"
#include "common/file_system.h"
#include "common/mutex.h"
#include "engine/compaction.h"
#include "engine/file_meta.h"
#include "engine/manifest.h"
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

// A memtable that no longer takes writes, waiting to be flushed.
struct ImmutableMemTable {
  std::shared_ptr<memtable::MemTable> mem;
  // Every entry of the group with sequence <= this is in this memtable or
  // older data; every later one is in newer memtables.
  SequenceNumber last_sequence = 0;
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
  std::vector<std::unique_ptr<LocalityGroupState>> groups;  // like Schema::locality_groups()
};

struct TableState {
  uint64_t id = 0;
  uint64_t tenant_id = 0;
  std::string name;
  Schema schema;
  // Sorted by start_row; never empty. Fixed after creation for now (tablets
  // do not split yet).
  std::vector<std::unique_ptr<TabletState>> tablets;

  TabletState* FindTablet(const Slice& row) const;
};

struct TenantState {
  uint64_t id = 0;
  std::string name;
};

class EngineCore : public std::enable_shared_from_this<EngineCore> {
 public:
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;
  ~EngineCore();

  static Status Open(const std::string& dir, const EngineOptions& options,
                     std::shared_ptr<EngineCore>* result);

  Status CreateTenant(std::string_view name);
  Result<std::shared_ptr<TenantState>> FindTenant(std::string_view name) const;
  Result<std::vector<std::string>> ListTenants() const;

  Status CreateTable(const TenantState& tenant, std::string_view name, const TableSchema& schema);
  Result<std::shared_ptr<TableState>> FindTable(const TenantState& tenant,
                                                std::string_view name) const;
  Result<std::vector<std::string>> ListTables(const TenantState& tenant) const;

  Status Mutate(const TableState& table, const WriteOptions& options, std::string_view row,
                const RowMutation& mutation);
  Result<std::vector<Cell>> ReadRow(const TableState& table, const ReadOptions& options,
                                    std::string_view row, const RowFilter& filter) const;
  Result<std::unique_ptr<RowIterator>> Scan(const std::shared_ptr<TableState>& table,
                                            const ReadOptions& options,
                                            const ScanSpec& spec) const;

  // Writes every memtable with data to SSTables and waits until all are.
  Status Flush();
  // Flushes, then compacts until every level-0 file is merged down and no
  // level is over its size; waits.
  Status Compact();

  EngineStats GetStats() const;
  Status Close();

 private:
  struct PendingWrite;  // a row mutation on its way through the log

  EngineCore(std::string dir, const EngineOptions& options, FileSystem* fs);

  Status Recover();
  Status ReplayRecord(SequenceNumber first_sequence, uint64_t count, Slice payload);
  // The log's apply function: inserts a group into memtables and publishes it.
  void ApplyGroup(wal::WriteRequest* const* requests, size_t n) LOCKS_EXCLUDED(apply_mu_);
  // Inserts entries; groups that received some are added to *touched (when
  // not null). With `replay`, entries a group already has in files are skipped.
  static void InsertEntries(const TabletState& tablet, const Slice& row,
                            const std::vector<struct CellEntry>& entries,
                            SequenceNumber first_sequence, bool replay,
                            std::vector<LocalityGroupState*>* touched);
  // Makes the group's memtable immutable and queues it for flushing.
  // REQUIRES: apply_mu_ held (no insert in progress).
  void SwitchMemTable(LocalityGroupState* group, SequenceNumber last_sequence)
      EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);

  // Background work: flushes first, then compactions.
  void FlushThread();
  // A compaction: input files of two adjacent levels of one group.
  struct CompactionJob {
    LocalityGroupState* group = nullptr;
    int level = 0;  // inputs from `level` and `level + 1`; output to `level + 1`
    std::vector<std::shared_ptr<TableFile>> inputs[2];
    bool bottommost = false;
    // One input, nothing overlapping below, no filter: the file moves down a
    // level by a manifest edit alone.
    bool trivial_move = false;
  };
  // With `force`, any level-0 file is reason enough (Engine::Compact).
  bool PickCompaction(CompactionJob* job, bool force);
  Status RunCompaction(CompactionJob* job);
  void PurgeObsoleteFiles();
  // Recomputes max_level0_files_ and wakes writers waiting on it.
  void UpdateLevel0Count();
  // Applies level-0 backpressure to a write about to be logged.
  Status WaitForLevel0Room();
  Status FlushOldest(LocalityGroupState* group);
  // Writes every entry of `it` to a new SSTable; fills *meta.
  Status WriteTableFile(const TabletState& tablet, uint32_t group, InternalIterator* it,
                        FileMeta* meta);
  // The lowest sequence the log must keep: every group's unflushed data is at
  // or above it. `visible` is the visible sequence read before the scan.
  SequenceNumber LogFloor(SequenceNumber visible) const;
  Status DeleteObsoleteFiles();
  std::string TableDir() const;

  // Builds the runtime state of a table from its catalog entry.
  std::shared_ptr<TableState> MakeTable(const VersionEdit::NewTable& table,
                                        const std::vector<VersionEdit::NewTablet>& tablets) const;

  // A merged iterator over the view's memtables and the files that may hold
  // keys in [lo, hi) (hi empty: unbounded), for scans. Point reads go through
  // ReadRowFromGroup (engine/point_read.h).
  Status NewRangeIterator(const GroupView& view, const std::string& lo, const std::string& hi,
                          std::unique_ptr<InternalIterator>* result) const;
  Status ValidateMutation(const TableState& table, std::string_view row,
                          const RowMutation& mutation) const;
  Status ResolveFilter(const TableState& table, const RowFilter& filter,
                       ResolvedFilter* resolved) const;
  Status ClosedError() const;

  const std::string dir_;
  const EngineOptions options_;
  FileSystem* const fs_;

  // Held shared by every call that uses the log or memtables; Close takes it
  // exclusively, so it waits for calls in flight and later calls see closed_.
  mutable std::shared_mutex close_mu_;
  bool closed_ = false;  // guarded by close_mu_

  mutable Mutex mu_;  // the catalog
  std::unique_ptr<FileLock> lock_;
  std::unique_ptr<Manifest> manifest_ GUARDED_BY(mu_);
  Catalog catalog_ GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<TenantState>, std::less<>> tenants_ GUARDED_BY(mu_);
  // Tables by (tenant id, name).
  std::map<std::pair<uint64_t, std::string>, std::shared_ptr<TableState>, std::less<>> tables_
      GUARDED_BY(mu_);
  // Every tablet by id, for log replay. Written only during Open and table
  // creation (under mu_); replay runs before any other thread can see the core.
  std::unordered_map<uint64_t, TabletState*> tablets_by_id_;

  std::unique_ptr<wal::LogWriter> log_;
  std::unique_ptr<sstable::BlockCache> block_cache_;
  std::unique_ptr<sstable::TableCache> table_cache_;

  // Held by the apply function while it inserts, and by whoever switches a
  // memtable from outside it, so no insert lands in a memtable being flushed.
  Mutex apply_mu_;

  // The flush thread's queue and state.
  mutable Mutex bg_mu_;
  CondVar bg_cv_{&bg_mu_};
  // One entry per immutable memtable waiting; each flush takes a group's oldest.
  std::deque<LocalityGroupState*> flush_queue_ GUARDED_BY(bg_mu_);
  int flushes_running_ GUARDED_BY(bg_mu_) = 0;
  bool bg_stop_ GUARDED_BY(bg_mu_) = false;
  // Set by Compact(); cleared by the background thread once it finds no work.
  bool manual_compaction_ GUARDED_BY(bg_mu_) = false;
  Status bg_error_ GUARDED_BY(bg_mu_);
  // Set once bg_error_ is; writes then fail fast. Relaxed: a flag checked on
  // the write path; the error itself is read under bg_mu_.
  std::atomic<bool> bg_failed_{false};
  std::thread flush_thread_;
  std::atomic<uint64_t> stat_flushes_{0};
  std::atomic<uint64_t> stat_compactions_{0};
  std::atomic<uint64_t> stat_flush_bytes_{0};
  std::atomic<uint64_t> stat_trivial_moves_{0};
  std::atomic<uint64_t> stat_slowdowns_{0};
  std::atomic<uint64_t> stat_stops_{0};
  std::atomic<uint64_t> stat_stall_micros_{0};
  // Level-0 files of the fullest group, refreshed by the background thread
  // after each job. Relaxed: a backpressure hint; waiting re-checks it under
  // bg_mu_, which the background thread signals after storing it.
  std::atomic<uint64_t> max_level0_files_{0};
  std::atomic<uint64_t> stat_compaction_read_{0};
  std::atomic<uint64_t> stat_compaction_written_{0};
  std::shared_ptr<ObsoleteFiles> obsolete_files_ = std::make_shared<ObsoleteFiles>();
  // Newest sequence whose row mutations are all in memtables. Stored with
  // release by the apply function after the inserts; loaded with acquire by
  // readers, so every entry up to it is visible to them.
  std::atomic<SequenceNumber> visible_sequence_{0};

  // Statistics; relaxed: counters with no ordering duties.
  std::atomic<uint64_t> stat_writes_{0};
  std::atomic<uint64_t> stat_cells_{0};
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_ENGINE_CORE_H_
