// VersionSet: the engine's catalog — tenants, tables, tablets and the files
// of every locality group — both as the manifest records it (Catalog, edits
// appended to engine/MANIFEST.md's file) and as the engine's runtime state
// shows it (engine/tablet.h). Every change to the catalog is one manifest
// edit made here, applied to both under the catalog mutex; results of
// flushes and compactions are recorded and then shown to readers here.
//
// Thread-safe. Lock order: the engine's close gate, apply mutex and
// background mutex come before the catalog mutex (mu_), which comes before a
// group's mutex and a table's schema mutex; the manifest-error mutex is a
// leaf.
//
// Invariants:
//   - catalog_ is what the manifest holds (up to the edit being appended);
//     the runtime state names the same tenants, tables, tablets and files,
//     except that a recorded result may not be shown yet.
//   - Table and tablet states are never freed while the engine is open:
//     dropped tables and split tablets are kept, since background work may
//     still point into them. Ids are never reused.
//   - Once an append has failed (other than a refused edit), failed() is
//     true until the engine is reopened.
#ifndef STRATA_ENGINE_VERSION_SET_H_
#define STRATA_ENGINE_VERSION_SET_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/file_system.h"
#include "common/mutex.h"
#include "engine/compaction.h"
#include "engine/live_files.h"
#include "engine/manifest.h"
#include "engine/resource_governor.h"
#include "engine/schema.h"
#include "engine/tablet.h"
#include "strata/engine.h"
#include "strata/options.h"
#include "strata/status.h"

namespace strata::engine {

class VersionSet {
 public:
  // The catalog of the engine in `dir`, with its SSTables in `files`; new
  // group states fill their memtables at `write_buffer_size` unless their
  // group says otherwise; tenants get their budgets from `governor`.
  VersionSet(FileSystem* fs, std::string dir, uint64_t write_buffer_size,
             ResourceGovernor* governor, LiveFiles* files);
  VersionSet(const VersionSet&) = delete;
  VersionSet& operator=(const VersionSet&) = delete;

  // ---- Open and close ----

  // Opens the manifest (creating it when missing) and builds the runtime
  // state of every tenant, table and tablet, each group with its files and
  // flushed sequence. REQUIRES: called once, before the engine is shared.
  Status Recover() LOCKS_EXCLUDED(mu_);
  // Closes the manifest and drops every view of the live tables (handles may
  // keep table states alive; their memtables and files go now).
  Status Close() LOCKS_EXCLUDED(mu_);

  // What recovery needs of the manifest.
  SequenceNumber log_floor() const LOCKS_EXCLUDED(mu_);
  SequenceNumber last_sequence() const LOCKS_EXCLUDED(mu_);
  // Numbers of every file the manifest lists.
  std::set<uint64_t> LiveFileNumbers() const LOCKS_EXCLUDED(mu_);
  // The live tablet `id` for log replay, or null: then *retired says whether
  // the tablet is one that the manifest retired (its records are skipped).
  TabletState* ReplayTablet(uint64_t id, bool* retired) const LOCKS_EXCLUDED(mu_);

  // ---- The log's segments and floor (MANIFEST.md, "The log's segments") ----

  // Records that the log writer started segment `number`.
  Status RecordLogSegment(uint64_t number) LOCKS_EXCLUDED(mu_);
  // When the manifest names a newest segment: records `number` as the last
  // one recovery kept while dropping a torn tail. OK otherwise.
  Status RecordKeptLogSegment(uint64_t number) LOCKS_EXCLUDED(mu_);
  // Corruption when the manifest names a log segment in `log_dir` that is
  // not there (or has a bad header): the records in it, and in any later
  // one, are gone. Skipped for a point-in-time recovery.
  Status CheckLogSegment(const std::string& log_dir, bool point_in_time) const
      LOCKS_EXCLUDED(mu_);
  // The lowest sequence the log must keep: every group's unflushed data is
  // at or above it. `visible` is the visible sequence read before.
  SequenceNumber LogFloor(SequenceNumber visible) const LOCKS_EXCLUDED(mu_);
  // Records `floor` as the log's floor when it is above the recorded one.
  Status RaiseLogFloor(SequenceNumber floor) LOCKS_EXCLUDED(mu_);

