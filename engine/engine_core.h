// EngineCore: the engine behind the public Engine, Tenant and Table handles.
// It owns the write path (validate, admit, log with group commit, apply to
// memtables, publish), the read entry points (ReadRow, Scan, the read
// sessions' lookups) and the background scheduling (flush, compaction and
// split threads, backpressure, Engine::Flush and Compact), and opens,
// recovers and closes the engine. The catalog is VersionSet's
// (engine/version_set.h); flushes and compactions run as FlushJob and
// CompactionJob; engine/README.md lists every file's part.
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
//
// Lock order: alter_mu_, close_mu_, apply_mu_, bg_mu_, the catalog's mutex
// (VersionSet), a group's mutex.
#ifndef STRATA_ENGINE_ENGINE_CORE_H_
#define STRATA_ENGINE_ENGINE_CORE_H_

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/cell_key.h"
#include "common/file_system.h"
#include "common/latency_recorder.h"
#include "common/mutex.h"
#include "common/rate_limiter.h"
#include "engine/compaction_job.h"
#include "engine/flush.h"
#include "engine/input_checks.h"
#include "engine/live_files.h"
#include "engine/log_record.h"
#include "engine/resource_governor.h"
#include "engine/row_locks.h"
#include "engine/row_reader.h"
#include "engine/scan_iterator.h"
#include "engine/schema.h"
#include "engine/tablet.h"
#include "engine/version_set.h"
#include "strata/engine.h"
#include "strata/iterator.h"
#include "strata/options.h"
#include "strata/row_mutation.h"
#include "wal/log_writer.h"

namespace strata::engine {

class EngineCore final : public DurableReads, public std::enable_shared_from_this<EngineCore> {
 public:
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;
  ~EngineCore();

  static Status Open(const std::string& dir, const EngineOptions& options,
                     std::shared_ptr<EngineCore>* result);

  // The options the engine was opened with (immutable).
  const EngineOptions& options() const { return options_; }

  // ---- Tenants and tables (the catalog, behind the close gate) ----

  Status CreateTenant(std::string_view name, const TenantOptions& options);
  // Engine::SetTenantOptions and GetTenantOptions, Tenant::GetStats.
  Status SetTenantOptions(std::string_view name, const TenantOptions& options);
  Result<TenantOptions> GetTenantOptions(std::string_view name) const;
  Result<TenantStats> GetTenantStats(const TenantState& tenant) const;
  Result<std::shared_ptr<TenantState>> FindTenant(std::string_view name) const;
  Result<std::vector<std::string>> ListTenants() const;
  // Drops the tenant with all its tables.
  Status DropTenant(std::string_view name);
  // Tenant::SetCompactionFilter.
  Status SetCompactionFilter(const TenantState& tenant, std::shared_ptr<CompactionFilter> filter);

  Status CreateTable(const TenantState& tenant, std::string_view name, const TableSchema& schema);
  // Tenant::AlterTable (engine/alter_table.h says how).
  Status AlterTable(const TenantState& tenant, std::string_view name,
                    const TableSchema& new_schema);
  // Table::GetSchema.
  Result<TableSchema> GetSchema(const TableState& table) const;
  Result<std::shared_ptr<TableState>> FindTable(const TenantState& tenant,
                                                std::string_view name) const;
  Result<std::vector<std::string>> ListTables(const TenantState& tenant) const;
  Status DropTable(const TenantState& tenant, std::string_view name);

  // ---- The write path ----

  Status Mutate(const TableState& table, const WriteOptions& options, std::string_view row,
                const RowMutation& mutation);
  // Table::CheckAndMutate, Table::CheckAndMutateBatch and (all_or_nothing)
  // Table::CheckAndMutateAll.
  Result<CheckAndMutateResult> CheckAndMutate(const TableState& table, const WriteOptions& options,
                                              std::string_view row,
                                              const std::vector<Condition>& conditions,
                                              const RowMutation& mutation);
  Result<std::vector<CheckAndMutateResult>> CheckAndMutateBatch(
      const TableState& table, const WriteOptions& options,
      const std::vector<ConditionalMutation>& batch, bool all_or_nothing = false);

  // ---- The read entry points ----

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
                                            const ReadOptions& options, const ScanSpec& spec) const;
  // DurableReads: what reads ask of the log about records applied before
  // their fdatasync. Scans call both per row.
  ReadPoint ReadPointAt(SequenceNumber snapshot) const override;
  Status AwaitDurableReads(const ReadPoint& at) const override;

  // ---- Background work, stats, close ----

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

  EngineCore(std::string dir, const EngineOptions& options, FileSystem* fs);

