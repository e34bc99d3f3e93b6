// ProgressLog: what a garbage collector's rounds have done, kept in a file so
// that a restarted collector finishes an interrupted round without
// collecting again the row ranges it had finished, and knows through which
// safepoint collection is complete. Format: gc/FORMAT.md ("The progress
// file").
//
// A round that has resolved its locks starts a new file (StartRound: written
// whole, then renamed over the old one); each row range it collects is
// appended and synced (RangeDone); its end is appended and synced too
// (FinishRound). A crash can tear only the last append; Open drops such a
// tail.
//
// Thread-compatible: the collector calls it under its own mutex.
#ifndef STRATA_GC_PROGRESS_LOG_H_
#define STRATA_GC_PROGRESS_LOG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::gc {

// Rows [start_row, end_row) of a table; an empty end_row reaches past the
// last row.
struct RowRange {
  std::string table;
  std::string start_row;
  std::string end_row;
  friend bool operator==(const RowRange&, const RowRange&) = default;
};

struct RoundProgress {
  // Every version below it that the rules remove is gone (the safepoint of
  // the last round that finished; 0 before the first).
  uint64_t collected = 0;
  // The round under way: its safepoint is published and every lock below it
  // resolved; 0 when none is.
  uint64_t round = 0;
  // The ranges `round` has collected, in the order they finished.
  std::vector<RowRange> done;
  friend bool operator==(const RoundProgress&, const RoundProgress&) = default;
};

// The parts of `ranges` that no range of `done` covers, in order.
std::vector<RowRange> SubtractRanges(const std::vector<RowRange>& ranges,
                                     const std::vector<RowRange>& done);

class ProgressLog {
 public:
  // DO NOT CHANGE: stored on disk.
  static constexpr uint16_t kFormatVersion = 1;

  // Opens the file at `path` (an empty progress when missing) and rewrites
  // it without a torn tail. Corruption when its first record is damaged (a
  // crash cannot do that: the file is renamed into place whole; deleting it
  // is safe, a restart then collects everything again); NotSupported for an
  // unknown version.
  static Status Open(FileSystem* fs, const std::string& path, std::unique_ptr<ProgressLog>* result);
  ~ProgressLog();
  ProgressLog(const ProgressLog&) = delete;
  ProgressLog& operator=(const ProgressLog&) = delete;

  const RoundProgress& progress() const { return progress_; }

  // Starts the round at `safepoint` (its locks resolved), forgetting an
  // unfinished one. REQUIRES: safepoint > progress().collected.
  Status StartRound(uint64_t safepoint);
  // Records that the round under way collected `range`; the range's
  // removals must be durable first. REQUIRES: a round is under way.
  Status RangeDone(const RowRange& range);
  // Records that the round under way is done: collected = its safepoint.
  Status FinishRound();
  // Forgets what lies above `safepoint` (the safepoint a collector found
  // stored, when the log claims more): `collected` comes down to it, and a
  // round above it is dropped. Rewrites the file only if anything changed.
  Status Clamp(uint64_t safepoint);

  // Decodes a whole file image (also for tools): a torn tail is dropped,
  // and *torn says whether there was one. `path` only names the file in
  // messages.
  static Status Decode(const Slice& contents, const std::string& path, RoundProgress* progress,
                       bool* torn);

 private:
  ProgressLog(FileSystem* fs, std::string path, RoundProgress progress);
  // Replaces the file by the records of progress_, and opens it for appends.
  Status Rewrite();
  Status Append(const std::string& record);

  FileSystem* const fs_;
  const std::string path_;
  RoundProgress progress_;
  std::unique_ptr<WritableFile> file_;
};

}  // namespace strata::gc

#endif  // STRATA_GC_PROGRESS_LOG_H_
