// LogReader: walks segments, fragments and records of the log (wal/FORMAT.md).
#include "wal/log_reader.h"

#include <algorithm>
#include <cstring>

#include "common/coding.h"

namespace strata::wal {

namespace {

// Reads go this many bytes at a time (a multiple of every valid block size).
constexpr size_t kReadChunk = 1 << 20;

bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != 0) return false;
  }
  return true;
}

enum class Want {
  kAnyFragment,
  kRecordStart,         // FULL or FIRST
  kDurableRecordStart,  // FULL or FIRST with kDurableBeforeFlag
};

// Looks for a fragment of segment `number` that passes its checksum, starts
// in [from, data_end) of `file` and is what `wanted` asks for. Every byte
// offset is tried: candidates are found by their stored segment number and
// confirmed by the checksum.
Status ScanForFragment(RandomAccessFile* file, const std::string& path, uint64_t number,
                       uint32_t block_size, uint64_t from, uint64_t data_end, Want wanted,
                       bool* found, uint64_t* where) {
  *found = false;
  from = std::max<uint64_t>(from, kSegmentHeaderSize);
  if (from >= data_end) return Status::OK();
  char needle[4];
  EncodeFixed32(needle, static_cast<uint32_t>(number));
  const uint64_t first = from / block_size * block_size;
  std::string scratch(static_cast<size_t>(std::min<uint64_t>(kReadChunk, data_end - first)), '\0');
  for (uint64_t chunk = first; chunk < data_end;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kReadChunk, data_end - chunk));
    Slice got;
    STRATA_RETURN_IF_ERROR(file->Read(chunk, want, &got, scratch.data()));
    if (got.size() < want) {
      return Status::IOError(path + ": short read at offset " + std::to_string(chunk + got.size()));
    }
    for (uint64_t block = chunk; block < chunk + want; block += block_size) {
      const char* base = got.data() + (block - chunk);
      const uint64_t limit = std::min<uint64_t>(block + block_size, data_end);
      const uint64_t lo = std::max(block, from);
      if (limit < kMinFragmentSize || lo > limit - kMinFragmentSize) continue;
      const uint64_t hi = limit - kMinFragmentSize;  // last offset a fragment could start at
      // The stored segment number sits 7 bytes into a fragment header.
      const char* s = base + (lo - block) + 7;
      const char* e = base + (hi - block) + 7 + sizeof(needle);
      while (s + sizeof(needle) <= e) {
        const void* hit = memmem(s, static_cast<size_t>(e - s), needle, sizeof(needle));
        if (hit == nullptr) break;
        const char* p = static_cast<const char*>(hit) - 7;
        const uint64_t at = block + static_cast<uint64_t>(p - base);
        FragmentView v;
        std::string why;
        if (CheckFragment(p, static_cast<size_t>(limit - at), block + block_size - at, number, &v,
                          &why) == FragmentCheck::kValid &&
            (wanted == Want::kAnyFragment ||
             (IsRecordStart(v.type) && (wanted == Want::kRecordStart || v.durable_before)))) {
          *found = true;
          *where = at;
          return Status::OK();
        }
        s = static_cast<const char*>(hit) + 1;
      }
    }
    chunk += want;
  }
  return Status::OK();
}

}  // namespace

LogReader::LogReader(FileSystem* fs, std::string dir, std::vector<uint64_t> numbers,
                     std::vector<std::string> paths)
    : fs_(fs), dir_(std::move(dir)), numbers_(std::move(numbers)), paths_(std::move(paths)) {}

LogReader::~LogReader() = default;

Status LogReader::OpenDirectory(FileSystem* fs, const std::string& dir,
                                std::unique_ptr<LogReader>* result) {
  std::vector<std::string> names;
  STRATA_RETURN_IF_ERROR(fs->GetChildren(dir, &names));
  std::vector<uint64_t> numbers;
  for (const auto& name : names) {
    uint64_t number;
    LogFileKind kind;
    if (ParseLogFileName(name, &number, &kind) && kind == LogFileKind::kSegment) {
      numbers.push_back(number);
    }
  }
  std::sort(numbers.begin(), numbers.end());
  std::vector<std::string> paths;
  for (uint64_t n : numbers) paths.push_back(JoinPath(dir, SegmentFileName(n)));
  result->reset(new LogReader(fs, dir, std::move(numbers), std::move(paths)));
  return Status::OK();
}

Status ReadSegmentHeader(FileSystem* fs, const std::string& path, SegmentHeader* header) {
  std::unique_ptr<RandomAccessFile> file;
  STRATA_RETURN_IF_ERROR(fs->NewRandomAccessFile(path, &file));
  char buf[kSegmentHeaderSize];
  Slice got;
  STRATA_RETURN_IF_ERROR(file->Read(0, sizeof(buf), &got, buf));
  return DecodeSegmentHeader(got, header).WithContext(path + " at offset 0");
}

