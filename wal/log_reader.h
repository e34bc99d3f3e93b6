// Reading the write-ahead log (format: wal/FORMAT.md).
//
// LogReader walks the segments of a log directory (or one segment file) and
// returns fragments or whole records with their positions; it stops at the
// first spot it cannot read on from and says where and why, without deciding
// whether that spot is a torn tail. RecoverLog reads a whole log for replay,
// applies a RecoveryMode to the spot where reading stopped (torn tail or
// mid-log corruption, FORMAT.md "Recovery") and cuts a dropped tail off so a
// new LogWriter can append safely. ReadLog does the same without changing any
// file, for inspection tools.
//
// LogReader is thread-compatible; the functions are thread-safe as long as no
// one writes the directory meanwhile. Every corruption is Status::Corruption
// with a message naming the file and the byte offset.
//
// Invariants: records come back in log order with contiguous sequence
// numbers, and only when every fragment and the record itself passed every
// check of FORMAT.md; once a Read returns false it keeps returning false and
// status() stays as it was.
#ifndef STRATA_WAL_LOG_READER_H_
#define STRATA_WAL_LOG_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/file_system.h"
#include "strata/slice.h"
#include "strata/status.h"
#include "wal/log_format.h"

namespace strata::wal {

// A byte in the log: segment number and offset in that segment's file.
struct LogPosition {
  uint64_t segment = 0;
  uint64_t offset = 0;
};  // Intentionally copyable.
inline bool operator==(const LogPosition& a, const LogPosition& b) {
  return a.segment == b.segment && a.offset == b.offset;
}
inline bool operator<(const LogPosition& a, const LogPosition& b) {
  return a.segment != b.segment ? a.segment < b.segment : a.offset < b.offset;
}

struct LogFragment {
  FragmentType type = FragmentType::kFull;
  bool durable_before = false;  // kDurableBeforeFlag: starts a group written after a sync
  LogPosition position;         // of the fragment header
  Slice payload;                // valid until the next call on the reader
};                              // Intentionally copyable.

struct LogRecord {
  SequenceNumber first_sequence = 0;
  uint64_t sequence_count = 0;
  Slice payload;      // the caller's bytes, without the prefix; valid until the next call
  LogPosition begin;  // header of the first fragment
  LogPosition end;    // one past the last fragment
  uint32_t fragments = 0;
};  // Intentionally copyable.

class LogReader {
 public:
  // Reads the segments ("NNNNNNNNNN.log") of `dir` in number order; spares
  // and other files are ignored. A directory without segments is an empty log.
  static Status OpenDirectory(FileSystem* fs, const std::string& dir,
                              std::unique_ptr<LogReader>* result);
  // Reads one segment file. Its number comes from its name when that is a
  // segment name, otherwise from its header.
  static Status OpenFile(FileSystem* fs, const std::string& path,
                         std::unique_ptr<LogReader>* result);
  ~LogReader();
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  // The segments read, in log order.
  const std::vector<uint64_t>& segment_numbers() const { return numbers_; }
  std::string SegmentPath(uint64_t number) const;

  // Use either ReadFragment or ReadRecord on one reader, not both.
  //
  // The next fragment of the log; false when reading stopped (see status()).
  // Fragments are checked one by one, not assembled.
  bool ReadFragment(LogFragment* fragment);
  // The next complete record; false when reading stopped (see status()).
  // Checks that fragments assemble, that the prefix decodes, that sequence
  // numbers are contiguous and agree with the segment headers. Continuation
  // fragments at the very start of the first segment (the rest of a record
  // whose earlier segments were released) are skipped.
  bool ReadRecord(LogRecord* record);

  // Why the last Read returned false: OK at a clean end of the log;
  // Corruption when reading stopped at a bad spot (stop(), cut()); NotSupported
  // for a segment of another format version; I/O errors as they came.
  const Status& status() const { return status_; }
  // Where the bad spot is: the first byte that could not be read on from.
  LogPosition stop() const { return stop_; }
  // Where the record that could not be read begins (== stop() for spots
  // between records): everything from here on is what a recovery drops.
  LogPosition cut() const { return cut_; }
  // True when the bytes at the stop passed their checksums but do not fit
  // (sequence gap, bad prefix, wrong segment header): not something a torn
  // write can produce.
  bool stop_is_inconsistency() const { return inconsistent_; }

