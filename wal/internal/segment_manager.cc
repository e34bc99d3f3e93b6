// Segment files of the write-ahead log; the format is wal/FORMAT.md.
#include "wal/internal/segment_manager.h"

#include <algorithm>
#include <cassert>

#include "strata/slice.h"
#include "wal/log_format.h"

namespace strata::wal {

SegmentManager::SegmentManager(const Options& options, std::string dir)
    : options_(options), dir_(std::move(dir)) {}

SegmentManager::~SegmentManager() = default;

Status SegmentManager::Load(SequenceNumber next_sequence, uint64_t* next_number) {
  FileSystem* fs = options_.fs;
  STRATA_RETURN_IF_ERROR(fs->CreateDirIfMissing(dir_));
  std::vector<std::string> names;
  STRATA_RETURN_IF_ERROR(fs->GetChildren(dir_, &names));
  std::vector<uint64_t> segments, spares;
  uint64_t max_number = 0;
  for (const auto& name : names) {
    uint64_t number;
    LogFileKind kind;
    if (!ParseLogFileName(name, &number, &kind)) continue;
    max_number = std::max(max_number, number);
    (kind == LogFileKind::kSegment ? segments : spares).push_back(number);
  }
  std::sort(segments.begin(), segments.end());
  std::sort(spares.begin(), spares.end());

  {
    MutexLock l(&mu_);
    // The headers of the segments already there tell ReleaseBefore which
    // sequence numbers each holds. A segment whose header can't be read is
    // bounded by the next readable one.
    for (uint64_t number : segments) {
      const std::string path = JoinPath(dir_, SegmentFileName(number));
      std::unique_ptr<RandomAccessFile> file;
      STRATA_RETURN_IF_ERROR(fs->NewRandomAccessFile(path, &file));
      char buf[kSegmentHeaderSize];
      Slice got;
      STRATA_RETURN_IF_ERROR(file->Read(0, sizeof(buf), &got, buf));
      SegmentEntry e;
      e.number = number;
      SegmentHeader h;
      if (DecodeSegmentHeader(got, &h).ok() && h.segment_number == number) {
        if (h.first_sequence > next_sequence) {
          return Status::InvalidArgument(
              "log " + path + " holds records from sequence " + std::to_string(h.first_sequence) +
              " but the writer was asked to continue at " + std::to_string(next_sequence));
        }
        e.first_sequence = h.first_sequence;
        e.header_known = true;
      }
      segments_.push_back(e);
    }
    // Spares left by an earlier writer are reused; beyond the bound they go.
    for (uint64_t number : spares) {
      if (options_.recycle && spares_.size() < options_.max_spares) {
        spares_.push_back(number);
      } else {
        STRATA_RETURN_IF_ERROR(fs->DeleteFile(JoinPath(dir_, SpareFileName(number))));
      }
    }
  }
  *next_number = max_number + 1;
  return Status::OK();
}

Status SegmentManager::Start(uint64_t number, SequenceNumber first_sequence, bool announce) {
  FileSystem* fs = options_.fs;
  if (file_ != nullptr) {
    Status s = file_->Close();
    file_.reset();
    STRATA_RETURN_IF_ERROR(s);
  }
  bool recycled = false;
  uint64_t spare = 0;
  if (options_.recycle) {
    MutexLock l(&mu_);
    if (!spares_.empty()) {
      spare = spares_.back();
      spares_.pop_back();
      recycled = true;
    }
  }
  // A new file is built under a spare name too: it becomes a segment only by
  // the rename, once its header is durable, so a crash never leaves a segment
  // without a valid header.
  const std::string from = JoinPath(dir_, SpareFileName(recycled ? spare : number));
  const std::string to = JoinPath(dir_, SegmentFileName(number));
  FileOpenOptions keep;
  keep.truncate = false;
  std::unique_ptr<WritableFile> f;
  STRATA_RETURN_IF_ERROR(fs->NewWritableFile(from, keep, &f));
  const uint64_t size = f->Size();
  if (size > options_.segment_size) STRATA_RETURN_IF_ERROR(f->Truncate(options_.segment_size));
  if (size < options_.segment_size) STRATA_RETURN_IF_ERROR(f->Allocate(0, options_.segment_size));
  // The header and an all-zero fragment header after it: a recycled file's
  // stale bytes must not look like the start of this segment's data.
  char head[kSegmentHeaderSize + kFragmentHeaderSize] = {};
  SegmentHeader h;
  h.segment_number = number;
  h.segment_size = options_.segment_size;
  h.first_sequence = first_sequence;
  EncodeSegmentHeader(h, head);
  STRATA_RETURN_IF_ERROR(f->WriteAt(0, Slice(head, sizeof(head))));
  STRATA_RETURN_IF_ERROR(f->Sync());
  STRATA_RETURN_IF_ERROR(f->Close());
  f.reset();
  STRATA_RETURN_IF_ERROR(fs->RenameFile(from, to));
  STRATA_RETURN_IF_ERROR(fs->SyncDir(dir_));
  // Before segments_ has it: until then no older segment can be released on
  // the strength of its header.
  if (announce && options_.segment_started)
    STRATA_RETURN_IF_ERROR(options_.segment_started(number));
  STRATA_RETURN_IF_ERROR(fs->NewWritableFile(to, keep, &file_));
  file_path_ = to;
  segment_number_ = number;
  {
    MutexLock l(&mu_);
    segments_.push_back(SegmentEntry{number, first_sequence, true});
  }
  (recycled ? stat_recycled_ : stat_created_).fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

Status SegmentManager::ReleaseBefore(SequenceNumber sequence) {
  std::vector<uint64_t> victims;
  size_t spare_room = 0;
  {
    MutexLock l(&mu_);
    // Every record touching segment i uses sequence numbers below the
    // first_sequence of any later segment, so i can go once the nearest later
    // readable header is at or below `sequence`. The current segment stays.
    std::vector<SequenceNumber> bound(segments_.size(), UINT64_MAX);
    SequenceNumber b = UINT64_MAX;
    for (size_t i = segments_.size(); i-- > 1;) {
      if (segments_[i].header_known) b = segments_[i].first_sequence;
      bound[i - 1] = b;
    }
    for (size_t i = 0; i + 1 < segments_.size() && bound[i] <= sequence; i++) {
      victims.push_back(segments_[i].number);
    }
    if (options_.recycle && spares_.size() < options_.max_spares) {
      spare_room = options_.max_spares - spares_.size();
    }
  }
  // Oldest first, each made durable before the next, so a crash leaves the
  // log a contiguous run of segments.
  for (uint64_t number : victims) {
    const bool keep = spare_room > 0;
    STRATA_RETURN_IF_ERROR(ReleaseSegment(number, keep));
    if (keep) spare_room--;
  }
  return Status::OK();
}

Status SegmentManager::ReleaseSegment(uint64_t number, bool keep_as_spare) {
  FileSystem* fs = options_.fs;
  const std::string path = JoinPath(dir_, SegmentFileName(number));
  STRATA_RETURN_IF_ERROR(keep_as_spare ? fs->RenameFile(path, JoinPath(dir_, SpareFileName(number)))
                                       : fs->DeleteFile(path));
  Status s = fs->SyncDir(dir_);
  MutexLock l(&mu_);
  assert(!segments_.empty() && segments_.front().number == number);
  segments_.pop_front();
  if (keep_as_spare) spares_.push_back(number);
  return s;
}

Status SegmentManager::CloseFile() {
  if (file_ == nullptr) return Status::OK();
  Status s = file_->Close();
  file_.reset();
  return s;
}

}  // namespace strata::wal