Status LogReader::OpenFile(FileSystem* fs, const std::string& path,
                           std::unique_ptr<LogReader>* result) {
  const size_t slash = path.find_last_of('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  uint64_t number;
  LogFileKind kind;
  if (!ParseLogFileName(name, &number, &kind) || kind != LogFileKind::kSegment) {
    SegmentHeader h;
    STRATA_RETURN_IF_ERROR(ReadSegmentHeader(fs, path, &h));
    number = h.segment_number;
  }
  result->reset(new LogReader(fs, DirName(path), {number}, {path}));
  return Status::OK();
}

std::string LogReader::SegmentPath(uint64_t number) const {
  auto it = std::lower_bound(numbers_.begin(), numbers_.end(), number);
  if (it != numbers_.end() && *it == number) return paths_[it - numbers_.begin()];
  return JoinPath(dir_, SegmentFileName(number));
}

std::string LogReader::Describe(const LogPosition& p) const {
  return SegmentPath(p.segment) + " at offset " + std::to_string(p.offset);
}

LogReader::Item LogReader::Stop(uint64_t offset, const std::string& why) {
  StopRecord(LogPosition{numbers_[index_], offset}, LogPosition{numbers_[index_], offset},
             /*inconsistent=*/false, why);
  return Item::kStop;
}

LogReader::Item LogReader::StopWithStatus(Status s) {
  stopped_ = true;
  status_ = std::move(s);
  return Item::kStop;
}

void LogReader::StopRecord(const LogPosition& stop, const LogPosition& cut, bool inconsistent,
                           const std::string& why) {
  stopped_ = true;
  stop_ = stop;
  cut_ = cut;
  inconsistent_ = inconsistent;
  stop_why_ = why;
  std::string msg = Describe(stop) + ": " + why;
  if (!(cut == stop)) msg += " (in the record that starts in " + Describe(cut) + ")";
  status_ = Status::Corruption(msg);
}

bool LogReader::OpenSegment() {
  const uint64_t number = numbers_[index_];
  const std::string& path = paths_[index_];
  Status s = fs_->NewRandomAccessFile(path, &file_);
  if (!s.ok()) return StopWithStatus(s), false;
  Result<uint64_t> size = file_->Size();
  if (!size.ok()) return StopWithStatus(size.status()), false;
  char buf[kSegmentHeaderSize];
  Slice got;
  s = file_->Read(0, sizeof(buf), &got, buf);
  if (!s.ok()) return StopWithStatus(s), false;
  open_ = true;
  segment_has_start_ = false;
  chunk_data_ = nullptr;
  bool checksum_ok = false;
  s = DecodeSegmentHeader(got, &header_, &checksum_ok);
  if (s.IsNotSupported()) return StopWithStatus(s.WithContext(path)), false;
  std::string why;
  if (!s.ok()) {
    why = std::string(s.message());
  } else if (header_.segment_number != number) {
    checksum_ok = true;
    why = "bad segment header: it names segment " + std::to_string(header_.segment_number);
  }
  if (!why.empty()) {
    StopRecord(LogPosition{number, 0}, LogPosition{number, 0}, checksum_ok, why);
    return false;
  }
  data_end_ = std::min(*size, header_.segment_size);
  offset_ = kSegmentHeaderSize;
  headers_.emplace_back(number, header_.first_sequence);
  return true;
}

void LogReader::CloseSegment(uint64_t end_offset) {
  last_end_ = LogPosition{numbers_[index_], end_offset};
  last_ended_early_ = end_offset < header_.segment_size;
  file_.reset();
  open_ = false;
  chunk_data_ = nullptr;
  index_++;
}

Status LogReader::Fetch(uint64_t offset, size_t n, const char** data) {
  if (chunk_data_ != nullptr && offset >= chunk_start_ && offset + n <= chunk_start_ + chunk_len_) {
    *data = chunk_data_ + (offset - chunk_start_);
    return Status::OK();
  }
  const uint64_t start = offset / header_.block_size * header_.block_size;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(kReadChunk, data_end_ - start));
  if (chunk_.size() < want) chunk_.resize(want);  // a short segment needs less than a chunk
  Slice got;
  STRATA_RETURN_IF_ERROR(file_->Read(start, want, &got, chunk_.data()));
  if (got.size() < want) {
    return Status::IOError(paths_[index_] + ": short read at offset " +
                           std::to_string(start + got.size()));
  }
  chunk_data_ = got.data();
  chunk_start_ = start;
  chunk_len_ = got.size();
  *data = chunk_data_ + (offset - start);
  return Status::OK();
}

