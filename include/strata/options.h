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
class FileSystem;

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

struct EngineOptions {
  // Create the directory and an empty engine when there is none. Off makes a
  // typo in the path an error instead of a new empty engine. A directory
  // with no MANIFEST whose sst/ or wal/ holds files is never taken for none:
  // opening it is Corruption, and nothing there is touched.
  bool create_if_missing = true;
  // Fail when the directory already holds an engine.
  bool error_if_exists = false;

  // Write the log through io_uring (linked write + fdatasync, registered
  // buffers). Off, or when the kernel refuses a ring, uses pwritev + fdatasync.
  bool use_io_uring = true;
  // A synced write goes into the memtables once it is in the log, before the
  // fdatasync that makes it durable, which then runs while later writes go
  // on: unsynced writes that come meanwhile (a transaction's prewrites) no
  // longer wait for it (bench/txn_bench: --apply_before_sync). Its writer is
  // answered once it is durable, and a read that meets it (ReadRow, Scan, a
  // read session, the conditions of CheckAndMutate) waits for that
  // fdatasync too: no reader sees a synced write that a crash could still
  // lose, with or without this option. Reads of other rows and unsynced
  // writes do not wait for it (synced writes queue behind an fdatasync in
  // flight either way). When that fdatasync fails, such reads return the
  // log's error (the engine must be reopened). Off, a synced write goes into
  // the memtables after its fdatasync, and writes queued behind it wait for
  // both. Off by default: on, a synced group is written and synced without
  // io_uring's linked write and fdatasync (use_io_uring then changes
  // nothing for it), since the ring would run that fdatasync on a kernel
  // worker thread, a wakeup more for every group: tried through the ring,
  // 2-key synced transfers in bench/txn_bench lost this option's gain at 8
  // threads, and their prewrites took 1.5x to 1.8x as long as with pwritev
  // and fdatasync. Recommended for synced transactions (txn/README.md).
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
  // tenant. Index and filter blocks of open tables are held apart from it.
  // Reads fill it; compaction reads its inputs past it (using what is
  // cached, adding nothing).
  size_t block_cache_size = 64 << 20;
  // SSTables kept open at once (each holds a descriptor, its index and filter).
  size_t max_open_tables = 1000;

  // Level-0 files of one locality group of one tablet that start a
  // compaction into level 1. Lower keeps reads cheaper; higher writes less.
  int level0_compaction_trigger = 4;
  // Write backpressure, counted in level-0 files of the writing tenant's
  // fullest locality group: from `level0_slowdown_trigger` on, each of its
  // writes waits 1 ms so compaction can catch up; at `level0_stop_trigger`
  // its writes wait until compaction brings level 0 back below it. Other
  // tenants write on. Both show in EngineStats.
  int level0_slowdown_trigger = 20;
  int level0_stop_trigger = 36;
  // Bytes allowed in level 1 of a locality group; each deeper level holds 10x
  // the one above. Larger levels mean fewer compactions but more work each.
  uint64_t level1_max_bytes = 64ull << 20;
  // Compaction output is cut into files of about this size.
  uint64_t target_file_size = 32ull << 20;
  // Compactions that may run at once, each on its own thread; flushes have a
  // thread of their own besides. More lets independent groups and levels
  // compact in parallel at the cost of CPU and disk bandwidth.
  int max_background_compactions = 1;
  // Bytes per second that all compactions together may write; 0 = no limit.
  // A limit keeps compaction from starving foreground reads and writes of
  // disk bandwidth, at the risk of level 0 piling up under heavy writes.
  uint64_t compaction_rate_limit = 0;
  // The nice value (0 to 19) of the engine's background threads: flush,
  // compaction and tablet splits. Higher lets foreground reads and writes go
  // first when every CPU is busy (one tenant's flood of writes then slows
  // another tenant's reads less), at the risk of flushes and compactions
  // falling behind, which writes then wait for (memtable and level-0 stops).
  int background_nice = 0;
  // Run those threads under Linux's SCHED_BATCH policy: one that wakes (a
  // flush or compaction starting) does not preempt the thread running on
  // its CPU, but waits for that thread's time slice to end. Their share of
  // the CPUs stays the same (background_nice is what lowers it), but each
  // flush or compaction starts a little later. When there are more busy
  // threads than CPUs, this keeps those wakeups out of the tail latency of
  // foreground calls. With a tenant flooding writes on two CPUs
  // (bench/tenant_bench, medians of 10 runs), another tenant's write p99
  // was 1.7x its p99 alone, against 3.8x with this off; the flooding tenant
  // met write backpressure (EngineStats write_slowdowns and stops) about 100
  // times a run instead of almost never, and wrote about 7% less. Off: they are scheduled like any other thread.
  // Threads of a process running under another policy (real-time, idle)
  // keep it either way.
  bool background_sched_batch = true;
  // Memtable memory of the whole engine, split among tenants by their
  // TenantOptions::write_buffer_weight. A tenant whose memtables (active and
  // immutable, all its tables) hold more than its share has its largest
  // memtable flushed early, and its writes wait while its immutable
  // memtables alone exceed the share. 256 MiB (8 full memtables at the
  // default write_buffer_size) leaves one tenant room for several busy
  // tables; lower bounds memory tighter at the cost of smaller level-0 files.
  uint64_t total_write_buffer_size = 256ull << 20;
  // Full memtables of the whole engine that may wait for their flush. At this
  // many, the writes of tenants owning some of them wait until a flush
  // finishes (counted in EngineStats as memtable_stops), which bounds memory
  // when flushing falls behind; other tenants write on until a memtable of
  // theirs fills.
  int max_immutable_memtables = 4;
  // A tablet splits in two at a row boundary once its SSTables hold more than
  // this many bytes (all locality groups together); 0 never splits. Smaller
  // tablets spread compaction work and keep each compaction's range narrow.
  uint64_t tablet_split_size = 512ull << 20;
  // Sees every column's live versions during compaction (may be null).
  std::shared_ptr<CompactionFilter> compaction_filter;

