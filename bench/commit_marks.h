// CommitMarks: when the committing thread passed each fail point of its
// current Commit (txn/transaction_db.h), for benchmarks that time the steps
// of a commit. Install MarkFailPoint as TxnDBConfig::fail_point; it never
// stops the coordinator. The TxnDB calls it in the committing thread (and,
// for background secondary commits, in its own thread, where `active` is
// false), so the marks are thread-local.
#ifndef STRATA_BENCH_COMMIT_MARKS_H_
#define STRATA_BENCH_COMMIT_MARKS_H_

#include <chrono>
#include <cstdint>

#include "txn/transaction_db.h"

namespace strata::bench {

struct CommitMarks {
  static constexpr int kPoints = 5;  // the FailPoint values
  bool active = false;
  std::chrono::steady_clock::time_point at[kPoints];
  bool seen[kPoints] = {};
  // Before a Commit: forget the last one's marks and record this one's.
  void Reset() {
    for (bool& s : seen) s = false;
    active = true;
  }
  bool Seen(txn::FailPoint p) const { return seen[static_cast<int>(p)]; }
  std::chrono::steady_clock::time_point At(txn::FailPoint p) const {
    return at[static_cast<int>(p)];
  }
};

inline thread_local CommitMarks t_commit_marks;

inline bool MarkFailPoint(txn::FailPoint point, uint64_t /*start_ts*/) {
  if (t_commit_marks.active) {
    const int i = static_cast<int>(point);
    t_commit_marks.at[i] = std::chrono::steady_clock::now();
    t_commit_marks.seen[i] = true;
  }
  return false;  // never stop the coordinator
}

}  // namespace strata::bench

#endif  // STRATA_BENCH_COMMIT_MARKS_H_
