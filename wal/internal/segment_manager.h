// SegmentManager: the segment files of one log directory, for LogWriter
// (file names and the writer protocol: wal/FORMAT.md; how segments are
// started, released and recycled: wal/README.md, "Segments").
//
// It lists the directory when the writer opens, starts each new segment (a
// spare reused, or a new file preallocated to segment_size, made a segment by
// a rename once its header is durable), keeps the current segment's file open
// for the writer, and releases old segments, deleting them or keeping them as
// spares, once their records are durable elsewhere.
//
// Thread safety: the segment list and the spares are guarded by an internal
// mutex. Load, Start, CloseFile and the current-segment accessors are for the
// log writer's group leader only (or for the writer's Open and Close, when no
// leader can exist): the writer hands leadership over under its own mutex,
// which orders one leader's calls before the next one's. ReleaseBefore may run
// on any thread, concurrently with the leader, one call at a time (LogWriter
// serializes them).
//
// Invariants:
//   - the list holds the log's segments oldest first; after a successful
//     Start its last entry is the current segment, whose file is open (a
//     failed Start may leave no file open: the writer is then stopped);
//   - a segment Start makes joins the log (gets its .log name) only once its
//     header and an all-zero fragment header after it are durable, and joins
//     the list only once its directory entry is durable and segment_started
//     accepted it;
//   - at most max_spares spares are kept, and none unless recycling is on;
//     the others are deleted;
//   - segments are released oldest first, each followed by a directory sync,
//     so a crash leaves the log a contiguous run of segments; the current
//     segment is never released.
#ifndef STRATA_WAL_INTERNAL_SEGMENT_MANAGER_H_
#define STRATA_WAL_INTERNAL_SEGMENT_MANAGER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/file_system.h"
#include "common/mutex.h"
#include "strata/status.h"

namespace strata::wal {

class SegmentManager {
 public:
  struct Options {
    FileSystem* fs = nullptr;
    uint64_t segment_size = 0;  // LogOptions::segment_size
    bool recycle = false;       // LogOptions::recycle_segments
    size_t max_spares = 0;      // LogWriter::kMaxSpareSegments
    // LogOptions::segment_started; may be empty.
    std::function<Status(uint64_t segment_number)> segment_started;
  };  // Intentionally copyable.

  // Does no I/O; Load reads the directory.
  SegmentManager(const Options& options, std::string dir);
  ~SegmentManager();
  SegmentManager(const SegmentManager&) = delete;
  SegmentManager& operator=(const SegmentManager&) = delete;

  // Creates the directory if missing and lists it: notes every segment with
  // the first_sequence its header names (a header that can't be read is
  // bounded by the next readable one), keeps the spares an earlier writer left
  // (up to max_spares, deleting the rest) and sets *next_number to one past
  // every segment and spare number found. InvalidArgument when a header names
  // a first_sequence above `next_sequence`.
  // REQUIRES: called once, before any other method.
  Status Load(SequenceNumber next_sequence, uint64_t* next_number);

  // Closes the current segment's file, creates (or recycles a spare as)
  // segment `number`, makes its header and directory entry durable, calls
  // segment_started when `announce`, and makes it current. Leader only.
  Status Start(uint64_t number, SequenceNumber first_sequence, bool announce);

  // Every record with sequence < `sequence` is durable elsewhere: segments
  // holding only such records (never the current one) are deleted, or kept as
  // spares when recycling is on (at most max_spares).
  // REQUIRES: not called concurrently with itself.
  Status ReleaseBefore(SequenceNumber sequence);

  // Closes the current segment's file, if one is open. Leader only.
  Status CloseFile();

  // The current segment: its open file (nullptr before the first Start, after
  // CloseFile, or when a Start failed), its path and its number. Leader only.
  WritableFile* file() const { return file_.get(); }
  const std::string& path() const { return file_path_; }
  uint64_t number() const { return segment_number_; }

  // Segment files made new / made from spares by Start. Any thread.
  uint64_t created() const { return stat_created_.load(std::memory_order_relaxed); }
  uint64_t recycled() const { return stat_recycled_.load(std::memory_order_relaxed); }

 private:
  struct SegmentEntry {
    uint64_t number = 0;
    // SegmentHeader::first_sequence, when the header could be read.
    SequenceNumber first_sequence = 0;
    bool header_known = false;
  };

  Status ReleaseSegment(uint64_t number, bool keep_as_spare);

  const Options options_;
  const std::string dir_;

  Mutex mu_;
  // Every segment of the log, oldest first; back() is the current one.
  std::deque<SegmentEntry> segments_ GUARDED_BY(mu_);
  std::vector<uint64_t> spares_ GUARDED_BY(mu_);

  // The current segment. Leader state: see the thread-safety note above.
  std::unique_ptr<WritableFile> file_;
  std::string file_path_;
  uint64_t segment_number_ = 0;

  // Counters for LogWriter::GetStats. Relaxed: each is a standalone tally read
  // only for reporting; no other data is published through them.
  std::atomic<uint64_t> stat_created_{0}, stat_recycled_{0};
};

}  // namespace strata::wal

#endif  // STRATA_WAL_INTERNAL_SEGMENT_MANAGER_H_