  // ---- Open ----

  // Recovers the catalog and the log (engine/recovery.h), then opens the log
  // for writing and starts the background threads.
  Status Recover();
  // After Recover: only a point-in-time recovery cuts the log below
  // sequences the manifest recorded (flushed data), and writes must go on
  // above those: a lower number would lose to the flushed version of its
  // cell, and the next replay would skip it as flushed. A sequence skip
  // record (engine/LOG_RECORD.md) uses up the numbers in between, so the log
  // stays contiguous, and publishes them, so reads see the flushed data.
  Status ContinueAboveRecordedSequences();
  // Charges the memtables recovery filled. Called once, after Recover.
  void ChargeRecoveredMemTables() LOCKS_EXCLUDED(apply_mu_);

  // ---- The write path ----

  // Everything a write of `bytes` payload bytes to `table` passes before its
  // row locks: the tenant's disk quota when the write adds data, its write
  // rate limit, then WaitToWrite and the wait for the tenant's flushes to
  // bring its immutable memtables under its share. Every wait goes without
  // the close gate, which is then taken again and the engine and table
  // checked anew; so the caller must take the table's schema again after
  // this. REQUIRES: *gate holds close_mu_ shared and !closed_; it holds it
  // again on return.
  Status AdmitWrite(const TableState& table, uint64_t bytes, bool adds_data,
                    std::shared_lock<SharedGate>* gate);
  // Fails with the background error once flushes or a manifest write have
  // failed; otherwise applies backpressure (WaitForWriteRoom, which may let
  // go of *gate for a while). REQUIRES: *gate holds close_mu_ shared.
  Status WaitToWrite(const TableState& table, std::shared_lock<SharedGate>* gate, bool* released);
  // Applies backpressure to a write to `table` about to be logged: level-0
  // slowdowns and stops by its tenant's own level-0 count, and stops while
  // too many memtables (engine-wide) wait for a flush and some of them are
  // the tenant's. Waits without the close gate (*gate, held shared on entry
  // and on return), then sets *released; a wait ends if the table is
  // dropped.
  Status WaitForWriteRoom(const TableState& table, std::shared_lock<SharedGate>* gate,
                          bool* released);
  // Waits while the tenant's immutable memtables exceed its share, without
  // the close gate and until the table is dropped (as WaitForWriteRoom).
  Status WaitForTenantShare(const TableState& table, std::shared_lock<SharedGate>* gate,
                            bool* released);
  // The row's tablet and the mutation's entries, names resolved to ids.
  // REQUIRES: ValidateMutation passed with `schema`, which outlives *out.
  Status MakePendingRow(const TableState& table, const Schema& schema, std::string_view row,
                        const RowMutation& mutation, PendingRow* out) const;
  // Logs `rows` as one record (one group-commit submission) and returns once
  // they are applied to the memtables and visible.
  // REQUIRES: close_mu_ held shared and !closed_; every row validated;
  // count >= 1, all rows of one table.
  Status WriteRows(const WriteOptions& options, const PendingRow* rows, size_t count);
  // Checks and applies `rows` (one per distinct row); `batch` only changes
  // error messages (they name the entry). With all_or_nothing, no row is
  // written unless every row's conditions hold. REQUIRES: *gate holds
  // close_mu_ shared and !closed_ (as for AdmitWrite).
  Status CheckAndMutateRows(const TableState& table, const WriteOptions& options,
                            const std::vector<ConditionalRow>& rows, bool batch,
                            bool all_or_nothing, std::shared_lock<SharedGate>* gate,
                            std::vector<CheckAndMutateResult>* results);
  // The log's apply function: inserts a group into memtables and publishes it.
  void ApplyGroup(wal::WriteRequest* const* requests, size_t n) LOCKS_EXCLUDED(apply_mu_);
  // Makes the group's memtable immutable and queues it for flushing.
  // REQUIRES: apply_mu_ held (no insert in progress).
  void SwitchMemTable(LocalityGroupState* group, SequenceNumber last_sequence)
      EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Switches the largest active memtables of every tenant of `touched` that
  // is over its share, until it no longer is.
  void EnforceMemtableShares(const std::vector<LocalityGroupState*>& touched,
                             SequenceNumber last_sequence) EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);

  // ---- The read path ----

  // Calls take_views(), which must start afresh (dropping what an earlier
  // call took), then reads the visible sequence as the snapshot; again while
  // a memtable switched in between (memtable_switches_), and past
  // kViewAttempts tries under apply_mu_, which holds switches off. `hook` is
  // a test point between the two (engine/test_hooks.h).
  template <typename TakeViews>
  SequenceNumber ViewsThenSnapshot(const std::atomic<void (*)()>& hook, TakeViews take_views) const;
  static constexpr int kViewAttempts = 4;
  // ReadRow without the close gate. REQUIRES: close_mu_ held shared and !closed_.
  Result<std::vector<Cell>> ReadRowOpen(const TableState& table, const Schema& schema,
                                        std::string_view row, const RowFilter& filter) const;
  // ReadRowInto without the close gate, the count or the row key check.
  // REQUIRES: as ReadRowOpen, and ValidateRowKey(row) is OK.
  Status ReadRowOpenInto(const TableState& table, const Schema& schema, std::string_view row,
                         const ResolvedFilter& filter, RowSink* sink) const;

  // ---- Background work ----

  // Names the calling background thread and applies background_priority.
  void StartBackgroundThread(const char* name) const;
  // One thread flushes; max_background_compactions threads compact; one
  // splits tablets that have grown past tablet_split_size.
  void FlushThread();
  void CompactionThread();
  void SplitThread();
  // Splits `tablet` in two at a row near the middle of its data
  // (engine/split.h). OK without a split when no row boundary fits or the
  // engine is closing.
  Status SplitTablet(TabletState* tablet);
  // Flushes what the tablet's memtables hold and waits for it.
  Status FlushTabletMemtables(TabletState* tablet);
  // Recomputes every tenant's level-0 count and wakes writers waiting on
  // them.
  void UpdateLevel0Count();
  // After a flush or compaction: deletes the files it made obsolete, and
  // recounts level-0 files and each tenant's SSTable bytes.
  void AfterBackgroundJob();
  FlushJob::Context FlushContext();
  CompactionJob::Context CompactionContext();

  // ---- Helpers ----

  Status ClosedError() const;
  // NotFound when the table or its tenant was dropped. REQUIRES: close_mu_
  // held (shared is enough).
  static Status CheckLive(const TableState& table);
  static Status CheckLive(const TenantState& tenant);
  // Empties the views of dropped tables, releasing their memtable charges
  // and marking their files obsolete. REQUIRES: close_mu_ held exclusively.
  void RetireTables(const std::vector<std::shared_ptr<TableState>>& tables)
      LOCKS_EXCLUDED(apply_mu_);

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

  std::unique_ptr<FileLock> lock_;
  // The SSTables, their caches and their deletion.
  const std::unique_ptr<LiveFiles> files_;
  // Per-tenant budgets: memtable shares, write rate limits, disk quotas.
  ResourceGovernor governor_;
  // The catalog and the manifest.
  const std::unique_ptr<VersionSet> versions_;
  std::unique_ptr<wal::LogWriter> log_;

  // Orders the writers of each row: Mutate shared, CheckAndMutate exclusive.
  RowLocks row_locks_;

  // Held by the apply function while it inserts, and by whoever switches a
  // memtable from outside it, so no insert lands in a memtable being flushed.
  // A reader whose views kept going stale takes it too (no switch and no
  // publish can then come between its views and its snapshot).
  mutable Mutex apply_mu_;

  // The background threads' queue and state.
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
  // Set once bg_error_ is; writes then fail fast. Relaxed: a flag checked on
  // the write path; the error itself is read under bg_mu_.
  std::atomic<bool> bg_failed_{false};
  std::thread flush_thread_;
  std::vector<std::thread> compaction_threads_;
  std::thread split_thread_;
  // Set by Close before it takes the close gate (a split takes the gate
  // itself, so the split thread is joined first).
  bool split_stop_ GUARDED_BY(bg_mu_) = false;
  std::once_flag split_join_once_;
  // Paces compaction output; unlimited when compaction_rate_limit is 0.
  std::unique_ptr<RateLimiter> compaction_limiter_;

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
  std::atomic<uint64_t> stat_splits_{0};
  std::atomic<uint64_t> stat_memtable_stops_{0};
  mutable std::atomic<uint64_t> stat_durable_waits_{0};
  std::atomic<uint64_t> stat_flushes_{0};
  LatencyRecorder flush_latency_;
  LatencyRecorder compaction_latency_;
  std::atomic<uint64_t> stat_compactions_{0};
  std::atomic<uint64_t> stat_flush_bytes_{0};
  std::atomic<uint64_t> stat_trivial_moves_{0};
  std::atomic<uint64_t> stat_slowdowns_{0};
  std::atomic<uint64_t> stat_stops_{0};
  std::atomic<uint64_t> stat_stall_micros_{0};
  std::atomic<uint64_t> stat_compaction_read_{0};
  std::atomic<uint64_t> stat_compaction_written_{0};
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