  // After a stop at a bad spot: looks, at every byte offset after stop(), for
  // a valid record start (FULL or FIRST fragment passing its checksum) that
  // was written after the bytes at stop() were durable: any record start in
  // a later segment, or one carrying kDurableBeforeFlag in stop()'s segment.
  // Such a record exists exactly when the damage is mid-log corruption rather
  // than a torn tail (FORMAT.md "Recovery"). Nothing between cut() and stop()
  // starts a record.
  Status FindLaterDurableRecord(bool* found, LogPosition* where);

  // SegmentHeader::first_sequence of the last segment at or before `segment`
  // whose header was read and valid; false if there is none.
  bool HeaderFirstSequence(uint64_t segment, SequenceNumber* first_sequence) const;
  uint64_t skipped_leading_fragments() const { return skipped_leading_; }
  // After reading reached a clean end of the log: whether the last segment's
  // data ended before the segment's end, and where.
  bool LastSegmentEndedEarly(LogPosition* end) const;

 private:
  enum class Item { kFragment, kSegmentFull, kSegmentEnded, kEndOfLog, kStop };

  LogReader(FileSystem* fs, std::string dir, std::vector<uint64_t> numbers,
            std::vector<std::string> paths);
  Item NextItem(LogFragment* fragment);
  // Opens numbers_[index_] and checks its header; false when reading stopped.
  bool OpenSegment();
  // Moves on to the next segment; the closed one's data ended at end_offset.
  void CloseSegment(uint64_t end_offset);
  // Points *data at file bytes [offset, offset + n) of the current segment.
  // REQUIRES: the range lies inside one block and below data_end_.
  Status Fetch(uint64_t offset, size_t n, const char** data);
  Item Stop(uint64_t offset, const std::string& why);
  Item StopWithStatus(Status s);
  void StopRecord(const LogPosition& stop, const LogPosition& cut, bool inconsistent,
                  const std::string& why);
  std::string Describe(const LogPosition& p) const;

  FileSystem* const fs_;
  const std::string dir_;
  const std::vector<uint64_t> numbers_;
  const std::vector<std::string> paths_;

  // The segment being read.
  size_t index_ = 0;  // into numbers_; == numbers_.size() past the end
  bool open_ = false;
  std::unique_ptr<RandomAccessFile> file_;
  SegmentHeader header_;
  uint64_t data_end_ = 0;  // min(file size, header_.segment_size)
  uint64_t offset_ = 0;    // next byte to parse
  std::string chunk_;      // scratch for reads
  const char* chunk_data_ = nullptr;
  uint64_t chunk_start_ = 0;
  size_t chunk_len_ = 0;
  std::vector<std::pair<uint64_t, SequenceNumber>> headers_;  // valid headers seen

  LogPosition last_end_;  // where the data of the last closed segment ended
  bool last_ended_early_ = false;

  // Record assembly.
  std::string record_;
  bool expected_known_ = false;
  SequenceNumber expected_ = 0;  // first sequence of the next record
  // Continuation fragments at the start of the log are still being skipped.
  bool leading_open_ = true;
  bool segment_has_start_ = false;  // a record started in the current segment
  uint64_t skipped_leading_ = 0;

