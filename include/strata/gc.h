// MVCC garbage collection of a TransactionDB's tables. Every committed
// transaction leaves its old versions behind (commit and rollback records,
// values); a GarbageCollector removes those no reader may ask for any more:
// the versions below the safepoint that a newer one hides.
//
// The safepoint trails the oracle's clock by GcOptions::life_time_millis, and
// never passes the start timestamp of a transaction still running, nor a
// service safepoint a caller holds (a long reader, a backup). It never goes
// down, across restarts too. A round of collection publishes a new safepoint
// (transactions below it can no longer read or commit: kTooOld), resolves
// every lock below it through the lock's primary, then removes, per column,
// every version below the safepoint that the newest put or delete below it
// hides (a delete goes with everything it hides; gc/README.md gives the
// rules). Reads at or above the safepoint see exactly what they saw before.
//
// Thread-safe. Close (or destroying the collector) stops its threads.
#ifndef STRATA_GC_H_
#define STRATA_GC_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "strata/status.h"
#include "strata/transaction.h"

namespace strata {

struct GcOptions {
  // How long versions stay readable after a newer one hides them
  // (milliseconds). Longer keeps old snapshots readable for longer at the
  // cost of space and of longer histories for reads to skip.
  uint64_t life_time_millis = 10 * 60 * 1000;
  // How often a round runs on the collector's own thread (milliseconds);
  // 0 runs rounds only through RunOnce.
  uint64_t interval_millis = 10 * 1000;
  // Threads that collect row ranges (an engine table's tablets) at once; 0
  // collects on the round's own thread.
  int workers = 1;
  // Rows per second a round may examine, 0 = no limit. A limit leaves I/O
  // and CPU to foreground calls at the cost of a longer round.
  uint64_t rows_per_second = 0;
};

struct GcStats {
  // Transactions that started below it can no longer read or commit, and
  // versions below it may be gone: reads must be at or above it.
  uint64_t safepoint = 0;
  // Every version below it that the rules remove is gone (as of the last
  // round that completed; kept across restarts). At or below `safepoint`;
  // below it while a round is under way or after one failed.
  uint64_t collected_safepoint = 0;
  // What holds the next safepoint back: the oldest running transaction's
  // start timestamp and the lowest service safepoint held (UINT64_MAX when
  // none), as the last round saw them.
  uint64_t oldest_running_start_ts = UINT64_MAX;
  uint64_t lowest_service_safepoint = UINT64_MAX;
  // Milliseconds the safepoint trailed the oracle's clock at the last round's
  // end.
  uint64_t lag_millis = 0;

  uint64_t rounds = 0;             // rounds completed
  uint64_t locks_resolved = 0;     // locks below a safepoint rolled forward or back
  uint64_t locks_unresolvable = 0; // locks whose primary's table is gone (left alone)
  uint64_t tasks_done = 0;         // row ranges collected
  // Row ranges a round interrupted by a restart had collected, which the
  // restarted collector did not collect again when it finished that round.
  uint64_t tasks_skipped = 0;
  uint64_t rows_examined = 0;
  uint64_t rows_collected = 0;     // rows that lost versions
  uint64_t versions_dropped = 0;   // commit, rollback, lock and older ack records removed
  uint64_t data_cells_dropped = 0; // values removed with their records
  // Records compactions removed on their way (the tenant's compaction
  // filter), besides the rounds' own.
  uint64_t versions_dropped_in_compaction = 0;
};

class GarbageCollector {
 public:
  // A collector of `db`'s tables (it must be a TransactionDB::Open or
  // OpenRadosTransactionDB one, and outlive the collector). Its safepoint and the progress of its
  // rounds are kept in `services`' directory, in files of the tenant's own (gc/FORMAT.md); with
  // services shared by many processes (strata/cluster.h) the safepoint is kept in etcd instead,
  // under the tenant's name, and the oldest transaction any process of the cluster runs on that
  // name holds it down (options.life_time_millis must then be above 500: InvalidArgument); `db` is
  // raised to the safepoint at once, and a round a restart interrupted is finished first, without
  // the row ranges it had done. On an engine tenant it installs its compaction filter
  // (Tenant::SetCompactionFilter) until Close; RADOS tables have no compaction, and its rounds
  // alone collect them. A round runs at once in the background unless options.interval_millis is 0.
  // InvalidArgument for bad options or a `db` opened by neither; Busy when the tenant has a
  // collector.
  static Result<std::unique_ptr<GarbageCollector>> Open(
      std::shared_ptr<TransactionServices> services, TransactionDB* db,
      const GcOptions& options = {});

  virtual ~GarbageCollector() = default;

  // The safepoint: reads and transactions must be at or above it
  // (GcStats::safepoint).
  virtual uint64_t safepoint() const = 0;

  // Holds the safepoint at or below `ts` for `ttl_millis` of wall time (or
  // until released), under `id`, which a second call with the same id
  // replaces: a long reader or a backup reading at `ts` keeps its snapshot
  // whole. FailedPrecondition when `ts` is already below the safepoint;
  // InvalidArgument for an empty id or a ttl of 0.
  virtual Status HoldSafepoint(std::string_view id, uint64_t ts, uint64_t ttl_millis) = 0;
  // Lets go of a held service safepoint; NotFound for an unknown id.
  virtual Status ReleaseSafepoint(std::string_view id) = 0;

  // Runs a round now and returns once it is done (or failed): the next
  // safepoint, the locks below it, every table collected at it.
  virtual Status RunOnce() = 0;

  virtual GcStats GetStats() const = 0;

  // Stops the background round and the workers; a round under way stops at
  // the next row. Idempotent.
  virtual Status Close() = 0;
};

}  // namespace strata

#endif  // STRATA_GC_H_