  // ---- Tenants and tables ----

  Status CreateTenant(std::string_view name, const TenantOptions& options) LOCKS_EXCLUDED(mu_);
  Result<std::shared_ptr<TenantState>> FindTenant(std::string_view name) const
      LOCKS_EXCLUDED(mu_);
  std::vector<std::string> ListTenants() const LOCKS_EXCLUDED(mu_);
  // Records the tenant's new budget and hands it to the governor.
  Status SetTenantOptions(std::string_view name, const TenantOptions& options)
      LOCKS_EXCLUDED(mu_);
  // Drops the tenant with all its tables, which go to *dropped; the tenant
  // is marked dropped and its budget leaves the governor. REQUIRES: the
  // engine's close gate held exclusively.
  Status DropTenant(std::string_view name, std::vector<std::shared_ptr<TableState>>* dropped)
      LOCKS_EXCLUDED(mu_);

  // REQUIRES (all): `tenant` is live and the close gate held.
  Status CreateTable(const TenantState& tenant, std::string_view name, Schema schema)
      LOCKS_EXCLUDED(mu_);
  Result<std::shared_ptr<TableState>> FindTable(const TenantState& tenant,
                                                std::string_view name) const LOCKS_EXCLUDED(mu_);
  std::vector<std::string> ListTables(const TenantState& tenant) const LOCKS_EXCLUDED(mu_);
  // Drops the table, which goes to *dropped. REQUIRES: the close gate held
  // exclusively.
  Status DropTable(const TenantState& tenant, std::string_view name,
                   std::vector<std::shared_ptr<TableState>>* dropped) LOCKS_EXCLUDED(mu_);
  // Records `schema` as the table's (engine/alter_table.h), made at
  // `sequence`: adds group slots to every tablet, swaps the schema in and
  // sets each group's `resident` flag from its in_memory option. The files
  // of groups whose flag changed go to *residency (number → file and new
  // flag), for the caller to pin or let go. REQUIRES: the close gate held
  // exclusively and the log synced up to `sequence`.
  Status AlterTable(TableState* table, std::shared_ptr<const Schema> schema,
                    SequenceNumber sequence,
                    std::map<uint64_t, std::pair<std::shared_ptr<TableFile>, bool>>* residency)
      LOCKS_EXCLUDED(mu_);

  // ---- Tablets and their groups ----

  // The groups of every live tablet.
  std::vector<LocalityGroupState*> AllGroups() const LOCKS_EXCLUDED(mu_);
  // The tablet's groups as they are now (the list may grow).
  std::vector<LocalityGroupState*> GroupsOf(const TabletState& tablet) const LOCKS_EXCLUDED(mu_);
  // The groups of every table of the tenant.
  std::vector<LocalityGroupState*> TenantGroups(uint64_t tenant_id) const LOCKS_EXCLUDED(mu_);
  // Calls fn for every live tablet, under the catalog mutex (fn may read
  // the tablet's groups and take their mutexes, nothing else).
  void ForEachTablet(const std::function<void(TabletState*)>& fn) const LOCKS_EXCLUDED(mu_);
  // Splits `tablet` at `split_row` (a row strictly inside it) with one edit:
  // the parent retired, two children sharing its files, the flushed
  // sequences. *split says whether it was recorded; then the parent's views
  // are emptied. REQUIRES: the close gate held exclusively, the tablet's
  // memtables flushed. (engine/split.h)
  Status SplitTablet(TabletState* tablet, const std::string& split_row, bool* split)
      LOCKS_EXCLUDED(mu_);

  // ---- Files ----

