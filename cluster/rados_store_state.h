// What every call of a RadosRowStore shares (rados_row_store.h): the pool
// connection, the etcd client, the table's schema and its tablet map, and
// the helpers the store's files share: filters over decoded keys, one row
// read in one snapshot of the row, and deadlines.
//
// Thread-safe: the map is guarded by a mutex; everything else is fixed at
// open.
#ifndef STRATA_CLUSTER_RADOS_STORE_STATE_H_
#define STRATA_CLUSTER_RADOS_STORE_STATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cluster/etcd_client.h"
#include "cluster/rados_io.h"
#include "cluster/rados_table.h"
#include "common/mutex.h"
#include "engine/schema.h"
#include "strata/options.h"
#include "strata/rados.h"
#include "strata/row_mutation.h"
#include "strata/status.h"

namespace strata::cluster {

using Clock = std::chrono::steady_clock;

// Keys and values of one object's omap, in key order.
using OmapEntries = std::map<std::string, std::string>;

// A RowFilter resolved against the schema. Intentionally copyable.
struct CellFilter {
  bool all = true;
  std::vector<bool> families;  // by family id: wanted whole
  std::set<std::pair<uint16_t, std::string>> columns;
  uint64_t min_timestamp = kMinTimestamp;
  uint64_t max_timestamp = kMaxTimestamp;
  uint32_t max_versions = UINT32_MAX;

  bool Wants(uint16_t family, const std::string& qualifier) const {
    return all || (family < families.size() && families[family]) ||
           columns.count({family, qualifier}) != 0;
  }
};

// One omap range a row read asks for.
struct KeyRange {
  std::string prefix;
  std::string start_after;
  uint64_t max = 0;
  bool limited = false;  // `max` keys are all that is wanted, over as many pages as it takes
};

// Reads ranges of one row's keys, page after page, all from one snapshot of
// the row: every page after the first checks that the row's version key is
// what the first page saw, and the read starts over when it is not.
class RowRead {
 public:
  RowRead(std::string_view row, std::vector<KeyRange> ranges);

  enum class Outcome { kDone, kNextPage, kFenced, kFailed };
  // Adds this page's operations (the epoch check included) to *op.
  void Build(const RadosTablet& tablet, RadosReadOp* op);
  // After the op of Build() completed with `rc`.
  Outcome Finish(int rc, RadosReadOp* op, const RadosTablet& tablet, Status* error);
  // Starts over (after a fence: with a new tablet).
  void Reset();

  // Every key read, the version key included when the row has one.
  const OmapEntries& entries() const { return entries_; }
  // The tagged value of the row's version key, or "" when it has none.
  const std::string& version() const { return version_; }

 private:
  const std::string version_key_;
  const std::vector<KeyRange> ranges_;
  std::vector<std::string> next_after_;  // per range: where its next page starts
  std::vector<bool> open_;               // per range: more to read
  std::vector<uint64_t> remaining_;      // per range: keys still wanted (limited ones)
  std::vector<size_t> page_of_range_;    // this page's GetVals index per range, or SIZE_MAX
  size_t version_page_ = SIZE_MAX;
  bool first_ = true;
  OmapEntries entries_;
  std::string version_;
};

class RadosStoreState {
 public:
  RadosStoreState(RadosOptions options, std::string name, std::shared_ptr<RadosCluster> rados,
                  std::unique_ptr<EtcdClient> etcd, engine::Schema schema, RadosTableInfo map);

  const RadosOptions& options() const { return options_; }
  const std::string& name() const { return name_; }
  const engine::Schema& schema() const { return schema_; }
  // The limits as EngineOptions, for engine/input_checks.h.
  const EngineOptions& limits() const { return limits_; }
  const RadosCluster& rados() const { return *rados_; }

  Clock::time_point Deadline() const {
    return Clock::now() + std::chrono::milliseconds(options_.timeout_millis);
  }
  // TimedOut naming `what` once `deadline` has passed.
  static Status CheckDeadline(Clock::time_point deadline, std::string_view what);

  // The tablet that holds `row`, and a copy of the whole map.
  RadosTablet TabletFor(std::string_view row) const LOCKS_EXCLUDED(mu_);
  RadosTableInfo Map() const LOCKS_EXCLUDED(mu_);
  // Reads the map from etcd again after an operation found a tablet fenced
  // (or its object gone: a split removes it once the new map is in).
  // NotFound once the table is gone, or dropped and made again. When the
  // map did not change and `fenced_object` is still in it, repairs a fence
  // a dead split left on it (RecoverRadosFence), at most every 250 ms.
  Status ReloadMap(const std::string& fenced_object = "") const LOCKS_EXCLUDED(mu_);

  // `filter` checked (InvalidArgument as the Table store words it) and resolved.
  Result<CellFilter> Resolve(const RowFilter& filter) const;
  // The ranges a read of `row` through `filter` needs.
  std::vector<KeyRange> RangesFor(std::string_view row, const CellFilter& filter) const;
  // The cells of one row's `entries` (decoded keys in key order) that pass
  // `filter`, appended to *cells. Corruption for a key or value not of this
  // format.
  Status AppendCells(const std::vector<std::pair<std::string_view, std::string_view>>& entries,
                     const CellFilter& filter, std::vector<Cell>* cells) const;

  // Reads `row` through `ranges` in one snapshot of the row, following a
  // fenced tablet to the new map, within `deadline`.
  Status ReadRowKeys(std::string_view row, std::vector<KeyRange> ranges, Clock::time_point deadline,
                     OmapEntries* entries) const;

  // A new, never used value for a row's version key.
  std::string NewVersion();

  // Counts a write this store made to `tablet`; every
  // options().split_keys / 4 of them, the background thread counts the
  // tablet's keys and splits it when it holds more than split_keys (a
  // check that fails waits twice as many writes each time). Closing the
  // store waits for a check under way, up to its deadline.
  void NoteWrite(const RadosTablet& tablet) LOCKS_EXCLUDED(split_mu_);
  // Splits the background thread made (for tests).
  uint64_t background_splits() const { return background_splits_.load(); }

  ~RadosStoreState();

 private:
  const RadosOptions options_;
  const std::string name_;
  const std::shared_ptr<RadosCluster> rados_;
  const std::unique_ptr<EtcdClient> etcd_;
  const engine::Schema schema_;
  EngineOptions limits_;
  const uint64_t nonce_;
  std::atomic<uint64_t> versions_{0};  // relaxed: only uniqueness matters
  mutable Mutex mu_;
  mutable RadosTableInfo map_ GUARDED_BY(mu_);
  mutable Clock::time_point next_repair_ GUARDED_BY(mu_);

  // Automatic splits: writes per tablet object since its last check, the
  // tablets to check, and the thread that checks them (started at the
  // first check).
  void SplitThread() LOCKS_EXCLUDED(split_mu_);
  Mutex split_mu_;
  CondVar split_cv_{&split_mu_};
  struct SplitCount {
    uint64_t writes = 0;  // since the last check
    int backoff = 0;      // checks that failed in a row (at most 6)
  };
  std::map<std::string, SplitCount> writes_since_check_ GUARDED_BY(split_mu_);
  std::deque<RadosTablet> to_check_ GUARDED_BY(split_mu_);
  bool stopping_ GUARDED_BY(split_mu_) = false;
  std::thread split_thread_;  // started under split_mu_
  std::atomic<uint64_t> background_splits_{0};
};

// The page size of row reads and scans (entries per omap read).
inline constexpr uint64_t kOmapPage = 4096;

}  // namespace strata::cluster

#endif  // STRATA_CLUSTER_RADOS_STORE_STATE_H_
