// Engine: one Strata database in one directory, and Tenant: an isolated
// namespace of tables inside it.
//
// An Engine is opened once per directory (a lock file stops a second open,
// from this process or another, while the first is open). Every change is
// logged before it is applied, and reopening replays the log, so a crash loses
// no acknowledged write.
//
// Engine and Tenant are thread-safe. Tenant handles are cheap to copy and
// outlive the engine safely: after Close every call returns an error.
#ifndef STRATA_ENGINE_H_
#define STRATA_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/latency_histogram.h"
#include "strata/options.h"
#include "strata/status.h"
#include "strata/table.h"

namespace strata {

namespace engine {
struct TenantState;
}  // namespace engine

// Counters and gauges of one tenant (Tenant::GetStats). Totals are since
// the engine was opened; gauges are "now".
struct TenantStats {
  uint64_t bytes_written = 0;  // payload bytes of the row mutations applied (see TenantOptions)
  uint64_t row_writes = 0;     // row mutations applied: Mutate, and rows CheckAndMutate wrote
  uint64_t row_reads = 0;      // ReadRow calls answered
  uint64_t scans = 0;          // Scan calls answered
  // Writes that waited on the tenant's write_rate_limit, and the waits the
  // limiter asked for.
  uint64_t rate_limit_stalls = 0;
  uint64_t rate_limit_stall_micros = 0;
  // Writes that waited because the tenant's immutable memtables held more
  // than its memtable share (its flushes fell behind), counted when the wait
  // starts, and the time spent in waits that ended.
  uint64_t memtable_stalls = 0;
  uint64_t memtable_stall_micros = 0;
  uint64_t early_flushes = 0;     // memtables switched because the tenant was over its share
  uint64_t quota_rejections = 0;  // writes refused by the disk quota
  uint64_t memtable_bytes = 0;    // memtable data now, active and immutable
  uint64_t immutable_memtable_bytes = 0;  // of which waiting for or in a flush
  uint64_t memtable_share = 0;            // the tenant's share of total_write_buffer_size now
  uint64_t sstable_bytes = 0;      // live SSTables now (refreshed after each flush and compaction)
  uint64_t block_cache_bytes = 0;  // block cache bytes charged to the tenant now
};

class Tenant {
 public:
  // An empty handle; every call on it returns InvalidArgument. Once the
  // tenant is dropped, every call returns NotFound.
  Tenant() = default;

  std::string name() const;

  // Creates a table. Errors: InvalidArgument for a bad name or schema (no
  // families, duplicate or badly formed names, a family naming an unknown
  // group), AlreadyExists when the name is taken.
  Status CreateTable(std::string_view name, const TableSchema& schema);
  // Changes a table's schema to `new_schema`, the whole new schema in the
  // form CreateTable takes (Table::GetSchema gives the current one to edit).
  // Locality groups are matched by name, families by name. It may:
  //   - add column families, to groups the table has or to new ones;
  //   - add locality groups, and change a group's options: compression,
  //     compression_level, block_size and bloom_bits_per_key apply to the
  //     files flushes and compactions write from then on, write_buffer_size
  //     to the group's memtables from the next write on; in_memory turned
  //     on makes the group's files resident before the call returns (reads
  //     of the group then never touch the disk), turned off lets them go;
  //   - remove a family, or move it to another group, only while it holds
  //     no data: no cell and no delete marker of it in any memtable or file
  //     of any tablet (delete its cells, then Engine::Compact drops them and
  //     their markers). Writes naming a removed family then fail with
  //     InvalidArgument, as for a family the table never had;
  //   - remove a locality group once no family is left in it and it holds
  //     nothing (row-delete markers count; Engine::Compact drops the ones
  //     nothing needs).
  // Cells come back ordered by family in schema order, which a change
  // cannot rearrange: `new_schema` must list the families the table keeps
  // in their present order, then the new ones, which go after them. Groups
  // may be listed in any order. A family a group "default" is implied for
  // (no group named, none listed) keeps the default group's options.
  // The change is one manifest edit: after a crash the table has the old
  // schema or the new one. Waits for calls in flight on the engine, like
  // DropTable; a write is checked against the schema before or after the
  // change, never a mix. Handles of the table see the new schema at once;
  // an iterator keeps the schema of its Scan call. A new_schema equal to the
  // current one changes nothing.
  // A family's column_markers_hide_by_timestamp is its own for life: the
  // family's data was written under its rule.
  // Errors, with nothing changed: InvalidArgument for a bad name or schema
  // (as CreateTable), a reordering of families, or a change of a kept
  // family's column_markers_hide_by_timestamp; NotFound when there is no
  // such table; FailedPrecondition, naming the family or group, when a
  // family or group to be removed or moved holds data. An error loading an
  // in-memory group's files comes after the change is made and says so.
  Status AlterTable(std::string_view name, const TableSchema& new_schema);
  // Installs `filter` (null: none) as the compaction filter of the tenant's
  // tables, in place of EngineOptions::compaction_filter, from the next
  // compaction on. Kept in memory only: install it again after each open.
  // The MVCC garbage collector (strata/gc.h) installs its own.
  Status SetCompactionFilter(std::shared_ptr<CompactionFilter> filter);
  // NotFound when there is no such table.
  Result<Table> OpenTable(std::string_view name) const;
  // Names of the tenant's tables, sorted.
  Result<std::vector<std::string>> ListTables() const;
  // Drops a table and all its data; its files are deleted once no read in
  // progress holds them. Waits for calls in flight on the engine. Handles
  // of the table then get NotFound; the name may be used again.
  Status DropTable(std::string_view name);

