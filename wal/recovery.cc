// RecoverLog and ReadLog: replaying the log and deciding what a bad spot
// means (wal/FORMAT.md, "Recovery").
#include <algorithm>
#include <optional>

#include "wal/log_reader.h"

namespace strata::wal {

namespace {

// Whether the cut removes its segment as a whole: when the header is damaged,
// or when the first record disagrees with it (the header may be what is
// wrong). A torn first record keeps the header, whose first_sequence still
// says where the log goes on.
bool CutRemovesSegment(const LogReader& reader) {
  const LogPosition cut = reader.cut();
  return cut.offset < kSegmentHeaderSize ||
         (cut.offset == kSegmentHeaderSize && reader.stop_is_inconsistency());
}

// Makes a segment's contents durable, first truncating it to `size` bytes
// when given.
Status SyncSegment(FileSystem* fs, const std::string& path,
                   std::optional<uint64_t> size = std::nullopt) {
  FileOpenOptions keep;
  keep.truncate = false;
  std::unique_ptr<WritableFile> file;
  STRATA_RETURN_IF_ERROR(fs->NewWritableFile(path, keep, &file));
  if (size) STRATA_RETURN_IF_ERROR(file->Truncate(*size));
  STRATA_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

// Removes everything from the reader's cut on: later segments first (newest
// first), then the cut segment is truncated at the cut or deleted. A crash
// part way leaves a log whose recovery cuts at the same spot.
Status CutLog(FileSystem* fs, const std::string& dir, const LogReader& reader, RecoveryInfo* info) {
  const LogPosition cut = reader.cut();
  const std::vector<uint64_t>& numbers = reader.segment_numbers();
  bool deleted = false;
  for (auto it = numbers.rbegin(); it != numbers.rend() && *it > cut.segment; ++it) {
    const std::string path = reader.SegmentPath(*it);
    STRATA_RETURN_IF_ERROR(fs->DeleteFile(path));
    info->removed_files.push_back(path);
    deleted = true;
  }
  if (deleted) STRATA_RETURN_IF_ERROR(fs->SyncDir(dir));
  const std::string path = reader.SegmentPath(cut.segment);
  if (CutRemovesSegment(reader)) {
    STRATA_RETURN_IF_ERROR(fs->DeleteFile(path));
    info->removed_files.push_back(path);
    return fs->SyncDir(dir);
  }
  STRATA_RETURN_IF_ERROR(SyncSegment(fs, path, cut.offset));
  info->truncated_file = path;
  return Status::OK();
}

// Truncates the last segment where its data ends, so that later recoveries
// need not scan the unused rest of it for stray fragments.
Status TrimLastSegment(FileSystem* fs, const LogReader& reader, RecoveryInfo* info) {
  LogPosition end;
  if (!reader.LastSegmentEndedEarly(&end)) return Status::OK();
  const std::string path = reader.SegmentPath(end.segment);
  Result<uint64_t> size = fs->GetFileSize(path);
  STRATA_RETURN_IF_ERROR(size.status());
  if (*size <= end.offset) return Status::OK();
  STRATA_RETURN_IF_ERROR(SyncSegment(fs, path, end.offset));
  info->truncated_file = path;
  return Status::OK();
}

Status ProcessLog(FileSystem* fs, const std::string& dir, RecoveryMode mode,
                  SequenceNumber start_sequence, const RecordFunction& fn, RecoveryInfo* info,
                  bool repair, const BeforeRemovingSegments& before_removing = nullptr) {
  *info = RecoveryInfo();
  std::unique_ptr<LogReader> reader;
  Status s = LogReader::OpenDirectory(fs, dir, &reader);
  if (s.IsNotFound()) return Status::OK();  // no directory: an empty log
  STRATA_RETURN_IF_ERROR(s);
  info->segments = reader->segment_numbers().size();

  bool any = false;
  SequenceNumber end = 0;
  LogRecord record;
  while (reader->ReadRecord(&record)) {
    if (!any) {
      any = true;
      info->first_sequence = record.first_sequence;
      if (start_sequence > 0 && record.first_sequence > start_sequence) {
        return Status::Corruption(
            reader->SegmentPath(record.begin.segment) + " at offset " +
            std::to_string(record.begin.offset) + ": the log begins at sequence " +
            std::to_string(record.first_sequence) + " but recovery needs every record from " +
            std::to_string(start_sequence));
      }
    }
    end = record.first_sequence + record.sequence_count;
    if (start_sequence > 0 && end <= start_sequence) {
      info->records_skipped++;
      continue;
    }
    if (fn)
      STRATA_RETURN_IF_ERROR(fn(record.first_sequence, record.sequence_count, record.payload));
    info->records++;
  }
  s = reader->status();
  if (s.ok() && repair) STRATA_RETURN_IF_ERROR(TrimLastSegment(fs, *reader, info));
  // The segments that survive: all of them, or those up to the cut.
  uint64_t last_kept = reader->segment_numbers().empty() ? 0 : reader->segment_numbers().back();
  bool keeps_any = !reader->segment_numbers().empty();
  if (!s.ok()) {
    if (!s.IsCorruption()) return s;
    const LogPosition stop = reader->stop();
    const LogPosition cut = reader->cut();
    info->tail_reason = std::string(s.message());
    info->stop_file = reader->SegmentPath(stop.segment);
    info->stop_offset = stop.offset;
    info->cut_file = reader->SegmentPath(cut.segment);
    info->cut_offset = cut.offset;
    if (mode == RecoveryMode::kAbsoluteConsistency) return s;
    if (mode == RecoveryMode::kTolerateTornTail && reader->stop_is_inconsistency()) return s;
    bool later = false;
    LogPosition where;
    STRATA_RETURN_IF_ERROR(reader->FindLaterDurableRecord(&later, &where));
    switch (mode) {
      case RecoveryMode::kAbsoluteConsistency:
        return s;
      case RecoveryMode::kTolerateTornTail:
        if (later) {
          return Status::Corruption(
              std::string(s.message()) +
              "; this is not a torn tail: a record written after this spot was durable starts in " +
              reader->SegmentPath(where.segment) + " at offset " + std::to_string(where.offset));
        }
        break;
      case RecoveryMode::kPointInTime:
        break;
    }
    info->tail_dropped = true;
    info->later_records_dropped = later;
    last_kept = cut.segment;
    if (CutRemovesSegment(*reader)) {
      // The cut segment goes as a whole; the one before it is the last kept.
      const auto& numbers = reader->segment_numbers();
      auto it = std::lower_bound(numbers.begin(), numbers.end(), cut.segment);
      keeps_any = it != numbers.begin();
      if (keeps_any) last_kept = *(it - 1);
    }
    const bool removes_segments =
        CutRemovesSegment(*reader) ||
        (!reader->segment_numbers().empty() && reader->segment_numbers().back() > cut.segment);
    if (repair && removes_segments && before_removing) {
      STRATA_RETURN_IF_ERROR(before_removing(keeps_any ? last_kept : 0));
    }
    if (repair) STRATA_RETURN_IF_ERROR(CutLog(fs, dir, *reader, info));
  }
  // The last surviving segment may hold a tail the dead writer never synced
  // but the page cache kept (one that filled the segment exactly is neither
  // torn nor trimmed): a new writer's synced groups would otherwise follow
  // bytes a power loss can still take, and lie past a hole.
  if (repair && keeps_any && info->truncated_file != reader->SegmentPath(last_kept)) {
    STRATA_RETURN_IF_ERROR(SyncSegment(fs, reader->SegmentPath(last_kept)));
  }
  // A segment header bounds the sequence numbers before it even when no
  // record follows it (a writer that was opened and closed without writing).
  SequenceNumber next = any ? end : 0;
  SequenceNumber header_first = 0;
  if (keeps_any && reader->HeaderFirstSequence(last_kept, &header_first)) {
    next = std::max(next, header_first);
  }
  info->next_sequence = next;
  return Status::OK();
}

}  // namespace

Status CheckSegmentFile(FileSystem* fs, const std::string& dir, uint64_t number) {
  const std::string path = JoinPath(dir, SegmentFileName(number));
  if (!fs->FileExists(path)) return Status::NotFound(path + " is missing");
  SegmentHeader h;
  Status s = ReadSegmentHeader(fs, path, &h);
  if (s.IsCorruption() || (s.ok() && h.segment_number != number)) {
    return Status::Corruption(path + " has no valid segment header");
  }
  return s;
}

Status RecoverLog(FileSystem* fs, const std::string& dir, RecoveryMode mode,
                  const RecordFunction& fn, RecoveryInfo* info) {
  return ProcessLog(fs, dir, mode, /*start_sequence=*/0, fn, info, /*repair=*/true);
}

Status RecoverLog(FileSystem* fs, const std::string& dir, RecoveryMode mode,
                  SequenceNumber start_sequence, const RecordFunction& fn, RecoveryInfo* info) {
  return ProcessLog(fs, dir, mode, start_sequence, fn, info, /*repair=*/true);
}

Status RecoverLog(FileSystem* fs, const std::string& dir, RecoveryMode mode,
                  SequenceNumber start_sequence, const RecordFunction& fn, RecoveryInfo* info,
                  const BeforeRemovingSegments& before_removing) {
  return ProcessLog(fs, dir, mode, start_sequence, fn, info, /*repair=*/true, before_removing);
}

Status ReadLog(FileSystem* fs, const std::string& dir, RecoveryMode mode,
               SequenceNumber start_sequence, const RecordFunction& fn, RecoveryInfo* info) {
  return ProcessLog(fs, dir, mode, start_sequence, fn, info, /*repair=*/false);
}

}  // namespace strata::wal
