// Observers: Percolator's incremental processing. An application registers
// an observer on a column of a transactional table; every committed change
// of the column leaves a notification (strata/transaction.h:
// TransactionDBOptions::observed_columns, Transaction::SetWeakNotification),
// and an ObserverWorker finds notifications and runs the column's observer
// in a new transaction, which typically writes other observed columns and so
// notifies the next observer.
//
// Strong observers run once per change, as seen by their run: several
// commits before a run make one run that sees the newest value, and of two
// runs on one notification at most one commits (its commit acknowledges the
// notification; the other aborts or finds it acknowledged). A run whose
// transaction aborts, or whose observer returns an error, is tried again
// later with backoff; a cell that keeps failing is counted in the stats and
// never blocks other cells or loses its notification.
//
// Weak observers run at least once after their notifications and keep no
// acknowledgement: they must bear running again for the same change.
//
// Workers run in the process that has the engine open; several workers on
// one tenant share the process's advisory row locks, and the commit
// protocol keeps their runs apart anyway (observer/README.md).
//
// Thread-safe. Observer::Process is called from the worker's threads, for
// different cells at once.
#ifndef STRATA_OBSERVER_H_
#define STRATA_OBSERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"
#include "strata/transaction.h"

namespace strata {

class Observer {
 public:
  virtual ~Observer() = default;
  // Handles the notification of (row, column) of `table`, reading and
  // writing through `txn`, which the worker commits when this returns OK
  // and rolls back otherwise. An error is counted as a failure and the
  // notification is tried again later.
  virtual Status Process(Transaction* txn, std::string_view table, std::string_view row,
                         std::string_view column) = 0;
};

enum class NotificationKind {
  kStrong,  // runs once per change, acknowledged (the column must be observed)
  kWeak,    // runs at least once per notification, no acknowledgement
};

struct ObserverSpec {
  std::string table;
  std::string column;
  NotificationKind kind = NotificationKind::kStrong;
  std::shared_ptr<Observer> observer;
};

struct ObserverWorkerOptions {
  // Threads that scan for notifications and run observers.
  int threads = 1;
  // The longest pause of a thread whose last pass found nothing
  // (milliseconds). Commits through the TransactionDB wake it at once; this
  // bounds how late it sees notifications written otherwise.
  uint64_t max_idle_millis = 5;
  // A failed or aborted run of a cell is tried again after a backoff that
  // starts here and doubles up to retry_max_millis.
  uint64_t retry_initial_millis = 5;
  uint64_t retry_max_millis = 10'000;
  // Failures in a row after which a cell counts as failing
  // (ObserverStats::failing_cells) and is logged.
  uint32_t failing_after = 5;
};

struct ObserverStats {
  uint64_t runs = 0;       // observer transactions committed
  uint64_t collapsed = 0;  // notifications a run handled besides its newest one
  uint64_t skipped = 0;    // notifications found acknowledged: erased, no run
  uint64_t aborted = 0;    // runs whose transaction aborted (a conflict), tried again
  uint64_t failures = 0;   // runs whose observer or store failed, tried again
  uint64_t failing_cells = 0;  // cells failing now, failing_after times or more in a row
  // The notifications of observed columns in the store when GetStats looked
  // (it scans the notify groups), and how old the oldest of them is.
  uint64_t pending = 0;
  uint64_t oldest_pending_millis = 0;
  // The newest failure: the cell (table/row/column) and the error.
  std::string last_failure;
};

class ObserverWorker {
 public:
  // Starts `options.threads` threads running `observers` (one per column of
  // a table) on `db`'s tables; `db` must be a TransactionDB::Open (or OpenRadosTransactionDB) one
  // and outlive the worker. InvalidArgument for an empty or duplicate spec, a null observer, bad
  // options, or a strong observer of a column that `db` was not opened to observe
  // (TransactionDBOptions::observed_columns).
  static Result<std::unique_ptr<ObserverWorker>> Start(TransactionDB* db,
                                                       std::vector<ObserverSpec> observers,
                                                       const ObserverWorkerOptions& options = {});

  virtual ~ObserverWorker() = default;

  // Waits until no notification of an observed column is left and no run is
  // under way, up to `timeout_millis`. TimedOut when some are left then;
  // Aborted as soon as every one left is on a failing cell.
  virtual Status WaitForQuiescence(uint64_t timeout_millis) = 0;

  virtual ObserverStats GetStats() const = 0;

  // Stops the threads after their current run. Idempotent.
  virtual Status Stop() = 0;
};

}  // namespace strata

#endif  // STRATA_OBSERVER_H_