LogReader::Item LogReader::NextItem(LogFragment* fragment) {
  if (stopped_) return Item::kStop;
  if (!open_) {
    if (index_ >= numbers_.size()) return Item::kEndOfLog;
    if (!OpenSegment()) return Item::kStop;
  }
  const uint64_t number = numbers_[index_];
  const uint64_t block_size = header_.block_size;
  for (;;) {
    if (offset_ >= data_end_) {
      if (data_end_ == header_.segment_size) {
        CloseSegment(data_end_);
        return Item::kSegmentFull;
      }
      break;  // the file is shorter than the segment: its data ends here
    }
    const uint64_t block_left = block_size - offset_ % block_size;
    const char* p;
    if (block_left < kMinFragmentSize) {
      const size_t n = static_cast<size_t>(std::min(block_left, data_end_ - offset_));
      Status s = Fetch(offset_, n, &p);
      if (!s.ok()) return StopWithStatus(s);
      if (!AllZero(p, n)) return Stop(offset_, "nonzero byte in block padding");
      offset_ += n;
      continue;
    }
    const size_t available = static_cast<size_t>(std::min(block_left, data_end_ - offset_));
    Status s = Fetch(offset_, available, &p);
    if (!s.ok()) return StopWithStatus(s);
    FragmentView v;
    std::string why;
    const FragmentCheck check = CheckFragment(p, available, block_left, number, &v, &why);
    if (check == FragmentCheck::kBad) return Stop(offset_, why);
    if (check != FragmentCheck::kValid) break;  // zero or stale: this segment's data ends here
    fragment->type = v.type;
    fragment->durable_before = v.durable_before;
    fragment->position = LogPosition{number, offset_};
    fragment->payload = v.payload;
    offset_ += kFragmentHeaderSize + v.payload.size();
    return Item::kFragment;
  }
  // The data of a segment ends only where nothing of it follows; otherwise
  // the end is a hole (lost or zeroed bytes) in the middle of the segment.
  bool found = false;
  uint64_t where = 0;
  Status s = ScanForFragment(file_.get(), paths_[index_], number, header_.block_size, offset_ + 1,
                             data_end_, Want::kAnyFragment, &found, &where);
  if (!s.ok()) return StopWithStatus(s);
  if (found) {
    return Stop(offset_, "the segment's data ends here, but a valid fragment follows at offset " +
                             std::to_string(where));
  }
  CloseSegment(offset_);
  return Item::kSegmentEnded;
}

bool LogReader::ReadFragment(LogFragment* fragment) {
  for (;;) {
    switch (NextItem(fragment)) {
      case Item::kFragment:
        return true;
      case Item::kSegmentFull:
      case Item::kSegmentEnded:
        continue;
      case Item::kEndOfLog:
        stopped_ = true;
        status_ = Status::OK();
        return false;
      case Item::kStop:
        return false;
    }
  }
}

