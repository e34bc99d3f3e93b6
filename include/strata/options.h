// Options for every scope of the Strata API: the engine, a table's schema,
// reads and writes. Every field has a default that suits most users and a
// sentence on its trade-off.
//
// Plain value types; thread-compatible. Intentionally copyable.
#ifndef STRATA_OPTIONS_H_
#define STRATA_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata {

class CompactionFilter;
class FileSystem;  // strata/file_system.h

// Timestamps 0 and UINT64_MAX are reserved; a cell's timestamp lies in
// [kMinTimestamp, kMaxTimestamp]. Pass kMaxTimestamp to a range delete to
// cover every version.
constexpr uint64_t kMinTimestamp = 1;
constexpr uint64_t kMaxTimestamp = UINT64_MAX - 1;

// How much of a damaged log tail recovery accepts on open. In every mode, a
// log that lost its oldest segments (it begins after what recovery needs) is
// Corruption; in the first two, so is a log without the segment the manifest
// names as its newest (engine/MANIFEST.md, "The log's segments").
enum class WalRecoveryMode {
  // An incomplete or corrupt record at the very end of the log (a write torn
  // by a crash) is dropped; damage anywhere before it fails the open.
  kTolerateTornTail,
  // Any incomplete or corrupt record fails the open.
  kAbsoluteConsistency,
  // Recovery stops at the first bad record and keeps everything before it,
  // and whatever flushes had already written to tables (the log may be cut
  // below that; later writes are numbered above it). A missing newest
  // segment is accepted like a cut.
  kPointInTime,
};

// How the engine's background threads (flush, compaction, tablet splits) are
// scheduled on Linux. Measurements are in engine/README.md ("Compaction").
enum class BackgroundPriority : uint8_t {
  // Like any other thread of the process.
  kNormal = 0,
  // SCHED_BATCH: a flush or compaction that wakes waits for the end of the
  // running thread's time slice instead of preempting it; same CPU share.
  kBatch = 1,
  // kBatch at the lowest priority (nice 19): foreground calls go first
  // whenever every CPU is busy.
  kLow = 2,
};

struct EngineOptions {
  // Create the directory and an empty engine when there is none; off makes a
  // typo in the path an error. A directory with no MANIFEST whose sst/ or
  // wal/ holds files is Corruption, never taken for an empty one.
  bool create_if_missing = true;
  // Fail when the directory already holds an engine.
  bool error_if_exists = false;

  // Write the log through io_uring (linked write + fdatasync, registered
  // buffers). Off, or when the kernel refuses a ring, uses pwritev +
  // fdatasync. With apply_before_sync on, the ring still writes, but a
  // synced group's fdatasync is issued directly (engine/README.md says why).
  bool use_io_uring = true;
  // Let a synced write reach the memtables once it is in the log, before
  // its fdatasync, so unsynced writes behind it (a transaction's prewrites)
  // need not wait for that fdatasync. Writers are still answered, and reads
  // that meet the write still wait, until it is durable; recommended for
  // synced transactions (txn/README.md).
  bool apply_before_sync = false;
  // Size of each preallocated log segment, a positive multiple of 32 KiB.
  // Larger segments mean fewer file switches; smaller ones free disk sooner
  // after a flush.
  uint64_t wal_segment_size = 64ull << 20;
  // Reuse released log segments instead of creating new files, so most
  // fdatasyncs do not also have to commit file-size metadata.
  bool recycle_wal_segments = true;
  WalRecoveryMode wal_recovery_mode = WalRecoveryMode::kTolerateTornTail;

  // A locality group's memtable is flushed to an SSTable once it holds this
  // many bytes. Larger means fewer, larger level-0 files and longer recovery.
  size_t write_buffer_size = 32 << 20;
  // Bytes of uncompressed SSTable blocks cached in memory, shared by every
  // tenant (index and filter blocks of open tables are held apart). Point
  // reads fill it; a scan adds at most a quarter of it between one seek and
  // the next (then reads past it), so one long scan leaves most of what
  // point reads and other scans cached; compactions use what it holds but
  // add nothing.
  size_t block_cache_size = 64 << 20;
  // SSTables kept open at once (each holds a descriptor, its index and filter).
  size_t max_open_tables = 1000;

  // Level-0 files of one locality group of one tablet that start a
  // compaction into level 1. Lower keeps reads cheaper; higher writes less.
  int level0_compaction_trigger = 4;
  // Write backpressure, by the level-0 files of the writing tenant's fullest
  // group: from the slowdown trigger on each of its writes waits 1 ms, and at
  // the stop trigger its writes wait for compaction; other tenants write on.
  int level0_slowdown_trigger = 20;
  int level0_stop_trigger = 36;
  // Bytes allowed in level 1 of a locality group; each deeper level holds 10x
  // the one above. Larger levels mean fewer compactions but more work each.
  uint64_t level1_max_bytes = 64ull << 20;
  // Compaction output is cut into files of about this size. From half of
  // it up, an output also ends where a file of the level below it ends.
  uint64_t target_file_size = 32ull << 20;
  // Compactions that may run at once, each on its own thread (flushes have
  // their own). More lets independent groups and levels compact in parallel
  // at the cost of CPU and disk bandwidth.
  int max_background_compactions = 1;
  // Bytes per second that all compactions together may write; 0 = no limit.
  // A limit leaves disk bandwidth to foreground calls, at the risk of level 0
  // piling up under heavy writes.
  uint64_t compaction_rate_limit = 0;
  // How the flush, compaction and split threads are scheduled against
  // foreground calls (BackgroundPriority). Lower priority keeps their
  // wakeups out of foreground tail latency, at the risk of flushes and
  // compactions falling behind, which writes then wait for.
  BackgroundPriority background_priority = BackgroundPriority::kBatch;
  // Memtable memory of the whole engine, split among tenants by their
  // TenantOptions::write_buffer_weight. A tenant over its share has its
  // largest memtable flushed early, and its writes wait while its immutable
  // memtables alone exceed it; lower bounds memory tighter at the cost of
  // smaller level-0 files.
  uint64_t total_write_buffer_size = 256ull << 20;
  // Full memtables of the whole engine that may wait for their flush. At
  // this many, the writes of tenants owning some of them wait for a flush
  // (EngineStats::memtable_stops), which bounds memory when flushing falls
  // behind.
  int max_immutable_memtables = 4;
  // A tablet splits in two at a row boundary once its SSTables (all groups)
  // hold more than this many bytes; 0 never splits. Smaller tablets keep
  // each compaction's range narrow.
  uint64_t tablet_split_size = 512ull << 20;
  // Sees every column's live versions during compaction, and may drop or
  // rewrite them (strata/compaction_filter.h); may be null.
  std::shared_ptr<CompactionFilter> compaction_filter;

