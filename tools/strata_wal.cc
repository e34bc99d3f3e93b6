// strata-wal: dumps, verifies and summarizes a write-ahead log
// (wal/FORMAT.md) and the engine's row mutations in it (engine/LOG_RECORD.md).
// It only reads: no file is ever changed, whatever the log holds.
//
// Reading follows wal::LogReader, which stops at the first spot it cannot read
// on from. That spot is then classified as FORMAT.md "Reading and recovery"
// says: a torn tail (nothing written after it was durable follows; recovery
// drops it) or corruption (an inconsistency, or a later durable record start).
// For a log directory, what recovery would do in the chosen mode is also
// reported from wal::ReadLog, the read-only twin of RecoverLog.
//
// Exit codes: 0 the log is clean, or ends in a torn tail and the mode is not
// absolute; 1 corruption (the message names the file and byte offset); 2 bad
// arguments, a path that cannot be read, something that is not a log, or
// output that could not be written.
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "common/coding.h"
#include "common/file_system.h"
#include "engine/log_record.h"
#include "engine/manifest.h"
#include "hex_dump.h"
#include "tool_util.h"
#include "wal/log_format.h"
#include "wal/log_reader.h"

namespace strata::wal {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitCorruption = 1;
constexpr int kExitUsage = 2;

constexpr uint64_t kDefaultMaxValue = 64;

const char kUsage[] =
    "usage: strata-wal <command> [options] <path>\n"
    "\n"
    "Reads a write-ahead log without changing it. <path> is one segment file\n"
    "(NNNNNNNNNN.log), a log directory, or an engine directory (whose log is\n"
    "<path>/wal; its MANIFEST then says, as on the engine's open, from which\n"
    "sequence recovery needs the log and which segment the log's writer\n"
    "started last: a log without that segment is corruption).\n"
    "\n"
    "commands:\n"
    "  dump     one line per record: segment, offset, first sequence, sequence\n"
    "           count, payload size and fragment count\n"
    "  verify   read the whole log: check every checksum, the sequence numbers\n"
    "           and the payloads; report records, sequences and segments, and\n"
    "           where reading stopped, why, and what recovery would drop\n"
    "  stats    totals: records, sequences, bytes, fragments by type, write\n"
    "           groups that followed a sync, entries by type and per tablet\n"
    "\n"
    "options:\n"
    "  --decode          dump: show each record's row mutations (tablet, row,\n"
    "                    and per entry: type, family id, qualifier, timestamp,\n"
    "                    value); bytes outside printable ASCII as \\xHH\n"
    "  --max-value=N     dump --decode: show at most N bytes of a value\n"
    "                    (default 64; 0 = all)\n"
    "  --hex             dump: print each record's payload bytes in hex\n"
    "  --fragments       dump: list the physical fragments (segment, offset,\n"
    "                    type, length) instead of records\n"
    "  --mode=MODE       how a damaged spot counts: torn-tail (default),\n"
    "                    absolute or point-in-time, as in recovery\n"
    "  --raw             the payloads are not engine row mutations: do not\n"
    "                    decode or check them\n"
    "  --help            show this text\n"
    "Options taking a value accept '--opt=V' and '--opt V'.\n"
    "\n"
    "A damaged spot is a torn tail when no record written after it was durable\n"
    "follows (a crash in the middle of a write leaves one; recovery drops it),\n"
    "and corruption otherwise (wal/FORMAT.md, \"Reading and recovery\"). A record\n"
    "whose payload does not decode, or whose entry count differs from its\n"
    "sequence count, is corruption.\n"
    "\n"
    "A segment file read on its own cannot show whether a later segment\n"
    "follows: a last record that runs to its end goes on in the next segment\n"
    "(not checked; the file is OK), and a file cut below its segment size is\n"
    "reported as a torn tail with a note.\n"
    "\n"
    "exit status: 0 the log is clean, or only its tail is torn and the mode is\n"
    "not absolute; 1 corruption found; 2 bad arguments, unreadable input, not\n"
    "a log, or output that could not be written\n";

struct Args {
  std::string command;
  std::string path;
  bool decode = false;
  bool hex = false;
  bool fragments = false;
  bool raw = false;
  std::optional<uint64_t> max_value;
  RecoveryMode mode = RecoveryMode::kTolerateTornTail;
};

int Usage(const std::string& error) {
  std::fprintf(stderr, "strata-wal: %s\n(run 'strata-wal --help' for usage)\n", error.c_str());
  return kExitUsage;
}

// For input that cannot be read or is no log at all.
int Unreadable(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "strata-wal: %s\n", message.c_str());
  return kExitUsage;
}

const char* ModeName(RecoveryMode mode) {
  switch (mode) {
    case RecoveryMode::kTolerateTornTail:
      return "torn-tail";
    case RecoveryMode::kAbsoluteConsistency:
      return "absolute";
    case RecoveryMode::kPointInTime:
      return "point-in-time";
  }
  return "?";
}

