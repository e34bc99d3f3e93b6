// PrefetchPredictor: learns, for one table, which columns of a row are read
// together within one read session, and predicts from one column the others a
// session is likely to read from the same row, so a read of the first can
// fetch them in the same pass (the prefetching of Percolator, section 4 of the
// paper: predictions "based on past read patterns").
//
// What it learns from: a *record* is the set of columns one session asked for
// from one row. Per column c it keeps reads(c), the records holding c, and per
// ordered pair (c, d) together(c, d), the records holding both. It predicts d
// for c when reads(c) >= min_reads and together(c, d) / reads(c) >= threshold.
//
// Bounded memory: at most max_columns columns are tracked (a column first seen
// while all slots are taken is not learned until one frees up), and every
// decay_interval records all counts are halved; a column whose count reaches
// zero gives up its slot. Halving bounds every count by about twice the
// interval, so a changed pattern shows in the ratios within about one interval.
//
// Thread-safe. Predictions are read from an immutable Snapshot that Record
// republishes every refresh_interval records, so readers share nothing
// mutable: taking a snapshot is one short critical section, predicting from
// it none. Record never blocks: when another thread holds the learner it
// leaves its sample out (learning is statistical; readers never wait for it).
//
// Invariants (under mu_): together(c, d) == together(d, c) <= min(reads(c),
// reads(d)); a free slot has every count zero.
#ifndef STRATA_ENGINE_PREFETCH_PREDICTOR_H_
#define STRATA_ENGINE_PREFETCH_PREDICTOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"

namespace strata::engine {

// A column of one table: family id (engine/schema.h) and qualifier.
// Intentionally copyable.
struct ColumnId {
  uint16_t family = 0;
  std::string qualifier;
};

// A column named without owning its qualifier; valid while the bytes are.
struct ColumnRef {
  uint16_t family = 0;
  std::string_view qualifier;

  ColumnRef() = default;
  ColumnRef(uint16_t f, std::string_view q) : family(f), qualifier(q) {}
  ColumnRef(const ColumnId& c) : family(c.family), qualifier(c.qualifier) {}  // NOLINT: implicit
};

// Hash and equality over ColumnId and ColumnRef alike, so maps keyed by
// ColumnId are searched with a ColumnRef without building a string.
struct ColumnHash {
  using is_transparent = void;
  size_t operator()(ColumnRef c) const;
};
struct ColumnEq {
  using is_transparent = void;
  bool operator()(ColumnRef a, ColumnRef b) const {
    return a.family == b.family && a.qualifier == b.qualifier;
  }
};

template <typename V>
using ColumnMap = std::unordered_map<ColumnId, V, ColumnHash, ColumnEq>;

class PrefetchPredictor {
 public:
  struct Options {
    // Columns tracked at once. The pair counts take 4 * max_columns^2 bytes
    // at most (256 KiB for 256), and only once that many columns are read.
    size_t max_columns = 256;
    // Columns one prediction may name; caps the extra work of one read.
    size_t max_predicted = 32;
    // together(c, d) / reads(c) at or above this predicts d for c.
    double threshold = 0.5;
    // Records holding c before c predicts anything.
    uint32_t min_reads = 4;
    // Records between two halvings of every count.
    uint64_t decay_interval = 4096;
    // Records between two rebuilds of the snapshot.
    uint64_t refresh_interval = 64;
    // Columns of one record that are learned from; the rest are ignored
    // (the pair update costs the square of this).
    size_t max_columns_per_record = 64;
  };

  // An immutable table of predictions. Thread-safe.
  class Snapshot {
   public:
    // The columns predicted to be read with `column` from the same row, most
    // often read together first; empty when there are none. The vector lives
    // as long as the snapshot: hold the shared_ptr while using it.
    const std::vector<ColumnId>& Predict(ColumnRef column) const;

   private:
    friend class PrefetchPredictor;
    ColumnMap<std::vector<ColumnId>> predictions_;
  };

  PrefetchPredictor() : PrefetchPredictor(Options()) {}
  explicit PrefetchPredictor(const Options& options);
  PrefetchPredictor(const PrefetchPredictor&) = delete;
  PrefetchPredictor& operator=(const PrefetchPredictor&) = delete;

  // The current predictions; never null. Hold it as long as convenient.
  std::shared_ptr<const Snapshot> snapshot() const LOCKS_EXCLUDED(snapshot_mu_);

  // Learns from one session: rows[i] holds the columns it asked for from one
  // row (duplicates are ignored). Returns false when it left the sample out
  // because another thread was learning.
  bool Record(const std::vector<std::vector<ColumnRef>>& rows) LOCKS_EXCLUDED(mu_);

  // Rebuilds and publishes the snapshot now, without waiting for
  // refresh_interval records.
  void Refresh() LOCKS_EXCLUDED(mu_);

  // Columns tracked now.
  size_t tracked_columns() const LOCKS_EXCLUDED(mu_);

 private:
  struct Slot {
    ColumnId column;
    uint32_t reads = 0;
    bool used = false;
  };

  void RecordRow(const std::vector<ColumnRef>& row) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The slot of `column`, taking a free one if needed; -1 when none is free.
  int64_t SlotOf(ColumnRef column) EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Doubles the pair matrix (up to max_columns); false when already full.
  bool Grow() EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Decay() EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RefreshLocked() EXCLUSIVE_LOCKS_REQUIRED(mu_) LOCKS_EXCLUDED(snapshot_mu_);
  uint32_t& Together(size_t a, size_t b) EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return together_[a * capacity_ + b];
  }

  const Options options_;

  mutable Mutex mu_;  // the learner
  ColumnMap<uint32_t> slot_of_ GUARDED_BY(mu_);
  std::vector<Slot> slots_ GUARDED_BY(mu_);  // size() == capacity_
  std::vector<uint32_t> free_slots_ GUARDED_BY(mu_);
  size_t capacity_ GUARDED_BY(mu_) = 0;
  // capacity_ x capacity_, row-major: together_[a * capacity_ + b].
  std::vector<uint32_t> together_ GUARDED_BY(mu_);
  uint64_t since_decay_ GUARDED_BY(mu_) = 0;
  uint64_t since_refresh_ GUARDED_BY(mu_) = 0;

  mutable Mutex snapshot_mu_;
  std::shared_ptr<const Snapshot> snapshot_ GUARDED_BY(snapshot_mu_);
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_PREFETCH_PREDICTOR_H_
