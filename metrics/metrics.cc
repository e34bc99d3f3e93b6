// RenderMetrics: what each source's GetStats reports, as metric families
// (metrics/README.md lists them).
#include "strata/metrics.h"

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "metrics/exposition.h"
#include "txn/timestamp.h"

namespace strata {
namespace {

using metrics::Exposition;
using metrics::Labels;

// A cause of TransactionStats::failed as a label value.
const char* FailureLabel(TransactionError::Kind kind) {
  using K = TransactionError::Kind;
  switch (kind) {
    case K::kNone:
      return "none";
    case K::kWriteConflict:
      return "write_conflict";
    case K::kKeyLocked:
      return "key_locked";
    case K::kAbortedByOlder:
      return "aborted_by_older";
    case K::kRolledBack:
      return "rolled_back";
    case K::kTooOld:
      return "too_old";
    case K::kCoordinatorDead:
      return "coordinator_dead";
    case K::kUnknownOutcome:
      return "unknown_outcome";
    case K::kStorage:
      return "storage";
    case K::kDeadlock:
      return "deadlock";
    case K::kLockWaitTimeout:
      return "lock_wait_timeout";
  }
  return "other";
}

// A timestamp's physical part in seconds since 1970 (txn/FORMAT.md).
double TimestampSeconds(uint64_t ts) {
  return static_cast<double>(txn::PhysicalMillis(ts)) / 1000.0;
}

void AddEngine(const EngineStats& s, Exposition* x) {
  const Labels none;
  x->Counter("strata_engine_writes_total", "Row mutations applied.", none, s.writes);
  x->Counter("strata_engine_cells_written_total", "Entries of the row mutations applied.", none,
             s.cells_written);
  x->Counter("strata_engine_log_groups_total", "Group commits of the write-ahead log.", none,
             s.wal_groups);
  x->Counter("strata_engine_log_syncs_total", "fdatasync calls on the write-ahead log.", none,
             s.wal_syncs);
  x->Counter("strata_engine_log_written_bytes_total", "Bytes written to the write-ahead log.", none,
             s.wal_bytes);
  x->Gauge("strata_engine_log_uses_io_uring", "1 when the log writes through io_uring.", none,
           s.wal_uses_io_uring ? 1 : 0);
  x->Gauge("strata_engine_last_sequence", "Newest sequence number applied.", none, s.last_sequence);
  x->Gauge("strata_engine_memtable_bytes", "Memory held by memtables.", none, s.memtable_bytes);
  x->Gauge("strata_engine_immutable_memtables", "Full memtables waiting for or in a flush.", none,
           s.immutable_memtables);
  x->Counter("strata_engine_flushes_total", "Memtables written to SSTables.", none, s.flushes);
  x->Counter("strata_engine_flush_written_bytes_total", "SSTable bytes written by flushes.", none,
             s.flush_bytes_written);
  x->Counter("strata_engine_compactions_total", "Compactions that rewrote files.", none,
             s.compactions);
  x->Counter("strata_engine_trivial_moves_total", "Files moved down a level without a rewrite.",
             none, s.trivial_moves);
  x->Counter("strata_engine_compaction_read_bytes_total", "SSTable bytes read by compactions.",
             none, s.compaction_bytes_read);
  x->Counter("strata_engine_compaction_written_bytes_total",
             "SSTable bytes written by compactions.", none, s.compaction_bytes_written);
  x->CounterSeconds("strata_engine_compaction_rate_limit_wait_seconds_total",
                    "Time compactions slept on the compaction rate limit.", none,
                    s.compaction_rate_limit_wait_micros);
  x->Gauge("strata_engine_table_files", "Live SSTables.", none, s.table_files);
  x->Gauge("strata_engine_table_bytes", "Size on disk of the live SSTables.", none, s.table_bytes);
  for (size_t level = 0; level < s.level_files.size(); level++) {
    x->Gauge("strata_engine_level_files", "Live SSTables per level, all locality groups.",
             {{"level", std::to_string(level)}}, s.level_files[level]);
  }
  x->Gauge("strata_engine_max_level0_files", "Level-0 files of the fullest locality group.", none,
           s.max_level0_files);
  x->Counter("strata_engine_write_slowdowns_total", "Writes delayed by level-0 backpressure.", none,
             s.write_slowdowns);
  x->Counter("strata_engine_write_stops_total", "Writes that waited for level 0 to shrink.", none,
             s.write_stops);
  x->Counter("strata_engine_memtable_stops_total", "Writes that waited for a flush.", none,
             s.memtable_stops);
  x->CounterSeconds("strata_engine_write_stall_seconds_total",
                    "Time writes spent in slowdowns and stops.", none, s.write_stall_micros);
  x->Counter("strata_engine_durable_read_waits_total",
             "Reads that waited for the fdatasync of a write applied before it.", none,
             s.durable_read_waits);
  x->Gauge("strata_engine_tablets", "Tablets of every table.", none, s.tablets);
  x->Counter("strata_engine_tablet_splits_total", "Tablet splits done.", none, s.tablet_splits);
  x->Histogram("strata_engine_log_sync_seconds",
               "Synced log groups, from the start of the write to the end of the fdatasync.", none,
               s.log_sync_latency);
  x->Histogram("strata_engine_flush_seconds", "Flushes, from the start to the manifest edit.", none,
               s.flush_latency);
  x->Histogram("strata_engine_compaction_seconds", "Compactions that rewrote files.", none,
               s.compaction_latency);
}

void AddTenant(const std::string& name, const TenantStats& s, Exposition* x) {
  const Labels t = {{"tenant", name}};
  x->Counter("strata_tenant_written_bytes_total", "Payload bytes of the row mutations applied.", t,
             s.bytes_written);
  x->Counter("strata_tenant_row_writes_total", "Row mutations applied.", t, s.row_writes);
  x->Counter("strata_tenant_row_reads_total", "ReadRow calls answered.", t, s.row_reads);
  x->Counter("strata_tenant_scans_total", "Scan calls answered.", t, s.scans);
  x->Counter("strata_tenant_rate_limit_stalls_total",
             "Writes that waited on the tenant's write rate limit.", t, s.rate_limit_stalls);
  x->CounterSeconds("strata_tenant_rate_limit_stall_seconds_total",
                    "Time the write rate limit asked writes to wait.", t,
                    s.rate_limit_stall_micros);
  x->Counter("strata_tenant_memtable_stalls_total",
             "Writes that waited because the tenant's flushes fell behind.", t, s.memtable_stalls);
  x->CounterSeconds("strata_tenant_memtable_stall_seconds_total",
                    "Time spent in those waits, once ended.", t, s.memtable_stall_micros);
  x->Counter("strata_tenant_early_flushes_total",
             "Memtables switched because the tenant was over its share.", t, s.early_flushes);
  x->Counter("strata_tenant_quota_rejections_total", "Writes refused by the disk quota.", t,
             s.quota_rejections);
  x->Gauge("strata_tenant_memtable_bytes", "Memtable data, active and immutable.", t,
           s.memtable_bytes);
  x->Gauge("strata_tenant_immutable_memtable_bytes", "Memtable data waiting for or in a flush.", t,
           s.immutable_memtable_bytes);
  x->Gauge("strata_tenant_memtable_share_bytes", "The tenant's share of the memtable budget.", t,
           s.memtable_share);
  x->Gauge("strata_tenant_sstable_bytes", "Live SSTables of the tenant.", t, s.sstable_bytes);
  x->Gauge("strata_tenant_block_cache_bytes", "Block cache bytes charged to the tenant.", t,
           s.block_cache_bytes);
}

void AddTable(const std::string& tenant, const std::string& name,
              const std::vector<TabletStats>& tablets, const ReadStats& reads, Exposition* x) {
  const Labels t = {{"tenant", tenant}, {"table", name}};
  uint64_t memtable = 0, files = 0, bytes = 0;
  for (const TabletStats& s : tablets) {
    memtable += s.memtable_bytes;
    files += s.table_files;
    bytes += s.table_bytes;
  }
  x->Gauge("strata_table_tablets", "Tablets of the table.", t, tablets.size());
  x->Gauge("strata_table_memtable_bytes", "Memtable data of the table, all groups.", t, memtable);
  x->Gauge("strata_table_files", "SSTables of the table, all groups.", t, files);
  x->Gauge("strata_table_bytes",
           "Size on disk of the table's SSTables (a file shared by split siblings counts in "
           "each).",
           t, bytes);
  x->Counter("strata_table_read_sessions_total", "Read sessions of the table that ended.", t,
             reads.sessions);
  x->Counter("strata_table_read_session_gets_total", "Get calls of those sessions.", t, reads.gets);
  x->Counter("strata_table_read_session_cache_hits_total", "Gets answered from the cache.", t,
             reads.cache_hits);
  x->Counter("strata_table_read_session_lookups_total", "Storage lookups of those sessions.", t,
             reads.lookups);
  x->Counter("strata_table_read_session_prefetched_columns_total", "Columns fetched by prediction.",
             t, reads.prefetched_columns);
  x->Counter("strata_table_read_session_prefetch_hits_total",
             "Prefetched columns a Get then asked for.", t, reads.prefetch_hits);
}

Status AddEngineTree(const Engine& engine, Exposition* x) {
  AddEngine(engine.GetStats(), x);
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, engine.ListTenants());
  for (const std::string& name : names) {
    Result<Tenant> tenant = engine.OpenTenant(name);
    if (!tenant.ok()) continue;  // dropped meanwhile
    Result<TenantStats> stats = tenant->GetStats();
    if (!stats.ok()) continue;
    AddTenant(name, *stats, x);
    Result<std::vector<std::string>> table_names = tenant->ListTables();
    if (!table_names.ok()) continue;
    for (const std::string& table_name : *table_names) {
      Result<Table> table = tenant->OpenTable(table_name);
      if (!table.ok()) continue;
      Result<std::vector<TabletStats>> tablets = table->GetTabletStats();
      Result<ReadStats> reads = table->GetReadStats();
      if (!tablets.ok() || !reads.ok()) continue;
      AddTable(name, table_name, *tablets, *reads, x);
    }
  }
  return Status::OK();
}

void AddTransactions(const std::string& tenant, const TransactionStats& s, Exposition* x) {
  const Labels t = {{"tenant", tenant}};
  auto with = [&](const char* name, const char* value) {
    Labels l = t;
    l.emplace_back(name, value);
    return l;
  };
  x->Counter("strata_txn_begun_total", "Transactions begun.", t, s.begun);
  const char* commits_help = "Transactions committed, by how.";
  x->Counter("strata_txn_commits_total", commits_help, with("kind", "two_phase"),
             s.committed_two_phase);
  x->Counter("strata_txn_commits_total", commits_help, with("kind", "one_phase"),
             s.committed_one_phase);
  x->Counter("strata_txn_commits_total", commits_help, with("kind", "read_only"),
             s.committed_read_only);
  x->Counter("strata_txn_rollbacks_total", "Rollback calls on open transactions.", t,
             s.rolled_back);
  for (size_t k = 1; k < s.failed.size(); k++) {
    x->Counter("strata_txn_failures_total", "Transactions that failed, by cause.",
               with("cause", FailureLabel(static_cast<TransactionError::Kind>(k))), s.failed[k]);
  }
  x->Counter("strata_txn_lock_wait_sleeps_total",
             "Backoff sleeps of reads and prewrites waiting for an older transaction's lock.", t,
             s.lock_wait_sleeps);
  x->Counter("strata_txn_pessimistic_lock_waits_total",
             "GetForUpdate calls that queued for a key another transaction held.", t,
             s.pessimistic_lock_waits);
  const char* resolved_help = "Other transactions' locks resolved on the way, by outcome.";
  x->Counter("strata_txn_locks_resolved_total", resolved_help, with("outcome", "rolled_forward"),
             s.locks_rolled_forward);
  x->Counter("strata_txn_locks_resolved_total", resolved_help, with("outcome", "rolled_back"),
             s.locks_rolled_back);
  x->Counter("strata_txn_commits_pushed_total",
             "Reads that met a live transaction's lock and left its commit above their snapshot.",
             t, s.commits_pushed);
  x->Counter("strata_txn_background_commit_failures_total",
             "Background secondary-commit batches the store failed.", t,
             s.background_commit_failures);
  x->Histogram("strata_txn_commit_seconds", "Commit calls that succeeded with writes.", t,
               s.commit_latency);
  x->Histogram("strata_txn_pessimistic_lock_wait_seconds", "Pessimistic lock waits.", t,
               s.pessimistic_lock_wait_latency);
}

void AddGc(const std::string& tenant, const GcStats& s, Exposition* x) {
  const Labels t = {{"tenant", tenant}};
  x->GaugeSeconds("strata_gc_safepoint_timestamp_seconds",
                  "Wall-clock time of the GC safepoint (reads must be at or above it).", t,
                  TimestampSeconds(s.safepoint));
  x->GaugeSeconds("strata_gc_collected_safepoint_timestamp_seconds",
                  "Wall-clock time below which collection is complete.", t,
                  TimestampSeconds(s.collected_safepoint));
  x->GaugeSeconds("strata_gc_lag_seconds",
                  "How far the safepoint trailed the oracle's clock at the last round's end.", t,
                  static_cast<double>(s.lag_millis) / 1000.0);
  x->Counter("strata_gc_rounds_total", "Rounds completed.", t, s.rounds);
  x->Counter("strata_gc_locks_resolved_total", "Locks below a safepoint rolled forward or back.", t,
             s.locks_resolved);
  x->Counter("strata_gc_locks_unresolvable_total", "Locks whose primary's table is gone.", t,
             s.locks_unresolvable);
  x->Counter("strata_gc_tasks_done_total", "Row ranges collected.", t, s.tasks_done);
  x->Counter("strata_gc_tasks_skipped_total",
             "Row ranges a round cut off by a restart had collected already.", t, s.tasks_skipped);
  x->Counter("strata_gc_rows_examined_total", "Rows examined.", t, s.rows_examined);
  x->Counter("strata_gc_rows_collected_total", "Rows that lost versions.", t, s.rows_collected);
  x->Counter("strata_gc_versions_dropped_total", "Commit, rollback, lock and ack records removed.",
             t, s.versions_dropped);
  x->Counter("strata_gc_data_cells_dropped_total", "Values removed with their records.", t,
             s.data_cells_dropped);
  x->Counter("strata_gc_versions_dropped_in_compaction_total",
             "Records compactions removed through the collector's filter.", t,
             s.versions_dropped_in_compaction);
}

void AddObservers(const std::string& tenant, const ObserverStats& s, Exposition* x) {
  const Labels t = {{"tenant", tenant}};
  x->Counter("strata_observer_runs_total", "Observer transactions committed.", t, s.runs);
  x->Counter("strata_observer_collapsed_total",
             "Notifications a run handled besides its newest one.", t, s.collapsed);
  x->Counter("strata_observer_skipped_total", "Notifications found acknowledged (no run).", t,
             s.skipped);
  x->Counter("strata_observer_aborted_total", "Runs whose transaction aborted (tried again).", t,
             s.aborted);
  x->Counter("strata_observer_failures_total", "Runs whose observer or store failed.", t,
             s.failures);
  x->Gauge("strata_observer_failing_cells", "Cells failing repeatedly now.", t, s.failing_cells);
  x->Gauge("strata_observer_pending_notifications", "Notifications of observed columns pending.", t,
           s.pending);
  x->GaugeSeconds("strata_observer_oldest_pending_seconds",
                  "Age of the oldest pending notification.", t,
                  static_cast<double>(s.oldest_pending_millis) / 1000.0);
}

}  // namespace