bool LogReader::ReadRecord(LogRecord* record) {
  if (stopped_) return false;
  bool in_record = false;
  bool first_in_segment = false;
  LogPosition begin;
  LogPosition last;  // the previous fragment of the record
  uint32_t fragments = 0;
  Slice body;
  // Segments the record continued into, with their headers' first_sequence.
  std::vector<std::pair<uint64_t, SequenceNumber>> continued;
  LogFragment f;
  for (bool complete = false; !complete;) {
    switch (NextItem(&f)) {
      case Item::kFragment: {
        const bool start = IsRecordStart(f.type);
        if (in_record && start) {
          StopRecord(f.position, begin, /*inconsistent=*/false,
                     "a record starts here while the previous one has no last fragment");
          return false;
        }
        if (!in_record && !start) {
          if (leading_open_) {
            // The tail of a record whose first segments were released.
            skipped_leading_++;
            if (f.type == FragmentType::kLast) leading_open_ = false;
            continue;
          }
          StopRecord(f.position, f.position, /*inconsistent=*/false,
                     std::string(FragmentTypeName(f.type)) + " fragment without a first fragment");
          return false;
        }
        if (in_record && f.position.segment != last.segment) {
          if (f.position.segment != last.segment + 1) {
            StopRecord(f.position, begin, /*inconsistent=*/true,
                       "the record goes on in segment " + std::to_string(f.position.segment) +
                           " instead of segment " + std::to_string(last.segment + 1));
            return false;
          }
          continued.emplace_back(f.position.segment, headers_.back().second);
        }
        last = f.position;
        fragments++;
        if (start) {
          leading_open_ = false;
          begin = f.position;
          first_in_segment = !segment_has_start_;
          segment_has_start_ = true;
        }
        if (f.type == FragmentType::kFull) {
          body = f.payload;
          complete = true;
        } else if (f.type == FragmentType::kFirst) {
          record_.assign(f.payload.data(), f.payload.size());
          in_record = true;
        } else {
          record_.append(f.payload.data(), f.payload.size());
          if (f.type == FragmentType::kLast) {
            body = Slice(record_);
            complete = true;
          }
        }
        break;
      }
      case Item::kSegmentFull:
        break;  // a record in progress continues in the next segment
      case Item::kSegmentEnded:
        leading_open_ = false;
        if (in_record) {
          StopRecord(last_end_, begin, /*inconsistent=*/false,
                     "the record is incomplete: the segment's data ends here");
          return false;
        }
        break;
      case Item::kEndOfLog:
        if (in_record) {
          StopRecord(last_end_, begin, /*inconsistent=*/false,
                     "the record is incomplete at the end of the log");
          return false;
        }
        stopped_ = true;
        status_ = Status::OK();
        return false;
      case Item::kStop:
        if (in_record && status_.IsCorruption()) {
          StopRecord(stop_, begin, inconsistent_, stop_why_);
        }
        return false;
    }
  }

  SequenceNumber first;
  uint64_t count;
  if (!DecodeRecordPrefix(&body, &first, &count)) {
    StopRecord(begin, begin, /*inconsistent=*/true, "malformed record prefix");
    return false;
  }
  if (count == 0 || first + count < first) {
    StopRecord(begin, begin, /*inconsistent=*/true,
               "record claims " + std::to_string(count) + " sequence numbers from " +
                   std::to_string(first));
    return false;
  }
  if (expected_known_ && first != expected_) {
    StopRecord(begin, begin, /*inconsistent=*/true,
               "sequence gap: the record starts at sequence " + std::to_string(first) +
                   ", the previous one ended before " + std::to_string(expected_));
    return false;
  }
  SequenceNumber h = 0;
  if (first_in_segment && HeaderFirstSequence(begin.segment, &h) && h != first) {
    StopRecord(begin, begin, /*inconsistent=*/true,
               "the first record of the segment starts at sequence " + std::to_string(first) +
                   " but the segment header says " + std::to_string(h));
    return false;
  }
  for (const auto& [segment, header_first] : continued) {
    if (header_first != first + count) {
      StopRecord(LogPosition{segment, 0}, begin, /*inconsistent=*/true,
                 "segment header says its first record starts at sequence " +
                     std::to_string(header_first) +
                     " but the record continued into it ends before " +
                     std::to_string(first + count));
      return false;
    }
  }
  expected_known_ = true;
  expected_ = first + count;
  record->first_sequence = first;
  record->sequence_count = count;
  record->payload = body;
  record->begin = begin;
  record->end = LogPosition{last.segment, last.offset + kFragmentHeaderSize + f.payload.size()};
  record->fragments = fragments;
  return true;
}

bool LogReader::LastSegmentEndedEarly(LogPosition* end) const {
  if (!status_.ok() || !stopped_ || numbers_.empty()) return false;
  *end = last_end_;
  return last_ended_early_;
}

bool LogReader::HeaderFirstSequence(uint64_t segment, SequenceNumber* first_sequence) const {
  bool found = false;
  for (const auto& [number, first] : headers_) {
    if (number > segment) break;
    *first_sequence = first;
    found = true;
  }
  return found;
}

Status LogReader::FindLaterDurableRecord(bool* found, LogPosition* where) {
  *found = false;
  auto it = std::lower_bound(numbers_.begin(), numbers_.end(), stop_.segment);
  for (size_t i = static_cast<size_t>(it - numbers_.begin()); i < numbers_.size(); i++) {
    std::unique_ptr<RandomAccessFile> file;
    STRATA_RETURN_IF_ERROR(fs_->NewRandomAccessFile(paths_[i], &file));
    Result<uint64_t> size = file->Size();
    STRATA_RETURN_IF_ERROR(size.status());
    char buf[kSegmentHeaderSize];
    Slice got;
    STRATA_RETURN_IF_ERROR(file->Read(0, sizeof(buf), &got, buf));
    // A damaged header leaves the layout unknown: assume the writer's.
    SegmentHeader h;
    uint32_t block_size = kBlockSize;
    uint64_t data_end = *size;
    if (DecodeSegmentHeader(got, &h).ok()) {
      block_size = h.block_size;
      data_end = std::min(data_end, h.segment_size);
    }
    // A segment is synced in full before the next one starts, so any record
    // start in a later segment was written after the stop was durable; in
    // the stop's own segment only a group start flagged so proves it.
    const bool same = numbers_[i] == stop_.segment;
    uint64_t at = 0;
    STRATA_RETURN_IF_ERROR(ScanForFragment(
        file.get(), paths_[i], numbers_[i], block_size, same ? stop_.offset : 0, data_end,
        same ? Want::kDurableRecordStart : Want::kRecordStart, found, &at));
    if (*found) {
      *where = LogPosition{numbers_[i], at};
      return Status::OK();
    }
  }
  return Status::OK();
}

}  // namespace strata::wal