  // The tenant's counters and gauges.
  Result<TenantStats> GetStats() const;

 private:
  friend class Engine;
  Tenant(std::shared_ptr<engine::EngineCore> core, std::shared_ptr<engine::TenantState> state)
      : core_(std::move(core)), state_(std::move(state)) {}

  std::shared_ptr<engine::EngineCore> core_;
  std::shared_ptr<engine::TenantState> state_;
};

// Counters for monitoring and benchmarks. All are totals since open.
struct EngineStats {
  uint64_t writes = 0;                    // row mutations applied
  uint64_t cells_written = 0;             // entries of those mutations
  uint64_t wal_groups = 0;                // group commits
  uint64_t wal_syncs = 0;                 // fdatasyncs of the log
  uint64_t wal_bytes = 0;                 // bytes written to the log
  uint64_t memtable_bytes = 0;            // memory held by memtables now
  uint64_t flushes = 0;                   // memtables written to SSTables
  uint64_t compactions = 0;               // compactions finished
  uint64_t flush_bytes_written = 0;       // SSTable bytes written by flushes
  uint64_t compaction_bytes_read = 0;     // SSTable bytes read by compactions
  uint64_t compaction_bytes_written = 0;  // SSTable bytes written by compactions
  uint64_t table_files = 0;               // SSTables live now
  uint64_t table_bytes = 0;               // their size on disk
  std::vector<uint64_t> level_files;      // live SSTables per level (0 = newest), all groups
  // Newest sequence number applied; with apply_before_sync it may belong to
  // a synced write whose fdatasync is still running (reads that meet it wait).
  uint64_t last_sequence = 0;
  bool wal_uses_io_uring = false;
  uint64_t trivial_moves = 0;        // files moved down a level without a rewrite
  uint64_t write_slowdowns = 0;      // writes delayed 1 ms by level-0 backpressure
  uint64_t write_stops = 0;          // writes that waited for level 0 to shrink
  uint64_t write_stall_micros = 0;   // time writes spent in these and memtable stops
  uint64_t max_level0_files = 0;     // level-0 files of the fullest group now
  uint64_t memtable_stops = 0;       // writes that waited for a flush (max_immutable_memtables)
  uint64_t immutable_memtables = 0;  // full memtables waiting for or in a flush now
  // Reads that met a synced write applied before its fdatasync
  // (EngineOptions::apply_before_sync) and waited for that fdatasync (or
  // found it done when they looked).
  uint64_t durable_read_waits = 0;
  uint64_t compaction_rate_limit_wait_micros = 0;  // time compactions slept on the rate limit
  uint64_t tablets = 0;                            // tablets of every table now
  uint64_t tablet_splits = 0;                      // splits done
  // Latencies: of each synced log group, from the start of its write to the
  // end of its fdatasync (what a synced write waits for, besides its queue);
  // of each flush, from its start to its manifest edit; of each compaction
  // that rewrote files (trivial moves left out).
  LatencyHistogram log_sync_latency;
  LatencyHistogram flush_latency;
  LatencyHistogram compaction_latency;
};

class Engine {
 public:
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  // Closes the engine if Close was not called.
  ~Engine();

  // Opens (or, with options.create_if_missing, creates) the engine in `dir`
  // and recovers every acknowledged write from its log.
  static Result<std::unique_ptr<Engine>> Open(const std::string& dir,
                                              const EngineOptions& options = EngineOptions());

  // Creates a tenant: 1 to 64 bytes of [A-Za-z0-9_.-]. AlreadyExists if taken.
  Status CreateTenant(std::string_view name);
  // The same with a resource budget; InvalidArgument for a weight outside
  // [1, 10000].
  Status CreateTenant(std::string_view name, const TenantOptions& options);
  // Replaces a tenant's budget; it is logged in the manifest and takes effect
  // for the next write. NotFound when there is no such tenant.
  Status SetTenantOptions(std::string_view name, const TenantOptions& options);
  Result<TenantOptions> GetTenantOptions(std::string_view name) const;
  Result<Tenant> OpenTenant(std::string_view name) const;
  Result<std::vector<std::string>> ListTenants() const;
  // Drops a tenant with every table it holds (see Tenant::DropTable).
  // NotFound when there is no such tenant.
  Status DropTenant(std::string_view name);

  EngineStats GetStats() const;

  // Writes every memtable that holds data to an SSTable and waits until all
  // are durable, so their log segments can be released. A Close meanwhile
  // ends the wait (InvalidArgument: closed); what was not flushed is still
  // in the log.
  Status Flush();

  // Flushes, then compacts every level down into the deepest level that
  // holds data, so each key is in one file and every version and delete
  // marker nothing can see any more is gone; waits. This rewrites all the
  // data. Compactions also run on their own in the background. A Close
  // meanwhile ends the wait (InvalidArgument: closed); the work done so far
  // is kept.
  Status Compact();

  // Waits for writes in flight, syncs and closes the log and releases the
  // directory lock. Later calls on this engine or its handles fail with
  // InvalidArgument. Returns the first error met while closing.
  Status Close();

 private:
  explicit Engine(std::shared_ptr<engine::EngineCore> core) : core_(std::move(core)) {}
  std::shared_ptr<engine::EngineCore> core_;
};

}  // namespace strata

#endif  // STRATA_ENGINE_H_