bool ParseMode(const std::string& s, RecoveryMode* mode) {
  for (RecoveryMode m : {RecoveryMode::kTolerateTornTail, RecoveryMode::kAbsoluteConsistency,
                         RecoveryMode::kPointInTime}) {
    if (s == ModeName(m)) {
      *mode = m;
      return true;
    }
  }
  return false;
}

// Parses argv; returns an exit code to stop with, or nullopt to go on.
std::optional<int> ParseArgs(int argc, char** argv, Args* args) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h" || a == "help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (a.rfind("--", 0) != 0 || a == "--") {
      positional.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const bool takes_value = name == "--max-value" || name == "--mode";
    if (!takes_value) {
      if (eq != std::string::npos) return Usage("option " + name + " takes no value");
      if (name == "--decode") {
        args->decode = true;
      } else if (name == "--hex") {
        args->hex = true;
      } else if (name == "--fragments") {
        args->fragments = true;
      } else if (name == "--raw") {
        args->raw = true;
      } else {
        return Usage("unknown option " + a);
      }
      continue;
    }
    const std::optional<std::string> option_value = tools::OptionValue(a, eq, argc, argv, &i);
    if (!option_value) return Usage("option " + name + " needs a value");
    const std::string& value = *option_value;
    if (name == "--max-value") {
      uint64_t v;
      if (!tools::ParseDecimal(value, &v))
        return Usage("bad value '" + value + "' for --max-value");
      args->max_value = v;
    } else if (!ParseMode(value, &args->mode)) {
      return Usage("bad value '" + value + "' for --mode (torn-tail, absolute or point-in-time)");
    }
  }
  if (positional.size() != 2) {
    return Usage(positional.empty() ? "no command given"
                                    : "expected a command and one path, got " +
                                          std::to_string(positional.size()) + " arguments");
  }
  args->command = positional[0];
  args->path = positional[1];
  return std::nullopt;
}

// What <path> names.
struct Target {
  std::string path;     // as given
  bool is_dir = false;  // a log directory (log_dir) rather than one segment file (path)
  std::string log_dir;
  // An engine directory whose MANIFEST was read: what recovery takes from it
  // (engine/MANIFEST.md, "The log's segments").
  bool has_manifest = false;
  SequenceNumber log_floor = 0;
  uint64_t log_segment = 0;    // the writer's newest segment; 0: not recorded
  bool check_payloads = true;  // not --raw: recovery decodes every record it replays
};

// The engine directory's manifest, read without changing it. A manifest that
// cannot be read leaves the log to be checked alone, with a note.
void ReadManifest(FileSystem* fs, const std::string& engine_dir, Target* t) {
  if (!fs->FileExists(JoinPath(engine_dir, engine::Manifest::kFileName))) return;
  engine::Catalog catalog;
  Status s = engine::Manifest::Read(fs, engine_dir, &catalog);
  if (!s.ok()) {
    std::printf("note: the manifest cannot be read (%s); the log is checked without it\n",
                s.ToString().c_str());
    return;
  }
  t->has_manifest = true;
  t->log_floor = catalog.log_floor;
  t->log_segment = catalog.log_segment;
}