Result<std::string> RenderMetrics(const MetricsSources& sources, MetricsFormat format) {
  std::set<std::string_view> names;
  for (const TenantMetricsSources& t : sources.tenants) {
    if (t.tenant.empty()) return Status::InvalidArgument("a tenant's metrics need its name");
    if (!names.insert(t.tenant).second) {
      return Status::InvalidArgument("two tenant entries named " + t.tenant +
                                     ": their series would clash");
    }
  }
  // Exposition keeps each family's samples together whatever the order of
  // the calls.
  Exposition x;
  if (sources.engine != nullptr) STRATA_RETURN_IF_ERROR(AddEngineTree(*sources.engine, &x));
  for (const TenantMetricsSources& t : sources.tenants) {
    if (t.transactions != nullptr) AddTransactions(t.tenant, t.transactions->GetStats(), &x);
    if (t.gc != nullptr) AddGc(t.tenant, t.gc->GetStats(), &x);
    if (t.observers != nullptr) AddObservers(t.tenant, t.observers->GetStats(), &x);
  }
  return format == MetricsFormat::kJson ? x.ToJson() : x.ToPrometheus();
}

Status WriteMetricsFile(const MetricsSources& sources, MetricsFormat format,
                        const std::string& path) {
  if (path.empty()) return Status::InvalidArgument("the metrics file needs a path");
  STRATA_ASSIGN_OR_RETURN(std::string text, RenderMetrics(sources, format));
  return WriteFileAtomically(FileSystem::Default(), path, text);
}

}  // namespace strata