  // Limits on what one write may carry; larger input is InvalidArgument.
  // Keys live in every index entry and block, so they are kept small. Each
  // limit is between 1 and 1 GiB. A cell must also fit in one SSTable block
  // (2 GiB less 1 MiB, its row key and qualifier with each 0x00 byte
  // counted twice), which only limits near a gigabyte can reach.
  size_t max_row_key_size = 16 << 10;
  size_t max_qualifier_size = 16 << 10;
  size_t max_value_size = 16 << 20;

  // File system for every file the engine touches; nullptr = the local POSIX one.
  // Must outlive the engine.
  FileSystem* file_system = nullptr;
};

// A tenant's resource budget inside its engine (Engine::CreateTenant,
// Engine::SetTenantOptions). Stored in the manifest, so it survives reopen.
struct TenantOptions {
  // The tenant's weight in the split of EngineOptions::total_write_buffer_size:
  // its share is total * weight / (sum of the weights of all tenants), so
  // creating a tenant shrinks the others' shares. 1 to 10000. A larger share
  // means fewer, larger flushes for this tenant and less memory for others.
  uint32_t write_buffer_weight = 1;
  // Bytes per second of row-mutation payload (row key, family, qualifier and
  // value bytes of every entry) the tenant's writes may carry; 0 = no limit.
  // Writes over it wait, without slowing other tenants' writes.
  uint64_t write_rate_limit = 0;
  // Bytes of live SSTables plus memtable data the tenant may hold; 0 = no
  // quota. A write that holds a put and would take the tenant over it fails
  // with ResourceExhausted; writes made only of deletes, and dropping
  // tables, still work so the tenant can free space.
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
  // The group's memtable is flushed once it holds this many bytes; 0 means
  // EngineOptions::write_buffer_size. A small one suits a group of small,
  // often rewritten cells (say locks that are written and erased): flushes
  // and compactions drop the erased versions, so reads of its rows walk a
  // short history. 0, or 4 KiB to 1 GiB.
  uint64_t write_buffer_size = 0;
};

struct ColumnFamilyOptions {
  // 1 to 64 bytes of [A-Za-z0-9_.-].
  std::string name;
  // The locality group this family lives in; empty means the group "default",
  // which is created when some family needs it.
  std::string locality_group;
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
  // Only versions with min_timestamp <= timestamp <= max_timestamp; a
  // snapshot reader (a Percolator transaction) sets max_timestamp to its
  // start timestamp.
  uint64_t min_timestamp = kMinTimestamp;
  uint64_t max_timestamp = kMaxTimestamp;
  // At most this many versions of each column, newest first.
  uint32_t max_versions = UINT32_MAX;
  // When a Get misses the session's cache, fetch with its column, in the same
  // pass, the columns of the row that the table's past sessions read along
  // with it. Costs a slightly slower miss and the memory of columns that may
  // go unread; off, every miss reads just its own column.
  bool prefetch = true;
};

}  // namespace strata

#endif  // STRATA_OPTIONS_H_
