// Fuzzes the write-ahead log's reading and recovery (wal/log_reader.h) over
// a log directory made from the input: its first byte says how many segment
// files (1 to 3) and their first number; the rest is split evenly between
// them. Reads the log fragment by fragment and record by record, runs the
// read-only recovery in every mode (decoding each payload as the engine's
// log record), then the real recovery; a recovery that succeeds must leave
// a log that reads clean in the strictest mode, with the same records.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/log_record.h"
#include "fuzz_check.h"
#include "mem_fs.h"
#include "wal/log_format.h"
#include "wal/log_reader.h"

using namespace strata;
using namespace strata::wal;

namespace {

Status DecodePayload(SequenceNumber, uint64_t, Slice payload) {
  std::vector<engine::LoggedRow> rows;
  engine::LogRecordKind kind;
  (void)engine::DecodeLogRecord(payload, &rows, &kind);
  return Status::OK();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static fuzz::MemFileSystem* fs = new fuzz::MemFileSystem();
  fs->Clear();
  const size_t segments = 1 + data[0] % 3;
  const uint64_t first_number = 1 + (data[0] >> 2);
  const char* body = reinterpret_cast<const char*>(data) + 1;
  const size_t body_size = size - 1;
  for (size_t i = 0; i < segments; i++) {
    const size_t begin = body_size * i / segments;
    const size_t end = body_size * (i + 1) / segments;
    fs->Put("log/" + SegmentFileName(first_number + i), std::string(body + begin, end - begin));
  }

  {
    std::unique_ptr<LogReader> reader;
    if (LogReader::OpenDirectory(fs, "log", &reader).ok()) {
      LogFragment fragment;
      for (int n = 0; n < 100000 && reader->ReadFragment(&fragment); n++) {
      }
    }
  }
  {
    std::unique_ptr<LogReader> reader;
    if (LogReader::OpenDirectory(fs, "log", &reader).ok()) {
      LogRecord record;
      int n = 0;
      while (n < 100000 && reader->ReadRecord(&record)) n++;
      if (!reader->status().ok() && reader->status().IsCorruption()) {
        bool found = false;
        LogPosition where;
        (void)reader->FindLaterDurableRecord(&found, &where);
      }
    }
  }
  for (RecoveryMode mode : {RecoveryMode::kTolerateTornTail, RecoveryMode::kAbsoluteConsistency,
                            RecoveryMode::kPointInTime}) {
    RecoveryInfo info;
    (void)ReadLog(fs, "log", mode, 0, DecodePayload, &info);
  }
  RecoveryInfo recovered;
  if (RecoverLog(fs, "log", RecoveryMode::kTolerateTornTail, DecodePayload, &recovered).ok()) {
    RecoveryInfo again;
    const Status s = ReadLog(fs, "log", RecoveryMode::kAbsoluteConsistency, 0, nullptr, &again);
    if (!s.ok()) {
      std::fprintf(stderr, "after recovery: %s\n", s.ToString().c_str());
    }
    FUZZ_CHECK(s.ok());
    FUZZ_CHECK(again.records + again.records_skipped ==
               recovered.records + recovered.records_skipped);
    FUZZ_CHECK(!again.tail_dropped);
  }
  return 0;
}