// Resolves <path>; returns an exit code when it is not something to read.
std::optional<int> Resolve(FileSystem* fs, const std::string& path, Target* target) {
  target->path = path;
  if (!fs->FileExists(path)) return Unreadable(path + ": no such file or directory");
  if (const std::string why = tools::NotAFileReason(path); !why.empty()) return Unreadable(why);
  std::vector<std::string> names;
  if (fs->GetChildren(path, &names).ok()) {
    target->is_dir = true;
    target->log_dir = path;
    const std::string wal = JoinPath(path, "wal");
    std::vector<std::string> wal_names;
    bool has_segments = false;
    for (const auto& n : names) {
      uint64_t number;
      LogFileKind kind;
      if (ParseLogFileName(n, &number, &kind) && kind == LogFileKind::kSegment) has_segments = true;
    }
    if (!has_segments && fs->GetChildren(wal, &wal_names).ok()) {
      target->log_dir = wal;  // an engine directory
      ReadManifest(fs, path, target);
      names = wal_names;
      for (const auto& n : names) {
        uint64_t number;
        LogFileKind kind;
        if (ParseLogFileName(n, &number, &kind) && kind == LogFileKind::kSegment) {
          has_segments = true;
        }
      }
    }
    if (!has_segments && target->log_segment > 0) {
      std::fflush(stdout);
      std::fprintf(stderr,
                   "strata-wal: corruption: %s holds no log segment, but the manifest says the "
                   "log's writer started %s\n",
                   target->log_dir.c_str(), SegmentFileName(target->log_segment).c_str());
      return kExitCorruption;
    }
    if (!has_segments) {
      return Unreadable(target->log_dir +
                        ": no log segments (NNNNNNNNNN.log files) in this directory");
    }
    return std::nullopt;
  }
  // One file. A file named as a segment is read as one whatever it holds; any
  // other file must at least start with the segment magic.
  std::unique_ptr<RandomAccessFile> file;
  Status s = fs->NewRandomAccessFile(path, &file);
  if (!s.ok()) return Unreadable(s.ToString());
  const size_t slash = path.find_last_of('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  uint64_t number;
  LogFileKind kind;
  if (ParseLogFileName(base, &number, &kind)) {
    if (kind == LogFileKind::kSpare) {
      return Unreadable(path + ": a released segment kept for reuse (.spare), not part of the log");
    }
    return std::nullopt;
  }
  Result<uint64_t> size = file->Size();
  if (!size.ok()) return Unreadable(size.status().ToString());
  char buf[sizeof(kSegmentMagic)];
  Slice got;
  if (*size >= sizeof(buf)) {
    s = file->Read(0, sizeof(buf), &got, buf);
    if (!s.ok()) return Unreadable(s.ToString());
  }
  if (got.size() < sizeof(buf) || std::memcmp(got.data(), kSegmentMagic, sizeof(buf)) != 0) {
    return Unreadable(path + ": not a log segment (" +
                      (*size == 0
                           ? std::string("the file is empty")
                           : "no STRATAWL magic at offset 0; " + std::to_string(*size) + " bytes") +
                      ")");
  }
  return std::nullopt;
}

Status OpenReader(FileSystem* fs, const Target& t, std::unique_ptr<LogReader>* reader) {
  return t.is_dir ? LogReader::OpenDirectory(fs, t.log_dir, reader)
                  : LogReader::OpenFile(fs, t.path, reader);
}

std::string Where(const LogReader& r, const LogPosition& p) {
  return r.SegmentPath(p.segment) + " at offset " + std::to_string(p.offset);
}

const char* EntryTypeName(CellType t) {
  switch (t) {
    case CellType::kPut:
      return "put";
    case CellType::kDeleteCell:
      return "delete-cell";
    case CellType::kDeleteColumn:
      return "delete-column";
    case CellType::kDeleteRow:
      return "delete-row";
  }
  return "?";
}

// Walks the payload grammar (engine/LOG_RECORD.md) without allocating and
// rejects an entry count larger than the bytes left could hold, so that a
// checksum-valid but absurd count cannot make the decoder reserve gigabytes.
Status CheckEntryCounts(Slice in) {
  constexpr size_t kMinEntrySize = 1 + 1 + 1 + 8;  // type, family, empty qualifier, timestamp
  uint32_t nrows;
  if (in.empty()) return Status::OK();  // the decoder names the problem
  in.remove_prefix(1);
  if (!GetVarint32(&in, &nrows)) return Status::OK();
  for (uint32_t r = 0; r < nrows; r++) {
    uint64_t tablet;
    Slice row, qualifier, value;
    uint32_t nentries;
    if (!GetVarint64(&in, &tablet) || !GetLengthPrefixedSlice(&in, &row) ||
        !GetVarint32(&in, &nentries)) {
      return Status::OK();
    }
    if (nentries > in.size() / kMinEntrySize) {
      return Status::Corruption("log record: row " + std::to_string(r) + " claims " +
                                std::to_string(nentries) + " entries but only " +
                                std::to_string(in.size()) + " bytes follow");
    }
    for (uint32_t i = 0; i < nentries; i++) {
      uint32_t family;
      uint64_t timestamp;
      if (in.empty()) return Status::OK();
      const uint8_t type = static_cast<uint8_t>(in[0]);
      in.remove_prefix(1);
      if (!GetVarint32(&in, &family) || !GetLengthPrefixedSlice(&in, &qualifier) ||
          !GetFixed64(&in, &timestamp)) {
        return Status::OK();
      }
      if (type == static_cast<uint8_t>(CellType::kPut) && !GetLengthPrefixedSlice(&in, &value)) {
        return Status::OK();
      }
    }
  }
  return Status::OK();
}

// Decodes an engine payload and checks that row mutations use as many
// sequence numbers as they have entries (as replay does); *skip says whether
// it is a sequence skip instead, which holds no data.
Status DecodePayload(const LogRecord& rec, std::vector<engine::LoggedRow>* rows, bool* skip) {
  STRATA_RETURN_IF_ERROR(CheckEntryCounts(rec.payload));
  engine::LogRecordKind kind;
  STRATA_RETURN_IF_ERROR(engine::DecodeLogRecord(rec.payload, rows, &kind));
  *skip = kind == engine::LogRecordKind::kSequenceSkip;
  if (*skip) return Status::OK();
  uint64_t entries = 0;
  for (const auto& r : *rows) entries += r.entries.size();
  if (entries != rec.sequence_count) {
    return Status::Corruption("log record: " + std::to_string(entries) + " entries but " +
                              std::to_string(rec.sequence_count) + " sequence numbers");
  }
  return Status::OK();
}

enum class Verdict {
  kClean,       // read to the end
  kTornTail,    // stopped at a spot an interrupted write can leave
  kCorruption,  // stopped at a spot that was durable once, or an inconsistency
  kUnreadable,  // I/O error or an unsupported format version
};

// The outcome of one pass over the records.
struct Pass {
  std::vector<uint64_t> segments;
  uint64_t records = 0;
  uint64_t payload_bytes = 0;
  uint64_t record_fragments = 0;
  SequenceNumber first_sequence = 0;  // of the first record read
  SequenceNumber end_sequence = 0;    // one past the last record read
  uint64_t skipped_leading = 0;
  Verdict verdict = Verdict::kClean;
  Status status;  // why reading stopped, when it did
  bool stopped = false;
  LogPosition stop, cut;
  std::string stop_file, cut_file;
  std::string kind;                  // what sort of damage
  std::optional<LogPosition> later;  // the durable record start that proves corruption
  std::string later_file;
  // One segment file read on its own (the next segment, if any, unread):
  bool continues_past_file = false;  // its last record runs to its end, so goes on in the next
  uint64_t short_file_size = 0;      // when cut below its segment size: the file's size
  uint64_t segment_size = 0;         // and the segment size its header gives
};

// Called for each record read; a non-OK status (a payload problem) stops the
// pass as corruption at the record.
using RecordVisitor = std::function<Status(const LogRecord& rec)>;

// Reads every record and classifies where reading stopped.
Pass ReadRecords(FileSystem* fs, const Target& t, const RecordVisitor& visit) {
  Pass p;
  std::unique_ptr<LogReader> reader;
  Status s = OpenReader(fs, t, &reader);
  if (!s.ok()) {
    p.verdict = s.IsCorruption() ? Verdict::kCorruption : Verdict::kUnreadable;
    p.status = s;
    p.stopped = true;
    p.kind = s.IsCorruption() ? "damaged segment header" : "unreadable";
    return p;
  }
  p.segments = reader->segment_numbers();
  LogRecord rec;
  while (reader->ReadRecord(&rec)) {
    if (visit) {
      s = visit(rec);
      if (!s.ok()) {
        p.verdict = Verdict::kCorruption;
        p.status = Status::Corruption(Where(*reader, rec.begin) + ": record at sequence " +
                                      std::to_string(rec.first_sequence) + ": " +
                                      std::string(s.message()));
        p.stopped = true;
        p.stop = p.cut = rec.begin;
        p.stop_file = p.cut_file = reader->SegmentPath(rec.begin.segment);
        p.kind = "a payload that is not a valid engine record";
        p.skipped_leading = reader->skipped_leading_fragments();
        return p;
      }
    }
    if (p.records == 0) p.first_sequence = rec.first_sequence;
    p.records++;
    p.payload_bytes += rec.payload.size();
    p.record_fragments += rec.fragments;
    p.end_sequence = rec.first_sequence + rec.sequence_count;
  }
  p.skipped_leading = reader->skipped_leading_fragments();
  p.status = reader->status();
  if (p.status.ok()) return p;
  p.stopped = true;
  if (!p.status.IsCorruption()) {
    p.verdict = Verdict::kUnreadable;
    p.kind = "unreadable";
    return p;
  }
  p.stop = reader->stop();
  p.cut = reader->cut();
  p.stop_file = reader->SegmentPath(p.stop.segment);
  p.cut_file = reader->SegmentPath(p.cut.segment);
  if (reader->stop_is_inconsistency()) {
    p.verdict = Verdict::kCorruption;
    p.kind =
        "an inconsistency (checksum-valid data that does not fit; a torn write cannot "
        "produce it)";
    return p;
  }
  bool found = false;
  LogPosition where;
  s = reader->FindLaterDurableRecord(&found, &where);
  if (!s.ok()) {
    p.verdict = Verdict::kUnreadable;
    p.status = s;
    p.kind = "unreadable";
    return p;
  }
  if (found) {
    p.verdict = Verdict::kCorruption;
    p.kind = "mid-log corruption";
    p.later = where;
    p.later_file = reader->SegmentPath(where.segment);
    return p;
  }
  p.verdict = Verdict::kTornTail;
  p.kind = "a torn tail";
  if (!t.is_dir) {
    std::unique_ptr<RandomAccessFile> file;
    char buf[kSegmentHeaderSize];
    Slice got;
    SegmentHeader h;
    Result<uint64_t> size = Status::IOError("not read");
    if (fs->NewRandomAccessFile(t.path, &file).ok() && file->Read(0, sizeof(buf), &got, buf).ok() &&
        DecodeSegmentHeader(got, &h).ok() && (size = file->Size()).ok()) {
      if (p.stop.offset >= h.segment_size) {
        // The writer goes on with a record that reaches the end of a segment
        // in the next one: nothing is wrong with this file.
        p.continues_past_file = true;
        p.verdict = Verdict::kClean;
        p.stopped = false;
      } else if (*size < h.segment_size) {
        // The writer makes every segment file its full size before naming
        // it: this one was cut later.
        p.short_file_size = *size;
        p.segment_size = h.segment_size;
      }
    }
  }
  return p;
}

int ExitCode(const Pass& p, RecoveryMode mode) {
  switch (p.verdict) {
    case Verdict::kClean:
      return kExitOk;
    case Verdict::kTornTail:
      return mode == RecoveryMode::kAbsoluteConsistency ? kExitCorruption : kExitOk;
    case Verdict::kCorruption:
      return kExitCorruption;
    case Verdict::kUnreadable:
      return kExitUsage;
  }
  return kExitUsage;
}

std::string SegmentRange(const std::vector<uint64_t>& segments) {
  if (segments.empty()) return "no segments";
  std::string r =
      std::to_string(segments.size()) + (segments.size() == 1 ? " segment" : " segments");
  r += " (" + SegmentFileName(segments.front());
  if (segments.size() > 1) r += " .. " + SegmentFileName(segments.back());
  return r + ")";
}

std::string SequenceRange(const Pass& p) {
  if (p.records == 0) return "none";
  return std::to_string(p.first_sequence) + " .. " + std::to_string(p.end_sequence - 1) + " (" +
         std::to_string(p.end_sequence - p.first_sequence) + ")";
}

// When the manifest names the writer's newest segment and it is not there:
// why recovery refuses the log (except in point-in-time mode); else "".
std::string MissingSegment(FileSystem* fs, const Target& t, RecoveryMode mode) {
  if (!t.is_dir || t.log_segment == 0 || mode == RecoveryMode::kPointInTime) return "";
  Status s = CheckSegmentFile(fs, t.log_dir, t.log_segment);
  if (s.ok()) return "";
  return std::string(s.message()) +
         ": the manifest names it as the log's newest segment, so it held the newest records";
}

// Prints how the pass ended and returns the exit code. Everything about the
// log goes to stdout; a corruption or read error is repeated on stderr.
int Report(FileSystem* fs, const Target& t, const Pass& read, RecoveryMode mode) {
  // What recovery itself would do, from the read-only twin of RecoverLog,
  // like the engine's open: a missing newest segment fails it, and an engine
  // directory's log must hold every record from the manifest's log floor on
  // (from sequence 1 when it has none), each decoded as replay would.
  const std::string missing = MissingSegment(fs, t, mode);
  const bool predict = t.is_dir && read.verdict != Verdict::kUnreadable;
  RecoveryInfo info;
  Status recovery;
  if (predict && !missing.empty()) {
    recovery = Status::Corruption(missing);
  } else if (predict) {
    RecordFunction replay;
    if (t.check_payloads) {
      replay = [](SequenceNumber first, uint64_t count, Slice payload) {
        LogRecord rec;
        rec.first_sequence = first;
        rec.sequence_count = count;
        rec.payload = payload;
        std::vector<engine::LoggedRow> rows;
        bool skip;
        return DecodePayload(rec, &rows, &skip);
      };
    }
    const SequenceNumber start = t.has_manifest ? std::max<SequenceNumber>(t.log_floor, 1) : 0;
    recovery = ReadLog(fs, t.log_dir, mode, start, replay, &info);
  }
  // A log that reads well but that recovery refuses (records it needs are
  // gone) is corrupt all the same.
  const bool read_passes =
      read.verdict == Verdict::kClean ||
      (read.verdict == Verdict::kTornTail && mode != RecoveryMode::kAbsoluteConsistency);
  Pass refused;
  const bool override = read_passes && recovery.IsCorruption();
  if (override) {
    refused = read;
    refused.verdict = Verdict::kCorruption;
    refused.kind = missing.empty() ? "records recovery needs are gone" : "a missing segment";
    refused.status = recovery;
    refused.later.reset();
  }
  const Pass& p = override ? refused : read;
  std::string dropped =
      "everything from " + p.cut_file + " at offset " + std::to_string(p.cut.offset);
  switch (p.verdict) {
    case Verdict::kClean:
      std::printf("OK: the log is clean\n");
      if (p.continues_past_file) {
        std::printf(
            "  note: only this segment was read; its last record goes on in the next segment,\n"
            "  which was not (read the log directory to check that record)\n");
      }
      break;
    case Verdict::kTornTail:
      std::printf("torn tail: reading stopped in %s at offset %" PRIu64 "\n", p.stop_file.c_str(),
                  p.stop.offset);
      std::printf("  reason: %s\n", std::string(p.status.message()).c_str());
      std::printf(
          "  no record written after this spot was durable follows, so an interrupted\n"
          "  write can explain it; recovery that tolerates a torn tail drops %s\n",
          dropped.c_str());
      if (p.segment_size > 0) {
        std::printf("  note: the file is %" PRIu64 " bytes, less than the segment size of %" PRIu64
                    " its header\n"
                    "  gives, so it was cut after it was written; if a later segment exists, the\n"
                    "  records cut off are lost and the log is corrupt (read the log directory)\n",
                    p.short_file_size, p.segment_size);
      }
      break;
    case Verdict::kCorruption:
      std::printf("CORRUPTION (%s): %s\n", p.kind.c_str(), std::string(p.status.message()).c_str());
      if (p.later) {
        std::printf("  a record written after this spot was durable starts in %s at offset %" PRIu64
                    "\n",
                    p.later_file.c_str(), p.later->offset);
      }
      break;
    case Verdict::kUnreadable:
      break;
  }
  if (predict) {
    std::string what;
    if (!recovery.ok()) {
      what = "would fail: " + recovery.ToString();
    } else if (info.tail_dropped) {
      what = "would replay " + std::to_string(info.records) + " records and drop everything from " +
             info.cut_file + " at offset " + std::to_string(info.cut_offset);
      if (info.later_records_dropped) what += ", including records written after it was durable";
    } else {
      what = "would replay " + std::to_string(info.records) + " records";
    }
    if (recovery.ok() && info.records_skipped > 0) {
      what +=
          " (and skip " + std::to_string(info.records_skipped) + " below the manifest's log floor)";
    }
    std::printf("recovery (%s mode) %s\n", ModeName(mode), what.c_str());
  }
  const int code = ExitCode(p, mode);
  std::fflush(stdout);
  if (p.verdict == Verdict::kUnreadable) {
    std::fprintf(stderr, "strata-wal: cannot read the log: %s\n", p.status.ToString().c_str());
  } else if (p.verdict == Verdict::kCorruption) {
    std::fprintf(stderr, "strata-wal: corruption: %s\n", std::string(p.status.message()).c_str());
  } else if (p.verdict == Verdict::kTornTail && code != kExitOk) {
    std::fprintf(stderr, "strata-wal: torn tail is corruption in absolute mode: %s\n",
                 std::string(p.status.message()).c_str());
  } else if (p.verdict == Verdict::kTornTail) {
    std::printf("OK in %s mode: only the tail is torn\n", ModeName(mode));
  }
  return code;
}

std::string LogName(const Target& t) { return t.is_dir ? t.log_dir : t.path; }

void PrintSegmentHeaders(FileSystem* fs, const Target& t) {
  std::unique_ptr<LogReader> reader;
  if (!OpenReader(fs, t, &reader).ok()) return;
  for (uint64_t n : reader->segment_numbers()) {
    const std::string path = reader->SegmentPath(n);
    std::unique_ptr<RandomAccessFile> file;
    Status s = fs->NewRandomAccessFile(path, &file);
    Result<uint64_t> size = s.ok() ? file->Size() : Result<uint64_t>(s);
    char buf[kSegmentHeaderSize];
    Slice got;
    SegmentHeader h;
    if (size.ok()) s = file->Read(0, sizeof(buf), &got, buf);
    if (s.ok() && size.ok()) s = DecodeSegmentHeader(got, &h);
    if (!size.ok()) s = size.status();
    if (!s.ok()) {
      std::printf("segment %" PRIu64 " %s: %s\n", n, path.c_str(), s.ToString().c_str());
      continue;
    }
    std::printf("segment %" PRIu64 " %s: file %" PRIu64
                " bytes, block_size %u, segment_size %" PRIu64 ", first_sequence %" PRIu64 "\n",
                n, path.c_str(), *size, h.block_size, h.segment_size, h.first_sequence);
  }
}

void PrintHex(const Slice& data) {
  tools::HexDump(data, /*base=*/0, /*indent=*/"    ", /*offset_digits=*/6);
}

std::string ShowValue(const Slice& v, uint64_t max) {
  if (max == 0 || v.size() <= max) return "'" + EscapeBytes(v) + "'";
  return "'" + EscapeBytes(Slice(v.data(), static_cast<size_t>(max))) + "'... (" +
         std::to_string(v.size()) + " bytes)";
}

void PrintRows(const std::vector<engine::LoggedRow>& rows, SequenceNumber first,
               uint64_t max_value) {
  SequenceNumber seq = first;
  for (const auto& r : rows) {
    std::printf("  row tablet=%" PRIu64 " key='%s' entries=%zu\n", r.tablet_id,
                EscapeBytes(r.row).c_str(), r.entries.size());
    for (const auto& e : r.entries) {
      std::printf("    seq=%" PRIu64 " %s family=%u qualifier='%s' ts=%" PRIu64, seq,
                  EntryTypeName(e.type), e.family, EscapeBytes(e.qualifier).c_str(), e.timestamp);
      if (e.type == CellType::kPut) {
        std::printf(" value=%s", ShowValue(e.value, max_value).c_str());
      }
      std::printf("\n");
      seq++;
    }
  }
}

int CmdDumpFragments(FileSystem* fs, const Target& t, const Args& args) {
  std::unique_ptr<LogReader> reader;
  Status s = OpenReader(fs, t, &reader);
  if (!s.ok()) {
    Pass p;
    p.verdict = s.IsCorruption() ? Verdict::kCorruption : Verdict::kUnreadable;
    p.status = s;
    p.kind = s.IsCorruption() ? "damaged segment header" : "unreadable";
    return Report(fs, t, p, args.mode);
  }
  PrintSegmentHeaders(fs, t);
  LogFragment f;
  uint64_t n = 0;
  while (reader->ReadFragment(&f)) {
    std::printf("fragment segment=%" PRIu64 " offset=%" PRIu64 " type=%s length=%zu%s\n",
                f.position.segment, f.position.offset, FragmentTypeName(f.type), f.payload.size(),
                f.durable_before ? " durable_before" : "");
    if (args.hex) PrintHex(f.payload);
    n++;
  }
  std::printf("%" PRIu64 " fragments\n", n);
  if (!reader->status().ok()) {
    std::printf("fragment reading stopped: %s\n", reader->status().ToString().c_str());
  }
  // The verdict comes from reading whole records (fragments alone do not show
  // assembly or sequence problems).
  const bool raw = args.raw;
  Pass p = ReadRecords(fs, t, [raw](const LogRecord& rec) {
    std::vector<engine::LoggedRow> rows;
    bool skip;
    return raw ? Status::OK() : DecodePayload(rec, &rows, &skip);
  });
  return Report(fs, t, p, args.mode);
}

int CmdDump(FileSystem* fs, const Target& t, const Args& args) {
  if (args.fragments) return CmdDumpFragments(fs, t, args);
  PrintSegmentHeaders(fs, t);
  const uint64_t max_value = args.max_value.value_or(kDefaultMaxValue);
  Pass p = ReadRecords(fs, t, [&](const LogRecord& rec) {
    std::vector<engine::LoggedRow> rows;
    bool skip = false;
    Status s = args.raw ? Status::OK() : DecodePayload(rec, &rows, &skip);
    uint64_t last_segment = rec.end.segment;
    std::printf("record segment=%" PRIu64 " offset=%" PRIu64 " seq=%" PRIu64 " count=%" PRIu64
                " bytes=%zu fragments=%u",
                rec.begin.segment, rec.begin.offset, rec.first_sequence, rec.sequence_count,
                rec.payload.size(), rec.fragments);
    if (last_segment != rec.begin.segment) std::printf(" ends_in_segment=%" PRIu64, last_segment);
    if (!args.raw && s.ok()) {
      if (skip) {
        std::printf(" sequence-skip");
      } else {
        std::printf(" rows=%zu", rows.size());
      }
    }
    std::printf("\n");
    if (args.hex) PrintHex(rec.payload);
    if (args.decode && s.ok()) PrintRows(rows, rec.first_sequence, max_value);
    return s;
  });
  std::printf("%" PRIu64 " records, sequences %s, %" PRIu64 " payload bytes, %s\n", p.records,
              SequenceRange(p).c_str(), p.payload_bytes, SegmentRange(p.segments).c_str());
  return Report(fs, t, p, args.mode);
}

int CmdVerify(FileSystem* fs, const Target& t, const Args& args) {
  uint64_t rows = 0, entries = 0, skips = 0, skipped = 0;
  Pass p = ReadRecords(fs, t, [&](const LogRecord& rec) {
    if (args.raw) return Status::OK();
    std::vector<engine::LoggedRow> decoded;
    bool skip;
    STRATA_RETURN_IF_ERROR(DecodePayload(rec, &decoded, &skip));
    if (skip) {
      skips++;
      skipped += rec.sequence_count;
      return Status::OK();
    }
    rows += decoded.size();
    entries += rec.sequence_count;
    return Status::OK();
  });
  if (p.verdict != Verdict::kUnreadable) {
    std::printf("log: %s, %s\n", LogName(t).c_str(), SegmentRange(p.segments).c_str());
    std::printf("records: %" PRIu64 " (%" PRIu64 " payload bytes)\n", p.records, p.payload_bytes);
    std::printf("sequences: %s\n", SequenceRange(p).c_str());
    if (!args.raw) std::printf("row mutations: %" PRIu64 ", entries: %" PRIu64 "\n", rows, entries);
    if (skips > 0) {
      std::printf("sequence skips: %" PRIu64 " (%" PRIu64 " sequence numbers)\n", skips, skipped);
    }
    if (p.skipped_leading > 0) {
      std::printf("skipped %" PRIu64
                  " continuation fragments at the start (the rest of a record "
                  "whose first segments were released)\n",
                  p.skipped_leading);
    }
  }
  return Report(fs, t, p, args.mode);
}

int CmdStats(FileSystem* fs, const Target& t, const Args& args) {
  struct TabletStats {
    uint64_t rows = 0, entries = 0, bytes = 0;
  };
  std::map<uint64_t, TabletStats> tablets;
  uint64_t by_type[kMaxCellType + 1] = {};
  uint64_t rows = 0, value_bytes = 0, max_record = 0;
  Pass p = ReadRecords(fs, t, [&](const LogRecord& rec) {
    max_record = std::max<uint64_t>(max_record, rec.payload.size());
    if (args.raw) return Status::OK();
    std::vector<engine::LoggedRow> decoded;
    bool skip;
    STRATA_RETURN_IF_ERROR(DecodePayload(rec, &decoded, &skip));
    for (const auto& r : decoded) {
      TabletStats& ts = tablets[r.tablet_id];
      ts.rows++;
      ts.entries += r.entries.size();
      ts.bytes += r.row.size();
      rows++;
      for (const auto& e : r.entries) {
        by_type[static_cast<uint8_t>(e.type)]++;
        ts.bytes += e.qualifier.size() + e.value.size();
        value_bytes += e.value.size();
      }
    }
    return Status::OK();
  });
  if (p.verdict == Verdict::kUnreadable) return Report(fs, t, p, args.mode);

  // Fragments up to where record reading stopped: types, write groups, log bytes.
  uint64_t frags[kMaxFragmentType + 1] = {};
  uint64_t synced_groups = 0, framed_bytes = 0;
  std::unique_ptr<LogReader> reader;
  if (OpenReader(fs, t, &reader).ok()) {
    LogFragment f;
    while (reader->ReadFragment(&f)) {
      if (p.stopped && !(f.position < p.cut)) break;
      frags[static_cast<uint8_t>(f.type)]++;
      if (f.durable_before) synced_groups++;
      framed_bytes += kFragmentHeaderSize + f.payload.size();
    }
  }
  std::printf("log: %s, %s\n", LogName(t).c_str(), SegmentRange(p.segments).c_str());
  std::printf("records: %" PRIu64 "\n", p.records);
  std::printf("sequences: %s\n", SequenceRange(p).c_str());
  std::printf("payload bytes: %" PRIu64 " (largest record %" PRIu64 ", mean %" PRIu64 ")\n",
              p.payload_bytes, max_record, p.records == 0 ? 0 : p.payload_bytes / p.records);
  std::printf("fragments: %" PRIu64 " FULL, %" PRIu64 " FIRST, %" PRIu64 " MIDDLE, %" PRIu64
              " LAST; %" PRIu64 " bytes with headers\n",
              frags[1], frags[2], frags[3], frags[4], framed_bytes);
  std::printf("write groups started after a sync (durable_before): %" PRIu64 "\n", synced_groups);
  if (!args.raw) {
    std::printf("row mutations: %" PRIu64 ", value bytes: %" PRIu64 "\n", rows, value_bytes);
    std::printf("entries:");
    for (uint8_t i = 1; i <= kMaxCellType; i++) {
      std::printf(" %s %" PRIu64 "%s", EntryTypeName(static_cast<CellType>(i)), by_type[i],
                  i < kMaxCellType ? "," : "\n");
    }
    for (const auto& [id, ts] : tablets) {
      std::printf("tablet %" PRIu64 ": rows %" PRIu64 ", entries %" PRIu64
                  ", key and value bytes %" PRIu64 "\n",
                  id, ts.rows, ts.entries, ts.bytes);
    }
  }
  return Report(fs, t, p, args.mode);
}

int Main(int argc, char** argv) {
  Args args;
  if (std::optional<int> code = ParseArgs(argc, argv, &args)) return *code;
  const std::string& cmd = args.command;
  if (cmd != "dump" && cmd != "verify" && cmd != "stats") {
    return Usage("unknown command '" + cmd + "'");
  }
  if (cmd != "dump" && (args.decode || args.hex || args.fragments || args.max_value)) {
    return Usage("--decode/--hex/--fragments/--max-value only go with dump");
  }
  if (args.max_value && !args.decode) return Usage("--max-value needs --decode");
  if (args.fragments && args.decode) return Usage("--fragments and --decode do not go together");
  if (args.decode && args.raw) return Usage("--decode and --raw do not go together");
  FileSystem* fs = FileSystem::Default();
  Target target;
  target.check_payloads = !args.raw;
  if (std::optional<int> code = Resolve(fs, args.path, &target)) return *code;
  if (cmd == "dump") return CmdDump(fs, target, args);
  if (cmd == "verify") return CmdVerify(fs, target, args);
  return CmdStats(fs, target, args);
}

}  // namespace
}  // namespace strata::wal

int main(int argc, char** argv) {
  const int code = strata::wal::Main(argc, argv);
  return strata::tools::FinishOutput("strata-wal", code, /*error_code=*/2);
}
