// Worker: the ObserverWorker of strata/observer.h over a TxnDB, reaching the
// tables through the row-store seam only. Each thread repeats passes: for
// each observed table, a scan of its `notify` family from a random row
// (a row where notifications were seen lately), wrapping around to the
// start. A hash of the row says which of the worker's threads handles it;
// each notification of an observed column is handled under an advisory lock
// on its row (txn/lock_service.h). A row locked by a thread of another
// worker, or handled by one already, means this scan caught up with that
// one: it leaves the table and starts elsewhere on the next pass, instead of
// trailing it ("bus clumping"). A pass that found nothing sleeps until a commit of this
// process writes notifications or a growing pause (up to
// max_idle_millis) runs out.
//
// Handling one notification of (row, column) whose newest version is at n:
//   strong  read the column's ack; an ack above n means a run at that
//           timestamp committed after every change up to n: the
//           notifications up to the ack are erased, no run. Otherwise the
//           observer runs in TxnDB::BeginObserverRun(trigger), whose commit
//           writes the ack and erases the notifications up to its start_ts.
//   weak    the observer runs in a plain transaction; once it commits, the
//           notifications up to its start_ts are erased.
// A failed run (an error from the observer or the store, or an aborted
// commit) leaves the notification; the cell waits a backoff before it is
// tried again.
//
// Thread-safe.
#ifndef STRATA_OBSERVER_WORKER_H_
#define STRATA_OBSERVER_WORKER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "strata/observer.h"
#include "txn/lock_service.h"
#include "txn/transaction_db.h"

namespace strata::observer {

struct WorkerConfig {
  std::shared_ptr<txn::TxnDB> db;  // required
  std::vector<ObserverSpec> observers;
  ObserverWorkerOptions options;
  // Advisory row locks, shared by the workers of a process; required.
  txn::LockService* locks = nullptr;
  // Names the tenant in lock keys.
  std::string tenant;
  Clock* clock = nullptr;  // backoffs and pauses; nullptr = default
  uint64_t seed = 0;       // random start rows; 0 = from std::random_device
};

class Worker {
 public:
  static Result<std::unique_ptr<Worker>> Start(WorkerConfig config);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  Status WaitForQuiescence(uint64_t timeout_millis) LOCKS_EXCLUDED(mu_);
  ObserverStats GetStats() const LOCKS_EXCLUDED(mu_);
  Status Stop() LOCKS_EXCLUDED(mu_, stop_mu_);

 private:
  // (table, row, column)
  using Cell3 = std::tuple<std::string, std::string, std::string>;
  // A notification as a scan found it: the newest version of a column's
  // notify cells, and how many versions there were.
  struct Found {
    std::string row;
    std::string column;
    uint64_t newest = 0;
    uint64_t versions = 0;
  };
  // A cell whose last runs failed or aborted.
  struct Failure {
    uint32_t failures = 0;  // failed runs in a row (errors)
    uint32_t aborts = 0;    // aborted runs in a row (conflicts; not failing)
    uint64_t retry_at_micros = 0;
  };
  // kBusy: another thread holds the row, or handled it already: the scan
  // caught up with that thread.
  enum class Outcome { kDone, kBusy, kFailed };

  explicit Worker(WorkerConfig config);

  const ObserverSpec* SpecFor(std::string_view table, std::string_view column) const;
  void ThreadLoop(int index);
  // Scans `table`'s notifications from `start` around to it again, handling
  // those of the rows that are thread `index`'s (a hash of the row picks
  // the thread, so the threads of a worker never meet on a row); *seen
  // counts them. Stops early when it catches up with another worker's
  // thread, or the worker stops.
  Status ScanTable(const std::string& table, const std::string& start, int index, uint64_t owner,
                   uint64_t* seen);
  // Handles the notifications of one row of `table`, found by scan `scan`.
  Outcome HandleRow(const std::string& table, const std::vector<Found>& found, uint64_t scan,
                    uint64_t owner);
  Status RunStrong(const std::string& table, const Found& f, RowStore& store);
  Status RunWeak(const std::string& table, const Found& f, RowStore& store);
  // Runs `f`'s observer in a new run on `trigger` (nullptr: a weak
  // observer's plain transaction) and commits it.
  Result<std::unique_ptr<Transaction>> Run(const std::string& table, const Found& f,
                                           const txn::TxnKey* trigger);
  // Records the outcome of a run of `cell` (OK clears its failures).
  void Record(const Cell3& cell, const Status& s, bool aborted) LOCKS_EXCLUDED(mu_);
  bool Waiting(const Cell3& cell) LOCKS_EXCLUDED(mu_);
  // Whether a thread of this worker handled `cell`'s notifications up to
  // `ts` after the scan numbered `scan` began, so that its snapshot shows
  // them still; and the record of a cell handled. A scan that began after
  // the handling and still finds one sees a notification written late (at
  // a lower timestamp than one handled), which is handled again.
  bool Handled(const Cell3& cell, uint64_t ts, uint64_t scan) LOCKS_EXCLUDED(mu_);
  void SetHandled(const Cell3& cell, uint64_t ts) LOCKS_EXCLUDED(mu_);
  // Every notification of an observed column now in the store.
  Status Pending(std::vector<Cell3>* cells, uint64_t* oldest_ts) const;
  std::string RandomStart(const std::string& table) LOCKS_EXCLUDED(mu_);
  void RememberRow(const std::string& table, const std::string& row) LOCKS_EXCLUDED(mu_);
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }

  const WorkerConfig config_;
  Clock* const clock_;
  std::vector<std::string> tables_;  // observed tables, sorted

  mutable Mutex mu_;
  CondVar cv_{&mu_};  // wake_seq_, stop_, runs_in_flight_
  bool stop_ GUARDED_BY(mu_) = false;
  uint64_t wake_seq_ GUARDED_BY(mu_) = 0;    // bumped by commits that notify
  uint64_t runs_in_flight_ GUARDED_BY(mu_) = 0;
  // Per thread, its passes that found nothing (WaitForQuiescence waits for
  // two of each before it looks itself).
  std::vector<uint64_t> empty_passes_ GUARDED_BY(mu_);
  uint64_t runs_started_ GUARDED_BY(mu_) = 0;
  ObserverStats stats_ GUARDED_BY(mu_);
  std::map<Cell3, Failure> failures_ GUARDED_BY(mu_);
  // Cells handled lately: the newest notification timestamp handled, and
  // the number of the newest scan begun by then; at most kHandledCells,
  // the oldest entries forgotten first.
  struct HandledAt {
    uint64_t ts = 0;
    uint64_t scan = 0;
  };
  std::map<Cell3, HandledAt> handled_ GUARDED_BY(mu_);
  uint64_t scans_ GUARDED_BY(mu_) = 0;  // scans begun (their numbers)
  std::deque<Cell3> handled_order_ GUARDED_BY(mu_);
  // Per table, rows where notifications were seen lately: where scans start.
  std::map<std::string, std::vector<std::string>> recent_rows_ GUARDED_BY(mu_);
  std::mt19937_64 rng_ GUARDED_BY(mu_);
  std::atomic<bool> stopping_{false};
  // Held by Stop throughout, so that concurrent calls join the threads once.
  Mutex stop_mu_;
  uint64_t listener_ GUARDED_BY(stop_mu_) = 0;
  std::vector<std::thread> threads_ GUARDED_BY(stop_mu_);
};

}  // namespace strata::observer

#endif  // STRATA_OBSERVER_WORKER_H_
