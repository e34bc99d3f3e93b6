// The payload of the engine's log records: one or more row mutations, each
// tagged with its tablet, encoded as engine/LOG_RECORD.md says. Each entry of
// a record consumes one sequence number, in order, starting at the record's
// first sequence (the log's framing carries that number).
//
// Pure functions and value types; thread-compatible.
#ifndef STRATA_ENGINE_LOG_RECORD_H_
#define STRATA_ENGINE_LOG_RECORD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/cell_key.h"
#include "strata/slice.h"
#include "strata/status.h"

namespace strata::engine {

// One change with names resolved to ids. Slices point into the caller's data.
struct CellEntry {
  CellType type;
  uint16_t family;  // kRowMarkerFamily for kDeleteRow
  Slice qualifier;
  uint64_t timestamp;
  Slice value;  // kPut only
};

// A row mutation as logged.
struct LoggedRow {
  uint64_t tablet_id = 0;
  Slice row;
  std::vector<CellEntry> entries;
};

// Builds a record payload row by row.
class LogRecordBuilder {
 public:
  LogRecordBuilder();
  void AddRow(uint64_t tablet_id, const Slice& row, const std::vector<CellEntry>& entries);
  // The payload; valid until the builder changes.
  Slice Finish();
  uint64_t entry_count() const { return entries_; }

 private:
  std::string rows_;
  std::string out_;
  uint32_t row_count_ = 0;
  uint64_t entries_ = 0;
};

// What a payload holds (its first byte; engine/LOG_RECORD.md).
enum class LogRecordKind : uint8_t {
  kRows = 1,  // row mutations, one sequence number per entry
  // No data: the record only uses up its sequence numbers, so that the log
  // stays contiguous where the engine must continue above a gap.
  kSequenceSkip = 2,
};

// The payload of a kSequenceSkip record.
Slice SequenceSkipPayload();

// Decodes a payload into rows whose slices point into `payload`; *kind says
// which kind it is (a skip has no rows). Corruption when it is malformed.
Status DecodeLogRecord(const Slice& payload, std::vector<LoggedRow>* rows, LogRecordKind* kind);

}  // namespace strata::engine

#endif  // STRATA_ENGINE_LOG_RECORD_H_