  // A new file number, drawn from the catalog's id counter.
  uint64_t NewFileNumber() LOCKS_EXCLUDED(mu_);
  // Records the flush of `imm`, the group's oldest immutable memtable, into
  // the level-0 file `meta` (meta.entries == 0: no file), pinned or not, with
  // `visible` as the last sequence, then shows it: the memtable leaves the
  // view and the file enters level 0. *recorded is false when the table was
  // dropped or the tablet split away before the edit (the file is
  // discarded) or the edit failed (the file is kept for the next open to
  // judge); *popped says whether the memtable left the view (a drop after
  // the edit may have emptied it, and the file is discarded). A pin error is
  // returned once the file is shown.
  Status InstallFlush(LocalityGroupState* group, const ImmutableMemTable& imm,
                      const FileMeta& meta, bool pinned, SequenceNumber visible, bool* recorded,
                      bool* popped) LOCKS_EXCLUDED(mu_);
  // Records a trivial move of the compaction's one input a level down and
  // shows it. *moved is false when the table was dropped or the tablet split
  // away: before the edit, nothing is recorded; after it, the emptied view
  // is left as it is.
  Status InstallTrivialMove(const Compaction& c, bool* moved) LOCKS_EXCLUDED(mu_);
  // Records that `outputs` (pinned or not) replace the compaction's inputs,
  // and shows them. *installed is false when they belong to no table any
  // more, or the edit failed; outputs nobody will keep are discarded (those
  // of a failed append stay for the next open to judge). A pin error is
  // returned once the outputs are shown.
  Status InstallCompaction(const Compaction& c, const std::vector<FileMeta>& outputs,
                           bool pinned, bool* installed) LOCKS_EXCLUDED(mu_);

  // ---- Per-tenant counts ----

  // Recounts each tenant's level-0 files (its fullest group's) into its
  // budget and the engine-wide maximum.
  void RefreshLevel0Files() LOCKS_EXCLUDED(mu_);
  uint64_t max_level0_files() const { return max_level0_files_.load(std::memory_order_relaxed); }
  // Recounts every tenant's live SSTable bytes from the current views.
  void RefreshSstableBytes() LOCKS_EXCLUDED(mu_, disk_usage_mu_);

  // Adds the live tablets, memtable bytes and files (by level, a file shared
  // by split tablets once) to *stats.
  void AddCatalogStats(EngineStats* stats) const LOCKS_EXCLUDED(mu_);

  // ---- Errors ----

  // Whether a manifest append failed; then error() says how.
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  Status error() const LOCKS_EXCLUDED(error_mu_);

 private:
  // Builds the runtime state of a table from its catalog entry.
  std::shared_ptr<TableState> MakeTable(const VersionEdit::NewTable& table,
                                        const std::vector<VersionEdit::NewTablet>& tablets) const;
  // Appends `edit` to the manifest and applies it to catalog_. A failed
  // append other than a refused edit (InvalidArgument, nothing written)
  // leaves the manifest's tail unknown: the edit may be in the file, so
  // failed() turns true at once, before the caller's error lets any more
  // writes in, until the engine is reopened.
  Status LogAndApply(const VersionEdit& edit) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the tablet's table was dropped or the tablet split away: then
  // nothing may be recorded for it.
  bool Stale(const TabletState& tablet) const EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks dropped tables and removes their tablets from background work, in
  // the critical section that records the drop, so no flush or compaction
  // records a file for them afterwards.
  void UnlinkTables(const std::vector<std::shared_ptr<TableState>>& tables)
      EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* const fs_;
  const std::string dir_;
  const uint64_t write_buffer_size_;
  ResourceGovernor* const governor_;
  LiveFiles* const files_;

  mutable Mutex mu_;
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
  // Every live tablet by id, for log replay and background work.
  std::unordered_map<uint64_t, TabletState*> tablets_by_id_ GUARDED_BY(mu_);

  // Level-0 files of the fullest group, refreshed after each background job.
  // Relaxed: statistics and, per tenant, a backpressure hint; waiting
  // re-checks the tenant's count under the engine's background mutex, which
  // is signalled after each refresh.
  std::atomic<uint64_t> max_level0_files_{0};
  // Held by RefreshSstableBytes, which runs on background threads and after
  // drops: one at a time, so an older count never overwrites a newer one.
  Mutex disk_usage_mu_;

  // Set once error_ is; writes then fail fast. Relaxed: a flag checked on
  // the write path; the error itself is read under its mutex.
  std::atomic<bool> failed_{false};
  mutable Mutex error_mu_;
  // The first failed manifest append.
  Status error_ GUARDED_BY(error_mu_);
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_VERSION_SET_H_
