// TableFileWriter: writes one SSTable of a tablet's locality group — the file
// a flush makes or one output of a compaction — and keeps its FileMeta (key
// and sequence ranges, entry count, size) as entries go in.
//
// Thread-compatible: one flush or compaction uses a writer at a time.
// A file is the writer's until Finish succeeds; Abandon deletes a file that
// is still its own, so a failed job leaves nothing behind (and reopening
// deletes what a crash leaves: engine/README.md, "Recovery").
#ifndef STRATA_ENGINE_TABLE_FILE_WRITER_H_
#define STRATA_ENGINE_TABLE_FILE_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "common/rate_limiter.h"
#include "engine/file_meta.h"
#include "engine/tablet.h"
#include "sstable/table_builder.h"
#include "strata/compaction_filter.h"
#include "strata/options.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::engine {

// What the compaction filter is told about outputs of `group_options`'s
// group in `tablet`. The views point into the tablet's table and the schema
// the options come from, which must outlive the context.
CompactionFilter::Context FilterContextFor(const TabletState& tablet,
                                           const LocalityGroupOptions& group_options,
                                           bool bottommost);

class TableFileWriter {
 public:
  // Files go to `dir` (sstable::TableFileName); `limiter`, when not null,
  // paces every write to them.
  TableFileWriter(FileSystem* fs, std::string dir, RateLimiter* limiter = nullptr);
  TableFileWriter(const TableFileWriter&) = delete;
  TableFileWriter& operator=(const TableFileWriter&) = delete;

  // Creates table file `number` for locality group `group` of `tablet`,
  // built with the group's options `group_options`, and starts a new
  // FileMeta. REQUIRES: no file is open (a new writer, or one whose last
  // file was finished or abandoned).
  Status Open(uint64_t number, const TabletState& tablet, uint32_t group,
              const LocalityGroupOptions& group_options);
  bool is_open() const { return builder_ != nullptr; }

  // Adds an entry and widens the FileMeta's key and sequence ranges.
  // REQUIRES: is_open(); keys strictly increasing (cell keys).
  Status Add(const Slice& key, const Slice& value);

  // The file so far; complete (with its size) once Finish succeeded.
  const FileMeta& meta() const { return meta_; }
  // Bytes written to the file so far.
  uint64_t FileSize() const { return builder_ == nullptr ? meta_.size : builder_->FileSize(); }

  // Finishes the table, syncs and closes the file. On success the file is
  // the caller's; on failure it stays the writer's, for Abandon to delete.
  // The directory is not synced. REQUIRES: is_open().
  Status Finish();

  // Gives up the current file if it is still the writer's: the table is
  // abandoned and the file deleted (best effort). Does nothing otherwise.
  void Abandon();

 private:
  FileSystem* const fs_;
  const std::string dir_;
  RateLimiter* const limiter_;
  std::unique_ptr<WritableFile> file_;
  std::unique_ptr<sstable::TableBuilder> builder_;
  FileMeta meta_;
  // The current file's path while it is the writer's; empty otherwise.
  std::string path_;
};

}  // namespace strata::engine

#endif  // STRATA_ENGINE_TABLE_FILE_WRITER_H_
