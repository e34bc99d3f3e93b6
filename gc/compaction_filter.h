// GcCompactionFilter: the collection that compactions do on their way, as
// the tenant's compaction filter (Tenant::SetCompactionFilter), with no read
// or write of their own. It applies the rules of column_rules.h to the
// versions of a `write` column that one compaction holds, at or below the
// collector's ready safepoint (every lock below it resolved), and removes
// only records that leave no value behind in `data`:
//   - rollback and lock records, anywhere at or below the safepoint;
//   - a put with its value inline, when a newer put or delete at or below
//     the safepoint stays in the same output;
//   - a delete under a newer put or delete that stays, likewise;
//   - the newest delete at or below the safepoint, only in a bottommost
//     compaction (no older data below it) and only when everything older in
//     the column goes with it.
// And of an `ack` column (observers' acknowledgements), every version but
// the newest, at any timestamp: only a column's newest ack is ever read.
// Only in the tables the collector's last round listed as transactional.
// Puts whose values are in `data` stay, for the row-range tasks to remove
// with their values (a compaction of the `write` group cannot reach the
// `data` group's files, and a value left behind would never be found).
// gc/README.md ("Inside compaction") says why each is safe.
//
// Thread-safe: compactions of different tablets call it at once.
#ifndef STRATA_GC_COMPACTION_FILTER_H_
#define STRATA_GC_COMPACTION_FILTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "strata/compaction_filter.h"

namespace strata::gc {

// The names of a tenant's transactional tables, as the collector's last
// round listed them: the tables whose columns the filter may touch (another
// table of the tenant may have families of the same names). Thread-safe.
class TableSet {
 public:
  void Set(std::vector<std::string> names) LOCKS_EXCLUDED(mu_);
  bool Contains(std::string_view name) const LOCKS_EXCLUDED(mu_);

 private:
  // A mutex, not std::atomic<std::shared_ptr>: libstdc++ 12 implements that
  // with a lock bit ThreadSanitizer cannot see, and reports a race.
  mutable Mutex mu_;
  std::shared_ptr<const std::vector<std::string>> names_ GUARDED_BY(mu_);  // sorted
};

class GcCompactionFilter final : public CompactionFilter {
 public:
  // `ready` is the collector's ready safepoint (0: none yet), read once per
  // column, and `tables` its transactional tables (only those are
  // filtered); both are shared so that they outlive the collector while a
  // compaction still holds the filter.
  GcCompactionFilter(std::shared_ptr<const std::atomic<uint64_t>> ready,
                     std::shared_ptr<const TableSet> tables)
      : ready_(std::move(ready)), tables_(std::move(tables)) {}

  void FilterColumn(const Context& context, std::string_view row, std::string_view family,
                    std::string_view qualifier, const std::vector<Version>& versions,
                    std::vector<Decision>* decisions,
                    std::vector<std::string>* new_values) override;

  // Write records removed so far.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  const std::shared_ptr<const std::atomic<uint64_t>> ready_;
  const std::shared_ptr<const TableSet> tables_;
  // Relaxed: a statistic.
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace strata::gc

#endif  // STRATA_GC_COMPACTION_FILTER_H_
