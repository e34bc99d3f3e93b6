#include "gc/progress_log.h"

#include <algorithm>
#include <utility>

#include "common/coding.h"
#include "common/hash.h"

namespace strata::gc {

namespace {

// DO NOT CHANGE: stored on disk (gc/FORMAT.md).
constexpr uint64_t kChecksumSeed = 0x53544750;  // "STGP"
constexpr size_t kHeaderSize = 9;               // checksum, length, type
enum RecordType : uint8_t { kStart = 1, kRange = 2, kFinish = 3 };

std::string EncodeRecord(RecordType type, const std::string& payload) {
  std::string body;
  PutFixed32(&body, static_cast<uint32_t>(payload.size()));
  body.push_back(static_cast<char>(type));
  body.append(payload);
  std::string r;
  PutFixed32(&r, Checksum32(body.data(), body.size(), kChecksumSeed));
  r.append(body);
  return r;
}

std::string StartRecord(uint64_t collected, uint64_t round) {
  std::string p;
  PutFixed16(&p, ProgressLog::kFormatVersion);
  PutFixed64(&p, collected);
  PutFixed64(&p, round);
  return EncodeRecord(kStart, p);
}

std::string RangeRecord(const RowRange& range) {
  std::string p;
  PutLengthPrefixedSlice(&p, range.table);
  PutLengthPrefixedSlice(&p, range.start_row);
  PutLengthPrefixedSlice(&p, range.end_row);
  return EncodeRecord(kRange, p);
}

std::string FinishRecord(uint64_t round) {
  std::string p;
  PutFixed64(&p, round);
  return EncodeRecord(kFinish, p);
}

// Whether a range starting at `start` and ending at `end` holds a row: an
// empty end lies past every row.
bool StartsBefore(const std::string& start, const std::string& end) {
  return end.empty() || start < end;
}

}  // namespace

std::vector<RowRange> SubtractRanges(const std::vector<RowRange>& ranges,
                                     const std::vector<RowRange>& done) {
  std::vector<RowRange> out;
  for (const RowRange& r : ranges) {
    std::vector<const RowRange*> covers;
    for (const RowRange& d : done) {
      if (d.table == r.table) covers.push_back(&d);
    }
    std::sort(covers.begin(), covers.end(),
              [](const RowRange* a, const RowRange* b) { return a->start_row < b->start_row; });
    // [cur, r.end_row) is what is left to place.
    std::string cur = r.start_row;
    bool finished = false;
    for (const RowRange* d : covers) {
      if (!StartsBefore(cur, r.end_row)) {
        finished = true;
        break;
      }
      if (!StartsBefore(cur, d->end_row)) continue;  // d ends at or before cur
      if (d->start_row > cur) {
        // A gap before d, up to d's start or the range's end.
        const bool gap_to_end = !StartsBefore(d->start_row, r.end_row);
        out.push_back(RowRange{r.table, cur, gap_to_end ? r.end_row : d->start_row});
        if (gap_to_end) {
          finished = true;
          break;
        }
      }
      if (d->end_row.empty()) {
        finished = true;
        break;
      }
      cur = d->end_row;
    }
    if (!finished && StartsBefore(cur, r.end_row)) out.push_back(RowRange{r.table, cur, r.end_row});
  }
  return out;
}

ProgressLog::ProgressLog(FileSystem* fs, std::string path, RoundProgress progress)
    : fs_(fs), path_(std::move(path)), progress_(std::move(progress)) {}

ProgressLog::~ProgressLog() {
  if (file_ != nullptr) file_->Close().PermitUncheckedError();  // every append was synced
}

Status ProgressLog::Decode(const Slice& contents, const std::string& path,
                           RoundProgress* progress, bool* torn) {
  *progress = RoundProgress();
  *torn = false;
  Slice in = contents;
  bool first = true;
  while (!in.empty()) {
    // A damaged or short record ends the file: the last append was torn.
    // The first one is renamed into place whole, so damage there is not a
    // crash's.
    Status bad = Status::Corruption(path + ": damaged first record (the file only records " +
                                    "progress: deleting it is safe)");
    if (in.size() < kHeaderSize) {
      if (first) return bad;
      *torn = true;
      break;
    }
    const uint32_t stored = DecodeFixed32(in.data());
    const uint32_t length = DecodeFixed32(in.data() + 4);
    if (length > in.size() - kHeaderSize ||
        !ChecksumMatches(stored,
                         Checksum32(in.data() + 4, kHeaderSize - 4 + length, kChecksumSeed))) {
      if (first) return bad;
      *torn = true;
      break;
    }
    const auto type = static_cast<uint8_t>(in[8]);
    Slice p(in.data() + kHeaderSize, length);
    in.remove_prefix(kHeaderSize + length);
    const std::string where = path + ": record at offset " +
                              std::to_string(contents.size() - in.size() - kHeaderSize - length);
    if (type != kStart && type != kRange && type != kFinish) {
      return Status::NotSupported(where + ": unknown record type " + std::to_string(type));
    }
    if (first != (type == kStart)) {
      return Status::Corruption(where + ": a start record must come first, and only there");
    }
    first = false;
    switch (type) {
      case kStart: {
        uint16_t version = 0;
        if (!GetFixed16(&p, &version)) return Status::Corruption(where + ": short start record");
        if (version != kFormatVersion) {
          return Status::NotSupported(path + ": progress file version " + std::to_string(version) +
                                      " (this build reads " + std::to_string(kFormatVersion) + ")");
        }
        if (!GetFixed64(&p, &progress->collected) || !GetFixed64(&p, &progress->round) ||
            !p.empty()) {
          return Status::Corruption(where + ": bad start record");
        }
        if (progress->round != 0 && progress->round <= progress->collected) {
          return Status::Corruption(where + ": round " + std::to_string(progress->round) +
                                    " is not above the collected safepoint " +
                                    std::to_string(progress->collected));
        }
        break;
      }
      case kRange: {
        Slice table, start, end;
        if (!GetLengthPrefixedSlice(&p, &table) || !GetLengthPrefixedSlice(&p, &start) ||
            !GetLengthPrefixedSlice(&p, &end) || !p.empty()) {
          return Status::Corruption(where + ": bad range record");
        }
        if (progress->round == 0) return Status::Corruption(where + ": a range with no round");
        progress->done.push_back(RowRange{table.ToString(), start.ToString(), end.ToString()});
        break;
      }
      case kFinish: {
        uint64_t round = 0;
        if (!GetFixed64(&p, &round) || !p.empty()) {
          return Status::Corruption(where + ": bad finish record");
        }
        if (round == 0 || round != progress->round) {
          return Status::Corruption(where + ": finishes round " + std::to_string(round) +
                                    ", but the round under way is " +
                                    std::to_string(progress->round));
        }
        progress->collected = round;
        progress->round = 0;
        progress->done.clear();
        break;
      }
      default:
        return Status::NotSupported(where + ": unknown record type " + std::to_string(type));
    }
  }
  if (first) return Status::Corruption(path + ": empty progress file");
  return Status::OK();
}

Status ProgressLog::Open(FileSystem* fs, const std::string& path,
                         std::unique_ptr<ProgressLog>* result) {
  RoundProgress progress;
  if (fs->FileExists(path)) {
    std::string contents;
    STRATA_RETURN_IF_ERROR(ReadFileToString(fs, path, &contents));
    bool torn = false;
    STRATA_RETURN_IF_ERROR(Decode(contents, path, &progress, &torn));
  }
  std::unique_ptr<ProgressLog> log(new ProgressLog(fs, path, std::move(progress)));
  STRATA_RETURN_IF_ERROR(log->Rewrite());
  *result = std::move(log);
  return Status::OK();
}

Status ProgressLog::Rewrite() {
  if (file_ != nullptr) {
    file_->Close().PermitUncheckedError();  // replaced below; every append was synced
    file_.reset();
  }
  std::string contents = StartRecord(progress_.collected, progress_.round);
  for (const RowRange& r : progress_.done) contents.append(RangeRecord(r));
  STRATA_RETURN_IF_ERROR(WriteFileAtomically(fs_, path_, contents));
  FileOpenOptions o;
  o.truncate = false;
  return fs_->NewWritableFile(path_, o, &file_);
}

Status ProgressLog::Append(const std::string& record) {
  if (file_ == nullptr) {
    // An earlier append failed: what the file holds is unknown, so start
    // it again from what is known.
    return Rewrite();
  }
  Status s = file_->Append(record);
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) {
    file_->Close().PermitUncheckedError();  // the append's error is the one
    file_.reset();
  }
  return s;
}

Status ProgressLog::StartRound(uint64_t safepoint) {
  RoundProgress next{progress_.collected, safepoint, {}};
  std::swap(progress_, next);
  Status s = Rewrite();
  if (!s.ok()) std::swap(progress_, next);
  return s;
}

Status ProgressLog::RangeDone(const RowRange& range) {
  progress_.done.push_back(range);
  Status s = Append(RangeRecord(range));
  if (!s.ok()) progress_.done.pop_back();
  return s;
}

Status ProgressLog::Clamp(uint64_t safepoint) {
  if (progress_.collected <= safepoint && progress_.round <= safepoint) return Status::OK();
  const RoundProgress before = progress_;
  progress_.collected = std::min(progress_.collected, safepoint);
  if (progress_.round > safepoint) {
    progress_.round = 0;
    progress_.done.clear();
  }
  Status s = Rewrite();
  if (!s.ok()) progress_ = before;
  return s;
}

Status ProgressLog::FinishRound() {
  const RoundProgress before = progress_;
  progress_.collected = progress_.round;
  progress_.round = 0;
  progress_.done.clear();
  Status s = Append(FinishRecord(before.round));
  if (!s.ok()) progress_ = before;
  return s;
}

}  // namespace strata::gc