  // Limits on what one write may carry, each between 1 and 1 GiB; larger
  // input is InvalidArgument. A cell must also fit in one SSTable block
  // (2 GiB less 1 MiB, encoded), which only limits near a gigabyte reach.
  size_t max_row_key_size = 16 << 10;
  size_t max_qualifier_size = 16 << 10;
  size_t max_value_size = 16 << 20;

  // The file system of every file the engine touches (strata/file_system.h);
  // nullptr = the local POSIX one. Must outlive the engine.
  FileSystem* file_system = nullptr;
};

// A tenant's resource budget inside its engine (Engine::CreateTenant,
// Engine::SetTenantOptions). Stored in the manifest, so it survives reopen.
struct TenantOptions {
  // The tenant's weight, 1 to 10000, in the split of
  // EngineOptions::total_write_buffer_size: share = total * weight / (sum of
  // all tenants' weights). A larger share means fewer, larger flushes for
  // this tenant and less memory for the others.
  uint32_t write_buffer_weight = 1;
  // Bytes per second of row-mutation payload (row key, family, qualifier and
  // value bytes of every entry) the tenant's writes may carry; 0 = no limit.
  // Writes over it wait, without slowing other tenants' writes.
  uint64_t write_rate_limit = 0;
  // Bytes of live SSTables plus memtable data the tenant may hold; 0 = no
  // quota. A write with a put that would pass it fails with
  // ResourceExhausted; deletes and drops still work, to free space.
  uint64_t disk_quota = 0;

  bool operator==(const TenantOptions&) const = default;
};

enum class Compression : uint8_t {
  kNone = 0,  // DO NOT CHANGE: stored in the manifest
  kZstd = 1,
};

// A locality group: the families in it share memtables and files, so a read
// of one group never touches another group's data.
struct LocalityGroupOptions {
  // 1 to 64 bytes of [A-Za-z0-9_.-].
  std::string name;
  // Keep all of the group's data resident: reads never wait for the disk.
  // Costs memory for as long as the table exists.
  bool in_memory = false;
  // zstd trades CPU on flush/compaction/read for smaller files.
  Compression compression = Compression::kNone;
  int compression_level = 3;
  // Larger blocks compress better and index smaller; smaller blocks make point reads cheaper.
  uint32_t block_size = 16 << 10;
  // Bloom filter bits per key; 10 gives about 1% false positives. 0 turns filters off.
  int bloom_bits_per_key = 10;
  // The group's memtable is flushed once it holds this many bytes (0, or
  // 4 KiB to 1 GiB; 0 = EngineOptions::write_buffer_size). A small one suits
  // small, often rewritten cells (locks written and erased): flushes drop
  // the erased versions, so reads of its rows walk a short history.
  uint64_t write_buffer_size = 0;
};

struct ColumnFamilyOptions {
  // 1 to 64 bytes of [A-Za-z0-9_.-].
  std::string name;
  // The locality group this family lives in; empty means the group "default",
  // which is created when some family needs it.
  std::string locality_group;
  // How a DeleteColumn at T hides the versions of its column. Off, as for
  // every delete: those at or below T written before it. On: also every
  // version below T written after it, so a read stops at the first column
  // marker it meets instead of walking the versions and markers below it.
  // The writer must never need a version it writes below a column marker
  // after that marker: it is hidden while the marker stands, but a flush or
  // compaction drops the marker once no older data may hold its row, as in
  // any family, and such a version then shows. Fixed when the family is
  // created: AlterTable refuses to change it.
  bool column_markers_hide_by_timestamp = false;
};

struct TableSchema {
  std::vector<LocalityGroupOptions> locality_groups;
  std::vector<ColumnFamilyOptions> families;
};

struct WriteOptions {
  // Acknowledge a write only once it is durable (in the log, fdatasynced).
  // Off is faster but a crash may lose writes the caller was told succeeded.
  bool sync = true;
};

struct ReadOptions {};

// A read session (strata/read_session.h): the versions its Gets return, and
// whether it prefetches.
struct ReadSessionOptions {
  // Only versions with min_timestamp <= timestamp <= max_timestamp (a
  // snapshot reader sets max_timestamp to its start timestamp).
  uint64_t min_timestamp = kMinTimestamp;
  uint64_t max_timestamp = kMaxTimestamp;
  // At most this many versions of each column, newest first.
  uint32_t max_versions = UINT32_MAX;
  // On a cache miss, fetch in the same pass the columns of the row that the
  // table's past sessions read along with the one asked for. Costs a
  // slightly slower miss and memory for columns that may go unread.
  bool prefetch = true;
};

}  // namespace strata

#endif  // STRATA_OPTIONS_H_