  bool stopped_ = false;
  Status status_;
  LogPosition stop_, cut_;
  std::string stop_why_;
  bool inconsistent_ = false;
};

enum class RecoveryMode {
  // Default: an incomplete or corrupt record at the very end of the log is
  // dropped; corruption anywhere before that is an error.
  kTolerateTornTail,
  // Any incomplete or corrupt record is an error.
  kAbsoluteConsistency,
  // Stop at the first bad record and recover everything before it, no error.
  kPointInTime,
};

struct RecoveryInfo {
  uint64_t records = 0;               // records passed to fn
  uint64_t records_skipped = 0;       // records read below start_sequence, not passed on
  SequenceNumber first_sequence = 0;  // of the first record in the log; 0 when empty
  // One past the last sequence number used by the recovered log (records or
  // segment headers); 0 when the log holds no segment at all.
  SequenceNumber next_sequence = 0;
  uint64_t segments = 0;      // segment files in the log
  bool tail_dropped = false;  // reading stopped at a bad spot and everything from it was dropped
  std::string tail_reason;    // the Corruption message for that spot
  std::string stop_file;      // where reading stopped
  uint64_t stop_offset = 0;
  std::string cut_file;  // where the dropped part begins (start of the bad record)
  uint64_t cut_offset = 0;
  // kPointInTime only: the bad spot was mid-log corruption (FORMAT.md), so
  // records written after it was durable were dropped with it.
  bool later_records_dropped = false;
  std::vector<std::string> removed_files;  // segment files deleted by the cut
  // Segment file truncated: at cut_offset, or, for a clean log, the last
  // segment where its data ends (so later recoveries skip its unused rest).
  std::string truncated_file;
};  // Intentionally copyable.

using RecordFunction =
    std::function<Status(SequenceNumber first_sequence, uint64_t sequence_count, Slice payload)>;

// Reads every record of the log in `dir` in order, calling fn(first_sequence,
// sequence_count, payload) for each (payload valid only during the call); then
// makes the log safe to append after: a dropped tail is cut off (every
// segment after the cut point is deleted and the one holding it is truncated
// there, or deleted when nothing valid of it would remain; FORMAT.md
// "Dropping"), so that a new LogWriter (which starts a new segment) never
// leaves stale records behind valid ones; a clean log's last segment is
// truncated where its data ends. A missing directory is an empty log. Modes:
// RecoveryMode. Returns fn's first non-OK status as is, without changing files.
Status RecoverLog(FileSystem* fs, const std::string& dir, RecoveryMode mode,
                  const RecordFunction& fn, RecoveryInfo* info);
// As above. `start_sequence` > 0: the caller needs every record from that
// sequence on. Records that end below it are read and checked but not passed
// to fn, and a log whose first record begins after it is Corruption in every
// mode (records are missing). 0 = accept whatever the first record says.
Status RecoverLog(FileSystem* fs, const std::string& dir, RecoveryMode mode,
                  SequenceNumber start_sequence, const RecordFunction& fn, RecoveryInfo* info);
// Reads and decodes the header of the segment file at `path` (Corruption,
// naming the file, when it is short or damaged).
Status ReadSegmentHeader(FileSystem* fs, const std::string& path, SegmentHeader* header);

// Checks that segment `number` of the log in `dir` is there with a valid
// header of its own: NotFound when the file is missing, Corruption when its
// header is short, damaged or names another segment.
Status CheckSegmentFile(FileSystem* fs, const std::string& dir, uint64_t number);

// Called by RecoverLog before it deletes segments to drop a tail, with the
// number of the last segment it keeps (0: none). An error stops recovery
// with nothing deleted. The engine records the segment as the log's newest
// first, so that a crash during the deletion does not leave its manifest
// naming a segment that is gone.
using BeforeRemovingSegments = std::function<Status(uint64_t last_kept_segment)>;
// As above, calling `before_removing` (may be empty) as it says.
Status RecoverLog(FileSystem* fs, const std::string& dir, RecoveryMode mode,
                  SequenceNumber start_sequence, const RecordFunction& fn, RecoveryInfo* info,
                  const BeforeRemovingSegments& before_removing);
// RecoverLog without changing any file: reports what recovery would keep and
// drop. For dump and verify tools. `fn` may be empty.
Status ReadLog(FileSystem* fs, const std::string& dir, RecoveryMode mode,
               SequenceNumber start_sequence, const RecordFunction& fn, RecoveryInfo* info);

}  // namespace strata::wal

#endif  // STRATA_WAL_LOG_READER_H_
